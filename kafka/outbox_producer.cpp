#include "kafka/outbox_producer.hpp"

#include "kafka/client_config.hpp"
#include "kafka/event_record.hpp"
#include "messages/record_headers.hpp"

#include <chrono>
#include <condition_variable>
#include <set>

namespace ef::kafka {

namespace {
/// How long a new producer waits for the topic's metadata (learn_topic).
constexpr int topic_metadata_timeout_ms = 3000;
} // namespace

// Named, not anonymous: the impl holds one as a member, and in a unity
// build (EF_UNITY_BUILD) a member of anonymous type is an error; the names
// say whose they are, as another file of the build may have a `batch`.
namespace detail {

/// The reports of one publish() call.
struct report_batch {
  std::vector<delivery>* out = nullptr;
  size_t done = 0;
  /// Its caller stopped waiting (after_send threw): reports still arrive
  /// and must not touch `out` any more.
  bool abandoned = false;
};

/// One record's place in its batch: the message's opaque, freed by its
/// delivery report.
struct report_slot {
  std::shared_ptr<report_batch> owner;
  size_t index = 0;
};

/// Files each delivery report into its batch and wakes the waiting callers.
class report_sink : public RdKafka::DeliveryReportCb {
public:
  void dr_cb(RdKafka::Message& m) override {
    std::unique_ptr<report_slot> s(static_cast<report_slot*>(m.msg_opaque()));
    if (!s)
      return;
    {
      std::lock_guard<std::mutex> guard{mtx};
      if (!s->owner->abandoned)
        fill((*s->owner->out)[s->index], m);
      ++s->owner->done;
    }
    reported.notify_all();
  }

  static void fill(delivery& d, RdKafka::Message& m) {
    d.persisted = m.err() == RdKafka::ERR_NO_ERROR &&
                  m.status() == RdKafka::Message::MSG_STATUS_PERSISTED;
    if (d.persisted) {
      d.partition = m.partition();
      d.offset = m.offset();
    } else {
      d.error = m.err() == RdKafka::ERR_NO_ERROR ? "delivery not persisted"
                                                 : RdKafka::err2str(m.err());
    }
  }

  std::mutex mtx;
  std::condition_variable reported;
  /// One caller at a time serves the reports (poll); the others wait for
  /// `reported`.
  bool serving = false;
};

} // namespace detail

using detail::report_batch;
using detail::report_sink;
using detail::report_slot;

struct outbox_producer::impl {
  report_sink sink;
  std::unique_ptr<RdKafka::Producer> producer;
  std::string topic;
  int delivery_timeout_ms;
  std::mutex topics_mtx;
  std::set<std::string> learned; ///< topics whose metadata was asked for

  /// Produces one record into `b`'s slot `index`, retrying while the local
  /// queue is full.
  void produce(const std::string& to, const std::string& key,
               const std::string& value, RdKafka::Headers* headers,
               const std::shared_ptr<report_batch>& b, size_t index) {
    auto s = std::make_unique<report_slot>(report_slot{b, index});
    for (;;) {
      auto rc = producer->produce(to, RdKafka::Topic::PARTITION_UA,
                                  RdKafka::Producer::RK_MSG_COPY,
                                  const_cast<char*>(value.data()), value.size(),
                                  key.data(), key.size(), 0, headers, s.get());
      if (rc == RdKafka::ERR_NO_ERROR) {
        s.release(); // the delivery report frees it
        return;
      }
      if (rc != RdKafka::ERR__QUEUE_FULL) {
        delete headers; // produce() frees headers only on success
        std::lock_guard<std::mutex> guard{sink.mtx};
        (*b->out)[index].error = RdKafka::err2str(rc);
        ++b->done;
        return;
      }
      producer->poll(10);
    }
  }

  /// Asks the cluster where the topic's partitions are, now, once per
  /// topic. Without this, the first produce() finds the topic unknown and
  /// the client looks unknown topics up on a timer of its own (up to a
  /// second, measured 0.1-1.0 s per producer): a relay's first record after
  /// start, a lone order, waited for it. A broker that does not answer in
  /// time changes nothing: produce() then looks the topic up as before.
  void learn_topic(const std::string& name) {
    {
      std::lock_guard<std::mutex> guard{topics_mtx};
      if (!learned.insert(name).second)
        return;
    }
    std::string err;
    std::unique_ptr<RdKafka::Topic> t(
      RdKafka::Topic::create(producer.get(), name, nullptr, err));
    if (!t)
      return;
    RdKafka::Metadata* md = nullptr;
    if (producer->metadata(false, t.get(), &md, topic_metadata_timeout_ms) ==
        RdKafka::ERR_NO_ERROR)
      delete md;
  }

