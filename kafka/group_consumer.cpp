#include "kafka/group_consumer.hpp"

#include "kafka/client_config.hpp"
#include "kafka/client_events.hpp"
#include "messages/record_headers.hpp"
#include <eventforge/config/logging.hpp>

#include <librdkafka/rdkafka.h>

#include <chrono>
#include <deque>
#include <mutex>

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

/// Sets each partition's pause state BEFORE the assignment that starts its
/// fetch. librdkafka 2.0.2 starts an assignment's fetch (FETCH_START) from
/// its main thread; a pause or resume issued by the application takes its
/// own op version first and queues second, so one racing that start can
/// make the later-queued op look outdated and be dropped: the partition then
/// never fetches, without an error. Before assign() no start is pending, so
/// there is nothing to race. Partitions the client does not know yet carry
/// no pause to clear.
void set_pauses(RdKafka::KafkaConsumer* c,
                const std::vector<RdKafka::TopicPartition*>& parts,
                const std::function<bool(std::int32_t)>& paused) {
  tp_list pause, resume;
  for (auto* p : parts)
    (paused && paused(p->partition()) ? pause : resume)
      .v.push_back(RdKafka::TopicPartition::create(p->topic(), p->partition()));
  if (!resume.v.empty())
    c->resume(resume.v);
  if (!pause.v.empty())
    c->pause(pause.v);
}

} // namespace

// Named, not anonymous: the impl holds it as a member, and in a unity build
// (EF_UNITY_BUILD) a member of anonymous type is an error.
namespace detail {

class rebalancer : public RdKafka::RebalanceCb {
public:
  rebalancer(group_consumer::callbacks cbs,
             std::map<std::int32_t, std::int64_t>& started_at)
      : cbs_(std::move(cbs)), started_at_(started_at) {}
  void rebalance_cb(RdKafka::KafkaConsumer* c, RdKafka::ErrorCode err,
                    std::vector<RdKafka::TopicPartition*>& parts) override {
    started_at_.clear(); // a new assignment starts from committed offsets
    if (err == RdKafka::ERR__ASSIGN_PARTITIONS) {
      // The client keeps a partition's pause across assignments: one paused
      // when it was revoked would never be fed again. Set before assign().
      set_pauses(c, parts, cbs_.starts_paused);
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
  std::map<std::int32_t, std::int64_t>& started_at_;
};

} // namespace detail

/// Keeps librdkafka's debug lines (the last `capacity`), for the report of a
/// stalled fetch. librdkafka calls it from its own threads.
class debug_capture : public RdKafka::EventCb {
public:
  static constexpr size_t capacity = 5000;

  explicit debug_capture(std::string client) : client_(std::move(client)) {}

  void event_cb(RdKafka::Event& e) override {
    // It replaces EventForge's callbacks for this client: pass them on.
    forward_client_event(e, client_);
    if (e.type() != RdKafka::Event::EVENT_LOG)
      return;
    std::lock_guard<std::mutex> guard{mtx_};
    if (lines_.size() >= capacity)
      lines_.pop_front();
    lines_.push_back(e.fac() + " " + e.str());
  }

