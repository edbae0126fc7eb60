#include "app/tools/chaos_broker.hpp"
#include "app/embedded/hosted.hpp"

#include "app/tools/fault_schedule.hpp"
#include "kafka/embedded_broker.hpp"
#include <eventforge/config/logging.hpp>

#include <cstdlib>
#include <cxxabi.h>
#include <memory>
#include <thread>
#include <typeinfo>

namespace ef::app::chaos_run {

namespace {

/// The exception's dynamic type, demangled ("std::runtime_error").
std::string type_name(const std::exception& e) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> name(
    abi::__cxa_demangle(typeid(e).name(), nullptr, nullptr, &status),
    std::free);
  return status == 0 && name ? name.get() : typeid(e).name();
}

/// Waits while the clients drive and have created fewer than `goal`.
void await_created(const std::atomic<bool>& driving, const drive_stats& stats,
                   long goal) {
  while (driving && stats.created < goal)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

} // namespace

int restart_broker_while_driving(runtime& rt, const chaos_plan& plan,
                                 pipeline& pipe,
                                 const std::atomic<bool>& driving,
                                 const drive_stats& stats) {
  int done = 0;
  for (int k = 1; k <= plan.broker_restarts; ++k) {
    await_created(driving, stats,
                  static_cast<long>(plan.orders) * k /
                    (plan.broker_restarts + 1));
    try {
      pipe.stop();
      rt.restart_broker();
      pipe.start(rt.where());
    } catch (const std::exception& e) {
      ef::log::error("chaos: broker restart {} of {} failed: {}: {}", k,
                     plan.broker_restarts, type_name(e), e.what());
      throw;
    }
    ++done;
    ef::log::warn("chaos: broker restart {} of {} done at {} orders", k,
                  plan.broker_restarts, stats.created.load());
  }
  return done;
}

void inject_kafka_faults(runtime& rt, const config::settings& cfg,
                         const chaos_plan& plan,
                         const std::vector<std::string>& kinds,
                         const std::atomic<bool>& driving,
                         const drive_stats& stats, chaos_outcome& out) {
  fault_target target{cfg.kafka.embedded_brokers,
                      cfg.kafka.topic,
                      cfg.kafka.partitions,
                      {"eventforge.dlq"}};
  for (auto& c : cfg.consumer.enabled)
    target.groups.push_back("eventforge." + c);
  auto schedule = plan_broker_faults(
    cfg.chaos.seed, kinds, plan.broker_fault_count, plan.orders, target);
  auto* broker = hosted_broker(rt);
  for (auto& f : schedule) {
    await_created(driving, stats, f.at_order);
    auto did = broker->apply(f.fault);
    ef::log::warn("chaos: kafka fault at {} orders: {}: {}",
                  stats.created.load(), to_string(f.fault), did);
    out.fault_lines.push_back(std::to_string(f.at_order) + " " +
                              to_string(f.fault));
    ++out.faults_by_kind[f.kind];
    if (f.undo) {
      std::this_thread::sleep_for(std::chrono::milliseconds(f.hold_ms));
      broker->apply(*f.undo);
    }
  }
  if (!schedule.empty())
    broker->apply(kafka::broker_fault{}); // clear: nothing pending
}

} // namespace ef::app::chaos_run
