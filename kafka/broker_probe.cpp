#include "kafka/broker_probe.hpp"

#include "kafka/client_config.hpp"
#include "messages/record_headers.hpp"

#include <chrono>
#include <map>

namespace ef::kafka {

namespace {

/// Reads single records, so a position that is gone must be an error, never
/// a silent jump to another offset.
std::unique_ptr<RdKafka::KafkaConsumer> make_client(const connection& cluster,
                                                    const std::string& group) {
  return make_side_consumer(
    cluster, group, "probe",
    {{"enable.auto.offset.store", "false"}, {"auto.offset.reset", "error"}});
}

} // namespace

struct broker_probe::impl {
  connection cluster;
  std::string topic;
  /// Never joins a group: it only reads watermarks and single records.
  std::unique_ptr<RdKafka::KafkaConsumer> reader;
  /// One handle per group whose commits we read (OffsetFetch is per group).
  std::map<std::string, std::unique_ptr<RdKafka::KafkaConsumer>> groups;
};

broker_probe::broker_probe(const connection& cluster, const std::string& topic)
    : impl_(std::make_unique<impl>()) {
  impl_->cluster = cluster;
  impl_->topic = topic;
  impl_->reader = make_client(cluster, "eventforge.probe");
}

broker_probe::~broker_probe() {
  // Neither handle ever joined a group: nothing to leave.
}

broker_probe::watermarks broker_probe::query_watermarks(std::int32_t partition,
                                                        int timeout_ms) {
  watermarks w;
  auto rc = impl_->reader->query_watermark_offsets(impl_->topic, partition,
                                                   &w.low, &w.high, timeout_ms);
  if (rc != RdKafka::ERR_NO_ERROR)
    throw std::runtime_error("cannot read the log start and end of " +
                             impl_->topic + "/" + std::to_string(partition) +
                             ": " + RdKafka::err2str(rc));
  return w;
}

std::vector<std::int64_t> broker_probe::committed(const std::string& group,
                                                  int partitions,
                                                  int timeout_ms) {
  auto& c = impl_->groups[group];
  if (!c)
    c = make_client(impl_->cluster, group);
  std::vector<RdKafka::TopicPartition*> parts;
  for (int p = 0; p < partitions; ++p)
    parts.push_back(RdKafka::TopicPartition::create(impl_->topic, p));
  auto rc = c->committed(parts, timeout_ms);
  std::vector<std::int64_t> out;
  for (auto* tp : parts)
    out.push_back(tp->offset() < 0 ? -1 : tp->offset());
  RdKafka::TopicPartition::destroy(parts);
  if (rc != RdKafka::ERR_NO_ERROR)
    throw std::runtime_error("cannot read committed offsets of " + group +
                             ": " + RdKafka::err2str(rc));
  return out;
}

std::optional<std::string> broker_probe::event_id_at(std::int32_t partition,
                                                     std::int64_t offset,
                                                     int timeout_ms) {
  auto& c = *impl_->reader;
  std::vector<RdKafka::TopicPartition*> parts{
    RdKafka::TopicPartition::create(impl_->topic, partition, offset)};
  c.assign(parts);
  RdKafka::TopicPartition::destroy(parts);
  std::optional<std::string> out;
  auto deadline =
    std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  bool answered = false;
  while (!answered && std::chrono::steady_clock::now() < deadline) {
    std::unique_ptr<RdKafka::Message> m(c.consume(100));
    if (!m || m->err() == RdKafka::ERR__TIMED_OUT)
      continue;
    if (m->err() == RdKafka::ERR__AUTO_OFFSET_RESET) {
      answered = true; // the offset is not in the log
    } else if (m->err() == RdKafka::ERR_NO_ERROR &&
               m->partition() == partition && m->offset() >= offset) {
      // A later offset first means no record sits at `offset` at all: not
      // the log we wrote. Answer "" (no event), which matches nothing.
      answered = true;
      out = std::string{};
      if (m->offset() != offset)
        continue;
      if (auto* h = m->headers())
        for (auto& x : h->get_all())
          if (x.key() == record_header::event_id && x.value() != nullptr)
            out =
              std::string(static_cast<const char*>(x.value()), x.value_size());
    }
  }
  c.unassign();
  if (!answered)
    throw std::runtime_error("cannot read " + impl_->topic + "/" +
                             std::to_string(partition) + " at offset " +
                             std::to_string(offset) + ": no answer within " +
                             std::to_string(timeout_ms) + " ms");
  return out;
}

} // namespace ef::kafka
