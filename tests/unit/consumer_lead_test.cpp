// The consumer lead the relays pace by, with questions of the test's
// making: a hung question never holds every relay back.

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

/// What the questions answer, in order; "hang" blocks until released.
struct script {
  std::mutex mtx;
  std::condition_variable cv;
  std::vector<std::int64_t> answers; ///< ahead, per question; -1: hang
  size_t next = 0;
  bool released = false;
  std::atomic<int> hanging{0};

  std::vector<consumer_lead::entry> ask() {
    std::unique_lock<std::mutex> lock{mtx};
    auto ahead = answers.at(next++);
    if (ahead < 0) {
      ++hanging;
      cv.wait(lock, [&] { return released; });
      --hanging;
      ahead = 0;
    }
    return {{"billing", 0, 0, ahead}};
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

std::int64_t ahead_of(const std::vector<consumer_lead::entry>& lead) {
  return lead.empty() ? -1 : lead.front().ahead;
}

} // namespace

TEST_CASE("a_hung_lead_question_is_given_up_after_its_bound_and_its_stale_"
          "answer_expires") {
  script s;
  s.answers = {1000000, -1, 5};
  constexpr auto max_age = 1ms, stale_after = 200ms;
  consumer_lead lead([&] { return std::make_unique<scripted_question>(s); },
                     max_age, stale_after);
  // "Far ahead": a relay would wait.
  CHECK(ahead_of(lead.current()) == 1000000);
  std::this_thread::sleep_for(2 * max_age); // the answer is due again
  // The next question hangs in the broker client.
  auto hung = std::async(std::launch::async, [&] { return lead.current(); });
  while (s.hanging == 0)
    std::this_thread::yield();
  // While it is young, the others take the last answer.
  CHECK(ahead_of(lead.current()) == 1000000);
  // Past its bound it is given up: the next caller asks anew (the
  // consumers caught up meanwhile) instead of repeating "far ahead".
  std::this_thread::sleep_for(stale_after + 10ms);
  CHECK(ahead_of(lead.current()) == 5);
  // The hung question's late answer does not replace the newer one.
  s.release();
  hung.get();
  CHECK(ahead_of(lead.current()) == 5);
}

TEST_CASE("an_answer_older_than_its_bound_is_no_answer_while_a_question_is_"
          "in_progress") {
  script s;
  s.answers = {1000000, -1};
  constexpr auto stale_after = 100ms;
  // max_age above stale_after: the first answer is still "due" only once
  // it has gone stale.
  consumer_lead lead([&] { return std::make_unique<scripted_question>(s); },
                     1ms, stale_after);
  CHECK(ahead_of(lead.current()) == 1000000);
  std::this_thread::sleep_for(stale_after + 10ms);
  auto hung = std::async(std::launch::async, [&] { return lead.current(); });
  while (s.hanging == 0)
    std::this_thread::yield();
  // The question in progress is young, the last answer is not: no lead is
  // known, so nothing waits for it.
  CHECK(lead.current().empty());
  s.release();
  hung.get();
}
