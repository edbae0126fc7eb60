#include "app/tools/chaos_client.hpp"

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <memory>
#include <thread>
#include <vector>

namespace ef::app::chaos_run {

namespace {

using clock = std::chrono::steady_clock;
using json = nlohmann::json;

std::uint64_t mix(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t h = seed * 0x9e3779b97f4a7c15ULL + i;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return h;
}

/// Deterministic choice of the orders to cancel.
bool cancel_this(std::uint64_t seed, int i, double share) {
  return static_cast<double>(mix(seed, static_cast<std::uint64_t>(i)) >> 11) *
           0x1.0p-53 <
         share;
}

/// A client of the pipeline that follows it to a new port after a restart.
class following_client {
public:
  explicit following_client(const pipeline& pipe) : pipe_(pipe) {}

  httplib::Result post(const std::string& path, const httplib::Headers& headers,
                       const std::string& body) {
    auto url = pipe_.url();
    if (!cli_ || url != url_) {
      url_ = url;
      cli_ = std::make_unique<httplib::Client>(url_);
      cli_->set_keep_alive(true);
      cli_->set_tcp_nodelay(true);
      cli_->set_read_timeout(30, 0);
    }
    return cli_->Post(path.c_str(), headers, body, "application/json");
  }

private:
  const pipeline& pipe_;
  std::string url_;
  std::unique_ptr<httplib::Client> cli_;
};

/// POSTs until an answer other than 503 / transport error, the deadline,
/// or `stop`.
int post_until_answered(following_client& cli, const std::string& path,
                        const httplib::Headers& headers,
                        const std::string& body, clock::time_point deadline,
                        const std::atomic<bool>& stop, drive_stats& stats,
                        std::string* reply) {
  for (;;) {
    auto res = cli.post(path, headers, body);
    if (res && res->status != 503) {
      if (reply)
        *reply = res->body;
      return res->status;
    }
    if (clock::now() > deadline || stop)
      return res ? res->status : 0;
    ++stats.retries;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

} // namespace

std::string trace_of(std::uint64_t seed, std::uint64_t space, long i) {
  char buf[56];
  auto n = static_cast<std::uint64_t>(i);
  std::snprintf(buf, sizeof(buf), "00-%016llx%016llx-%016llx-01",
                static_cast<unsigned long long>(mix(seed, space)),
                static_cast<unsigned long long>(mix(seed ^ space, n)),
                static_cast<unsigned long long>(mix(n, seed) | 1));
  return buf;
}

void drive(const pipeline& pipe, const config::settings& cfg,
           const chaos_plan& plan, const std::atomic<bool>& stop,
           drive_stats& stats) {
  std::atomic<int> next{0};
  auto deadline = clock::now() + std::chrono::seconds(plan.timeout_s);
  // A fresh key space per run: a rerun on the same database places new
  // orders instead of replaying the previous run's.
  auto run_id =
    std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::system_clock::now().time_since_epoch())
                     .count());
  auto worker = [&] {
    following_client cli(pipe);
    for (int i = next++; i < plan.orders && !stop; i = next++) {
      json body{{"customer_id", "chaos-" + std::to_string(i % 97)},
                {"items",
                 {{{"sku", "sku-" + std::to_string(i % 13)},
                   {"qty", 1 + i % 4},
                   {"price_cents", 100 + i % 1000}}}}};
      auto trace = trace_of(cfg.chaos.seed, 1, i);
      httplib::Headers headers{
        {"Idempotency-Key", "chaos-" + std::to_string(cfg.chaos.seed) + "-" +
                              run_id + "-" + std::to_string(i)},
        {"traceparent", trace}};
      std::string reply;
      if (post_until_answered(cli, "/orders", headers, body.dump(), deadline,
                              stop, stats, &reply) != 201) {
        ++stats.failed;
        continue;
      }
      ++stats.created;
      if (!cancel_this(cfg.chaos.seed, i, plan.cancel_share))
        continue;
      auto id = json::parse(reply).value("order_id", "");
      // 409 "already cancelled" means an earlier attempt got through.
      auto status = post_until_answered(cli, "/orders/" + id + "/cancel",
                                        {{"traceparent", trace}}, "", deadline,
                                        stop, stats, nullptr);
      if (status == 202 || status == 409)
        ++stats.cancelled;
      else
        ++stats.failed;
    }
  };
  std::vector<std::thread> threads;
  for (int c = 0; c < plan.concurrency; ++c)
    threads.emplace_back(worker);
  for (auto& t : threads)
    t.join();
}

} // namespace ef::app::chaos_run
