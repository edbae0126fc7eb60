#include "app/chaos_runner.hpp"

#include "actors/eventforge.hpp"
#include "app/http_frontend.hpp"
#include "app/runtime.hpp"
#include "app/verifier.hpp"
#include "kafka/offsets.hpp"
#include "messages/atoms.hpp"
#include "persistence/invariant_queries.hpp"

#include <caf/all.hpp>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <atomic>
#include <fstream>
#include <iostream>
#include <thread>

namespace ef::app {

namespace {

using clock = std::chrono::steady_clock;
using json = nlohmann::json;

/// Deterministic choice of the orders to cancel.
bool cancel_this(std::uint64_t seed, int i, double share) {
  std::uint64_t h =
    seed * 0x9e3779b97f4a7c15ULL + static_cast<std::uint64_t>(i);
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  return static_cast<double>(h >> 11) * 0x1.0p-53 < share;
}

struct drive_stats {
  std::atomic<long> created{0};
  std::atomic<long> cancelled{0};
  std::atomic<long> retries{0};
  std::atomic<long> failed{0};
};

/// POSTs until an answer other than 503 / transport error, or the deadline.
int post_until_answered(httplib::Client& cli, const std::string& path,
                        const httplib::Headers& headers,
                        const std::string& body, clock::time_point deadline,
                        drive_stats& stats, std::string* reply) {
  for (;;) {
    auto res = cli.Post(path.c_str(), headers, body, "application/json");
    if (res && res->status != 503) {
      if (reply)
        *reply = res->body;
      return res->status;
    }
    if (clock::now() > deadline)
      return res ? res->status : 0;
    ++stats.retries;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void drive(const std::string& url, const config::settings& cfg,
           const chaos_plan& plan, drive_stats& stats) {
  std::atomic<int> next{0};
  auto deadline = clock::now() + std::chrono::seconds(plan.timeout_s);
  // A fresh key space per run: a rerun on the same database places new
  // orders instead of replaying the previous run's.
  auto run_id =
    std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::system_clock::now().time_since_epoch())
                     .count());
  auto worker = [&] {
    httplib::Client cli(url);
    cli.set_keep_alive(true);
    cli.set_tcp_nodelay(true);
    cli.set_read_timeout(30, 0);
    for (int i = next++; i < plan.orders; i = next++) {
      json body{{"customer_id", "chaos-" + std::to_string(i % 97)},
                {"items",
                 {{{"sku", "sku-" + std::to_string(i % 13)},
                   {"qty", 1 + i % 4},
                   {"price_cents", 100 + i % 1000}}}}};
      httplib::Headers headers{
        {"Idempotency-Key", "chaos-" + std::to_string(cfg.chaos.seed) + "-" +
                              run_id + "-" + std::to_string(i)}};
      std::string reply;
      if (post_until_answered(cli, "/orders", headers, body.dump(), deadline,
                              stats, &reply) != 201) {
        ++stats.failed;
        continue;
      }
      ++stats.created;
      if (!cancel_this(cfg.chaos.seed, i, plan.cancel_share))
        continue;
      auto id = json::parse(reply).value("order_id", "");
      // 409 "already cancelled" means an earlier attempt got through.
      auto status = post_until_answered(cli, "/orders/" + id + "/cancel", {},
                                        "", deadline, stats, nullptr);
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

/// True once the outbox is drained, every consumer marked every event and
/// every group committed up to the log end.
bool quiescent(const config::settings& cfg, const endpoints& ep) {
  persistence::durable_counts c;
  persistence::check_database(ep.database_dsn, {}, c);
  auto consumers = static_cast<long>(cfg.consumer.enabled.size());
  if (c.unsent != 0 || c.marks < consumers * c.events)
    return false;
  auto ends = kafka::log_end_offsets(ep.kafka_brokers, cfg.kafka.topic,
                                     cfg.kafka.partitions);
  for (auto& name : cfg.consumer.enabled) {
    auto committed =
      kafka::committed_offsets(ep.kafka_brokers, "eventforge." + name,
                               cfg.kafka.topic, cfg.kafka.partitions);
    // A partition that never received a record has no commit (-1).
    for (size_t p = 0; p < ends.size(); ++p)
      if (ends[p] > 0 && committed[p] != ends[p])
        return false;
  }
  return true;
}

} // namespace

int run_chaos(const config::settings& cfg, const chaos_plan& plan) {
  auto started = clock::now();
  runtime rt(cfg);
  caf::actor_system_config caf_cfg;
  caf::actor_system sys{caf_cfg};
  auto registry = std::make_shared<telemetry>();
  auto root = start(sys, cfg, rt.where(), registry);
  http_frontend http(sys, root, cfg, registry, rt.where());
  http.start();
  spdlog::warn("chaos: {} orders, concurrency {}, points [{}], rate {}, "
               "seed {}",
               plan.orders, plan.concurrency, cfg.chaos.points.size(),
               cfg.chaos.rate, cfg.chaos.seed);
  drive_stats stats;
  drive(http.url(), cfg, plan, stats);
  auto driven = clock::now();
  auto deadline = driven + std::chrono::seconds(plan.timeout_s);
  bool settled = false;
  while (!(settled = quiescent(cfg, rt.where())) && clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto settled_at = clock::now();
  auto metrics = counters(sys, root);
  http.stop();
  caf::anon_send_exit(root, caf::exit_reason::user_shutdown);
  sys.await_all_actors_done();
  auto result = verify(cfg, rt.where().database_dsn, rt.where().kafka_brokers);

  auto secs = [](clock::duration d) {
    return std::chrono::duration<double>(d).count();
  };
  json report;
  report["orders_requested"] = plan.orders;
  report["orders_created"] = stats.created.load();
  report["orders_cancelled"] = stats.cancelled.load();
  report["client_failures"] = stats.failed.load();
  report["client_retries"] = stats.retries.load();
  report["logical_events"] = result.counts.events;
  report["topic_records"] = result.records;
  report["duplicate_records"] = result.duplicates;
  report["business_changes"] = result.counts.effects;
  json per_consumer;
  for (auto& c : cfg.consumer.enabled) {
    auto get = [&](const std::string& name) {
      auto i = metrics.find(name + "{consumer=\"" + c + "\"}");
      return i == metrics.end() ? std::uint64_t{0} : i->second;
    };
    per_consumer[c] = {
      {"deliveries", get("consumer_deliveries_total")},
      {"applied", get("consumer_applied_total")},
      {"duplicates_suppressed", get("consumer_duplicates_suppressed_total")},
      {"retries", get("consumer_retries_total")}};
  }
  report["consumers"] = per_consumer;
  json restarts = json::object(), crashes = json::object();
  std::uint64_t total_restarts = 0;
  for (auto& [k, v] : metrics) {
    if (k.rfind("actor_restarts_total{", 0) == 0) {
      restarts[k.substr(std::string("actor_restarts_total").size())] = v;
      total_restarts += v;
    } else if (k.rfind("chaos_crashes_total{", 0) == 0) {
      crashes[k.substr(std::string("chaos_crashes_total").size())] = v;
    }
  }
  report["restarts"] = restarts;
  report["restarts_total"] = total_restarts;
  report["crashes_by_point"] = crashes;
  report["chaos"] = {{"points", cfg.chaos.points},
                     {"rate", cfg.chaos.rate},
                     {"seed", cfg.chaos.seed}};
  report["seconds"] = {{"drive", secs(driven - started)},
                       {"settle", secs(settled_at - driven)},
                       {"total", secs(clock::now() - started)}};
  report["settled"] = settled;
  report["verification"] = json::parse(to_json(result));
  bool ok = settled && result.ok() && stats.failed == 0;
  report["ok"] = ok;

  std::cout << "chaos run: " << stats.created << " orders (" << stats.cancelled
            << " cancelled), " << result.counts.events << " logical events, "
            << result.records << " topic records (" << result.duplicates
            << " duplicates), " << result.counts.effects
            << " business changes\n";
  for (auto& [c, v] : per_consumer.items())
    std::cout << "  " << c << ": " << v["deliveries"] << " deliveries, "
              << v["applied"] << " applied, " << v["duplicates_suppressed"]
              << " duplicates suppressed, " << v["retries"] << " retries\n";
  std::cout << "  restarts: " << total_restarts << " " << restarts.dump()
            << "\n  crashes by point: " << crashes.dump()
            << "\n  client retries: " << stats.retries
            << ", client failures: " << stats.failed
            << "\n  time: " << report["seconds"].dump() << "\n"
            << (settled ? "" : "  NOT QUIESCENT within the timeout\n")
            << to_text(result) << (ok ? "OK\n" : "FAILED\n");
  if (!plan.report_file.empty())
    std::ofstream(plan.report_file) << report.dump(2) << "\n";
  return ok ? 0 : 1;
}

} // namespace ef::app
