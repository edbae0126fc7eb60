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

consumer_lead::consumer_lead(question_factory make,
                             std::chrono::milliseconds max_age,
                             std::chrono::milliseconds stale_after,
                             clock_fn now)
    : make_(std::move(make)), now_(std::move(now)), max_age_(max_age),
      stale_after_(stale_after) {
  // nop
}

consumer_lead::~consumer_lead() = default;

std::vector<consumer_lead::entry>
consumer_lead::last_if_fresh(clock::time_point now) const {
  if (answered_ && now - asked_ < stale_after_)
    return last_;
  return {};
}

namespace {

/// One question in flight, shared by its asking thread and its caller: a
/// hung question must not hold its caller (a relay) with it.
struct asked {
  std::mutex mtx;
  std::condition_variable cv;
  bool done = false;
  std::vector<consumer_lead::entry> out;
  std::unique_ptr<consumer_lead::question> q; ///< back, once answered
  std::exception_ptr error;
};

} // namespace

std::vector<consumer_lead::entry> consumer_lead::current() {
  std::unique_ptr<question> q;
  std::uint64_t generation = 0;
  auto now = now_();
  {
    std::lock_guard<std::mutex> guard{mtx_};
    if (answered_ && now - asked_ < max_age_)
      return last_;
    if (asking_ && now - asking_since_ < stale_after_)
      return last_if_fresh(now); // another caller is asking right now
    // Nobody asks, or the one who does has hung past stale_after_: ask
    // anew. A hung question keeps its own client; this one gets the kept
    // client, or a new one.
    q = std::move(idle_);
    asking_ = true;
    asking_since_ = now;
    generation = ++generation_;
  }
  // The question runs on a thread of its own, and the caller waits at most
  // stale_after_ for it: librdkafka 2.0.2 can block in a watermark query
  // past its timeout once its broker went away, and a relay blocked there
  // never published (or failed to publish) again and held its tree at stop.
  // The thread owns what it uses, so it may outlive this object.
  auto job = std::make_shared<asked>();
  std::thread([job, q = std::move(q), make = make_]() mutable {
    std::vector<entry> out;
    std::exception_ptr error;
    try {
      if (!q)
        q = make();
      out = q->ask();
    } catch (...) {
      error = std::current_exception();
      q.reset(); // a client that failed is not trusted again
    }
    {
      std::lock_guard<std::mutex> guard{job->mtx};
      job->out = std::move(out);
      job->q = std::move(q);
      job->error = error;
      job->done = true;
    }
    job->cv.notify_all();
  }).detach();
  {
    std::unique_lock<std::mutex> lock{job->mtx};
    if (!job->cv.wait_for(lock, stale_after_, [&] { return job->done; })) {
      std::lock_guard<std::mutex> guard{mtx_};
      return last_if_fresh(now); // still asking: given up at its bound
    }
  }
  if (job->error) {
    // A client that failed is not trusted again (it may be attached to a
    // broker that went away): the next question gets a fresh one.
    std::lock_guard<std::mutex> guard{mtx_};
    if (generation == generation_)
      asking_ = false;
    std::rethrow_exception(job->error);
  }
  std::lock_guard<std::mutex> guard{mtx_};
  if (generation != generation_)
    return job->out; // given up meanwhile: a newer question's answer counts
  asking_ = false;
  idle_ = std::move(job->q);
  last_ = job->out;
  asked_ = now;
  answered_ = true;
  return last_;
}

} // namespace ef::kafka
