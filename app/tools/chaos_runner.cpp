#include "app/tools/chaos_runner.hpp"

#include "app/tools/fault_schedule.hpp"

#include "app/tools/pipeline_host.hpp"
#include "kafka/embedded_broker.hpp"
#include "kafka/offsets.hpp"
#include "messages/ids.hpp"
#include "persistence/backlog_writer.hpp"
#include "persistence/invariant_queries.hpp"
#include "persistence/migrations.hpp"
#include "persistence/repair_store.hpp"
#include <eventforge/actors/applied.hpp>
#include <eventforge/actors/eventforge.hpp>
#include <eventforge/config/logging.hpp>
#include <eventforge/embedded/runtime.hpp>
#include <eventforge/embedded/verifier.hpp>
#include <eventforge/http/frontend.hpp>
#include <eventforge/messages/atoms.hpp>

#include <caf/all.hpp>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdlib>
#include <cxxabi.h>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <thread>
#include <typeinfo>

namespace ef::app {

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

/// The W3C traceparent of logical order `i` of a run with `seed` (`space`
/// keeps backlog orders apart from driven ones). Crash decisions key on its
/// trace ID, so the same seed crashes on the same orders in every run.
std::string trace_of(std::uint64_t seed, std::uint64_t space, long i) {
  char buf[56];
  auto n = static_cast<std::uint64_t>(i);
  std::snprintf(buf, sizeof(buf), "00-%016llx%016llx-%016llx-01",
                static_cast<unsigned long long>(mix(seed, space)),
                static_cast<unsigned long long>(mix(seed ^ space, n)),
                static_cast<unsigned long long>(mix(n, seed) | 1));
  return buf;
}

struct drive_stats {
  std::atomic<long> created{0};
  std::atomic<long> cancelled{0};
  std::atomic<long> retries{0};
  std::atomic<long> failed{0};
};

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

/// The exception's dynamic type, demangled ("std::runtime_error").
std::string type_name(const std::exception& e) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(
    abi::__cxa_demangle(typeid(e).name(), nullptr, nullptr, &status),
    std::free);
  return status == 0 && name ? name.get() : typeid(e).name();
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

} // namespace

