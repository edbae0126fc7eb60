#include "kafka/outbox_producer.hpp"

#include "kafka/client_config.hpp"
#include "kafka/event_record.hpp"
#include "messages/record_headers.hpp"

#include <chrono>
#include <cstdint>
#include <utility>

namespace ef::kafka {

namespace {
/// How long a new producer waits for the topic's metadata (learn_topic).
constexpr int topic_metadata_timeout_ms = 3000;
} // namespace

// Named, not anonymous: the impl holds these as members, and in a unity
// build (EF_UNITY_BUILD) a member of anonymous type is an error.
namespace detail {

/// Collects delivery reports, each named by the ticket its record carried
/// as its opaque.
class report_sink : public RdKafka::DeliveryReportCb {
public:
  void dr_cb(RdKafka::Message& m) override {
    ticketed_delivery d;
    d.ticket = reinterpret_cast<std::uintptr_t>(m.msg_opaque());
    d.report.persisted = m.err() == RdKafka::ERR_NO_ERROR &&
                         m.status() == RdKafka::Message::MSG_STATUS_PERSISTED;
    if (d.report.persisted) {
      d.report.partition = m.partition();
      d.report.offset = m.offset();
    } else {
      d.report.error = m.err() == RdKafka::ERR_NO_ERROR
                         ? "delivery not persisted"
                         : RdKafka::err2str(m.err());
    }
    arrived.push_back(std::move(d));
  }
  std::vector<ticketed_delivery> arrived;
};

} // namespace detail

using detail::report_sink;

struct outbox_producer::impl {
  report_sink sink;
  std::unique_ptr<RdKafka::Producer> producer;
  std::string topic;
  int delivery_timeout_ms;

  /// Produces one record, serving reports while the local queue is full.
  /// A record the client refuses outright is reported failed at once.
  void produce(const std::string& key, const std::string& value,
               RdKafka::Headers* headers, std::uint64_t ticket) {
    auto* opaque = reinterpret_cast<void*>(static_cast<std::uintptr_t>(ticket));
    for (;;) {
      auto rc = producer->produce(topic, RdKafka::Topic::PARTITION_UA,
                                  RdKafka::Producer::RK_MSG_COPY,
                                  const_cast<char*>(value.data()), value.size(),
                                  key.data(), key.size(), 0, headers, opaque);
      if (rc == RdKafka::ERR_NO_ERROR)
        return;
      if (rc != RdKafka::ERR__QUEUE_FULL) {
        delete headers; // produce() frees headers only on success
        ticketed_delivery d;
        d.ticket = ticket;
        d.report.error = RdKafka::err2str(rc);
        sink.arrived.push_back(std::move(d));
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

  /// Hands over what arrived; throws on a fatal producer error.
  std::vector<ticketed_delivery> take() {
    std::string reason;
    if (producer->fatal_error(reason) != RdKafka::ERR_NO_ERROR)
      throw std::runtime_error("kafka producer failed fatally: " + reason);
    return std::exchange(sink.arrived, {});
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

void outbox_producer::send(const std::vector<order_event>& events,
                           std::uint64_t first_ticket) {
  for (size_t i = 0; i < events.size(); ++i) {
    auto& ev = events[i];
    auto* headers = RdKafka::Headers::create();
    headers->add(record_header::event_id, ev.event_id);
    headers->add(record_header::event_type, ev.event_type);
    if (!ev.traceparent.empty())
      headers->add(record_header::traceparent, ev.traceparent);
    impl_->produce(ev.order_id, encode_value(ev), headers, first_ticket + i);
  }
}

std::vector<ticketed_delivery> outbox_producer::reports(int wait_ms) {
  // poll() returns once it served an event or the wait is over; reports
  // already queued are served without waiting.
  if (impl_->sink.arrived.empty())
    impl_->producer->poll(wait_ms);
  impl_->producer->poll(0);
  return impl_->take();
}

void outbox_producer::serve_callbacks() {
  impl_->producer->poll(0);
}

delivery outbox_producer::publish_raw(
  const std::string& key, const std::string& value,
  const std::vector<std::pair<std::string, std::string>>& headers) {
  // Its own ticket space: a replay producer is used for nothing else.
  constexpr std::uint64_t raw_ticket = 0;
  auto* h = RdKafka::Headers::create();
  for (auto& [k, v] : headers)
    h->add(k, v);
  impl_->produce(key, value, h, raw_ticket);
  // The producer fails every message after message.timeout.ms, so this
  // terminates.
  for (;;)
    for (auto& d : reports(50))
      if (d.ticket == raw_ticket)
        return d.report;
}

std::vector<delivery>
event_publisher::publish(const std::vector<order_event>& events,
                         const std::function<void()>& after_send) {
  auto first = next_ticket_;
  next_ticket_ += events.size();
  send(events, first);
  if (after_send)
    after_send();
  std::vector<delivery> out(events.size());
  for (size_t left = events.size(); left > 0;)
    for (auto& d : reports(50))
      if (d.ticket >= first && d.ticket < first + events.size()) {
        out[d.ticket - first] = std::move(d.report);
        --left;
      }
  return out;
}

} // namespace ef::kafka
