// configure_actor_system(): what the actor system of a tree needs before
// it is created: the scheduler policy, and the error categories that make
// sys.render(err) name a cause.

#include <eventforge/actors/eventforge.hpp>

#include "actors/crash_log.hpp"
#include "actors/member_control.hpp"
#include "kafka/errors.hpp"
#include "persistence/db_error.hpp"
#include <eventforge/messages/api_error.hpp>

namespace ef {

void configure_actor_system(caf::actor_system_config& cfg) {
#if defined(EF_TSAN_BUILD)
  // CAF 0.17's default work-stealing scheduler passes jobs between worker
  // threads through atomics inside libcaf_core, which is not instrumented:
  // TSan would report every hand-over of an actor or message as a race. The
  // work-sharing scheduler hands jobs over under a mutex, which TSan sees.
  cfg.set("scheduler.policy", caf::atom("sharing"));
#else
  // Work sharing unless the host chose a policy. An idle work-stealing
  // worker polls: 100 tries, then 500 sleeps of 50 us, then sleeps of 10 ms,
  // and every message starts that over. EventForge's actors exchange a few
  // messages per order, so at 100 orders/s the four workers spent most of
  // their time in those 50 us sleeps: serve took 6.1 ms of CPU and 403
  // context switches per order, against 3.3 ms and 114 with work sharing,
  // whose idle workers wait on a condition variable
  // (docs/performance.md, "Cost per order").
  if (!caf::get_if<caf::atom_value>(&cfg.content, "scheduler.policy"))
    cfg.set("scheduler.policy", caf::atom("sharing"));
#endif
  // So that sys.render(err) names the cause ("ef_api: not_found (order_id:
  // no such order)") instead of printing codes.
  cfg.add_error_category(
    api_error_category(),
    [](std::uint8_t code, caf::atom_value, const caf::message& context) {
      std::string out = "ef_api: ";
      out += to_string(static_cast<api_errc>(code));
      if (context.match_elements<std::string, std::string>()) {
        auto& field = context.get_as<std::string>(0);
        out += " (";
        if (!field.empty())
          out += field + ": ";
        out += context.get_as<std::string>(1) + ")";
      }
      return out;
    });
  cfg.add_error_category(
    db_error_category(),
    [](std::uint8_t code, caf::atom_value, const caf::message&) {
      return std::string("ef_db: database ") +
             persistence::to_string(static_cast<persistence::db_errc>(code));
    });
  cfg.add_error_category(
    caf::detail::error_factory<kafka::kafka_errc>::category,
    [](std::uint8_t code, caf::atom_value, const caf::message& context) {
      std::string out = "ef_kafka: ";
      out += to_string(static_cast<kafka::kafka_errc>(code));
      if (context.match_elements<std::string>())
        out += " (" + context.get_as<std::string>(0) + ")";
      return out;
    });
  cfg.add_error_category(
    chaos_error_category(),
    [](std::uint8_t code, caf::atom_value, const caf::message& context) {
      std::string out = "ef_chaos: ";
      out += to_string(static_cast<chaos_errc>(code));
      if (context.match_elements<std::string>())
        out += " at " + context.get_as<std::string>(0);
      return out;
    });
  cfg.add_error_category(
    control_error_category(),
    [](std::uint8_t code, caf::atom_value, const caf::message&) {
      return std::string("ef_control: ") +
             to_string(static_cast<control_errc>(code));
    });
}

} // namespace ef
