#include "persistence/trace_queries.hpp"

#include "persistence/connection.hpp"

#include <algorithm>

namespace ef::persistence {

namespace {

/// RFC 3339 UTC text with microseconds: sorts like the timestamps.
std::string ts(const std::string& column) {
  return "to_char(" + column +
         " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')";
}

std::string text_or_empty(const pqxx::field& f) {
  return f.is_null() ? std::string{} : f.as<std::string>();
}

template <class T>
T or_default(const pqxx::field& f, T fallback) {
  return f.is_null() ? fallback : f.as<T>();
}

} // namespace

bool rolls_back_delivery(const std::string& point) {
  return point == "consumer.before_db_commit" ||
         point == "dlq.after_dlq_ack_before_offset";
}

namespace {

/// Reads one order's rows table by table into `out`, within one read
/// transaction (one snapshot), and hangs each mark, effect, DLQ entry and
/// journal line on its event's consumer.
class order_trace_reader {
public:
  order_trace_reader(pqxx::read_transaction& t, const std::string& order_id,
                     order_trace_rows& out)
      : t_(t), order_id_(order_id), out_(out) {}

  /// The order itself; false if there is none.
  bool order() {
    auto row = t_.exec_params("SELECT status, customer_id, total_cents, " +
                                ts("created_at") + ", " + ts("updated_at") +
                                " FROM orders WHERE id = $1::uuid",
                              order_id_);
    if (row.empty())
      return false;
    out_.found = true;
    out_.status = row[0][0].as<std::string>();
    out_.customer_id = row[0][1].as<std::string>();
    out_.total_cents = row[0][2].as<long long>();
    out_.created_at = row[0][3].as<std::string>();
    out_.updated_at = row[0][4].as<std::string>();
    return true;
  }

  /// Its outbox rows, each with an empty entry per enabled consumer.
  void events(const std::vector<std::string>& consumers) {
    for (const auto& r : t_.exec_params(
           "SELECT event_id::text, event_type, seq, shard, "
           "coalesce(headers->>'traceparent', ''), " +
             ts("created_at") + ", " + ts("sent_at") +
             ", publish_attempts, republish_count, last_error, epoch, "
             "kafka_partition, kafka_offset FROM outbox WHERE order_id = "
             "$1::uuid ORDER BY seq",
           order_id_)) {
      traced_event e;
      e.event_id = r[0].as<std::string>();
      e.event_type = r[1].as<std::string>();
      e.seq = r[2].as<long long>();
      e.shard = r[3].as<int>();
      e.traceparent = r[4].as<std::string>();
      e.created_at = r[5].as<std::string>();
      e.sent_at = text_or_empty(r[6]);
      e.publish_attempts = r[7].as<int>();
      e.republish_count = r[8].as<int>();
      e.last_error = text_or_empty(r[9]);
      e.epoch = or_default(r[10], -1);
      e.partition = or_default(r[11], -1);
      e.offset = or_default(r[12], -1LL);
      for (auto& c : consumers)
        e.consumers[c];
      out_.events.push_back(std::move(e));
    }
    for (auto& e : out_.events) {
      by_id_[e.event_id] = &e;
      event_ids_.push_back(e.event_id);
    }
  }

  /// The consumers' marks: each applied one is a delivery.
  void marks(const std::vector<std::string>& consumers) {
    for (const auto& r : t_.exec_params(
           "SELECT p.consumer, p.event_id::text, " + ts("p.processed_at") +
             ", p.kafka_partition, p.kafka_offset, p.outcome FROM "
             "processed_events p "
             // Both key columns, so the primary key finds the marks.
             "WHERE p.consumer = ANY($1::text[]) AND p.event_id = "
             "ANY($2::uuid[])",
           array_literal(consumers), array_literal(event_ids_)))
      if (auto* c =
            consumer_of(r[1].as<std::string>(), r[0].as<std::string>())) {
        // A "discarded" mark is an operator's decision, not a delivery.
        if (r[5].as<std::string>() != "applied")
          continue;
        c->processed = true;
        c->deliveries.push_back({r[2].as<std::string>(), or_default(r[3], -1),
                                 or_default(r[4], -1LL), "applied", ""});
      }
  }

  void effects() {
    for (const auto& r : t_.exec_params(
           "SELECT consumer, event_id::text, " + ts("applied_at") +
             ", kind, amount_cents FROM business_effects WHERE order_id = "
             "$1::uuid ORDER BY id",
           order_id_))
      if (auto* c = consumer_of(r[1].as<std::string>(), r[0].as<std::string>()))
        c->effects.push_back({r[2].as<std::string>(), r[3].as<std::string>(),
                              r[4].as<long long>()});
  }

  /// Each DLQ entry, whose parking is a delivery too.
  void dlq_entries() {
    for (const auto& r : t_.exec_params(
           "SELECT consumer, event_id, id, status, error_class, attempts, " +
             ts("parked_at") + ", " + ts("resolved_at") +
             ", source_partition, source_offset, coalesce(replay_partition, "
             "-1), coalesce(replay_offset, -1) FROM dlq_events WHERE "
             "order_key = $1",
           order_id_))
      if (auto* c =
            consumer_of(r[1].as<std::string>(), r[0].as<std::string>())) {
        traced_dlq_entry d;
        d.id = r[2].as<long long>();
        d.status = r[3].as<std::string>();
        d.error_class = r[4].as<std::string>();
        d.attempts = r[5].as<int>();
        d.parked_at = r[6].as<std::string>();
        d.resolved_at = text_or_empty(r[7]);
        d.source_partition = r[8].as<int>();
        d.source_offset = r[9].as<long long>();
        d.replay_partition = r[10].as<int>();
        d.replay_offset = r[11].as<long long>();
        c->deliveries.push_back(
          {d.parked_at, d.source_partition, d.source_offset, "parked", ""});
        c->dlq = d;
      }
  }

