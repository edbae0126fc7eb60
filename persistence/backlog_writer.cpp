#include "persistence/backlog_writer.hpp"

#include "messages/ids.hpp"
#include "persistence/connection.hpp"
#include "persistence/order_rows.hpp"
#include <eventforge/messages/events.hpp>

#include <tuple>

namespace ef::persistence {

long write_backlog(const std::string& dsn, const backlog_spec& spec) {
  constexpr long batch = 10000;
  long written = 0;
  try {
    auto conn = open_connection(dsn);
    while (written < spec.orders) {
      auto until = std::min(spec.orders, written + batch);
      struct row {
        std::string order_id, customer, payload, headers;
        order_line line;
      };
      std::vector<row> rows;
      for (long i = written; i < until; ++i) {
        row r;
        r.order_id = new_uuid_v7();
        r.customer = "backlog-" + std::to_string(i % 97);
        r.line = {"sku-" + std::to_string(i % 13), 1 + i % 4, 100 + i % 1000};
        r.payload = created_payload(r.order_id, r.customer,
                                    r.line.qty * r.line.price_cents, {r.line});
        r.headers = headers_json(spec.traceparent ? spec.traceparent(i) : "");
        rows.push_back(std::move(r));
      }
      // One COPY at a time: libpqxx allows a single open stream per
      // transaction.
      pqxx::work w(*conn);
      {
        pqxx::stream_to out(w, "orders",
                            std::vector<std::string>{"id", "customer_id",
                                                     "status", "total_cents"});
        for (auto& r : rows)
          out << std::make_tuple(r.order_id, r.customer, std::string("created"),
                                 r.line.qty * r.line.price_cents);
        out.complete();
      }
      {
        pqxx::stream_to out(w, "order_items",
                            std::vector<std::string>{"order_id", "line", "sku",
                                                     "qty", "price_cents"});
        for (auto& r : rows)
          out << std::make_tuple(r.order_id, 1, r.line.sku, r.line.qty,
                                 r.line.price_cents);
        out.complete();
      }
      {
        pqxx::stream_to out(w, "outbox",
                            std::vector<std::string>{"event_id", "order_id",
                                                     "shard", "event_type",
                                                     "payload", "headers"});
        for (auto& r : rows)
          out << std::make_tuple(
            new_uuid_v7(), r.order_id, shard_of(r.order_id, spec.shards),
            std::string(order_created_type), r.payload, r.headers);
        out.complete();
      }
      w.commit();
      written = until;
      if (spec.progress)
        spec.progress(written);
    }
  } catch (...) {
    rethrow_as_db_error();
  }
  return written;
}

} // namespace ef::persistence
