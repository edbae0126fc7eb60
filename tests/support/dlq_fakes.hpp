#pragma once

// The DLQ's fakes for deterministic actor tests: a store over in-memory
// entries with the head rule of docs/dlq.md (an order's entries, per
// consumer, in id order), a replay producer and the DLQ topic's consumer.
// Every call that changes something goes into one log, in order.

#include "actors/dlq_operations.hpp"
#include "kafka/group_client.hpp"
#include "messages/record_headers.hpp"
#include <eventforge/messages/dlq_messages.hpp>

#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace ef::test {

using persistence::dlq_entry;

/// The DLQ's entries, the DLQ topic, and what was done to them, in order.
struct dlq_world {
  std::map<std::int64_t, dlq_entry> entries;
  std::set<std::int64_t> published; ///< replays the broker acknowledged
  std::set<std::int64_t> overdue;   ///< replays past their give-up time
  std::vector<std::string> log;
  std::deque<partition_record> topic; ///< DLQ records not yet polled
  int failing_publishes = 0;          ///< the next n publishes fail
  std::int64_t next_offset = 100;     ///< where the next replay lands

  void add(std::int64_t id, const std::string& order, const char* status,
           const std::string& consumer = "billing") {
    dlq_entry e;
    e.id = id;
    e.consumer = consumer;
    e.event_id = "event-" + std::to_string(id);
    e.order_key = e.key = order;
    e.value = "{}";
    e.source_topic = "orders";
    e.error_class = "parked_behind";
    e.status = status;
    entries[id] = e;
  }
  std::string status(std::int64_t id) { return entries.at(id).status; }
  bool undecided(const dlq_entry& e) const {
    return e.status == dlq_status::parked || e.status == dlq_status::replaying;
  }
  /// The earliest undecided entry of `id`'s order before it, but `except`.
  const dlq_entry* blocker(std::int64_t id, std::int64_t except = 0) const {
    auto& me = entries.at(id);
    for (auto& [other, e] : entries)
      if (other < id && other != except && e.consumer == me.consumer &&
          e.order_key == me.order_key && undecided(e))
        return &e;
    return nullptr;
  }
};

struct fake_dlq_store : persistence::dlq_records {
  std::shared_ptr<dlq_world> w;
  explicit fake_dlq_store(std::shared_ptr<dlq_world> wd) : w(std::move(wd)) {}