int run_chaos(const config::settings& cfg, const chaos_plan& plan,
              caf::actor_system_config& caf_cfg) {
  auto started = clock::now();
  // Checked before anything starts: a bad argument changes nothing.
  auto fault_kinds = plan.broker_faults;
  if (!fault_kinds.empty()) {
    std::string refusal;
    if (!cfg.kafka.brokers.empty())
      refusal = "--broker-faults needs the in-process broker (leave "
                "kafka.brokers empty; fail a real cluster with its own tools)";
    else if (plan.broker_restarts > 0)
      refusal = "--broker-faults and --broker-restarts are separate runs";
    else if (auto err =
               expand_fault_kinds(fault_kinds, cfg.kafka.embedded_brokers))
      refusal = *err;
    if (!refusal.empty()) {
      std::cerr << "chaos: " << refusal << std::endl;
      return 2;
    }
  }
  runtime rt(cfg);
  if ((plan.broker_restarts > 0 || plan.backlog_past_retention) &&
      !rt.broker()) {
    std::cerr << "chaos: --broker-restarts and --backlog-past-retention need "
                 "the in-process broker (leave kafka.brokers empty)"
              << std::endl;
    return 2;
  }
  configure_actor_system(caf_cfg);
  caf::actor_system sys{caf_cfg};
  auto registry = std::make_shared<telemetry>();
  auto faults = std::make_shared<chaos>(cfg.chaos, registry);
  ef::log::warn("chaos: {} orders, concurrency {}, points [{}], rate {}, "
                "seed {}, broker restarts {}, backlog {}{}",
                plan.orders, plan.concurrency, cfg.chaos.points.size(),
                cfg.chaos.rate, cfg.chaos.seed, plan.broker_restarts,
                plan.backlog,
                plan.backlog_past_retention ? " (past retention)" : "");
  json phases = json::object();
  auto phase_started = clock::now();
  auto end_phase = [&](const char* name) {
    phases[name] =
      std::chrono::duration<double>(clock::now() - phase_started).count();
    phase_started = clock::now();
  };
  persistence::migrate(rt.where().database_dsn);
  if (plan.backlog > 0) {
    persistence::backlog_spec spec;
    spec.orders = plan.backlog;
    spec.shards = cfg.relay.shards;
    spec.traceparent = [&](long i) { return trace_of(cfg.chaos.seed, 2, i); };
    spec.progress = [&](long n) {
      if (n % 100000 == 0 || n == plan.backlog)
        ef::log::warn("chaos: backlog {} of {} orders written", n,
                      plan.backlog);
    };
    persistence::write_backlog(rt.where().database_dsn, spec);
    end_phase("backlog_write");
    if (plan.backlog_past_retention) {
      // The relays publish the whole backlog while no consumer runs: the
      // broker keeps only its last few MiB per partition.
      auto down = cfg;
      down.consumer.enabled.clear();
      pipeline relays_only(sys, down, registry, faults);
      relays_only.start(rt.where());
      while (outbox_unsent(rt.where().database_dsn) > 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      relays_only.stop();
      end_phase("backlog_publish_without_consumers");
    }
  }
  pipeline pipe(sys, cfg, registry, faults);
  pipe.start(rt.where());
  drive_stats stats;
  std::atomic<bool> driving{true};
  std::atomic<bool> stop_driving{false};
  std::thread driver([&] {
    drive(pipe, cfg, plan, stop_driving, stats);
    driving = false;
  });
  // Whatever leaves this scope, the driver is told to stop and joined: a
  // joinable thread destroyed by an exception would abort the process and
  // hide the exception (known gap 12 of the second round).
  struct join_driver {
    std::atomic<bool>& stop;
    std::thread& t;
    ~join_driver() {
      stop = true;
      if (t.joinable())
        t.join();
    }
  } joiner{stop_driving, driver};
  // Broker restarts at evenly spaced points of the drive.
  int restarts_done = 0;
  for (int k = 1; k <= plan.broker_restarts; ++k) {
    auto goal = static_cast<long>(plan.orders) * k / (plan.broker_restarts + 1);
    while (driving && stats.created < goal)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    try {
      pipe.stop();
      rt.restart_broker();
      pipe.start(rt.where());
    } catch (const std::exception& e) {
      ef::log::error("chaos: broker restart {} of {} failed: {}: {}", k,
                     plan.broker_restarts, type_name(e), e.what());
      throw;
    }
    ++restarts_done;
    ef::log::warn("chaos: broker restart {} of {} done at {} orders", k,
                  plan.broker_restarts, stats.created.load());
  }
  // Kafka faults at their points of the drive, each undone (a broker back
  // up, its delay gone) after its hold while the orders go on.
  fault_target target{cfg.kafka.embedded_brokers,
                      cfg.kafka.topic,
                      cfg.kafka.partitions,
                      {"eventforge.dlq"}};
  for (auto& c : cfg.consumer.enabled)
    target.groups.push_back("eventforge." + c);
  auto schedule = plan_broker_faults(
    cfg.chaos.seed, fault_kinds, plan.broker_fault_count, plan.orders, target);
  std::map<std::string, int> faults_by_kind;
  std::vector<std::string> fault_lines;
  for (auto& f : schedule) {
    while (driving && stats.created < f.at_order)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    // Once the drive is over the rest still come, in the same order: the
    // consumers then fail while they catch up.
    auto did = rt.broker()->apply(f.fault);
    ef::log::warn("chaos: kafka fault at {} orders: {}: {}",
                  stats.created.load(), to_string(f.fault), did);
    fault_lines.push_back(std::to_string(f.at_order) + " " +
                          to_string(f.fault));
    ++faults_by_kind[f.kind];
    if (f.undo) {
      std::this_thread::sleep_for(std::chrono::milliseconds(f.hold_ms));
      rt.broker()->apply(*f.undo);
    }
  }
  if (!schedule.empty())
    rt.broker()->apply(kafka::broker_fault{}); // clear: nothing pending
  driver.join();
  auto driven = clock::now();
  end_phase("drive");
  auto deadline = driven + std::chrono::seconds(plan.timeout_s);
  bool settled = false;
  auto next_progress = clock::now() + std::chrono::seconds(5);
  while (!(settled = applied_gap(cfg, rt.where()).empty()) &&
         clock::now() < deadline) {
    // Counting big tables is not free: look less often once it takes long.
    std::this_thread::sleep_for(std::chrono::milliseconds(
      clock::now() - driven < std::chrono::seconds(10) ? 200 : 1000));
    if (clock::now() > next_progress) {
      next_progress = clock::now() + std::chrono::seconds(5);
      auto c = persistence::read_counts(rt.where().database_dsn);
      ef::log::warn("chaos: settling: {} events, {} unsent, {} marks of {}",
                    c.events, c.unsent, c.marks,
                    c.events * static_cast<long>(cfg.consumer.enabled.size()));
    }
  }
  auto settled_at = clock::now();
  end_phase("settle");
  auto metrics = counters(sys, pipe.root());
  auto rss_mib = peak_rss_mib(); // the pipeline's, before the verifier reads
  pipe.stop();
  auto result = verify(cfg, rt.where().database_dsn, rt.where().kafka_brokers);
  auto repairs = persistence::repair_store(rt.where().database_dsn).summary();
  auto crashed = faults->injected();
  std::string crash_lines;
  for (auto& line : crashed)
    crash_lines += line + "\n";
  auto digest = fnv1a64(crash_lines);

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
  report["phases_seconds"] = phases;
  report["broker_restarts"] = restarts_done;
  report["backlog"] = plan.backlog;
  report["backlog_past_retention"] = plan.backlog_past_retention;
  report["broker_epochs"] = repairs.epoch;
  report["consumer_gaps"] = repairs.gaps;
  report["events_republished"] = repairs.republished_total;
  report["peak_rss_mib"] = rss_mib;
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx",
                static_cast<unsigned long long>(digest));
  report["crashes"] = {
    {"count", crashed.size()}, {"digest", hex}, {"injected", crashed}};
  std::string fault_text;
  for (auto& line : fault_lines)
    fault_text += line + "\n";
  char fault_hex[17];
  std::snprintf(fault_hex, sizeof(fault_hex), "%016llx",
                static_cast<unsigned long long>(fnv1a64(fault_text)));
  json by_kind(faults_by_kind);
  report["broker_faults"] = {{"count", fault_lines.size()},
                             {"by_kind", by_kind},
                             {"digest", fault_hex},
                             {"injected", fault_lines}};
  std::string fault_digest = fault_hex;
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
            << "\n  injected crashes: " << crashed.size() << " (digest " << hex
            << ")"
            << "\n  broker restarts: " << restarts_done << ", broker epochs "
            << repairs.epoch << ", consumer gaps " << repairs.gaps
            << ", events republished " << repairs.republished_total
            << "\n  kafka faults: " << fault_lines.size() << " "
            << by_kind.dump() << " (digest " << fault_digest << ")"
            << "\n  peak RSS: " << static_cast<long>(rss_mib) << " MiB"
            << "\n  client retries: " << stats.retries
            << ", client failures: " << stats.failed
            << "\n  time: " << report["seconds"].dump() << "\n"
            << (settled ? "" : "  NOT QUIESCENT within the timeout\n")
            << to_text(result) << (ok ? "OK\n" : "FAILED\n");
  if (!plan.report_file.empty())
    std::ofstream(plan.report_file) << report.dump(2) << "\n";
  return ok ? 0 : 1;
}

int run_chaos(const config::settings& cfg, const chaos_plan& plan) {
  caf::actor_system_config caf_cfg;
  return run_chaos(cfg, plan, caf_cfg);
}

} // namespace ef::app