  /// The order's journal lines, and for each crash the first restart of a
  /// crashed actor at that point after it. A suppressed redelivery and a
  /// crash that rolled one back are deliveries too.
  void journal() {
    for (const auto& r : t_.exec_params(
           "SELECT " + ts("j.at") +
             ", j.kind, coalesce(j.point, ''), coalesce(j.actor, ''), "
             "coalesce(j.consumer, ''), coalesce(j.event_id::text, ''), "
             "j.detail, coalesce(j.kafka_partition, -1), "
             "coalesce(j.kafka_offset, -1) FROM recovery_journal j WHERE "
             "j.order_id = $1::uuid UNION ALL SELECT " +
             ts("r.at") +
             ", r.kind, r.point, coalesce(r.actor, ''), '', '', r.detail, "
             "-1, -1 FROM recovery_journal c CROSS JOIN LATERAL (SELECT * "
             "FROM recovery_journal r WHERE r.kind = 'restart' AND r.point = "
             "c.point AND r.at >= c.at ORDER BY r.at LIMIT 1) r WHERE "
             "c.order_id = $1::uuid AND c.kind = 'crash' ORDER BY 1",
           order_id_)) {
      traced_incident i{r[0].as<std::string>(), r[1].as<std::string>(),
                        r[2].as<std::string>(), r[3].as<std::string>(),
                        r[4].as<std::string>(), r[5].as<std::string>(),
                        r[6].as<std::string>()};
      auto* c = consumer_of(i.event_id, i.consumer);
      if (c && i.kind == "suppressed")
        c->deliveries.push_back(
          {i.at, r[7].as<int>(), r[8].as<long long>(), "suppressed", ""});
      if (c && i.kind == "crash" && rolls_back_delivery(i.point))
        c->deliveries.push_back({i.at, -1, -1, "rolled_back", i.point});
      out_.incidents.push_back(std::move(i));
    }
  }

private:
  traced_consumer* consumer_of(const std::string& event, const std::string& c) {
    auto i = by_id_.find(event);
    if (i == by_id_.end())
      return nullptr;
    auto j = i->second->consumers.find(c);
    return j == i->second->consumers.end() ? nullptr : &j->second;
  }

  pqxx::read_transaction& t_;
  const std::string& order_id_;
  order_trace_rows& out_;
  std::map<std::string, traced_event*> by_id_;
  std::vector<std::string> event_ids_;
};

} // namespace

order_trace_rows read_order_trace(const std::string& dsn,
                                  const std::string& order_id,
                                  const std::vector<std::string>& consumers) {
  order_trace_rows out;
  out.order_id = order_id;
  try {
    auto conn = open_connection(dsn);
    pqxx::read_transaction t(*conn);
    order_trace_reader read{t, order_id, out};
    if (!read.order())
      return out;
    read.events(consumers);
    read.marks(consumers);
    read.effects();
    read.dlq_entries();
    read.journal();
    for (auto& e : out.events)
      for (auto& [name, c] : e.consumers)
        std::sort(c.deliveries.begin(), c.deliveries.end(),
                  [](auto& a, auto& b) { return a.at < b.at; });
  } catch (...) {
    rethrow_as_db_error();
  }
  return out;
}

overview_rows read_overview_rows(const std::string& dsn) {
  overview_rows out;
  try {
    auto conn = open_connection(dsn);
    pqxx::read_transaction t(*conn);
    auto totals = t.exec1(
      "SELECT (SELECT count(*) FROM orders), (SELECT count(*) FROM outbox)");
    out.orders = totals[0].as<long long>();
    out.logical_events = totals[1].as<long long>();
    for (const auto& r : t.exec("SELECT consumer, count(*) FROM "
                                "processed_events WHERE outcome = 'applied' "
                                "GROUP BY consumer"))
      out.consumers[r[0].as<std::string>()].processed = r[1].as<long long>();
    for (const auto& r : t.exec("SELECT consumer, count(*) FROM "
                                "business_effects GROUP BY consumer"))
      out.consumers[r[0].as<std::string>()].business_changes =
        r[1].as<long long>();
    for (const auto& r : t.exec("SELECT consumer, count(*) FROM dlq_events "
                                "GROUP BY consumer"))
      out.consumers[r[0].as<std::string>()].parked = r[1].as<long long>();
    for (const auto& r :
         t.exec("SELECT kind, coalesce(consumer, ''), coalesce(point, ''), "
                "count(*) FROM recovery_journal GROUP BY 1, 2, 3")) {
      auto kind = r[0].as<std::string>();
      auto consumer = r[1].as<std::string>();
      auto point = r[2].as<std::string>();
      auto n = r[3].as<long long>();
      if (kind == "crash")
        out.crashes += n;
      if (kind == "restart")
        out.restarts += n;
      if (kind == "suppressed" && !consumer.empty())
        out.consumers[consumer].suppressed += n;
      if (kind == "crash" && !consumer.empty() && rolls_back_delivery(point))
        out.consumers[consumer].rolled_back += n;
    }
  } catch (...) {
    rethrow_as_db_error();
  }
  return out;
}

} // namespace ef::persistence
