#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace ef::persistence {

/// A backlog "written while the pipeline was stopped": `orders` orders with
/// one item each, their OrderCreated outbox rows unsent, exactly the rows the
/// API writes (same payload and headers), but in bulk.
struct backlog_spec {
  long orders = 0;
  int shards = 4;
  /// W3C traceparent of order i (chaos runs derive it from their seed).
  std::function<std::string(long)> traceparent;
  /// Called after each batch with the orders written so far.
  std::function<void(long)> progress;
};

/// Writes the backlog with COPY, 10,000 orders per transaction (a crash
/// leaves whole batches: every order still has its outbox row). Returns the
/// orders written. Throws db_error.
long write_backlog(const std::string& dsn, const backlog_spec& spec);

} // namespace ef::persistence
