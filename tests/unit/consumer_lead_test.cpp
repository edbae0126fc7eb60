// The consumer lead the relays pace by, with questions and a clock of the
// test's making: a hung question never holds every relay back.

#include "kafka/consumer_lead.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <condition_variable>
#include <filesystem>
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

/// Threads of this process now (Linux: one entry per task).
size_t threads_now() {
  size_t n = 0;
  for (auto& e : std::filesystem::directory_iterator("/proc/self/task")) {
    (void)e;
    ++n;
  }
  return n;
}

TEST_CASE("one_hung_lead_question_holds_one_thread_and_one_client_however_"
          "many_callers_ask") {
  // A broker that went away can hang a watermark query past its timeout:
  // 200 asks through the outage cost one thread and one client, not 200.
  script s;
  s.answers = {1000000, -1, 5};
  manual_clock t;
  std::atomic<int> clients{0};
  size_t asking = 0; // threads once the lead asks (a sanitizer adds its own)
  {
    consumer_lead lead(
      [&] {
        ++clients;
        return std::make_unique<scripted_question>(s);
      },
      max_age, 300ms, t.fn());
    CHECK(ahead_of(lead.current()) == 1000000);
    asking = threads_now();
    t.ms += 260; // due again, still fresh; the next question hangs
    CHECK(ahead_of(lead.current()) == 1000000); // its caller's bound passed
    s.await_hanging();
    for (int i = 0; i < 200; ++i) {
      t.ms += 100;
      // Past the last answer's bound no lead is known: nothing waits.
      auto now = lead.current();
      CHECK((ahead_of(now) == 1000000 || now.empty()));
    }
    CHECK(lead.current().empty());
    INFO("threads while it asked: " << asking << ", during the outage: "
                                    << threads_now());
    CHECK(threads_now() <= asking);
    CHECK(clients == 1);
    // The hung question comes back; its answer counts, and the next due
    // question asks again with the same client.
    s.release();
    s.await_returned(1);
    // Its answer is stored once the asking thread is back from ask(); the
    // clock stands still, so looking starts no new question.
    while (lead.current().empty())
      std::this_thread::yield();
    CHECK(ahead_of(lead.current()) == 0);
    t.ms += 300;
    CHECK(ahead_of(lead.current()) == 5);
    CHECK(clients == 1);
  }
  // Stopped: its asking thread is gone too.
  CHECK(threads_now() < asking);
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
  s.release();         // it comes back on the asking thread
  s.await_returned(1); // which must not outlive the script
}