  /// Waits until every report of `b` (`expected` of them) arrived, serving
  /// reports (its own and other callers') while no other caller does. The
  /// producer fails every message after message.timeout.ms, so this
  /// terminates.
  void await_reports(report_batch& b, size_t expected) {
    std::unique_lock<std::mutex> lock{sink.mtx};
    while (b.done < expected) {
      if (sink.serving) {
        sink.reported.wait(lock);
        continue;
      }
      sink.serving = true;
      lock.unlock();
      producer->poll(50);
      lock.lock();
      sink.serving = false;
      // A caller still waiting takes the serving over.
      sink.reported.notify_all();
    }
    lock.unlock();
    std::string reason;
    if (producer->fatal_error(reason) != RdKafka::ERR_NO_ERROR)
      throw std::runtime_error("kafka producer failed fatally: " + reason);
  }

  /// Gives up on `b`: its reports will still come, and find it abandoned.
  void abandon(report_batch& b) {
    std::lock_guard<std::mutex> guard{sink.mtx};
    b.abandoned = true;
  }

  delivery
  publish_raw(const std::string& to, const std::string& key,
              const std::string& value,
              const std::vector<std::pair<std::string, std::string>>& headers) {
    learn_topic(to);
    std::vector<delivery> out(1);
    auto b = std::make_shared<report_batch>();
    b->out = &out;
    auto* h = RdKafka::Headers::create();
    for (auto& [k, v] : headers)
      h->add(k, v);
    produce(to, key, value, h, b, 0);
    await_reports(*b, 1);
    return out[0];
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
  impl_->learn_topic(topic);
}

outbox_producer::~outbox_producer() {
  auto& p = *impl_->producer;
  p.flush(1000);
  // What is still queued or in flight is failed now; serving its reports
  // frees their slots (no caller waits for them any more).
  p.purge(RdKafka::Producer::PURGE_QUEUE | RdKafka::Producer::PURGE_INFLIGHT);
  for (int i = 0; i < 100 && p.outq_len() > 0; ++i)
    p.poll(10);
}

bool outbox_producer::failed() const {
  std::string reason;
  return impl_->producer->fatal_error(reason) != RdKafka::ERR_NO_ERROR;
}

std::vector<delivery>
outbox_producer::publish(const std::vector<order_event>& events,
                         const std::function<void()>& after_send) {
  std::vector<delivery> out(events.size());
  auto b = std::make_shared<report_batch>();
  b->out = &out;
  for (size_t i = 0; i < events.size(); ++i) {
    auto& ev = events[i];
    auto* headers = RdKafka::Headers::create();
    headers->add(record_header::event_id, ev.event_id);
    headers->add(record_header::event_type, ev.event_type);
    if (!ev.traceparent.empty())
      headers->add(record_header::traceparent, ev.traceparent);
    impl_->produce(impl_->topic, ev.order_id, encode_value(ev), headers, b, i);
  }
  if (after_send) {
    try {
      after_send();
    } catch (...) {
      // The caller abandons the batch with records in flight.
      impl_->abandon(*b);
      throw;
    }
  }
  impl_->await_reports(*b, events.size());
  return out;
}

delivery outbox_producer::publish_raw(
  const std::string& key, const std::string& value,
  const std::vector<std::pair<std::string, std::string>>& headers) {
  return impl_->publish_raw(impl_->topic, key, value, headers);
}

delivery outbox_producer::publish_raw_to(
  const std::string& topic, const std::string& key, const std::string& value,
  const std::vector<std::pair<std::string, std::string>>& headers) {
  return impl_->publish_raw(topic, key, value, headers);
}

producer_slot::producer_slot(connection cluster, std::string topic,
                             int delivery_timeout_ms, std::string client_id)
    : cluster_(std::move(cluster)), topic_(std::move(topic)),
      delivery_timeout_ms_(delivery_timeout_ms),
      client_id_(std::move(client_id)) {
  // nop
}

std::shared_ptr<outbox_producer> producer_slot::get() {
  std::lock_guard<std::mutex> guard{mtx_};
  auto p = current_.lock();
  if (p && !p->failed())
    return p;
  // A failed one stays with whoever still holds it (it throws on their
  // next publish); everyone asking from now on gets the new one.
  p = std::make_shared<outbox_producer>(cluster_, topic_, delivery_timeout_ms_,
                                        client_id_);
  current_ = p;
  return p;
}

} // namespace ef::kafka
