#include "persistence/migrations.hpp"

#include "persistence/connection.hpp"
#include "persistence/lock_classes.hpp"

namespace ef::persistence {

namespace {

const char* v1_core = R"sql(
CREATE TABLE orders (
  id                  uuid PRIMARY KEY,
  customer_id         text NOT NULL,
  status              text NOT NULL
                        CHECK (status IN ('created', 'processed', 'cancelled')),
  total_cents         bigint NOT NULL CHECK (total_cents >= 0),
  created_at          timestamptz NOT NULL DEFAULT clock_timestamp(),
  updated_at          timestamptz NOT NULL DEFAULT clock_timestamp(),
  cancel_requested_at timestamptz
);

CREATE TABLE order_items (
  order_id    uuid NOT NULL REFERENCES orders (id),
  line        int NOT NULL,
  sku         text NOT NULL,
  qty         bigint NOT NULL CHECK (qty > 0),
  price_cents bigint NOT NULL CHECK (price_cents >= 0),
  PRIMARY KEY (order_id, line)
);

CREATE TABLE outbox (
  seq              bigserial PRIMARY KEY,
  event_id         uuid NOT NULL UNIQUE,
  order_id         uuid NOT NULL,
  shard            int NOT NULL,
  event_type       text NOT NULL,
  payload          jsonb NOT NULL,
  headers          jsonb NOT NULL DEFAULT '{}',
  created_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
  sent_at          timestamptz,
  publish_attempts int NOT NULL DEFAULT 0,
  last_error       text
);
-- The relay's claim reads only this index, however long the sent history.
CREATE INDEX outbox_unsent ON outbox (shard, seq) WHERE sent_at IS NULL;
CREATE INDEX outbox_by_order ON outbox (order_id);

-- Wake the relay of the row's shard; NOTIFY is delivered only on commit and
-- identical notifications of one transaction are folded into one.
CREATE FUNCTION outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('outbox_shard_' || NEW.shard, '');
  RETURN NULL;
END $$;
CREATE TRIGGER outbox_notify AFTER INSERT ON outbox
  FOR EACH ROW EXECUTE FUNCTION outbox_notify();

CREATE TABLE processed_events (
  consumer     text NOT NULL,
  event_id     uuid NOT NULL,
  processed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  PRIMARY KEY (consumer, event_id)
);

-- Ledger of applied business changes. Deliberately no UNIQUE constraint: a
-- broken idempotency guard must show up as a second row, not be hidden.
CREATE TABLE business_effects (
  id           bigserial PRIMARY KEY,
  consumer     text NOT NULL,
  event_id     uuid NOT NULL,
  order_id     uuid NOT NULL,
  kind         text NOT NULL,
  amount_cents bigint NOT NULL DEFAULT 0,
  applied_at   timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX business_effects_by_order ON business_effects (order_id, consumer);

CREATE TABLE accounts (
  customer_id   text PRIMARY KEY,
  balance_cents bigint NOT NULL DEFAULT 0,
  updated_at    timestamptz NOT NULL DEFAULT clock_timestamp()
);

CREATE TABLE idempotency_keys (
  key                 text PRIMARY KEY,
  request_fingerprint text NOT NULL,
  order_id            uuid NOT NULL REFERENCES orders (id),
  event_id            uuid NOT NULL,
  created_at          timestamptz NOT NULL DEFAULT clock_timestamp()
);
)sql";

const char* v2_dlq = R"sql(
-- Dead-lettered deliveries, one row per (consumer, event). Undecodable
-- records have no event ID; they are keyed 'offset:<partition>:<offset>'.
CREATE TABLE dlq_events (
  id               bigserial PRIMARY KEY,
  consumer         text NOT NULL,
  event_id         text NOT NULL,
  order_key        text NOT NULL,
  value            bytea NOT NULL,
  event_type       text,
  error_class      text NOT NULL,
  error_message    text NOT NULL,
  fingerprint      text NOT NULL,
  attempts         int NOT NULL,
  source_topic     text NOT NULL,
  source_partition int NOT NULL,
  source_offset    bigint NOT NULL,
  first_failure_at timestamptz NOT NULL,
  last_failure_at  timestamptz NOT NULL,
  parked_at        timestamptz NOT NULL DEFAULT clock_timestamp(),
  status           text NOT NULL DEFAULT 'parked'
                     CHECK (status IN ('parked', 'replayed', 'discarded')),
  resolved_at      timestamptz,
  UNIQUE (consumer, event_id)
);
CREATE INDEX dlq_events_parked ON dlq_events (consumer, order_key)
  WHERE status = 'parked';

-- Audit trail of operator actions on DLQ entries.
CREATE TABLE dlq_actions (
  id       bigserial PRIMARY KEY,
  dlq_id   bigint NOT NULL REFERENCES dlq_events (id),
  action   text NOT NULL CHECK (action IN ('replay', 'discard', 'release')),
  actor    text NOT NULL,
  outcome  text NOT NULL,
  at       timestamptz NOT NULL DEFAULT clock_timestamp()
);
)sql";

const char* v3_retention = R"sql(
-- The retention janitor deletes sent rows by age without scanning the table.
CREATE INDEX outbox_sent_at ON outbox (sent_at) WHERE sent_at IS NOT NULL;
CREATE INDEX processed_events_at ON processed_events (processed_at);
)sql";

