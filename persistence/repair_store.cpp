#include "persistence/repair_store.hpp"

#include "persistence/connection.hpp"
#include "persistence/lock_classes.hpp"

namespace ef::persistence {

namespace {

/// SQL condition on outbox row `o`: one of the consumers in the text[]
/// parameter `param` has neither applied it (processed_events) nor parked it
/// (dlq_events). The one definition of "this consumer still needs it".
std::string unapplied_by_any(const std::string& param) {
  return "EXISTS (SELECT 1 FROM unnest(" + param +
         "::text[]) AS c(name) WHERE NOT EXISTS (SELECT 1 FROM "
         "processed_events p WHERE p.consumer = c.name AND p.event_id = "
         "o.event_id) AND NOT EXISTS (SELECT 1 FROM dlq_events d WHERE "
         "d.consumer = c.name AND d.event_id = o.event_id::text))";
}

/// Queues a row again: unsent, so the relay of its shard republishes it in
/// seq order (an UPDATE trigger wakes that relay).
constexpr const char* requeue =
  "UPDATE outbox o SET sent_at = NULL, republish_count = republish_count + 1";

void log_republish(pqxx::work& w, const std::string& actor,
                   const std::string& reason, const std::string& consumer,
                   const std::string& scope, long events, bool dry_run) {
  w.exec_params("INSERT INTO republish_log (actor, reason, consumer, scope, "
                "events, dry_run) VALUES ($1, $2, $3, $4, $5, $6)",
                actor, reason,
                consumer.empty() ? std::optional<std::string>{}
                                 : std::optional<std::string>{consumer},
                scope, events, dry_run);
}

/// Queues the unapplied rows of one consumer gap; returns how many.
long requeue_gap(pqxx::work& w, const std::string& consumer, int epoch,
                 std::int32_t partition, std::int64_t from, std::int64_t to) {
  auto r = w.exec_params(std::string(requeue) +
                           " WHERE o.epoch = $1 AND o.kafka_partition = $2 "
                           "AND o.kafka_offset >= $3 AND o.kafka_offset < $4 "
                           "AND o.sent_at IS NOT NULL AND " +
                           unapplied_by_any("$5"),
                         epoch, partition, from, to, array_literal({consumer}));
  return static_cast<long>(r.affected_rows());
}

} // namespace

std::string republish_scope::describe() const {
  std::string out;
  auto add = [&](const std::string& s) { out += (out.empty() ? "" : " ") + s; };
  add("consumers=" + array_literal(consumers));
  if (from_seq)
    add("from-seq=" + std::to_string(*from_seq));
  if (to_seq)
    add("to-seq=" + std::to_string(*to_seq));
  if (since)
    add("since=" + *since);
  if (until)
    add("until=" + *until);
  return out;
}

repair_store::repair_store(std::string dsn)
    : db_(std::make_unique<session>(std::move(dsn), nullptr)) {
  // nop
}

repair_store::~repair_store() = default;

int repair_store::current_epoch() {
  return db_->run([&](pqxx::connection& c) {
    pqxx::nontransaction t(c);
    return t.exec1("SELECT max(epoch) FROM broker_epochs")[0].as<int>();
  });
}

bool repair_store::hold_repairer_lease() {
  return db_->run([&](pqxx::connection& c) {
    pqxx::nontransaction t(c);
    // Already ours on this session? (Taking it twice would stack it.)
    if (!t.exec_params("SELECT 1 FROM pg_locks WHERE locktype = 'advisory' "
                       "AND classid = $1 AND objid = 0 AND objsubid = 2 AND "
                       "granted AND pid = pg_backend_pid()",
                       repairer_lock_class)
           .empty())
      return true;
    return t
      .exec_params1("SELECT pg_try_advisory_lock($1, 0)",
                    repairer_lock_class)[0]
      .as<bool>();
  });
}

gap_record repair_store::record_gap(const std::string& consumer,
                                    std::int32_t partition, std::int64_t from,
                                    std::int64_t to, std::int64_t log_end) {
  gap_record out;
  db_->run([&](pqxx::connection& c) {
    pqxx::work w(c);
    out.epoch = w.exec1("SELECT max(epoch) FROM broker_epochs")[0].as<int>();
    if (to <= from)
      return; // a first start at the log start: nothing was skipped
    out.at_risk = requeue_gap(w, consumer, out.epoch, partition, from, to);
    w.exec_params("INSERT INTO consumer_gaps (consumer, kafka_partition, "
                  "epoch, from_offset, to_offset, log_end, at_risk, "
                  "republished) VALUES ($1, $2, $3, $4, $5, $6, $7, $7)",
                  consumer, partition, out.epoch, from, to, log_end,
                  out.at_risk);
    if (out.at_risk > 0)
      log_republish(w, "consumer:" + consumer, "consumer_gap", consumer,
                    "epoch=" + std::to_string(out.epoch) +
                      " partition=" + std::to_string(partition) + " offsets=[" +
                      std::to_string(from) + "," + std::to_string(to) + ")",
                    out.at_risk, false);
    w.commit();
  });
  return out;
}

long repair_store::resweep_recent_gaps(int window_s) {
  long total = 0;
  db_->run([&](pqxx::connection& c) {
    pqxx::work w(c);
    auto gaps = w.exec_params(
      "SELECT id, consumer, epoch, kafka_partition, from_offset, to_offset "
      "FROM consumer_gaps WHERE detected_at > clock_timestamp() - "
      "make_interval(secs => $1) AND to_offset > from_offset",
      window_s);
    for (const auto& g : gaps) {
      auto n = requeue_gap(w, g[1].as<std::string>(), g[2].as<int>(),
                           g[3].as<std::int32_t>(), g[4].as<std::int64_t>(),
                           g[5].as<std::int64_t>());
      w.exec_params("UPDATE consumer_gaps SET last_swept_at = "
                    "clock_timestamp(), republished = republished + $2 "
                    "WHERE id = $1",
                    g[0].as<std::int64_t>(), n);
      if (n > 0)
        log_republish(w, "repairer", "consumer_gap_late_mark",
                      g[1].as<std::string>(), "gap " + g[0].as<std::string>(),
                      n, false);
      total += n;
    }
    w.commit();
  });
  return total;
}

std::optional<broker_witness> repair_store::witness_of(std::int32_t partition) {
  return db_->run([&](pqxx::connection& c) -> std::optional<broker_witness> {
    pqxx::nontransaction t(c);
    auto epoch = t.exec1("SELECT max(epoch) FROM broker_epochs")[0].as<int>();
    auto r = t.exec_params("SELECT kafka_offset, event_id::text FROM "
                           "broker_witness WHERE kafka_partition = $1 AND "
                           "epoch = $2",
                           partition, epoch);
    if (r.empty())
      r = t.exec_params("SELECT kafka_offset, event_id::text FROM outbox "
                        "WHERE epoch = $2 AND kafka_partition = $1 ORDER BY "
                        "kafka_offset DESC LIMIT 1",
                        partition, epoch);
    if (r.empty())
      return std::nullopt;
    return broker_witness{epoch, partition, r[0][0].as<std::int64_t>(),
                          r[0][1].as<std::string>()};
  });
}

std::optional<broker_witness>
repair_store::newest_position(std::int32_t partition) {
  return db_->run([&](pqxx::connection& c) -> std::optional<broker_witness> {
    pqxx::nontransaction t(c);
    auto r = t.exec_params(
      "SELECT epoch, kafka_offset, event_id::text FROM outbox WHERE epoch = "
      "(SELECT max(epoch) FROM broker_epochs) AND kafka_partition = $1 "
      "ORDER BY kafka_offset DESC LIMIT 1",
      partition);
    if (r.empty())
      return std::nullopt;
    return broker_witness{r[0][0].as<int>(), partition,
                          r[0][1].as<std::int64_t>(),
                          r[0][2].as<std::string>()};
  });
}

void repair_store::save_witness(const broker_witness& x) {
  db_->run([&](pqxx::connection& c) {
    pqxx::work w(c);
    w.exec_params("INSERT INTO broker_witness (kafka_partition, epoch, "
                  "kafka_offset, event_id) VALUES ($1, $2, $3, $4) ON "
                  "CONFLICT (kafka_partition) DO UPDATE SET epoch = "
                  "EXCLUDED.epoch, kafka_offset = EXCLUDED.kafka_offset, "
                  "event_id = EXCLUDED.event_id, verified_at = "
                  "clock_timestamp()",
                  x.partition, x.epoch, x.offset, x.event_id);
    w.commit();
  });
}

int repair_store::begin_epoch(const std::string& reason) {
  return db_->run([&](pqxx::connection& c) {
    pqxx::work w(c);
    // Waits for every mark in flight; later marks see the new epoch.
    w.exec_params("SELECT pg_advisory_xact_lock($1, 0)", epoch_lock_class);
    auto epoch =
      w.exec_params1("INSERT INTO broker_epochs (epoch, reason) SELECT "
                     "max(epoch) + 1, $1 FROM broker_epochs RETURNING epoch",
                     reason)[0]
        .as<int>();
    w.exec("DELETE FROM broker_witness");
    w.commit();
    return epoch;
  });
}

long repair_store::sweep_old_epochs(const std::vector<std::string>& consumers,
                                    int batch_size) {
  long total = 0;
  return db_->run([&](pqxx::connection& c) -> long {
    int epoch = 0;
    {
      pqxx::nontransaction t(c);
      auto r = t.exec1("SELECT epoch, swept_at IS NULL FROM broker_epochs "
                       "ORDER BY epoch DESC LIMIT 1");
      if (!r[1].as<bool>())
        return 0;
      epoch = r[0].as<int>();
    }
    // Walk the whole outbox in seq order, batch by batch, so that each
    // transaction stays short and rows applied by everyone are read once.
    std::int64_t after = 0;
    for (;;) {
      pqxx::work w(c);
      auto r = w.exec_params1(
        "WITH scan AS (SELECT seq FROM outbox WHERE seq > $1 ORDER BY seq "
        "LIMIT $2), gone AS (" +
          std::string(requeue) +
          " FROM scan WHERE o.seq = scan.seq AND o.sent_at IS NOT NULL AND "
          "coalesce(o.epoch, 0) < $3 AND " +
          unapplied_by_any("$4") +
          " RETURNING 1) SELECT (SELECT max(seq) FROM scan), (SELECT count(*) "
          "FROM gone)",
        after, batch_size, epoch, array_literal(consumers));
      if (r[0].is_null()) {
        w.exec_params("UPDATE broker_epochs SET swept_at = clock_timestamp() "
                      "WHERE epoch <= $1 AND swept_at IS NULL",
                      epoch);
        log_republish(w, "repairer", "broker_epoch", "",
                      "rows published before epoch " + std::to_string(epoch),
                      total, false);
        w.commit();
        return total;
      }
      after = r[0].as<std::int64_t>();
      total += r[1].as<long>();
      w.commit();
    }
  });
}

long repair_store::republish(const republish_scope& scope, bool dry_run,
                             const std::string& actor) {
  return db_->run([&](pqxx::connection& c) {
    pqxx::work w(c);
    std::string where = "o.sent_at IS NOT NULL AND " + unapplied_by_any("$1") +
                        " AND ($2::bigint IS NULL OR o.seq >= $2) AND "
                        "($3::bigint IS NULL OR o.seq <= $3) AND "
                        "($4::timestamptz IS NULL OR o.created_at >= $4) AND "
                        "($5::timestamptz IS NULL OR o.created_at < $5)";
    auto args = [&](auto&& run) {
      return run(array_literal(scope.consumers), scope.from_seq, scope.to_seq,
                 scope.since, scope.until);
    };
    long n = 0;
    if (dry_run) {
      n = args([&](auto&&... a) {
        return w
          .exec_params1("SELECT count(*) FROM outbox o WHERE " + where, a...)[0]
          .template as<long>();
      });
    } else {
      n = args([&](auto&&... a) {
        return static_cast<long>(
          w.exec_params(std::string(requeue) + " WHERE " + where, a...)
            .affected_rows());
      });
    }
    log_republish(w, actor, "operator",
                  scope.consumers.size() == 1 ? scope.consumers[0] : "",
                  scope.describe(), n, dry_run);
    w.commit();
    return n;
  });
}

repair_summary repair_store::summary() {
  repair_summary out;
  db_->run([&](pqxx::connection& c) {
    pqxx::read_transaction t(c);
    auto r = t.exec1(
      "SELECT (SELECT max(epoch) FROM broker_epochs), (SELECT count(*) FROM "
      "consumer_gaps), (SELECT coalesce(sum(events), 0) FROM republish_log "
      "WHERE NOT dry_run)");
    out.epoch = r[0].as<int>();
    out.gaps = r[1].as<long>();
    out.republished_total = r[2].as<long>();
    for (const auto& g :
         t.exec("SELECT consumer, kafka_partition, from_offset, to_offset, "
                "at_risk, extract(epoch FROM clock_timestamp() - "
                "detected_at)::float8 FROM consumer_gaps ORDER BY id DESC "
                "LIMIT 10"))
      out.recent.push_back({g[0].as<std::string>(), g[1].as<std::int32_t>(),
                            g[2].as<std::int64_t>(), g[3].as<std::int64_t>(),
                            g[4].as<long>(), g[5].as<double>()});
  });
  return out;
}

} // namespace ef::persistence
