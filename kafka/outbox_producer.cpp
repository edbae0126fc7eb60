#include "kafka/outbox_producer.hpp"

#include "kafka/client_config.hpp"
#include "kafka/event_record.hpp"
#include "messages/record_headers.hpp"

#include <chrono>

namespace ef::kafka {

namespace {
/// How long a new producer waits for the topic's metadata (learn_topic).
constexpr int topic_metadata_timeout_ms = 3000;
} // namespace

// Named, not anonymous: the impl holds these as members, and in a unity
// build (EF_UNITY_BUILD) a member of anonymous type is an error.
namespace detail {

/// Collects delivery reports into the vector slot named by the opaque.
class report_sink : public RdKafka::DeliveryReportCb {
public:
  void dr_cb(RdKafka::Message& m) override {
    auto* slot = static_cast<delivery*>(m.msg_opaque());
    // After an abandoned publish the slots are gone; reports still arrive.
    if (slot == nullptr || !active)
      return;
    slot->persisted = m.err() == RdKafka::ERR_NO_ERROR &&
                      m.status() == RdKafka::Message::MSG_STATUS_PERSISTED;
    if (slot->persisted) {
      slot->partition = m.partition();
      slot->offset = m.offset();
    } else {
      slot->error = m.err() == RdKafka::ERR_NO_ERROR
                      ? "delivery not persisted"
                      : RdKafka::err2str(m.err());
    }
    ++done;
  }
  size_t done = 0;
  bool active = false;
};

} // namespace detail

using detail::report_sink;

struct outbox_producer::impl {
  report_sink sink;
  std::unique_ptr<RdKafka::Producer> producer;
  std::string topic;
  int delivery_timeout_ms;

  /// Produces one record, retrying while the local queue is full.
  void produce(const std::string& key, const std::string& value,
               RdKafka::Headers* headers, delivery* slot) {
    for (;;) {
      auto rc = producer->produce(topic, RdKafka::Topic::PARTITION_UA,
                                  RdKafka::Producer::RK_MSG_COPY,
                                  const_cast<char*>(value.data()), value.size(),
                                  key.data(), key.size(), 0, headers, slot);
      if (rc == RdKafka::ERR_NO_ERROR)
        return;
      if (rc != RdKafka::ERR__QUEUE_FULL) {
        delete headers; // produce() frees headers only on success
        slot->error = RdKafka::err2str(rc);
        ++sink.done;
        return;
      }
      producer->poll(10);
    }
  }

  /// Asks the cluster where the topic's partitions are, now. Without this,
  /// the first produce() finds the topic unknown and the client looks
  /// unknown topics up on a timer of its own (up to a second, measured
  /// 0.1-1.0 s per producer): every relay's first record after start, a
  /// lone order, waited for it. A broker that does not answer in time
  /// changes nothing: produce() then looks the topic up as before.
  void learn_topic() {
    std::string err;
    std::unique_ptr<RdKafka::Topic> t(
      RdKafka::Topic::create(producer.get(), topic, nullptr, err));
    if (!t)
      return;
    RdKafka::Metadata* md = nullptr;
    if (producer->metadata(false, t.get(), &md, topic_metadata_timeout_ms) ==
        RdKafka::ERR_NO_ERROR)
      delete md;
  }

  /// Serves delivery reports until `expected` arrived. The producer fails
  /// every message after message.timeout.ms, so this terminates.
  void await_reports(size_t expected) {
    while (sink.done < expected)
      producer->poll(50);
    sink.active = false;
    std::string reason;
    if (producer->fatal_error(reason) != RdKafka::ERR_NO_ERROR)
      throw std::runtime_error("kafka producer failed fatally: " + reason);
  }
};

outbox_producer::outbox_producer(const connection& cluster,
                                 const std::string& topic,
                                 int delivery_timeout_ms,
                                 const std::string& client_id)
    : impl_(std::make_unique<impl>()) {
  auto conf = make_conf(
    cluster, {{"client.id", client_id},
              {"enable.idempotence", "true"},
              {"acks", "all"},
              {"linger.ms", "1"},
              {"log.connection.close", "false"},
              {"message.timeout.ms", std::to_string(delivery_timeout_ms)}});
  std::string err;
  if (conf->set("dr_cb", &impl_->sink, err) != RdKafka::Conf::CONF_OK)
    throw std::runtime_error("kafka dr_cb: " + err);
  impl_->producer.reset(RdKafka::Producer::create(conf.get(), err));
  if (!impl_->producer)
    throw std::runtime_error("cannot create kafka producer: " + err);
  impl_->topic = topic;
  impl_->delivery_timeout_ms = delivery_timeout_ms;
  impl_->learn_topic();
}

outbox_producer::~outbox_producer() {
  if (impl_->producer)
    impl_->producer->flush(1000);
}

std::vector<delivery>
outbox_producer::publish(const std::vector<order_event>& events,
                         const std::function<void()>& after_send) {
  std::vector<delivery> out(events.size());
  impl_->sink.done = 0;
  impl_->sink.active = true;
  for (size_t i = 0; i < events.size(); ++i) {
    auto& ev = events[i];
    auto* headers = RdKafka::Headers::create();
    headers->add(record_header::event_id, ev.event_id);
    headers->add(record_header::event_type, ev.event_type);
    if (!ev.traceparent.empty())
      headers->add(record_header::traceparent, ev.traceparent);
    impl_->produce(ev.order_id, encode_value(ev), headers, &out[i]);
  }
  if (after_send) {
    try {
      after_send();
    } catch (...) {
      // The caller abandons the batch with records in flight; their reports
      // must not touch `out` any more.
      impl_->sink.active = false;
      throw;
    }
  }
  impl_->await_reports(events.size());
  return out;
}

void outbox_producer::serve_callbacks() {
  // No publish is waiting: a late delivery report of an abandoned one finds
  // the sink inactive and is dropped.
  impl_->producer->poll(0);
}

delivery outbox_producer::publish_raw(
  const std::string& key, const std::string& value,
  const std::vector<std::pair<std::string, std::string>>& headers) {
  delivery out;
  impl_->sink.done = 0;
  impl_->sink.active = true;
  auto* h = RdKafka::Headers::create();
  for (auto& [k, v] : headers)
    h->add(k, v);
  impl_->produce(key, value, h, &out);
  impl_->await_reports(1);
  return out;
}

} // namespace ef::kafka
