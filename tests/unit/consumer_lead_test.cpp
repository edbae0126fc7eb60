// The consumer lead the relays pace by, with questions and a clock of the
// test's making: a hung question never holds every relay back.

#include "kafka/consumer_lead.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

using namespace ef::kafka;
using namespace std::chrono_literals;

namespace {

/// What the questions answer, in order (the last one from then on); -1
/// hangs until released.
struct script {
  std::mutex mtx;
  std::condition_variable cv;
  std::vector<std::int64_t> answers; ///< `ahead`, per question
  size_t next = 0;
  bool released = false;
  bool hanging = false;
  int returned = 0; ///< hung questions released and back

  std::vector<consumer_lead::entry> ask() {
    std::unique_lock<std::mutex> lock{mtx};
    auto ahead = answers.at(std::min(next++, answers.size() - 1));
    if (ahead < 0) {
      hanging = true;
      cv.notify_all();
      cv.wait(lock, [&] { return released; });
      ahead = 0;
      ++returned;
      cv.notify_all();
    }
    return {{"billing", 0, 0, ahead}};
  }

  /// Returns once `n` hung questions came back from ask().
  void await_returned(int n) {
    std::unique_lock<std::mutex> lock{mtx};
    cv.wait(lock, [&] { return returned >= n; });
  }

  /// Returns once a question hangs in ask().
  void await_hanging() {
    std::unique_lock<std::mutex> lock{mtx};
    cv.wait(lock, [&] { return hanging; });
  }

  void release() {
    {
      std::lock_guard<std::mutex> guard{mtx};
      released = true;
    }
    cv.notify_all();
  }
};

struct scripted_question : consumer_lead::question {
  explicit scripted_question(script& s) : s(s) {}
  std::vector<consumer_lead::entry> ask() override { return s.ask(); }
  script& s;
};

/// A clock that moves only when the test moves it.
struct manual_clock {
  std::atomic<std::int64_t> ms{0};
  consumer_lead::clock_fn fn() {
    return [this] {
      return consumer_lead::clock::time_point{std::chrono::milliseconds(ms)};
    };
  }
};

std::int64_t ahead_of(const std::vector<consumer_lead::entry>& lead) {
  return lead.empty() ? -1 : lead.front().ahead;
}

constexpr auto max_age = 250ms;
constexpr auto stale_after = 10000ms;

} // namespace

TEST_CASE("a_hung_lead_question_is_given_up_after_its_bound_and_its_late_"
          "answer_is_dropped") {
  script s;
  s.answers = {1000000, -1, 5};
  manual_clock t;
  consumer_lead lead([&] { return std::make_unique<scripted_question>(s); },
                     max_age, stale_after, t.fn());
  // "Far ahead": a relay would wait.
  CHECK(ahead_of(lead.current()) == 1000000);
  t.ms += 300; // the answer is due again; the next question hangs
  auto hung = std::async(std::launch::async, [&] { return lead.current(); });
  s.await_hanging();
  // While it is younger than its bound, the others take the last answer.
  t.ms += 9000;
  CHECK(ahead_of(lead.current()) == 1000000);
  // Past its bound it is given up: the next caller asks anew (the
  // consumers caught up meanwhile) instead of repeating "far ahead".
  t.ms += 1001;
  CHECK(ahead_of(lead.current()) == 5);
  // The hung question's late answer does not replace the newer one.
  s.release();
  CHECK(ahead_of(hung.get()) == 0);
  CHECK(ahead_of(lead.current()) == 5);
}

TEST_CASE("an_answer_older_than_its_bound_is_no_answer_while_a_question_is_"
          "in_progress") {
  script s;
  s.answers = {1000000, -1};
  manual_clock t;
  consumer_lead lead([&] { return std::make_unique<scripted_question>(s); },
                     max_age, stale_after, t.fn());
  CHECK(ahead_of(lead.current()) == 1000000);
  t.ms += 11000; // the answer is stale, and the next question hangs
  auto hung = std::async(std::launch::async, [&] { return lead.current(); });
  s.await_hanging();
  // The question in progress is young, the last answer is not: no lead is
  // known, so nothing waits for it.
  CHECK(lead.current().empty());
  s.release();
  hung.get();
}

TEST_CASE("the_caller_of_a_hung_question_is_not_held_past_its_bound") {
  // librdkafka can block in a watermark query past its timeout once its
  // broker went away; the relay that asked must come back (and publish, or
  // fail to) all the same, with the last answer that is still fresh.
  script s;
  s.answers = {7, -1};
  manual_clock t;
  consumer_lead lead([&] { return std::make_unique<scripted_question>(s); },
                     max_age, 300ms, t.fn());
  CHECK(ahead_of(lead.current()) == 7);
  t.ms += 260; // due again, still fresh; the next question hangs
  auto asked = std::async(std::launch::async, [&] { return lead.current(); });
  s.await_hanging();
  // Back after at most the bound (300 ms of real time), the hung question
  // still running on its own thread.
  REQUIRE(asked.wait_for(10s) == std::future_status::ready);
  CHECK(ahead_of(asked.get()) == 7);
  s.release();         // its late answer is dropped with its thread
  s.await_returned(1); // which must not outlive the script
}