const char* v4_no_loss = R"sql(
-- Where each row's latest copy landed on the broker, and under which broker
-- epoch. An epoch is one lifetime of the topic's logs: a broker that lost its
-- data (a new in-process broker, a recreated topic) starts a new one, and a
-- position recorded under an older epoch says nothing about today's logs.
CREATE TABLE broker_epochs (
  epoch      int PRIMARY KEY,
  started_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  reason     text NOT NULL,
  -- Set once every row published under an OLDER epoch that a consumer had
  -- not applied was queued for republishing.
  swept_at   timestamptz
);
INSERT INTO broker_epochs (epoch, reason, swept_at)
  VALUES (1, 'first epoch', clock_timestamp());

ALTER TABLE outbox
  ADD COLUMN epoch           int,
  ADD COLUMN kafka_partition int,
  ADD COLUMN kafka_offset    bigint,
  ADD COLUMN republish_count int NOT NULL DEFAULT 0;
-- A row queued again (unsent once more) wakes its shard's relay like a new one.
CREATE TRIGGER outbox_notify_requeued AFTER UPDATE OF sent_at ON outbox
  FOR EACH ROW WHEN (OLD.sent_at IS NOT NULL AND NEW.sent_at IS NULL)
  EXECUTE FUNCTION outbox_notify();
-- Repairs look rows up by position; identity checks take the newest one.
CREATE INDEX outbox_position ON outbox (epoch, kafka_partition, kafka_offset);
-- Retention deletes by creation time, so that a republished row (sent again,
-- later) never outlives the processed_events marks of its first delivery.
CREATE INDEX outbox_created_sent ON outbox (created_at)
  WHERE sent_at IS NOT NULL;

-- The last broker record verified to hold what the outbox says it holds,
-- per partition: the next identity check verifies it again.
CREATE TABLE broker_witness (
  kafka_partition int PRIMARY KEY,
  epoch           int NOT NULL,
  kafka_offset    bigint NOT NULL,
  event_id        uuid NOT NULL,
  verified_at     timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- A consumer found its position gone from the broker (offset out of range):
-- the offsets it could not read, and what was queued again because of it.
CREATE TABLE consumer_gaps (
  id              bigserial PRIMARY KEY,
  consumer        text NOT NULL,
  kafka_partition int NOT NULL,
  epoch           int NOT NULL,
  from_offset     bigint NOT NULL,
  to_offset       bigint NOT NULL,
  log_end         bigint NOT NULL,
  at_risk         int NOT NULL,
  detected_at     timestamptz NOT NULL DEFAULT clock_timestamp(),
  last_swept_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
  republished     int NOT NULL DEFAULT 0
);

-- Every republish decision, automatic or by an operator, with its scope.
CREATE TABLE republish_log (
  id        bigserial PRIMARY KEY,
  at        timestamptz NOT NULL DEFAULT clock_timestamp(),
  actor     text NOT NULL,
  reason    text NOT NULL,
  consumer  text,
  scope     text NOT NULL,
  events    int NOT NULL,
  dry_run   boolean NOT NULL DEFAULT false
);

-- Settings that every process sharing this database must agree on.
CREATE TABLE fixed_settings (
  key   text PRIMARY KEY,
  value text NOT NULL,
  set_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
)sql";

// The relay's claim orders by `seq + 0`, which only this index provides.
// Ordered by plain `seq`, PostgreSQL walks the primary key and filters,
// assuming the unsent rows are spread evenly over it; in a backlog being
// drained they all sit at its end, behind every row already sent (a claim
// took 1 s at 1,000,000 rows instead of 1 ms).
const char* v5_claim_index = R"sql(
DROP INDEX outbox_unsent;
CREATE INDEX outbox_unsent ON outbox (shard, (seq + 0)) WHERE sent_at IS NULL;
)sql";

