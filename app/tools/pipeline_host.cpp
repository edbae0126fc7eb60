#include "app/tools/pipeline_host.hpp"

#include "persistence/invariant_queries.hpp"
#include <eventforge/config/logging.hpp>

#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

namespace ef::app {

pipeline::pipeline(caf::actor_system& sys, config::settings cfg,
                   std::shared_ptr<telemetry> metrics,
                   std::shared_ptr<chaos> faults)
    : sys_(sys), cfg_(std::move(cfg)), metrics_(std::move(metrics)),
      faults_(std::move(faults)) {
  // nop
}

pipeline::~pipeline() {
  stop();
}

void pipeline::start(const endpoints& where) {
  root_ = ef::start(sys_, cfg_, where, metrics_, faults_);
  // Later starts reuse the port, so clients keep their address. An
  // ephemeral port can be taken meanwhile by any outgoing connection (a
  // Kafka client reconnecting to a new broker): try for a moment, then take
  // a new one rather than fail the run.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  for (;;) {
    http_ = std::make_unique<http_frontend>(sys_, root_, cfg_, metrics_, where,
                                            faults_);
    try {
      cfg_.http.port = http_->start();
      break;
    } catch (const std::runtime_error& e) {
      http_.reset();
      if (cfg_.http.port == 0)
        throw;
      if (std::chrono::steady_clock::now() > deadline) {
        ef::log::warn("pipeline: {}; serving on a new port", e.what());
        cfg_.http.port = 0;
        continue;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  std::lock_guard<std::mutex> guard{url_mtx_};
  url_ = http_->url();
}

void pipeline::stop() {
  if (!root_)
    return;
  http_.reset();
  // The tree alone: the host's other actors (a chaos or bench driver) run on.
  if (!ef::stop(sys_, root_, std::chrono::seconds(60)))
    ef::log::warn("the tree did not stop within 60 s");
  root_ = eventforge_actor{};
}

std::string pipeline::url() const {
  std::lock_guard<std::mutex> guard{url_mtx_};
  return url_;
}

long outbox_unsent(const std::string& dsn) {
  auto c = persistence::read_counts(dsn);
  return c.unsent;
}

namespace {

double status_mib(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field, 0) == 0)
      return std::stod(line.substr(std::strlen(field))) / 1024.0;
  return 0;
}

} // namespace

double rss_mib() {
  return status_mib("VmRSS:");
}

double peak_rss_mib() {
  return status_mib("VmHWM:");
}

bool reset_peak_rss() {
  // Writing 5 to clear_refs resets VmHWM to the current RSS (Linux >= 4.0).
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

} // namespace ef::app
