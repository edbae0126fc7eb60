#include "persistence/migrations.hpp"

#include "persistence/connection.hpp"

namespace ef::persistence {

namespace {

// Advisory lock key (two int4 halves) that serializes concurrent migrators.
constexpr int migration_lock_class = 1700;

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

} // namespace

const std::vector<migration>& migrations() {
  static const std::vector<migration> all{
    {1, "core: orders, outbox, processed_events, effects, accounts, keys",
     v1_core},
    {2, "dlq: dlq_events, dlq_actions", v2_dlq},
    {3, "retention indexes", v3_retention},
  };
  return all;
}

std::vector<int> migrate(const std::string& dsn) {
  std::vector<int> applied;
  try {
    auto conn = open_connection(dsn);
    for (auto& m : migrations()) {
      pqxx::work w(*conn);
      w.exec_params("SELECT pg_advisory_xact_lock($1, 0)",
                    migration_lock_class);
      w.exec("CREATE TABLE IF NOT EXISTS schema_migrations ("
             " version int PRIMARY KEY, name text NOT NULL,"
             " applied_at timestamptz NOT NULL DEFAULT now())");
      auto done = w.exec_params(
        "SELECT 1 FROM schema_migrations WHERE version = $1", m.version);
      if (!done.empty())
        continue; // the transaction rolls back; nothing to apply
      w.exec(m.sql);
      w.exec_params("INSERT INTO schema_migrations (version, name) "
                    "VALUES ($1, $2)",
                    m.version, m.name);
      w.commit();
      applied.push_back(m.version);
    }
  } catch (...) {
    rethrow_as_db_error();
  }
  return applied;
}

} // namespace ef::persistence