  std::vector<std::string> naming(const std::string& needle) const {
    std::lock_guard<std::mutex> guard{mtx_};
    std::vector<std::string> out;
    for (auto& l : lines_)
      if (l.find(needle) != std::string::npos)
        out.push_back(l);
    return out;
  }

private:
  std::string client_;
  mutable std::mutex mtx_;
  std::deque<std::string> lines_;
};

using detail::rebalancer;

struct group_consumer::impl {
  std::function<void(std::int32_t, std::int64_t)> position_lost;
  std::function<void(std::int32_t, std::int64_t)> at_end;
  /// The queue consume() waits on, for wake() (rd_kafka_queue_yield).
  rd_kafka_queue_t* consumer_queue = nullptr;
  std::unique_ptr<debug_capture> debug;
  std::unique_ptr<rebalancer> rebalance;
  std::unique_ptr<RdKafka::KafkaConsumer> consumer;
  std::string topic;
  bool closed = false;
  /// Where restart_at() last started each partition.
  std::map<std::int32_t, std::int64_t> started_at;
};

group_consumer::group_consumer(const connection& cluster,
                               const std::string& group,
                               const std::string& topic, int session_timeout_ms,
                               int fetch_wait_max_ms, callbacks cbs,
                               const std::string& debug_contexts)
    : impl_(std::make_unique<impl>()) {
  impl_->topic = topic;
  impl_->position_lost = cbs.position_lost;
  impl_->at_end = cbs.at_end;
  impl_->rebalance =
    std::make_unique<rebalancer>(std::move(cbs), impl_->started_at);
  auto conf = make_conf(
    cluster,
    {{"client.id", group},
     {"group.id", group},
     {"enable.auto.commit", "false"},
     {"enable.auto.offset.store", "false"},
     // Never skip: a lost position is the application's decision.
     {"auto.offset.reset", "error"},
     // The member parks a partition read to its end (kafka.park-idle-ms).
     {"enable.partition.eof", "true"},
     {"partition.assignment.strategy", "range"},
     {"log.connection.close", "false"},
     {"session.timeout.ms", std::to_string(session_timeout_ms)},
     // The member hands records to its partition actors and pauses a
     // partition at consumer.max-in-flight: prefetching more than a few MiB
     // only costs memory (librdkafka's defaults allow 64 MiB and 100,000
     // messages per partition).
     {"queued.max.messages.kbytes", "4096"},
     {"queued.min.messages", "1000"},
     {"fetch.wait.max.ms", std::to_string(fetch_wait_max_ms)},
     {"heartbeat.interval.ms", std::to_string(session_timeout_ms / 4)}});
  std::string err;
  if (conf->set("rebalance_cb", impl_->rebalance.get(), err) !=
      RdKafka::Conf::CONF_OK)
    throw std::runtime_error("kafka rebalance_cb: " + err);
  if (!debug_contexts.empty()) {
    impl_->debug = std::make_unique<debug_capture>(group);
    if (conf->set("debug", debug_contexts, err) != RdKafka::Conf::CONF_OK ||
        conf->set("event_cb", impl_->debug.get(), err) !=
          RdKafka::Conf::CONF_OK)
      throw std::runtime_error("kafka debug " + debug_contexts + ": " + err);
  }
  impl_->consumer.reset(RdKafka::KafkaConsumer::create(conf.get(), err));
  if (!impl_->consumer)
    throw std::runtime_error("cannot create kafka consumer: " + err);
  impl_->consumer_queue = rd_kafka_queue_get_consumer(impl_->consumer->c_ptr());
  auto rc = impl_->consumer->subscribe({topic});
  if (rc != RdKafka::ERR_NO_ERROR)
    throw std::runtime_error("cannot subscribe to " + topic + ": " +
                             RdKafka::err2str(rc));
}

group_consumer::~group_consumer() {
  close();
  // Our reference to the consumer queue must go before the client does.
  if (impl_->consumer_queue)
    rd_kafka_queue_destroy(impl_->consumer_queue);
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
      r.event_id_header = r.header(record_header::event_id);
    }
    return r;
  }
  case RdKafka::ERR__TIMED_OUT:
    return std::nullopt;
  case RdKafka::ERR__PARTITION_EOF:
    if (impl_->at_end)
      impl_->at_end(m->partition(), m->offset());
    return std::nullopt;
  case RdKafka::ERR__AUTO_OFFSET_RESET:
    if (impl_->position_lost) {
      impl_->position_lost(m->partition(), m->offset() < 0 ? -1 : m->offset());
      return std::nullopt;
    }
    ef::log::error("consumer {}: {}", impl_->topic, m->errstr());
    return std::nullopt;
  default:
    ef::log::warn("consumer {}: {}", impl_->topic, m->errstr());
    return std::nullopt;
  }
}

caf::error group_consumer::commit(
  const std::vector<std::pair<std::int32_t, std::int64_t>>& next_offsets) {
  tp_list l;
  for (auto& [p, o] : next_offsets)
    l.v.push_back(RdKafka::TopicPartition::create(impl_->topic, p, o));
  if (auto rc = impl_->consumer->commitSync(l.v); rc != RdKafka::ERR_NO_ERROR)
    return kafka_error(rc);
  for (auto* tp : l.v)
    if (tp->err() != RdKafka::ERR_NO_ERROR)
      return kafka_error(tp->err());
  return caf::none;
}

std::int64_t group_consumer::committed(std::int32_t partition) {
  constexpr int timeout_ms = 5000;
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
  impl_->started_at[partition] = tp->offset(); // as in resume_at_once
}

