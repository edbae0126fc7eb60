#include "persistence/recovery_journal.hpp"

#include "persistence/connection.hpp"
#include <eventforge/config/logging.hpp>

#include <vector>

namespace ef::persistence {

namespace {

constexpr const char* insert_lines =
  "INSERT INTO recovery_journal (at, kind, point, actor, consumer, order_id, "
  "event_id, kafka_partition, kafka_offset, detail) "
  "SELECT to_timestamp(x.t / 1e6), x.k, NULLIF(x.p, ''), NULLIF(x.a, ''), "
  "NULLIF(x.c, ''), CASE WHEN x.o ~ $11 THEN x.o::uuid END, "
  "CASE WHEN x.e ~ $11 THEN x.e::uuid END, "
  "NULLIF(x.kp, -1), NULLIF(x.ko, -1), x.d FROM unnest($1::bigint[], "
  "$2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], "
  "$8::int[], $9::bigint[], $10::text[]) AS x(t, k, p, a, c, o, e, kp, ko, d)";

constexpr size_t max_lines_per_insert = 500;

void write(pqxx::connection& conn, const std::vector<journal_line>& lines) {
  std::vector<std::int64_t> at, partitions, offsets;
  std::vector<std::string> kinds, points, actors, consumers, orders, events,
    details;
  for (auto& l : lines) {
    at.push_back(std::chrono::duration_cast<std::chrono::microseconds>(
                   l.at.time_since_epoch())
                   .count());
    kinds.push_back(to_string(l.what));
    points.push_back(l.point);
    actors.push_back(l.actor);
    consumers.push_back(l.consumer);
    orders.push_back(l.order_id);
    events.push_back(l.event_id);
    partitions.push_back(l.partition);
    offsets.push_back(l.offset);
    details.push_back(l.detail);
  }
  pqxx::work w(conn);
  w.exec_params(insert_lines, array_literal(at), array_literal(kinds),
                array_literal(points), array_literal(actors),
                array_literal(consumers), array_literal(orders),
                array_literal(events), array_literal(partitions),
                array_literal(offsets), array_literal(details),
                // Only IDs that are UUIDs are kept: a line about an
                // undecodable record must not stop the journal.
                "^[0-9a-fA-F]{8}-?([0-9a-fA-F]{4}-?){3}[0-9a-fA-F]{12}$");
  w.commit();
}

} // namespace

const char* to_string(journal_line::kind k) {
  switch (k) {
  case journal_line::kind::crash:
    return "crash";
  case journal_line::kind::restart:
    return "restart";
  case journal_line::kind::suppressed:
    return "suppressed";
  case journal_line::kind::client_retry:
    return "client_retry";
  case journal_line::kind::broker:
    return "broker";
  }
  return "?";
}

recovery_journal::recovery_journal(std::string dsn, size_t max_queued,
                                   config::backoff_policy retry)
    : dsn_(std::move(dsn)), max_queued_(max_queued), retry_(retry) {
  writer_ = std::thread([this] { run(); });
}

recovery_journal::~recovery_journal() {
  flush(std::chrono::seconds(2));
  {
    std::lock_guard<std::mutex> guard{mtx_};
    stopping_ = true;
  }
  wake_.notify_all();
  writer_.join();
}

void recovery_journal::record(journal_line line) {
  bool dropped = false;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    ++recorded_;
    if (queue_.size() >= max_queued_) {
      queue_.pop_front();
      ++dropped_;
      ++done_;
      dropped = true;
    }
    queue_.push_back(std::move(line));
  }
  wake_.notify_one();
  if (dropped && on_drop_)
    on_drop_(1);
}

void recovery_journal::on_drop(std::function<void(std::uint64_t)> f) {
  std::lock_guard<std::mutex> guard{mtx_};
  on_drop_ = std::move(f);
}

bool recovery_journal::flush(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock{mtx_};
  auto target = recorded_;
  return written_.wait_for(lock, timeout, [&] { return done_ >= target; });
}

std::uint64_t recovery_journal::dropped() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return dropped_;
}

void recovery_journal::run() {
  std::unique_ptr<pqxx::connection> conn;
  std::unique_lock<std::mutex> lock{mtx_};
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_ && queue_.empty())
      return;
    std::vector<journal_line> batch;
    while (!queue_.empty() && batch.size() < max_lines_per_insert) {
      batch.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    lock.unlock();
    bool ok = true;
    try {
      if (!conn)
        conn = open_connection(dsn_);
      write(*conn, batch);
    } catch (const pqxx::sql_error& e) {
      // The database refused these lines (not an outage): retrying cannot
      // help, so they are dropped, loudly.
      ef::log::warn("recovery journal: {} line(s) dropped: {}", batch.size(),
                    e.what());
      if (on_drop_)
        on_drop_(batch.size());
      lock.lock();
      dropped_ += batch.size();
      done_ += batch.size();
      written_.notify_all();
      continue;
    } catch (const std::exception& e) {
      ok = false;
      conn.reset();
      ef::log::debug("recovery journal: {} line(s) wait: {}", batch.size(),
                     e.what());
    }
    lock.lock();
    if (ok) {
      done_ += batch.size();
      written_.notify_all();
      retry_.succeeded();
      continue;
    }
    // Put them back in front, in order; the bound still holds.
    for (auto i = batch.rbegin(); i != batch.rend(); ++i)
      queue_.push_front(std::move(*i));
    std::uint64_t over = 0;
    while (queue_.size() > max_queued_) {
      queue_.pop_front();
      ++dropped_;
      ++done_;
      ++over;
    }
    if (over > 0 && on_drop_) {
      lock.unlock();
      on_drop_(over);
      lock.lock();
    }
    if (stopping_)
      return; // the database is down at shutdown: these lines are lost
    wake_.wait_for(lock, retry_.failed(), [&] { return stopping_; });
  }
}

long delete_journal_lines(const std::string& dsn, int age_s, int limit) {
  try {
    auto conn = open_connection(dsn);
    pqxx::work w(*conn);
    auto r = w.exec_params(
      "DELETE FROM recovery_journal WHERE id IN (SELECT id FROM "
      "recovery_journal WHERE at < clock_timestamp() - make_interval(secs => "
      "$1) ORDER BY id LIMIT $2)",
      age_s, limit);
    w.commit();
    return static_cast<long>(r.affected_rows());
  } catch (...) {
    rethrow_as_db_error();
  }
}

} // namespace ef::persistence
