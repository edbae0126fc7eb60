// The API worker, deterministically: its order store is a fake over an
// in-memory list of committed transactions, its clock a number the test
// moves, and CAF's test coordinator runs one message at a time while the
// test says which (expect), and fires the batch's delayed flush only when
// the test triggers it. What it pins down: the creates that arrive while a
// batch gathers become one transaction and each requester gets its own
// answer; a command whose deadline passed before its commit is refused with
// api_errc::unavailable and nothing of it is written, whether it was late
// before its transaction or became late during it; a failing command in a
// batch fails only its own requester; a full batch is written at once, a
// flush with nothing gathered writes nothing; a drain commits what is
// gathered and answers its requesters before its report; a worker that
// stops answers every command it holds: "nothing was written" while the
// command waits, "outcome unknown" once its transaction began.

#include "actors/api_worker.hpp"
#include "tests/support/actor_fixture.hpp"
#include "tests/support/caf_dsl.hpp"

#include <eventforge/messages/api_error.hpp>
#include <eventforge/messages/atoms.hpp>

#include <map>
#include <set>

using namespace ef;

namespace ef {

bool operator==(const order_accepted& x, const order_accepted& y) {
  return x.order_id == y.order_id && x.event_id == y.event_id &&
         x.status == y.status && x.replayed == y.replayed;
}

} // namespace ef

namespace {

/// The fake database: what each transaction wrote, and the wall clock.
struct orders_db {
  std::int64_t now = 1'800'000'000'000; ///< ms since the Unix epoch
  int transactions = 0;                 ///< begun, committed or not
  /// Committed transactions: the customers of the orders each wrote.
  std::vector<std::vector<std::string>> commits;
  /// The IDs the worker gave each customer's order.
  std::map<std::string, order_accepted> written;
  /// Customers whose order the database rejects (a permanent error).
  std::set<std::string> rejects;
  /// Runs inside the next transaction, after its commands.
  std::function<void()> during_write;
};

struct fake_writer : persistence::order_writer {
  orders_db& db;
  std::vector<std::string> customers;
  std::map<std::string, order_accepted> ids;
  explicit fake_writer(orders_db& d) : db(d) {}

  persistence::create_result create(const create_order& cmd,
                                    const std::string& order_id,
                                    const std::string& event_id) override {
    if (db.rejects.count(cmd.customer_id) > 0)
      throw persistence::db_error(persistence::db_errc::permanent,
                                  "check constraint violated", "23514");
    customers.push_back(cmd.customer_id);
    ids[cmd.customer_id] = {order_id, event_id, "created", false};
    return {persistence::create_result::created, order_id, event_id, "created"};
  }
  persistence::cancel_result cancel(const std::string& order_id,
                                    const std::string&) override {
    customers.push_back("cancel " + order_id);
    return {persistence::cancel_result::cancelled, "cancel-event"};
  }
};

struct fake_book : persistence::order_book {
  std::shared_ptr<orders_db> db;
  explicit fake_book(std::shared_ptr<orders_db> d) : db(std::move(d)) {}

  /// As order_store: all or nothing, and rolled back when the deadline
  /// passed before COMMIT.
  void write(
    const std::function<void(persistence::order_writer&)>& body,
    std::optional<std::chrono::system_clock::time_point> deadline) override {
    ++db->transactions;
    fake_writer w{*db};
    body(w);
    if (db->during_write)
      std::exchange(db->during_write, nullptr)();
    if (deadline &&
        db->now >= std::chrono::duration_cast<std::chrono::milliseconds>(
                     deadline->time_since_epoch())
                     .count())
      throw persistence::db_error(persistence::db_errc::transient,
                                  "the deadline passed before COMMIT");
    db->commits.push_back(w.customers);
    db->written.insert(w.ids.begin(), w.ids.end());
  }
  std::optional<order_view> view(const std::string&) override {
    return std::nullopt;
  }
};

struct api_fixture : test::dsl_fixture {
  std::shared_ptr<orders_db> db = std::make_shared<orders_db>();
  context_ptr ctx;
  api_worker_actor worker;
  caf::scoped_actor alice{sys};
  caf::scoped_actor bob{sys};
  caf::scoped_actor carol{sys};

  /// A worker that waits `batch_wait_us` for more commands (0: only the
  /// backlog) and writes at most `batch_max` in one transaction.
  void start(int batch_wait_us, int batch_max = 64) {
    config::settings cfg;
    cfg.api.batch_wait_us = batch_wait_us;
    cfg.api.batch_max = batch_max;
    ctx = test::actor_fixture::make_context(cfg);
    api_worker_deps deps;
    deps.store = [d = db] { return std::make_unique<fake_book>(d); };
    deps.now_unix_ms = [d = db] { return d->now; };
    worker = sys.spawn(api_worker_with, ctx, std::move(deps));
    run(); // the worker's start
  }

  ~api_fixture() override {
    caf::anon_send_exit(worker, caf::exit_reason::kill);
  }

