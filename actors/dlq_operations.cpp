#include "actors/dlq_operations.hpp"

#include "messages/ids.hpp"
#include "messages/record_headers.hpp"
#include "persistence/db_error.hpp"
#include <eventforge/config/logging.hpp>
#include <eventforge/messages/dlq_messages.hpp>

namespace ef {

dlq_operations::dlq_operations(std::string dsn, kafka::connection cluster,
                               int delivery_timeout_ms,
                               std::shared_ptr<chaos> faults)
    : dlq_operations(std::make_unique<persistence::dlq_store>(std::move(dsn)),
                     cluster.brokers.empty()
                       ? producer_factory{}
                       : producer_factory{[cluster, delivery_timeout_ms](
                                            const std::string& topic) {
                           return std::make_unique<kafka::outbox_producer>(
                             cluster, topic, delivery_timeout_ms,
                             "eventforge-dlq-replay");
                         }},
                     std::move(faults)) {
  // nop
}

dlq_operations::dlq_operations(std::unique_ptr<persistence::dlq_records> store,
                               producer_factory producers,
                               std::shared_ptr<chaos> faults)
    : faults_(std::move(faults)), store_(std::move(store)),
      make_producer_(std::move(producers)) {
  // nop
}

dlq_operations::~dlq_operations() = default;

kafka::record_publisher&
dlq_operations::producer_for(const std::string& topic) {
  auto& p = producers_[topic];
  if (!p)
    p = make_producer_(topic);
  return *p;
}

namespace {

using outcome = dlq_operations::outcome;
using result = dlq_operations::result;
using persistence::db_errc;
using persistence::db_error;

/// The answer for an action whose database step failed: nothing changed,
/// unless the connection broke during its commit.
outcome failed_step(const db_error& e, const std::string& what,
                    std::int64_t id) {
  if (e.code() == db_errc::in_doubt)
    return {result::unknown,
            what + ": the database connection broke during the commit (" +
              e.what() + "); whether it happened is unknown: GET " +
              "/admin/dlq/" + std::to_string(id) +
              " (or eventforge dlq show) tells what stands"};
  return {result::unavailable, what + " not done: the database failed (" +
                                 std::string(e.what()) + "); nothing changed"};
}

/// Why entry `id` cannot be replayed.
std::string replay_refusal(std::int64_t id,
                           const persistence::replay_refusal& why) {
  auto entry = "DLQ entry " + std::to_string(id);
  const auto& status = why.status;
  if (status.empty())
    return "no DLQ entry " + std::to_string(id);
  if (why.behind != 0)
    return entry + " waits behind entry " + std::to_string(why.behind) +
           " of its order (" + why.behind_status +
           "): an order's events are applied in order, so decide entry " +
           std::to_string(why.behind) +
           " first (replay or discard it); this one is then released by "
           "itself";
  if (status == dlq_status::replaying)
    return entry + " is being replayed already (the DLQ handler publishes "
                   "it again if that publish fails)";
  if (status == dlq_status::replayed)
    return entry + " was replayed already; it is replayed again only if its "
                   "consumer fails it again and parks it anew";
  if (status == dlq_status::discarded)
    return entry + " was discarded: its event is never applied";
  return entry + " is " + status + ", only parked entries can be replayed";
}

} // namespace

outcome dlq_operations::replay(std::int64_t id, const std::string& actor,
                               const std::string& action) {
  return start_replay(id, actor, action, {});
}

outcome dlq_operations::start_replay(std::int64_t id, const std::string& actor,
                                     const std::string& action,
                                     const persistence::replay_start& how) {
  // Step 1: the intent is durable before anything is published. Each
  // consumer decides from its own entry's status, and the record must never
  // overtake that decision: from now on the entry says "replaying", so the
  // consumer that parked it applies the record whenever it arrives.
  auto start = how;
  start.publish_now = how.publish_now && make_producer_ != nullptr;
  persistence::replay_refusal why;
  std::optional<persistence::dlq_entry> e;
  try {
    e = store_->begin_replay(id, why, start);
  } catch (const db_error& err) {
    return failed_step(err, action + " of DLQ entry " + std::to_string(id), id);
  }
  if (!e)
    return {result::refused, replay_refusal(id, why)};
  if (!start.publish_now) {
    note_action(e->id, action, actor,
                "recorded; published by the DLQ handler at its next sweep");
    return {result::pending,
            action + " of entry " + std::to_string(id) +
              " recorded; the DLQ handler publishes it within seconds",
            dlq_status::replaying};
  }
  return publish_replay(*e, actor, action);
}

void dlq_operations::note_action(std::int64_t id, const std::string& action,
                                 const std::string& actor,
                                 const std::string& what) {
  try {
    store_->record_action(id, action, actor, what);
  } catch (const db_error& err) {
    // The audit line only; the entry's status says what stands.
    ef::log::warn("dlq: entry {}: action not recorded ({}): {}", id, err.what(),
                  what);
  }
}

outcome dlq_operations::publish_replay(const persistence::dlq_entry& e,
                                       const std::string& actor,
                                       const std::string& action) {
  auto crash_key =
    e.consumer + "/" + chaos_key(e.traceparent, e.event_type, e.event_id);
  crash_site site{e.order_key, is_uuid(e.event_id) ? e.event_id : "",
                  e.consumer};
  if (faults_)
    faults_->check(crash_point::dlq_replay_after_mark_before_publish, crash_key,
                   site);
  auto entry = std::to_string(e.id);
  // From here the entry is "replaying": whatever fails, the DLQ handler's
  // sweep publishes it again (or gives up after dlq.replay-give-up-ms), so
  // the answer says so rather than "failed".
  auto pending = [&](const std::string& why) {
    try {
      store_->replay_failed(e.id, action, actor, why);
    } catch (const db_error& err) {
      ef::log::warn("dlq: entry {}: failed publish not recorded ({}): {}", e.id,
                    err.what(), why);
    }
    return outcome{result::pending,
                   action + " of " + entry +
                     " recorded but not acknowledged (" + why +
                     "); the entry stays replaying and the DLQ "
                     "handler publishes it again",
                   dlq_status::replaying};
  };
  // Step 2.
  std::vector<std::pair<std::string, std::string>> headers{
    {record_header::dlq_replay_of, entry}};
  if (is_uuid(e.event_id))
    headers.emplace_back(record_header::event_id, e.event_id);
  if (!e.event_type.empty())
    headers.emplace_back(record_header::event_type, e.event_type);
  if (!e.traceparent.empty())
    headers.emplace_back(record_header::traceparent, e.traceparent);
  kafka::delivery d;
  try {
    d = producer_for(e.source_topic).publish_raw(e.key, e.value, headers);
  } catch (const std::exception& err) {
    return pending(std::string("no producer: ") + err.what());
  }
  if (!d.persisted)
    return pending(d.error);
  if (faults_)
    faults_->check(crash_point::dlq_replay_after_publish_before_mark, crash_key,
                   site);
  // Step 3.
  auto where = "partition " + std::to_string(d.partition) + " offset " +
               std::to_string(d.offset);
  try {
    store_->finish_replay(e.id, d.partition, d.offset, action, actor,
                          "published");
  } catch (const db_error& err) {
    // Published and acknowledged: the replay happened. Only its mark is
    // missing, and the sweep publishes it once more (a suppressed
    // duplicate) and marks it.
    ef::log::warn("dlq: entry {} replayed ({}) but not marked: {}", e.id, where,
                  err.what());
    return {result::done,
            "replayed entry " + entry + " (event " + e.event_id + ", " + where +
              "); its entry stays replaying until the DLQ handler "
              "marks it (" +
              err.what() + ")",
            dlq_status::replaying};
  }
  ef::log::info("dlq: {} entry {} (event {} order {}) by {}", action, e.id,
                e.event_id, e.order_key, actor);
  return {result::done,
          "replayed entry " + entry + " (event " + e.event_id + ", " + where +
            ")",
          dlq_status::replayed};
}

outcome dlq_operations::discard(std::int64_t id, const std::string& actor) {
  auto what = "discard of DLQ entry " + std::to_string(id);
  std::optional<persistence::dlq_entry> e;
  persistence::discard_result r;
  try {
    e = store_->get(id);
    if (!e)
      return {result::refused, "no DLQ entry " + std::to_string(id)};
    r = store_->discard(id, actor);
  } catch (const db_error& err) {
    return failed_step(err, what, id);
  }
  switch (r) {
  case persistence::discard_result::not_parked:
    return {result::refused,
            "DLQ entry " + std::to_string(id) + " is " + e->status +
              ": only a parked entry, or a replay no broker acknowledged, "
              "can be discarded"};
  case persistence::discard_result::already_applied:
    return {result::refused, "DLQ entry " + std::to_string(id) + ": " +
                               e->consumer + " applied event " + e->event_id +
                               " meanwhile, so it cannot be discarded"};
  case persistence::discard_result::discarded:
    break;
  }
  ef::log::info("dlq: discarded entry {} (event {} order {}) by {}", id,
                e->event_id, e->order_key, actor);
  return {result::done,
          "discarded entry " + std::to_string(id) + "; " +
            after_discard(*e, actor),
          dlq_status::discarded};
}

std::string dlq_operations::after_discard(const persistence::dlq_entry& e,
                                          const std::string& actor) {
  // The discard is committed: the answer says so whatever the release does.
  // A release that fails is the DLQ handler's (release_orphans).
  auto of_order = " of order " + e.order_key + " for " + e.consumer;
  auto not_now = [&](const std::string& why) {
    return "the next parked entry" + of_order + " was not released now (" +
           why + "): the DLQ handler releases it";
  };
  try {
    if (auto before = store_->blocker_of(e.id))
      return "entry " + std::to_string(before->id) + of_order +
             " before it is still " + before->status +
             ", so nothing else changed";
    auto released = release_after(e.id, actor);
    if (!released)
      return "no parked entry" + of_order + " follows it";
    if (released->what != result::done && released->what != result::pending)
      return not_now(released->message);
    return "released the next parked entry" + of_order + ": " +
           released->message;
  } catch (const std::exception& err) {
    return not_now(err.what());
  }
}

std::optional<outcome> dlq_operations::release_after(std::int64_t decided,
                                                     const std::string& actor) {
  auto next = store_->next_after(decided);
  if (!next)
    return std::nullopt;
  persistence::replay_start how;
  how.released_by = decided;
  auto r = start_replay(*next, actor, "release", how);
  // Something before it other than `decided` is still undecided (or it was
  // taken meanwhile): nothing is released now.
  if (r.what == result::refused)
    return std::nullopt;
  return r;
}

} // namespace ef
