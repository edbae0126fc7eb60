#include "kafka/group_consumer.hpp"

#include "kafka/client_config.hpp"

#include <spdlog/spdlog.h>

namespace ef::kafka {

namespace {

std::vector<std::int32_t>
ids_of(const std::vector<RdKafka::TopicPartition*>& parts) {
  std::vector<std::int32_t> ids;
  for (auto* p : parts)
    ids.push_back(p->partition());
  return ids;
}

/// Owns a vector of TopicPartition* for one call.
struct tp_list {
  std::vector<RdKafka::TopicPartition*> v;
  ~tp_list() { RdKafka::TopicPartition::destroy(v); }
};

class rebalancer : public RdKafka::RebalanceCb {
public:
  explicit rebalancer(group_consumer::callbacks cbs) : cbs_(std::move(cbs)) {}
  void rebalance_cb(RdKafka::KafkaConsumer* c, RdKafka::ErrorCode err,
                    std::vector<RdKafka::TopicPartition*>& parts) override {
    if (err == RdKafka::ERR__ASSIGN_PARTITIONS) {
      c->assign(parts);
      if (cbs_.assigned)
        cbs_.assigned(ids_of(parts));
    } else {
      // Stop the work first, then give the partitions back.
      if (cbs_.revoked)
        cbs_.revoked(ids_of(parts));
      c->unassign();
    }
  }

private:
  group_consumer::callbacks cbs_;
};

} // namespace

struct group_consumer::impl {
  std::unique_ptr<rebalancer> rebalance;
  std::unique_ptr<RdKafka::KafkaConsumer> consumer;
  std::string topic;
  bool closed = false;
};

group_consumer::group_consumer(const std::string& brokers,
                               const std::string& group,
                               const std::string& topic, int session_timeout_ms,
                               int fetch_wait_max_ms, callbacks cbs)
    : impl_(std::make_unique<impl>()) {
  impl_->topic = topic;
  impl_->rebalance = std::make_unique<rebalancer>(std::move(cbs));
  auto conf = make_conf(
    {{"bootstrap.servers", brokers},
     {"group.id", group},
     {"enable.auto.commit", "false"},
     {"enable.auto.offset.store", "false"},
     {"auto.offset.reset", "earliest"},
     {"enable.partition.eof", "false"},
     {"partition.assignment.strategy", "range"},
     {"log.connection.close", "false"},
     {"session.timeout.ms", std::to_string(session_timeout_ms)},
     {"fetch.wait.max.ms", std::to_string(fetch_wait_max_ms)},
     {"heartbeat.interval.ms", std::to_string(session_timeout_ms / 4)}});
  std::string err;
  if (conf->set("rebalance_cb", impl_->rebalance.get(), err) !=
      RdKafka::Conf::CONF_OK)
    throw std::runtime_error("kafka rebalance_cb: " + err);
  impl_->consumer.reset(RdKafka::KafkaConsumer::create(conf.get(), err));
  if (!impl_->consumer)
    throw std::runtime_error("cannot create kafka consumer: " + err);
  auto rc = impl_->consumer->subscribe({topic});
  if (rc != RdKafka::ERR_NO_ERROR)
    throw std::runtime_error("cannot subscribe to " + topic + ": " +
                             RdKafka::err2str(rc));
}

group_consumer::~group_consumer() {
  close();
}

std::optional<partition_record> group_consumer::poll(int timeout_ms) {
  std::unique_ptr<RdKafka::Message> m(impl_->consumer->consume(timeout_ms));
  if (!m)
    return std::nullopt;
  switch (m->err()) {
  case RdKafka::ERR_NO_ERROR: {
    partition_record r;
    r.partition = m->partition();
    r.offset = m->offset();
    if (m->key())
      r.key = *m->key();
    r.value.assign(static_cast<const char*>(m->payload()), m->len());
    if (auto* h = m->headers()) {
      for (auto& x : h->get_all())
        if (x.value() != nullptr)
          r.headers.emplace_back(
            x.key(),
            std::string(static_cast<const char*>(x.value()), x.value_size()));
      r.event_id_header = r.header("event_id");
    }
    return r;
  }
  case RdKafka::ERR__TIMED_OUT:
    return std::nullopt;
  default:
    spdlog::warn("consumer {}: {}", impl_->topic, m->errstr());
    return std::nullopt;
  }
}

std::string group_consumer::commit(
  const std::vector<std::pair<std::int32_t, std::int64_t>>& next_offsets) {
  tp_list l;
  for (auto& [p, o] : next_offsets)
    l.v.push_back(RdKafka::TopicPartition::create(impl_->topic, p, o));
  auto rc = impl_->consumer->commitSync(l.v);
  if (rc != RdKafka::ERR_NO_ERROR)
    return RdKafka::err2str(rc);
  for (auto* tp : l.v)
    if (tp->err() != RdKafka::ERR_NO_ERROR)
      return RdKafka::err2str(tp->err());
  return {};
}

std::int64_t group_consumer::committed(std::int32_t partition, int timeout_ms) {
  tp_list l;
  l.v.push_back(RdKafka::TopicPartition::create(impl_->topic, partition));
  auto rc = impl_->consumer->committed(l.v, timeout_ms);
  if (rc != RdKafka::ERR_NO_ERROR)
    throw std::runtime_error("cannot read committed offset of partition " +
                             std::to_string(partition) + ": " +
                             RdKafka::err2str(rc));
  auto off = l.v[0]->offset();
  return off < 0 ? -1 : off;
}

void group_consumer::seek(std::int32_t partition, std::int64_t offset) {
  std::unique_ptr<RdKafka::TopicPartition> tp(RdKafka::TopicPartition::create(
    impl_->topic, partition,
    offset < 0 ? RdKafka::Topic::OFFSET_BEGINNING : offset));
  auto rc = impl_->consumer->seek(*tp, 5000);
  if (rc != RdKafka::ERR_NO_ERROR)
    throw std::runtime_error("cannot seek partition " +
                             std::to_string(partition) + ": " +
                             RdKafka::err2str(rc));
}

void group_consumer::pause(std::int32_t partition) {
  tp_list l;
  l.v.push_back(RdKafka::TopicPartition::create(impl_->topic, partition));
  impl_->consumer->pause(l.v);
}

void group_consumer::resume(std::int32_t partition) {
  tp_list l;
  l.v.push_back(RdKafka::TopicPartition::create(impl_->topic, partition));
  impl_->consumer->resume(l.v);
}

void group_consumer::close() {
  if (impl_->closed || !impl_->consumer)
    return;
  impl_->closed = true;
  impl_->consumer->close();
}

const std::string& group_consumer::topic() const {
  return impl_->topic;
}

} // namespace ef::kafka
