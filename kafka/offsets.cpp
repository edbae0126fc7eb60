#include "kafka/offsets.hpp"

#include "kafka/client_config.hpp"
#include "messages/record_headers.hpp"

#include <chrono>

namespace ef::kafka {

namespace {

std::unique_ptr<RdKafka::KafkaConsumer> make_reader(const connection& cluster,
                                                    const std::string& group) {
  return make_side_consumer(cluster, group, "reader");
}

/// Each partition's log start (`low`) or log end offset.
std::vector<std::int64_t> watermarks(RdKafka::KafkaConsumer& c,
                                     const std::string& topic, int partitions,
                                     int timeout_ms, bool low) {
  std::vector<std::int64_t> out;
  for (int p = 0; p < partitions; ++p) {
    int64_t start = 0, end = 0;
    auto rc = c.query_watermark_offsets(topic, p, &start, &end, timeout_ms);
    if (rc != RdKafka::ERR_NO_ERROR)
      throw std::runtime_error(
        "cannot read log " + std::string(low ? "start" : "end") + " of " +
        topic + "/" + std::to_string(p) + ": " + RdKafka::err2str(rc));
    out.push_back(low ? start : end);
  }
  return out;
}

} // namespace

struct offset_reader::clients {
  std::unique_ptr<RdKafka::KafkaConsumer> inspect;
  /// Per group: committed() answers for the group the client belongs to. A
  /// client that never subscribes never joins the group.
  std::map<std::string, std::unique_ptr<RdKafka::KafkaConsumer>> groups;
};

offset_reader::offset_reader(connection cluster)
    : cluster_(std::move(cluster)), clients_(std::make_unique<clients>()) {
  // nop
}

offset_reader::~offset_reader() {
  if (clients_->inspect)
    clients_->inspect->close();
  for (auto& [group, c] : clients_->groups)
    c->close();
}

std::vector<std::int64_t> offset_reader::log_ends(const std::string& topic,
                                                  int partitions,
                                                  int timeout_ms) {
  auto& c = clients_->inspect;
  if (!c)
    c = make_reader(cluster_, "eventforge.inspect");
  return watermarks(*c, topic, partitions, timeout_ms, false);
}

std::vector<std::int64_t> offset_reader::committed(const std::string& group,
                                                   const std::string& topic,
                                                   int partitions,
                                                   int timeout_ms) {
  auto& c = clients_->groups[group];
  if (!c)
    c = make_reader(cluster_, group);
  std::vector<RdKafka::TopicPartition*> parts;
  for (int p = 0; p < partitions; ++p)
    parts.push_back(RdKafka::TopicPartition::create(topic, p));
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

std::vector<std::int64_t> log_end_offsets(const connection& cluster,
                                          const std::string& topic,
                                          int partitions, int timeout_ms) {
  return offset_reader(cluster).log_ends(topic, partitions, timeout_ms);
}

std::vector<std::int64_t> committed_offsets(const connection& cluster,
                                            const std::string& group,
                                            const std::string& topic,
                                            int partitions, int timeout_ms) {
  return offset_reader(cluster).committed(group, topic, partitions, timeout_ms);
}

std::vector<std::int64_t> log_start_offsets(const connection& cluster,
                                            const std::string& topic,
                                            int partitions, int timeout_ms) {
  auto c = make_reader(cluster, "eventforge.inspect");
  return watermarks(*c, topic, partitions, timeout_ms, true);
}

std::vector<std::int64_t> offsets_for_time(const connection& cluster,
                                           const std::string& topic,
                                           int partitions, std::int64_t unix_ms,
                                           int timeout_ms) {
  auto ends = log_end_offsets(cluster, topic, partitions, timeout_ms);
  auto c = make_reader(cluster, "eventforge.inspect");
  std::vector<RdKafka::TopicPartition*> parts;
  for (int p = 0; p < partitions; ++p)
    parts.push_back(RdKafka::TopicPartition::create(topic, p, unix_ms));
  auto rc = c->offsetsForTimes(parts, timeout_ms);
  std::vector<std::int64_t> out;
  for (auto* tp : parts) {
    // -1: no record at or after the time, so the position is the log end.
    auto o = tp->offset();
    out.push_back(o >= 0 ? o : ends[static_cast<size_t>(tp->partition())]);
  }
  RdKafka::TopicPartition::destroy(parts);
  if (rc != RdKafka::ERR_NO_ERROR)
    throw std::runtime_error("cannot look up offsets of " + topic +
                             " by time: " + RdKafka::err2str(rc));
  return out;
}

void commit_offsets(const connection& cluster, const std::string& group,
                    const std::string& topic,
                    const std::vector<std::pair<int, std::int64_t>>& offsets) {
  // Commit as a member of the group: the broker rejects commits from outside a
  // group that has (or recently had) members. It joins as the consumers' own
  // members do (range assignment) and with a short session: a member that
  // left uncleanly would hold the next members' join until it expires.
  auto c = make_side_consumer(cluster, group, "reset",
                              {{"partition.assignment.strategy", "range"},
                               {"session.timeout.ms", "6000"},
                               {"heartbeat.interval.ms", "1500"}});
  auto rc = c->subscribe({topic});
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::vector<RdKafka::TopicPartition*> assigned;
  while (rc == RdKafka::ERR_NO_ERROR && assigned.empty() &&
         std::chrono::steady_clock::now() < deadline) {
    std::unique_ptr<RdKafka::Message> m(c->consume(100));
    c->assignment(assigned);
  }
  RdKafka::TopicPartition::destroy(assigned);
  std::vector<RdKafka::TopicPartition*> parts;
  for (auto& [p, o] : offsets)
    parts.push_back(RdKafka::TopicPartition::create(topic, p, o));
  if (rc == RdKafka::ERR_NO_ERROR)
    rc = c->commitSync(parts);
  RdKafka::TopicPartition::destroy(parts);
  c->close();
  if (rc != RdKafka::ERR_NO_ERROR)
    throw std::runtime_error("cannot commit offsets of " + group + ": " +
                             RdKafka::err2str(rc));
}

std::vector<stored_record> read_all(const connection& cluster,
                                    const std::string& topic, int partitions) {
  auto ends = log_end_offsets(cluster, topic, partitions);
  auto c = make_reader(cluster, "eventforge.inspect");
  std::vector<RdKafka::TopicPartition*> parts;
  for (int p = 0; p < partitions; ++p)
    parts.push_back(RdKafka::TopicPartition::create(
      topic, p, RdKafka::Topic::OFFSET_BEGINNING));
  c->assign(parts);
  RdKafka::TopicPartition::destroy(parts);
  std::vector<stored_record> out;
  std::vector<std::int64_t> next(partitions, 0);
  auto behind = [&] {
    for (int p = 0; p < partitions; ++p)
      if (next[p] < ends[p])
        return true;
    return false;
  };
  int idle = 0;
  while (behind() && idle < 100) { // bounded: 100 empty polls of 100 ms
    std::unique_ptr<RdKafka::Message> m(c->consume(100));
    if (!m || m->err() != RdKafka::ERR_NO_ERROR) {
      ++idle;
      continue;
    }
    idle = 0;
    stored_record r{
      m->partition(),
      m->offset(),
      m->key() ? *m->key() : "",
      std::string(static_cast<const char*>(m->payload()), m->len()),
      "",
      {}};
    if (auto* h = m->headers()) {
      for (auto& x : h->get_all()) {
        if (x.value() == nullptr)
          continue;
        std::string v(static_cast<const char*>(x.value()), x.value_size());
        if (x.key() == record_header::event_id)
          r.event_id = v;
        r.headers.emplace_back(x.key(), std::move(v));
      }
    }
    next[r.partition] = r.offset + 1;
    out.push_back(std::move(r));
  }
  c->close();
  if (behind())
    throw std::runtime_error("could not read " + topic + " to its log end");
  return out;
}

} // namespace ef::kafka