  persistence::parked_entry park(const dlq_entry& e,
                                 persistence::park_as) override {
    w->log.push_back("park " + e.consumer + "/" + e.event_id);
    for (auto& [id, old] : w->entries)
      if (old.consumer == e.consumer && old.event_id == e.event_id)
        return {id, old.status};
    auto id = static_cast<std::int64_t>(w->entries.size()) + 1;
    w->entries[id] = e;
    w->entries[id].id = id;
    w->entries[id].status = dlq_status::parked;
    return {id, dlq_status::parked};
  }
  std::string undecodable_key(const std::string& key,
                              const std::string& value) override {
    return "bytes:" + key + value;
  }
  std::set<std::string> parked_orders(const std::string& consumer) override {
    std::set<std::string> out;
    for (auto& [id, e] : w->entries)
      if (e.consumer == consumer && e.status == dlq_status::parked)
        out.insert(e.order_key);
    return out;
  }
  std::optional<dlq_entry> head_of(const std::string& consumer,
                                   const std::string& order_key) override {
    for (auto& [id, e] : w->entries)
      if (e.consumer == consumer && e.order_key == order_key &&
          e.status == dlq_status::parked)
        return e;
    return std::nullopt;
  }
  std::optional<dlq_entry> blocker_of(std::int64_t id) override {
    if (auto* b = w->blocker(id))
      return *b;
    return std::nullopt;
  }
  std::optional<std::int64_t> next_after(std::int64_t id) override {
    auto& me = w->entries.at(id);
    for (auto& [other, e] : w->entries)
      if (other > id && e.consumer == me.consumer &&
          e.order_key == me.order_key && e.status == dlq_status::parked)
        return other;
    return std::nullopt;
  }
  std::optional<std::string> status_of(const std::string& consumer,
                                       const std::string& event_id) override {
    for (auto& [id, e] : w->entries)
      if (e.consumer == consumer && e.event_id == event_id)
        return e.status;
    return std::nullopt;
  }
  std::optional<dlq_entry> get(std::int64_t id) override {
    auto i = w->entries.find(id);
    if (i == w->entries.end())
      return std::nullopt;
    return i->second;
  }
  std::vector<dlq_entry> list(const std::string& status, int) override {
    std::vector<dlq_entry> out;
    for (auto& [id, e] : w->entries)
      if (status.empty() || e.status == status)
        out.insert(out.begin(), e);
    return out;
  }
  std::vector<persistence::dlq_group> groups() override { return {}; }
  std::vector<dlq_entry> in_group(const std::string&) override { return {}; }
  std::optional<dlq_entry>
  begin_replay(std::int64_t id, persistence::replay_refusal& why,
               const persistence::replay_start& how) override {
    auto e = get(id);
    if (!e || e->status != dlq_status::parked) {
      why.status = e ? e->status : "";
      return std::nullopt;
    }
    if (auto* b = w->blocker(id, how.released_by)) {
      why.status = e->status;
      why.behind = b->id;
      why.behind_status = b->status;
      return std::nullopt;
    }
    w->log.push_back("begin_replay " + std::to_string(id) +
                     (how.publish_now ? "" : " later"));
    w->entries[id].status = dlq_status::replaying;
    return w->entries[id];
  }
  std::optional<std::pair<std::string, std::string>>
  replay_target(std::int64_t id) override {
    auto e = get(id);
    if (!e)
      return std::nullopt;
    return std::make_pair(e->consumer, e->status);
  }
  void finish_replay(std::int64_t id, std::int32_t, std::int64_t,
                     const std::string&, const std::string&,
                     const std::string&) override {
    w->log.push_back("finish_replay " + std::to_string(id));
    w->published.insert(id);
    if (w->entries[id].status == dlq_status::replaying)
      w->entries[id].status = dlq_status::replayed;
  }
  void record_action(std::int64_t id, const std::string&, const std::string&,
                     const std::string&) override {
    w->log.push_back("record_action " + std::to_string(id));
  }
  void replay_failed(std::int64_t id, const std::string&, const std::string&,
                     const std::string& error) override {
    w->log.push_back("replay_failed " + std::to_string(id));
    w->entries[id].replay_error = error;
  }
  std::vector<dlq_entry> claim_stale_replays(std::chrono::milliseconds,
                                             int limit) override {
    std::vector<dlq_entry> out;
    for (auto& [id, e] : w->entries)
      if (e.status == dlq_status::replaying &&
          static_cast<int>(out.size()) < limit)
        out.push_back(e);
    return out;
  }
  std::vector<dlq_entry> give_up_replays(std::chrono::milliseconds,
                                         int) override {
    std::vector<dlq_entry> out;
    for (auto id : w->overdue)
      if (w->entries[id].status == dlq_status::replaying &&
          w->published.count(id) == 0) {
        w->log.push_back("give_up " + std::to_string(id));
        out.push_back(w->entries[id]);
        w->entries[id].status = dlq_status::parked;
      }
    return out;
  }
  persistence::discard_result discard(std::int64_t id,
                                      const std::string&) override {
    auto e = get(id);
    bool never_published =
      e && e->status == dlq_status::replaying && w->published.count(id) == 0;
    if (!e || (e->status != dlq_status::parked && !never_published))
      return persistence::discard_result::not_parked;
    w->log.push_back("discard " + std::to_string(id));
    w->entries[id].status = dlq_status::discarded;
    return persistence::discard_result::discarded;
  }
  std::vector<std::int64_t> orphaned_heads(int) override { return {}; }
};

struct fake_replay_producer : kafka::record_publisher {
  std::shared_ptr<dlq_world> w;
  std::string topic;
  fake_replay_producer(std::shared_ptr<dlq_world> wd, std::string t)
      : w(std::move(wd)), topic(std::move(t)) {}

  kafka::delivery publish_raw(
    const std::string&, const std::string&,
    const std::vector<std::pair<std::string, std::string>>& headers) override {
    std::string of;
    for (auto& [k, v] : headers)
      if (k == record_header::dlq_replay_of)
        of = v;
    w->log.push_back("publish " + of + " to " + topic);
    if (w->failing_publishes > 0) {
      --w->failing_publishes;
      return {false, "Local: Message timed out", -1, -1};
    }
    return {true, "", 0, w->next_offset++};
  }
};

struct fake_dlq_consumer : kafka::group_client {
  std::shared_ptr<dlq_world> w;
  explicit fake_dlq_consumer(std::shared_ptr<dlq_world> wd)
      : w(std::move(wd)) {}

  std::optional<partition_record> poll(int) override {
    if (w->topic.empty())
      return std::nullopt;
    auto r = w->topic.front();
    w->topic.pop_front();
    return r;
  }
  caf::error commit(
    const std::vector<std::pair<std::int32_t, std::int64_t>>& next) override {
    for (auto& [p, o] : next)
      w->log.push_back("commit " + std::to_string(p) + ":" + std::to_string(o));
    return {};
  }
  std::int64_t committed(std::int32_t) override { return -1; }
  void seek(std::int32_t, std::int64_t) override {}
  void restart_at(const std::map<std::int32_t, std::int64_t>&,
                  const std::set<std::int32_t>&) override {}
  watermarks query_watermarks(std::int32_t) override { return {}; }
  void pause(std::int32_t) override {}
  void resume(std::int32_t) override {}
  void close() override {}
};

} // namespace ef::test