// What the live recovery page (and an operator) reads to tell one event's
// story from durable state: where each applied copy was read, and the
// recovery journal of what counters cannot show after a restart.
const char* v6_recovery_journal = R"sql(
-- Where the applied copy was read. NULL for marks written before version 6
-- and for applications outside a partition (tests).
ALTER TABLE processed_events
  ADD COLUMN kafka_partition int,
  ADD COLUMN kafka_offset    bigint;

-- Crashes at the named failure windows, supervisor restarts, suppressed
-- duplicate deliveries and client retries, written off the hot path by one
-- background writer per process. Not business data: a process that dies
-- may lose its last few lines, never a row of orders, outbox or effects.
CREATE TABLE recovery_journal (
  id              bigserial PRIMARY KEY,
  at              timestamptz NOT NULL,
  kind            text NOT NULL
                    CHECK (kind IN ('crash', 'restart', 'suppressed',
                                    'client_retry')),
  point           text,
  actor           text,
  consumer        text,
  order_id        uuid,
  event_id        uuid,
  kafka_partition int,
  kafka_offset    bigint,
  detail          text NOT NULL DEFAULT ''
);
CREATE INDEX recovery_journal_by_order ON recovery_journal (order_id);
CREATE INDEX recovery_journal_by_event ON recovery_journal (event_id);
CREATE INDEX recovery_journal_at ON recovery_journal (at);
)sql";

constexpr const char* v7_consumer_migrations = R"sql(
CREATE TABLE consumer_migrations (
  consumer   text NOT NULL,
  version    int NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (consumer, version)
);
)sql";

// A DLQ replay that survives a crash at every step, foreign records kept as
// they came, and retention for what only grows.
constexpr const char* v8_dlq_replay_and_retention = R"sql(
-- A replay first records its intent ('replaying', replay_started_at), then
-- publishes, then marks the entry 'replayed'; a sweeper completes any
-- replay left 'replaying' by a crash or a failed publish.
ALTER TABLE dlq_events DROP CONSTRAINT dlq_events_status_check;
ALTER TABLE dlq_events ADD CONSTRAINT dlq_events_status_check
  CHECK (status IN ('parked', 'replaying', 'replayed', 'discarded'));
ALTER TABLE dlq_events ADD COLUMN replay_started_at timestamptz;
-- Where the last acknowledged replay copy landed: a trace is not settled
-- before each consumer's offset is past it.
ALTER TABLE dlq_events ADD COLUMN replay_partition int;
ALTER TABLE dlq_events ADD COLUMN replay_offset bigint;
CREATE INDEX dlq_events_replaying ON dlq_events (replay_started_at)
  WHERE status = 'replaying';
-- The record's key exactly as it came (a foreign producer's key need not be
-- text); order_key keeps its printable form for matching and display.
-- NULL for entries written before version 8: their order_key is the key.
ALTER TABLE dlq_events ADD COLUMN key bytea;
-- The W3C traceparent the record carried, so a replay continues its trace.
ALTER TABLE dlq_events ADD COLUMN traceparent text NOT NULL DEFAULT '';
-- Retention: resolved DLQ entries (with their actions) and idempotency
-- keys are deleted by age, in small batches, by the janitor.
CREATE INDEX dlq_events_resolved ON dlq_events (resolved_at)
  WHERE status IN ('replayed', 'discarded');
ALTER TABLE dlq_actions DROP CONSTRAINT dlq_actions_dlq_id_fkey;
ALTER TABLE dlq_actions ADD CONSTRAINT dlq_actions_dlq_id_fkey
  FOREIGN KEY (dlq_id) REFERENCES dlq_events (id) ON DELETE CASCADE;
CREATE INDEX dlq_actions_by_entry ON dlq_actions (dlq_id);
CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);
)sql";

/// Applies each of `steps` not yet recorded, in order, each in its own
/// transaction under the migration lock: `recorded` says whether a
/// version is done, `record` notes it. Returns the versions applied.
template <class Recorded, class Record>
std::vector<int> apply_steps(const std::string& dsn,
                             const std::vector<migration>& steps,
                             Recorded recorded, Record record) {
  std::vector<int> applied;
  try {
    auto conn = open_connection(dsn);
    for (auto& m : steps) {
      pqxx::work w(*conn);
      w.exec_params("SELECT pg_advisory_xact_lock($1, 0)",
                    migration_lock_class);
      w.exec("CREATE TABLE IF NOT EXISTS schema_migrations ("
             " version int PRIMARY KEY, name text NOT NULL,"
             " applied_at timestamptz NOT NULL DEFAULT now())");
      if (recorded(w, m))
        continue; // the transaction rolls back; nothing to apply
      w.exec(m.sql);
      record(w, m);
      w.commit();
      applied.push_back(m.version);
    }
  } catch (...) {
    rethrow_as_db_error();
  }
  return applied;
}

} // namespace

