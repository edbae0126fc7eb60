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
    : dlq_operations(
        std::make_unique<persistence::dlq_store>(std::move(dsn)),
        [cluster = std::move(cluster),
         delivery_timeout_ms](const std::string& topic) {
          return std::make_unique<kafka::outbox_producer>(
            cluster, topic, delivery_timeout_ms, "eventforge-dlq-replay");
        },
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

/// Why an entry in `status` cannot be replayed.
std::string replay_refusal(std::int64_t id, const std::string& status) {
  auto entry = "DLQ entry " + std::to_string(id);
  if (status.empty())
    return "no DLQ entry " + std::to_string(id);
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
  // Step 1: the intent is durable before anything is published. Each
  // consumer decides from its own entry's status, and the record must never
  // overtake that decision: from now on the entry says "replaying", so the
  // consumer that parked it applies the record whenever it arrives.
  std::string refused;
  std::optional<persistence::dlq_entry> e;
  try {
    e = store_->begin_replay(id, refused);
  } catch (const db_error& err) {
    return failed_step(err, "replay of DLQ entry " + std::to_string(id), id);
  }
  if (!e)
    return {result::refused, replay_refusal(id, refused)};
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
  // sweep publishes it again, so the answer says so rather than "failed".
  auto pending = [&](const std::string& why) {
    note_action(e.id, action, actor,
                "not acknowledged: " + why +
                  "; stays replaying, published again by the DLQ handler");
    return outcome{result::pending,
                   "replay of " + entry + " recorded but not acknowledged (" +
                     why +
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

int dlq_operations::sweep_replays(std::chrono::milliseconds grace, int limit) {
  int done = 0;
  for (auto& e : store_->claim_stale_replays(grace, limit)) {
    ef::log::warn("dlq: entry {} (event {} order {}) was left replaying "
                  "(a crash or a failed publish); publishing it again",
                  e.id, e.event_id, e.order_key);
    if (publish_replay(e, "dlq-sweeper", "replay").ok())
      ++done;
  }
  return done;
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
    return {result::refused, "DLQ entry " + std::to_string(id) + " is " +
                               e->status +
                               ", only parked entries can be discarded"};
  case persistence::discard_result::already_applied:
    return {result::refused,
            "DLQ entry " + std::to_string(id) + ": " + e->consumer +
              " applied event " + e->event_id +
              " meanwhile, so it cannot be discarded (a replay of the entry "
              "is suppressed and releases the order's next parked event)"};
  case persistence::discard_result::discarded:
    break;
  }
  ef::log::info("dlq: discarded entry {} (event {} order {}) by {}", id,
                e->event_id, e->order_key, actor);
  // The discard is committed: the answer says so whatever the release does.
  // A release that fails is the DLQ handler's (release_orphans).
  std::string released;
  auto not_now = [&](const std::string& why) {
    return "; the next parked event of order " + e->order_key +
           " was not released now (" + why + "): the DLQ handler releases it";
  };
  try {
    if (auto r = release_next(e->consumer, e->order_key, actor))
      released = r->what == result::done || r->what == result::pending
                   ? "; released the next parked event of order " + e->order_key
                   : not_now(r->message);
  } catch (const std::exception& err) {
    released = not_now(err.what());
  }
  return {result::done, "discarded entry " + std::to_string(id) + released,
          dlq_status::discarded};
}

std::optional<outcome>
dlq_operations::release_next(const std::string& consumer,
                             const std::string& order_key,
                             const std::string& actor) {
  auto next = store_->head_of(consumer, order_key);
  if (!next)
    return std::nullopt;
  return replay(next->id, actor, "release");
}

int dlq_operations::release_orphans(int limit) {
  int released = 0;
  for (auto id : store_->orphaned_heads(limit)) {
    ef::log::warn("dlq: entry {} waits behind discarded events only (a "
                  "release that failed); releasing it",
                  id);
    auto r = replay(id, "dlq-sweeper", "release");
    released += r.what == result::done || r.what == result::pending;
  }
  return released;
}

} // namespace ef
