// `eventforge serve`: the tree, its HTTP front and the services they run
// on, until SIGINT or SIGTERM; then a drain within shutdown.drain-timeout-ms.

#include "actors/chaos.hpp"
#include "app/command.hpp"
#include "app/embedded/hosted.hpp"
#include "app/service_notify.hpp"
#include "app/shutdown_signals.hpp"
#include "kafka/client_health.hpp"
#include "kafka/embedded_broker.hpp"
#include "persistence/dsn.hpp"
#include <eventforge/actors/eventforge.hpp>
#include <eventforge/config/logging.hpp>
#include <eventforge/embedded/runtime.hpp>
#include <eventforge/http/frontend.hpp>

#include <caf/all.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <iostream>
#include <thread>
#include <unistd.h>

namespace ef::app {
namespace {

using config::settings;

/// Set when the tree gave up (restart intensity exceeded): the process then
/// shuts down with a failure status instead of lingering half-alive.
std::atomic<bool> tree_failed{false};

void stop_process_on_tree_failure(caf::actor_system& sys,
                                  const eventforge_actor& root) {
  caf::actor_cast<caf::abstract_actor*>(root)->attach_functor(
    [&sys](const caf::error& reason) {
      if (reason != caf::exit_reason::user_shutdown) {
        ef::log::critical("supervision tree failed: {}", sys.render(reason));
        service::notify_status("supervision tree failed: " +
                               sys.render(reason));
        tree_failed = true;
        kill(getpid(), SIGTERM);
      }
    });
}

/// Prints the `ready` line, and tells the service manager (READY=1), once
/// an order flows end to end: the consumer
/// groups' first join waits out the broker's initial rebalance delay (3 s),
/// and an order before it would wait that long for its effects.
void announce_ready(const settings& cfg, const telemetry& metrics,
                    const http_frontend& http, const runtime& rt) {
  auto join_wait = std::chrono::milliseconds(2 * cfg.kafka.session_timeout_ms);
  if (!ef::await_consumers_assigned(metrics, cfg, join_wait)) {
    // Why, where the operator looks: what the clients reported (a TLS
    // handshake or SASL authentication that failed, brokers unreachable).
    std::string causes;
    for (auto& e : kafka::client_health::process().recent_errors(join_wait))
      causes += "; " + e.role + ": " + e.name + ": " + e.reason;
    ef::log::warn("the consumer groups have no assignment after {} ms; ready "
                  "anyway (orders are taken; their effects wait for the "
                  "groups){}",
                  join_wait.count(),
                  causes.empty() ? std::string(". No Kafka client reported "
                                               "an error")
                                 : ". Kafka clients reported" + causes);
  }
  std::cout << "ready http=" << http.url() << " database="
            << ef::persistence::redact_password(rt.where().database_dsn)
            << " kafka=" << rt.where().kafka_brokers << std::endl;
  service::notify_ready("serving http=" + http.url());
}

/// A second signal, or a stop that outlives the drain timeout plus a grace
/// for closing clients (an actor blocked in a database call cannot stop),
/// ends the process at once: what it held is redelivered after the next
/// start, so nothing is lost. The watch ends when `stopped` is set.
std::thread watch_the_stop(const sigset_t& signals,
                           std::chrono::milliseconds drain_timeout,
                           const std::atomic<bool>& stopped) {
  auto hard_deadline =
    std::chrono::steady_clock::now() + drain_timeout + std::chrono::seconds(5);
  return std::thread([&signals, &stopped, hard_deadline] {
    timespec slice{0, 100 * 1000 * 1000};
    while (!stopped) {
      if (sigtimedwait(&signals, nullptr, &slice) > 0) {
        ef::log::warn("second signal: stopping now without draining");
        std::_Exit(1);
      }
      if (std::chrono::steady_clock::now() > hard_deadline) {
        ef::log::warn("the tree did not stop within the drain timeout plus "
                      "5 s; stopping now");
        std::_Exit(1);
      }
    }
  });
}

/// The root's children report first, naming whatever did not drain.
void drain_tree(caf::actor_system& sys, const eventforge_actor& root,
                std::chrono::milliseconds timeout) {
  auto report = ef::drain(sys, root, timeout + 2 * ef::drain_grace_per_level);
  if (report) {
    ef::log::info("drained: relays finished their batches, consumers "
                  "applied and committed what they held");
    return;
  }
  std::string which;
  for (auto& n : report.not_drained)
    which += (which.empty() ? "" : "; ") + n;
  ef::log::warn("drain not finished ({}); stopping anyway (the rest is "
                "redelivered after restart)",
                which);
}

/// After the first shutdown signal: no new requests, a drain, the stop.
void shut_down(int sig, const sigset_t& signals, const settings& cfg,
               caf::actor_system& sys, const eventforge_actor& root,
               http_frontend& http) {
  auto timeout = std::chrono::milliseconds(cfg.shutdown.drain_timeout_ms);
  // Machine-readable, like the ready line: the signal was taken, so a
  // second one is a second signal (two pending SIGTERMs would be one).
  std::cout << "stopping signal=" << sig
            << " drain-timeout-ms=" << timeout.count() << std::endl;
  service::notify_stopping("draining for at most " +
                           std::to_string(timeout.count()) + " ms (signal " +
                           std::to_string(sig) + ")");
  ef::log::info("shutting down (signal {}): draining for at most {} ms; a "
                "second signal stops at once",
                sig, timeout.count());
  std::atomic<bool> stopped{false};
  auto watch = watch_the_stop(signals, timeout, stopped);
  http.stop(); // no new requests; those in flight are answered
  if (!tree_failed)
    drain_tree(sys, root, timeout);
  if (!ef::stop(sys, root, std::chrono::seconds(60)))
    ef::log::warn("the supervision tree did not stop within 60 s");
  stopped = true;
  watch.join();
}

/// `caf_cfg`: the parsed INI file and command line, so that their CAF
/// options ([scheduler], [logger], ...) apply to the actor system.
int serve(const settings& cfg, caf::actor_system_config& caf_cfg) {
  auto signals = block_shutdown_signals();
  runtime rt(cfg);
  ef::configure_actor_system(caf_cfg);
  caf::actor_system sys{caf_cfg};
  ef::log::info("actor system: {} scheduler threads, policy {}",
                sys.scheduler().num_workers(),
                caf::to_string(caf::get_or(caf_cfg, "scheduler.policy",
                                           caf::atom("stealing"))));
  auto metrics = std::make_shared<ef::telemetry>();
  // Shared with the HTTP front: the recovery page's scenarios arm them.
  auto faults = std::make_shared<ef::chaos>(cfg.chaos, metrics);
  auto root = ef::start(sys, cfg, rt.where(), metrics, faults);
  stop_process_on_tree_failure(sys, root);
  // The page's Kafka scenarios fail the in-process cluster, if it is ours.
  std::function<std::string(const std::string&)> broker_faults;
  if (auto* b = hosted_broker(rt))
    broker_faults = [b](const std::string& c) { return b->run_command(c); };
  http_frontend http(sys, root, cfg, metrics, rt.where(), faults,
                     broker_faults);
  try {
    http.start();
  } catch (...) {
    // A refusal to start (a port in use, http.max-connections past the
    // descriptor limit): the tree stops on purpose, so its end is no
    // failure to report, and main() prints the one line that says why.
    http.stop();
    ef::stop(sys, root, std::chrono::seconds(60));
    throw;
  }
  announce_ready(cfg, *metrics, http, rt);
  shut_down(wait_for_shutdown(signals), signals, cfg, sys, root, http);
  return tree_failed ? 1 : 0;
}

class serve_cmd final : public command {
public:
  const char* name() const override { return "serve"; }
  const char* help() const override {
    return "run API, relay shards and consumers";
  }
  int run(configuration& c) override { return serve(c.settings, c.caf); }
};

} // namespace

std::unique_ptr<command> serve_command() {
  return std::make_unique<serve_cmd>();
}

} // namespace ef::app