// What a consumer's effect may carry besides an amount.
constexpr const char* v9_effect_quantity = R"sql(
ALTER TABLE business_effects ADD COLUMN quantity bigint NOT NULL DEFAULT 0;
)sql";

// An operator's decision on an event outlives every retention (issue 29).
// A discard leaves a mark of outcome 'discarded' in processed_events: the
// idempotency guard's insert meets it like any mark, so no later delivery,
// replay or repair applies the event, and the janitor never deletes it.
// A resolved DLQ entry is pruned after dlq.retention (its record's bytes
// and its actions go), never deleted: a copy of it read again from the DLQ
// topic finds the decision and cannot park the event anew.
constexpr const char* v10_lasting_decisions = R"sql(
ALTER TABLE processed_events ADD COLUMN outcome text NOT NULL
  DEFAULT 'applied' CHECK (outcome IN ('applied', 'discarded'));
INSERT INTO processed_events (consumer, event_id, processed_at, outcome)
  SELECT consumer, event_id::uuid, coalesce(resolved_at, clock_timestamp()),
         'discarded'
  FROM dlq_events
  WHERE status = 'discarded' AND event_id ~
    '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'
  ON CONFLICT DO NOTHING;
ALTER TABLE dlq_events ADD COLUMN pruned_at timestamptz;
DROP INDEX dlq_events_resolved;
CREATE INDEX dlq_events_resolved ON dlq_events (resolved_at)
  WHERE status IN ('replayed', 'discarded') AND pruned_at IS NULL;
)sql";

// Readers of the broker epoch (each consumer group member) learn of a new
// one from a NOTIFY on the one LISTEN session of their process, instead of
// reading broker_epochs every second. Every way an epoch begins inserts a
// row here, so the trigger covers them all; NOTIFY is sent on commit.
constexpr const char* v11_epoch_notify = R"sql(
CREATE FUNCTION broker_epoch_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('broker_epoch', NEW.epoch::text);
  RETURN NULL;
END $$;
CREATE TRIGGER broker_epoch_notify AFTER INSERT ON broker_epochs
  FOR EACH ROW EXECUTE FUNCTION broker_epoch_notify();
)sql";

// An operator's decision touches exactly what it names (issue 41). A replay
// waits behind its order's undecided entries, so the earliest undecided
// entry of a (consumer, order) is looked up by position; a replay whose
// publish never succeeds gives up after dlq.replay-give-up-ms and is parked
// again with its last error; a release the CLI recorded without a broker is
// published by the DLQ handler at once (replay_started_at NULL: no publish
// attempted yet).
constexpr const char* v12_dlq_decisions = R"sql(
CREATE INDEX dlq_events_undecided ON dlq_events
  (consumer, order_key, source_offset, id)
  WHERE status IN ('parked', 'replaying');
ALTER TABLE dlq_events ADD COLUMN replay_requested_at timestamptz;
ALTER TABLE dlq_events ADD COLUMN replay_error text;
UPDATE dlq_events SET replay_requested_at = replay_started_at
  WHERE status = 'replaying';
ALTER TABLE dlq_actions DROP CONSTRAINT dlq_actions_action_check;
ALTER TABLE dlq_actions ADD CONSTRAINT dlq_actions_action_check
  CHECK (action IN ('replay', 'discard', 'release', 'give_up'));
)sql";

// Operators' controls of a consumer (issue 42.5), durable and read by every
// node's member once a second; the members as they last reported themselves
// (node, partitions), which `status` shows and a reset checks; and what was
// done, by whom.
constexpr const char* v13_consumer_controls = R"sql(
CREATE TABLE consumer_controls (
  consumer   text PRIMARY KEY,
  paused     boolean NOT NULL DEFAULT false,
  changed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  changed_by text NOT NULL DEFAULT ''
);
CREATE TABLE consumer_members (
  consumer   text NOT NULL,
  member     text NOT NULL,
  node       text NOT NULL,
  state      text NOT NULL CHECK (state IN ('consuming', 'paused')),
  partitions int[] NOT NULL DEFAULT '{}',
  joined_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
  seen_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
  PRIMARY KEY (consumer, member)
);
CREATE TABLE consumer_control_log (
  id       bigserial PRIMARY KEY,
  consumer text NOT NULL,
  action   text NOT NULL CHECK (action IN ('pause', 'resume', 'reset')),
  detail   text NOT NULL DEFAULT '',
  actor    text NOT NULL,
  at       timestamptz NOT NULL DEFAULT clock_timestamp()
);
)sql";