  /// `who` places an order of one item, to be answered by `deadline_in_ms`
  /// from now (0: no deadline).
  void order(caf::scoped_actor& who, const std::string& customer,
             std::int64_t deadline_in_ms = 0) {
    create_order cmd{customer, {{"sku-1", 1, 500}}, "", "", "", 0};
    if (deadline_in_ms > 0)
      cmd.deadline_unix_ms = db->now + deadline_in_ms;
    who->request(worker, caf::infinite, std::move(cmd));
  }

  /// The answer an order of `customer` must get: the IDs it was written
  /// with.
  order_accepted accepted(const std::string& customer) {
    auto i = db->written.find(customer);
    REQUIRE(i != db->written.end());
    return i->second;
  }

  std::uint64_t expired() const {
    return ctx->metrics->sum("api_commands_expired_total");
  }
};

caf::error unavailable() {
  return make_api_error(api_errc::unavailable, "");
}

/// The text of the error waiting in `who`'s mailbox (not taken out).
std::string error_text(caf::scoped_actor& who) {
  auto err = std::get<0>(extract<caf::error>(who));
  return caf::to_string(err.context());
}

using customers = std::vector<std::string>;

} // namespace

TEST_CASE_METHOD(
  api_fixture,
  "creates_that_arrive_while_a_batch_gathers_are_one_transaction_and_"
  "each_requester_gets_its_own_answer") {
  start(0);
  order(alice, "alice");
  order(bob, "bob");
  order(carol, "carol");
  // The first command schedules the flush; it queues behind the other two.
  expect((create_order), from(alice).to(worker).with(_));
  expect((create_order), from(bob).to(worker).with(_));
  expect((create_order), from(carol).to(worker).with(_));
  expect((flush_atom), from(worker).to(worker).with(_));
  CAPTURE(db->commits);
  INFO("the three creates share one transaction");
  CHECK(db->transactions == 1);
  CHECK(db->commits == std::vector<customers>{{"alice", "bob", "carol"}});
  expect((order_accepted), from(worker).to(alice).with(accepted("alice")));
  expect((order_accepted), from(worker).to(bob).with(accepted("bob")));
  expect((order_accepted), from(worker).to(carol).with(accepted("carol")));
  disallow((order_accepted), from(worker).to(alice));
  disallow((caf::error), from(worker).to(alice));
}

TEST_CASE_METHOD(
  api_fixture,
  "a_command_whose_deadline_passed_while_it_waited_for_its_batch_is_"
  "refused_as_unavailable_and_nothing_is_written") {
  start(1000); // the batch waits 1 ms for more commands
  order(alice, "alice", 5);
  expect((create_order), from(alice).to(worker).with(_));
  db->now += 10; // the service is busy: the wait outlasts the deadline
  trigger_timeouts();
  expect((flush_atom), from(worker).to(worker).with(_));
  INFO("refused answer: " << error_text(alice));
  CHECK_THAT(error_text(alice), Catch::Contains("deadline passed"));
  expect((caf::error), from(worker).to(alice).with(unavailable()));
  disallow((caf::error), from(worker).to(alice));
  CAPTURE(db->commits);
  INFO("a refused command begins no transaction");
  CHECK(db->transactions == 0);
  INFO("the refusal is counted as an expired command");
  CHECK(expired() == 1);
}

TEST_CASE_METHOD(
  api_fixture,
  "a_late_command_in_a_batch_is_refused_and_the_others_are_committed_"
  "without_it") {
  start(1000);
  order(alice, "alice", 5); // late by the time the batch is written
  order(bob, "bob");        // no deadline
  expect((create_order), from(alice).to(worker).with(_));
  expect((create_order), from(bob).to(worker).with(_));
  db->now += 10;
  trigger_timeouts();
  expect((flush_atom), from(worker).to(worker).with(_));
  CAPTURE(db->commits);
  INFO("only the command still in time is written");
  CHECK(db->commits == std::vector<customers>{{"bob"}});
  expect((caf::error), from(worker).to(alice).with(unavailable()));
  expect((order_accepted), from(worker).to(bob).with(accepted("bob")));
  INFO("the late command is counted as expired");
  CHECK(expired() == 1);
}

TEST_CASE_METHOD(
  api_fixture,
  "a_command_whose_deadline_passes_during_its_transaction_is_refused_"
  "as_expired_not_as_a_database_failure") {
  start(0);
  order(alice, "alice", 5);
  // The transaction is slow: the deadline passes before COMMIT, and the
  // store rolls it back (transient), as order_store does.
  db->during_write = [&] { db->now += 10; };
  expect((create_order), from(alice).to(worker).with(_));
  expect((flush_atom), from(worker).to(worker).with(_));
  CAPTURE(db->commits);
  INFO("the transaction began and was rolled back at its deadline");
  CHECK(db->transactions == 1);
  CHECK(db->commits.empty());
  INFO("refused answer: " << error_text(alice));
  CHECK_THAT(error_text(alice), Catch::Contains("deadline passed"));
  expect((caf::error), from(worker).to(alice).with(unavailable()));
  INFO("the refusal is counted as expired, not as a database failure");
  CHECK(expired() == 1);
}