void group_consumer::restart_at(
  const std::map<std::int32_t, std::int64_t>& offsets,
  const std::set<std::int32_t>& paused) {
  // A partition stopped by auto.offset.reset=error is out of the fetcher's
  // reach: only a new assignment starts it again. The group's partitions do
  // not change (eager protocol: assign() may be called at any time); the
  // others restart at the application's positions, so nothing is skipped
  // or fetched twice.
  tp_list l;
  auto rc = impl_->consumer->assignment(l.v);
  if (rc == RdKafka::ERR_NO_ERROR)
    rc = impl_->consumer->position(l.v);
  for (auto [p, offset] : offsets)
    impl_->started_at[p] =
      offset < 0 ? RdKafka::Topic::OFFSET_BEGINNING : offset;
  for (auto* tp : l.v) {
    auto i = impl_->started_at.find(tp->partition());
    // Not consumed from since its last restart: start there again, not at
    // the committed offset (which may be the very one that was lost).
    if (i != impl_->started_at.end() &&
        (offsets.count(tp->partition()) != 0 || tp->offset() < 0))
      tp->set_offset(i->second);
  }
  if (rc == RdKafka::ERR_NO_ERROR) {
    // Pauses first: the assignment restarts every fetch (set_pauses).
    set_pauses(impl_->consumer.get(), l.v,
               [&](std::int32_t p) { return paused.count(p) != 0; });
    rc = impl_->consumer->assign(l.v);
  }
  if (rc != RdKafka::ERR_NO_ERROR)
    throw std::runtime_error("cannot restart fetching of " + impl_->topic +
                             ": " + RdKafka::err2str(rc));
}

std::vector<std::string>
group_consumer::recent_debug(std::int32_t partition) const {
  if (!impl_->debug)
    return {};
  // librdkafka names a partition "<topic> [<p>]" in its lines.
  return impl_->debug->naming(impl_->topic + " [" + std::to_string(partition) +
                              "]");
}

group_consumer::watermarks
group_consumer::query_watermarks(std::int32_t partition) {
  constexpr int timeout_ms = 5000;
  watermarks w;
  auto rc = impl_->consumer->query_watermark_offsets(
    impl_->topic, partition, &w.low, &w.high, timeout_ms);
  if (rc != RdKafka::ERR_NO_ERROR)
    throw std::runtime_error("cannot read the log start and end of " +
                             impl_->topic + "/" + std::to_string(partition) +
                             ": " + RdKafka::err2str(rc));
  return w;
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

void group_consumer::resume_at_once(std::int32_t partition,
                                    std::int64_t offset) {
  resume(partition);
  // librdkafka 2.0.2 does not wake its broker thread for a resume (it sees
  // the partition at its next turn, up to socket.blocking.max.ms later); a
  // seek does, once it is done. Queued after the resume, so the partition is
  // no longer paused when the thread looks. Asynchronous (timeout 0); the
  // position is where the partition was paused, so nothing is skipped.
  std::unique_ptr<RdKafka::TopicPartition> tp(
    RdKafka::TopicPartition::create(impl_->topic, partition, offset));
  // A seek forgets the application's position (position() is invalid until
  // the next record): a later restart_at starts this partition here.
  impl_->started_at[partition] = offset;
  auto rc = impl_->consumer->seek(*tp, 0);
  if (rc != RdKafka::ERR_NO_ERROR)
    ef::log::warn("consumer {}: partition {} resumed, but its seek to {} "
                  "failed ({}): it fetches at the client's next turn",
                  impl_->topic, partition, offset, RdKafka::err2str(rc));
}

void group_consumer::wake() {
  if (impl_->consumer_queue)
    rd_kafka_queue_yield(impl_->consumer_queue);
}

void group_consumer::close() {
  constexpr int timeout_ms = 5000;
  if (impl_->closed || !impl_->consumer)
    return;
  impl_->closed = true;
  // The asynchronous close leaves the group through a queue we serve
  // ourselves, so the wait has a bound (the blocking close() has none).
  std::unique_ptr<RdKafka::Queue> q(
    RdKafka::Queue::create(impl_->consumer.get()));
  std::unique_ptr<RdKafka::Error> err(impl_->consumer->close(q.get()));
  if (err) {
    ef::log::warn("consumer {}: close failed: {}", impl_->topic, err->str());
    return;
  }
  auto deadline =
    std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!impl_->consumer->closed()) {
    if (std::chrono::steady_clock::now() > deadline) {
      ef::log::warn("consumer {}: leaving the group took longer than {} ms; "
                    "closing without it",
                    impl_->topic, timeout_ms);
      return;
    }
    // Serves the final revoke's callback; anything else queued (a fetch
    // error) is dropped: we are leaving.
    std::unique_ptr<RdKafka::Message> m(q->consume(50));
  }
}

const std::string& group_consumer::topic() const {
  return impl_->topic;
}

} // namespace ef::kafka
