#include "kafka/consumer_lead.hpp"

#include "kafka/broker_probe.hpp"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <thread>

namespace ef::kafka {

namespace {

/// The broker's answer through one probe client.
class probe_question : public consumer_lead::question {
public:
  probe_question(const connection& cluster, const std::string& topic,
                 int partitions, const std::vector<std::string>& consumers)
      : probe_(cluster, topic), partitions_(partitions), consumers_(consumers) {
    // nop
  }

  std::vector<consumer_lead::entry> ask() override {
    std::vector<broker_probe::watermarks> marks;
    for (int p = 0; p < partitions_; ++p)
      marks.push_back(probe_.query_watermarks(p));
    std::vector<consumer_lead::entry> out;
    for (auto& c : consumers_) {
      auto committed = probe_.committed("eventforge." + c, partitions_);
      for (int p = 0; p < partitions_; ++p) {
        auto& m = marks[static_cast<size_t>(p)];
        auto read = std::max(committed[static_cast<size_t>(p)], m.low);
        out.push_back({c, p, read, m.high - read});
      }
    }
    return out;
  }

private:
  broker_probe probe_;
  int partitions_;
  std::vector<std::string> consumers_;
};

} // namespace

consumer_lead::consumer_lead(connection cluster, std::string topic,
                             int partitions, std::vector<std::string> consumers,
                             std::chrono::milliseconds max_age,
                             std::chrono::milliseconds stale_after)
    : consumer_lead(
        [cluster = std::move(cluster), topic = std::move(topic), partitions,
         consumers = std::move(consumers)]() -> std::unique_ptr<question> {
          return std::make_unique<probe_question>(cluster, topic, partitions,
                                                  consumers);
        },
        max_age, stale_after, [] { return clock::now(); }) {
  // nop
}

/// The state the callers and the asking thread share, under `mtx`.
struct consumer_lead::shared {
  question_factory make;
  clock_fn now;
  std::chrono::milliseconds max_age;
  std::chrono::milliseconds stale_after;

  std::mutex mtx;
  std::condition_variable wake;     ///< the asking thread: a question is due
  std::condition_variable answered; ///< callers: a question ended
  bool stop = false;
  std::uint64_t wanted = 0; ///< questions asked for
  std::uint64_t ended = 0;  ///< questions ended (answered or failed)
  bool asking = false;
  std::vector<entry> last;
  clock::time_point asked{};
  bool has_answer = false;
  std::exception_ptr error; ///< of question `ended`, if it failed

  /// The last answer if it is younger than stale_after, else none.
  std::vector<entry> last_if_fresh(clock::time_point t) const {
    if (has_answer && t - asked < stale_after)
      return last;
    return {};
  }

  /// The asking thread: one question at a time, when one is due. Owns its
  /// client between questions; drops one that failed.
  static void run(std::shared_ptr<shared> s) {
    std::unique_ptr<question> client;
    std::unique_lock<std::mutex> lock{s->mtx};
    for (;;) {
      s->wake.wait(lock, [&] { return s->stop || s->wanted > s->ended; });
      if (s->stop)
        return;
      s->asking = true;
      auto target = s->wanted;
      lock.unlock();
      std::vector<entry> out;
      std::exception_ptr error;
      try {
        if (!client)
          client = s->make();
        out = client->ask();
      } catch (...) {
        error = std::current_exception();
        client.reset(); // a client that failed is not trusted again
      }
      auto at = s->now();
      lock.lock();
      s->asking = false;
      s->ended = target;
      s->error = error;
      if (!error) {
        s->last = std::move(out);
        s->asked = at;
        s->has_answer = true;
      }
      s->answered.notify_all();
    }
  }
};

consumer_lead::consumer_lead(question_factory make,
                             std::chrono::milliseconds max_age,
                             std::chrono::milliseconds stale_after,
                             clock_fn now)
    : s_(std::make_shared<shared>()) {
  s_->make = std::move(make);
  s_->now = std::move(now);
  s_->max_age = max_age;
  s_->stale_after = stale_after;
  asker_ = std::thread(&shared::run, s_);
}

consumer_lead::~consumer_lead() {
  bool hung = false;
  {
    std::lock_guard<std::mutex> guard{s_->mtx};
    s_->stop = true;
    hung = s_->asking;
  }
  s_->wake.notify_all();
  // A question in progress may never end (a hung client): the thread ends
  // after it, on its own; it holds the shared state, not this object.
  if (hung)
    asker_.detach();
  else
    asker_.join();
}

std::vector<consumer_lead::entry> consumer_lead::current() {
  auto now = s_->now();
  std::unique_lock<std::mutex> lock{s_->mtx};
  if (s_->has_answer && now - s_->asked < s_->max_age)
    return s_->last;
  if (s_->asking)
    return s_->last_if_fresh(now); // one question at a time
  auto mine = ++s_->wanted;
  s_->wake.notify_all();
  // The caller waits at most stale_after for it: a relay blocked on a hung
  // question never published (or failed to publish) again and held its
  // tree at stop.
  if (!s_->answered.wait_for(lock, s_->stale_after,
                             [&] { return s_->ended >= mine; }))
    return s_->last_if_fresh(now);
  if (s_->ended == mine && s_->error) {
    auto error = s_->error; // a copy: the next question may replace it
    lock.unlock();
    std::rethrow_exception(error);
  }
  return s_->last_if_fresh(now);
}

} // namespace ef::kafka
