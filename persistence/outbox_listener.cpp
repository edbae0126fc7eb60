#include "persistence/outbox_listener.hpp"

#include "persistence/connection.hpp"
#include <eventforge/config/logging.hpp>

#include <algorithm>

namespace ef::persistence {

namespace {

/// How long the thread waits on the socket before it looks at its stop flag.
constexpr int wait_slice_us = 200'000;

} // namespace

const char* const outbox_published_channel = "outbox_published";
const char* const broker_epoch_channel = "broker_epoch";

std::string outbox_channel(int shard) {
  // Lowercase on purpose: LISTEN folds unquoted names, pqxx quotes them.
  return "outbox_shard_" + std::to_string(shard);
}

struct outbox_listener::impl {
  /// Sets its shard's flag from inside await_notification (listener thread).
  class receiver : public pqxx::notification_receiver {
  public:
    receiver(pqxx::connection_base& c, int shard, impl& owner)
        : pqxx::notification_receiver(c, outbox_channel(shard)), shard_(shard),
          owner_(owner) {}
    void operator()(const std::string&, int) override { owner_.fire(shard_); }

  private:
    int shard_;
    impl& owner_;
  };

  /// Hands announcements to the subscribers (listener thread).
  class announcements : public pqxx::notification_receiver {
  public:
    announcements(pqxx::connection_base& c, impl& owner)
        : pqxx::notification_receiver(c, outbox_published_channel),
          owner_(owner) {}
    void operator()(const std::string& payload, int) override {
      owner_.announce(payload);
    }

  private:
    impl& owner_;
  };

  /// Tells the subscribers of a new broker epoch (listener thread).
  class epochs : public pqxx::notification_receiver {
  public:
    epochs(pqxx::connection_base& c, impl& owner)
        : pqxx::notification_receiver(c, broker_epoch_channel), owner_(owner) {}
    void operator()(const std::string&, int) override {
      for (auto& x : owner_.live_sinks())
        x->epoch_began();
    }

  private:
    impl& owner_;
  };

  mutable std::mutex mtx;
  std::vector<std::weak_ptr<published_sink>> sinks;
  std::condition_variable cv;
  std::vector<bool> fired;
  bool broken = false;
  bool stop = false;
  std::unique_ptr<pqxx::connection> conn;
  std::vector<std::unique_ptr<pqxx::notification_receiver>> receivers;
  std::thread thread;

  void fire(int shard) {
    {
      std::lock_guard<std::mutex> guard{mtx};
      fired[static_cast<size_t>(shard)] = true;
    }
    cv.notify_all();
  }

  /// "partition:offset,..." to every live subscriber; malformed parts are
  /// skipped (a parked partition then waits for its recheck).
  void announce(const std::string& payload) {
    std::vector<std::pair<std::int32_t, std::int64_t>> parts;
    for (size_t i = 0; i < payload.size();) {
      auto end = payload.find(',', i);
      if (end == std::string::npos)
        end = payload.size();
      auto item = payload.substr(i, end - i);
      auto colon = item.find(':');
      try {
        if (colon != std::string::npos)
          parts.emplace_back(std::stoi(item.substr(0, colon)),
                             std::stoll(item.substr(colon + 1)));
      } catch (const std::exception&) {
        // skipped
      }
      i = end + 1;
    }
    for (auto& x : live_sinks())
      for (auto& [p, o] : parts)
        x->published(p, o);
  }

  std::vector<std::shared_ptr<published_sink>> live_sinks() {
    std::vector<std::shared_ptr<published_sink>> live;
    std::lock_guard<std::mutex> guard{mtx};
    for (auto& w : sinks)
      if (auto x = w.lock())
        live.push_back(std::move(x));
    return live;
  }

  void run() {
    for (;;) {
      {
        std::lock_guard<std::mutex> guard{mtx};
        if (stop)
          return;
      }
      std::string why;
      try {
        conn->await_notification(0, wait_slice_us);
        // await_notification returns quietly when the socket dies.
        if (!conn->is_open())
          why = "connection closed";
      } catch (const std::exception& e) {
        why = e.what();
      }
      if (why.empty())
        continue;
      ef::log::warn("outbox listener: {}; the relays reconnect", why);
      {
        std::lock_guard<std::mutex> guard{mtx};
        broken = true;
      }
      cv.notify_all();
      return;
    }
  }
};

outbox_listener::outbox_listener(const std::string& dsn, int shards)
    : impl_(std::make_unique<impl>()) {
  impl_->fired.assign(static_cast<size_t>(shards), false);
  try {
    impl_->conn = open_connection(dsn);
    for (int s = 0; s < shards; ++s)
      impl_->receivers.push_back(
        std::make_unique<impl::receiver>(*impl_->conn, s, *impl_));
    impl_->receivers.push_back(
      std::make_unique<impl::announcements>(*impl_->conn, *impl_));
    impl_->receivers.push_back(
      std::make_unique<impl::epochs>(*impl_->conn, *impl_));
  } catch (...) {
    impl_->receivers.clear(); // before their connection
    rethrow_as_db_error();
  }
  impl_->thread = std::thread([this] { impl_->run(); });
}

outbox_listener::~outbox_listener() {
  {
    std::lock_guard<std::mutex> guard{impl_->mtx};
    impl_->stop = true;
  }
  impl_->thread.join();
  // The receivers must go before the connection they are registered with.
  impl_->receivers.clear();
}

bool outbox_listener::await(int shard, std::chrono::milliseconds timeout) {
  auto i = static_cast<size_t>(shard);
  std::unique_lock<std::mutex> lock{impl_->mtx};
  if (i >= impl_->fired.size())
    throw std::out_of_range("outbox listener: no shard " +
                            std::to_string(shard));
  impl_->cv.wait_for(lock, timeout,
                     [&] { return impl_->broken || impl_->fired[i]; });
  if (impl_->broken)
    throw db_error(db_errc::unavailable, "outbox listener connection closed");
  bool fired = impl_->fired[i];
  impl_->fired[i] = false;
  return fired;
}

bool outbox_listener::healthy() const {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  return !impl_->broken;
}

void outbox_listener::subscribe(std::weak_ptr<published_sink> sink) {
  std::lock_guard<std::mutex> guard{impl_->mtx};
  auto& v = impl_->sinks;
  v.erase(std::remove_if(v.begin(), v.end(),
                         [](const auto& w) { return w.expired(); }),
          v.end());
  v.push_back(std::move(sink));
}

std::shared_ptr<outbox_listener> listener_slot::get(const std::string& dsn,
                                                    int shards) {
  std::lock_guard<std::mutex> guard{mtx_};
  auto l = current_.lock();
  if (!l || !l->healthy()) {
    l = std::make_shared<outbox_listener>(dsn, shards);
    current_ = l;
  }
  return l;
}

} // namespace ef::persistence