TEST_CASE_METHOD(
  api_fixture,
  "a_command_the_database_rejects_fails_only_its_own_requester_and_"
  "the_rest_of_its_batch_is_committed") {
  start(0);
  db->rejects = {"bob"};
  order(alice, "alice");
  order(bob, "bob");
  order(carol, "carol");
  expect((create_order), from(alice).to(worker).with(_));
  expect((create_order), from(bob).to(worker).with(_));
  expect((create_order), from(carol).to(worker).with(_));
  expect((flush_atom), from(worker).to(worker).with(_));
  // The shared transaction failed; each ran again alone.
  CAPTURE(db->commits);
  INFO("one shared transaction that failed, then one per command");
  CHECK(db->transactions == 4);
  INFO("the rejected command is written in none of them");
  CHECK(db->commits == std::vector<customers>{{"alice"}, {"carol"}});
  expect((order_accepted), from(worker).to(alice).with(accepted("alice")));
  expect((caf::error),
         from(worker).to(bob).with(make_api_error(api_errc::internal, "")));
  expect((order_accepted), from(worker).to(carol).with(accepted("carol")));
}

TEST_CASE_METHOD(
  api_fixture,
  "a_full_batch_is_written_at_once_and_a_flush_with_nothing_gathered_"
  "writes_nothing") {
  start(1'000'000, 2); // waits a second for more, at most two a batch
  order(alice, "alice");
  order(bob, "bob");
  expect((create_order), from(alice).to(worker).with(_));
  INFO("one command of two: the batch waits for more");
  CHECK(db->transactions == 0);
  expect((create_order), from(bob).to(worker).with(_));
  // The second command filled the batch: written before any flush message.
  CAPTURE(db->commits);
  INFO("the full batch is committed at once, before its flush message");
  CHECK(db->commits == std::vector<customers>{{"alice", "bob"}});
  expect((order_accepted), from(worker).to(alice).with(accepted("alice")));
  expect((order_accepted), from(worker).to(bob).with(accepted("bob")));
  // The flush the first command scheduled finds nothing to write.
  INFO("the scheduled flush is still pending, once");
  CHECK(trigger_timeouts() == 1);
  expect((flush_atom), from(worker).to(worker).with(_));
  INFO("a flush with nothing gathered writes nothing");
  CHECK(db->transactions == 1);
  disallow((order_accepted), from(worker).to(alice));
  disallow((caf::error), from(worker).to(alice));
}

TEST_CASE_METHOD(
  api_fixture,
  "a_drain_commits_what_is_gathered_and_answers_its_requesters_before_"
  "its_report") {
  start(1'000'000);
  order(alice, "alice");
  expect((create_order), from(alice).to(worker).with(_));
  INFO("the command waits for its batch");
  CHECK(db->transactions == 0);
  self->request(worker, caf::infinite, drain_atom::value);
  expect((drain_atom), from(self).to(worker).with(_));
  CAPTURE(db->commits);
  INFO("the drain committed the gathered command");
  CHECK(db->commits == std::vector<customers>{{"alice"}});
  expect((order_accepted), from(worker).to(alice).with(accepted("alice")));
  auto report = std::get<0>(extract<drain_report>(self));
  INFO("the drain reports itself drained");
  CHECK(report.drained);
  expect((drain_report), from(worker).to(self).with(_));
  // The batch's own flush, later, writes nothing more.
  trigger_timeouts();
  expect((flush_atom), from(worker).to(worker).with(_));
  INFO("the batch's own flush, after the drain, writes nothing");
  CHECK(db->transactions == 1);
}

TEST_CASE_METHOD(api_fixture,
                 "a_worker_stopped_while_a_command_waits_for_its_batch_answers_"
                 "that_nothing_was_written") {
  start(1'000'000);
  order(alice, "alice");
  expect((create_order), from(alice).to(worker).with(_));
  caf::anon_send_exit(worker, caf::exit_reason::kill);
  sched.run_once(); // the worker takes the exit and stops
  INFO("refused answer: " << error_text(alice));
  CHECK_THAT(error_text(alice), Catch::Contains("nothing was written"));
  expect((caf::error), from(worker).to(alice).with(unavailable()));
  disallow((caf::error), from(worker).to(alice));
  INFO("no transaction began");
  CHECK(db->transactions == 0);
}

TEST_CASE_METHOD(api_fixture,
                 "a_worker_that_fails_during_its_commit_answers_every_command_"
                 "of_the_batch_that_its_outcome_is_unknown") {
  start(0);
  order(alice, "alice");
  order(bob, "bob");
  // The worker fails inside its transaction (a crash, say, or a bug).
  db->during_write = [] { throw std::logic_error("worker failed mid-commit"); };
  expect((create_order), from(alice).to(worker).with(_));
  expect((create_order), from(bob).to(worker).with(_));
  expect((flush_atom), from(worker).to(worker).with(_));
  auto unknown = make_api_error(api_errc::outcome_unknown, "");
  expect((caf::error), from(worker).to(alice).with(unknown));
  expect((caf::error), from(worker).to(bob).with(unknown));
  disallow((caf::error), from(worker).to(alice));
  disallow((order_accepted), from(worker).to(alice));
}