// A recovery-page scenario is armed through the database (issue 42), so
// that whichever node owns the order's relay shard or partition fires it:
// every node that takes scenarios reads the live rows, arms them in its own
// crash points and adds its name to seen_by; the node that fires a crash
// claims the row first (fired_by), so it fires once across the nodes. The
// journal also records the Kafka faults a scenario applied (kind 'broker').
constexpr const char* v14_scenario_arms = R"sql(
CREATE TABLE scenario_arms (
  trace_id    text PRIMARY KEY,
  scenario    text NOT NULL,
  point       text,
  consumer    text NOT NULL DEFAULT '',
  poison      boolean NOT NULL DEFAULT false,
  armed_by    text NOT NULL,
  armed_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
  expires_at  timestamptz NOT NULL,
  seen_by     text[] NOT NULL DEFAULT '{}',
  order_id    uuid,
  fired_by    text,
  fired_at    timestamptz,
  disarmed_at timestamptz
);
CREATE INDEX scenario_arms_live ON scenario_arms (expires_at)
  WHERE disarmed_at IS NULL;
CREATE INDEX scenario_arms_by_order ON scenario_arms (order_id);
ALTER TABLE recovery_journal DROP CONSTRAINT recovery_journal_kind_check;
ALTER TABLE recovery_journal ADD CONSTRAINT recovery_journal_kind_check
  CHECK (kind IN ('crash', 'restart', 'suppressed', 'client_retry',
                  'broker'));
)sql";

const std::vector<migration>& migrations() {
  static const std::vector<migration> all{
    {1, "core: orders, outbox, processed_events, effects, accounts, keys",
     v1_core},
    {2, "dlq: dlq_events, dlq_actions", v2_dlq},
    {3, "retention indexes", v3_retention},
    {4, "no loss: broker epochs, positions, gaps, republish log", v4_no_loss},
    {5, "claim index the planner cannot trade for the primary key",
     v5_claim_index},
    {6, "recovery journal and the position of each applied copy",
     v6_recovery_journal},
    {7, "consumers' own migrations, recorded by consumer",
     v7_consumer_migrations},
    {8, "DLQ replay state machine, raw record keys, retention indexes",
     v8_dlq_replay_and_retention},
    {9, "business effects carry a quantity", v9_effect_quantity},
    {10, "decisions that outlive retention: discard marks, pruned entries",
     v10_lasting_decisions},
    {11, "a NOTIFY for each new broker epoch", v11_epoch_notify},
    {12, "DLQ decisions: undecided entries by position, replay give-up",
     v12_dlq_decisions},
    {13, "consumer controls: pause, members by node, the log of actions",
     v13_consumer_controls},
    {14, "scenarios armed through the database; Kafka faults in the journal",
     v14_scenario_arms},
  };
  return all;
}

std::vector<int> migrate(const std::string& dsn) {
  return apply_steps(
    dsn, migrations(),
    [](pqxx::work& w, const migration& m) {
      return !w.exec_params(
                 "SELECT 1 FROM schema_migrations WHERE version = $1",
                 m.version)
                .empty();
    },
    [](pqxx::work& w, const migration& m) {
      w.exec_params("INSERT INTO schema_migrations (version, name) "
                    "VALUES ($1, $2)",
                    m.version, m.name);
    });
}

std::vector<int> migrate_consumer(const std::string& dsn,
                                  const std::string& consumer,
                                  const std::vector<std::string>& sql) {
  std::vector<migration> steps;
  for (size_t i = 0; i < sql.size(); ++i)
    steps.push_back({static_cast<int>(i + 1), consumer, sql[i]});
  return apply_steps(
    dsn, steps,
    [&](pqxx::work& w, const migration& m) {
      return !w.exec_params("SELECT 1 FROM consumer_migrations WHERE "
                            "consumer = $1 AND version = $2",
                            consumer, m.version)
                .empty();
    },
    [&](pqxx::work& w, const migration& m) {
      w.exec_params("INSERT INTO consumer_migrations (consumer, version) "
                    "VALUES ($1, $2)",
                    consumer, m.version);
    });
}

} // namespace ef::persistence
