#pragma once

#include "actors/context.hpp"
#include "kafka/broker_probe.hpp"
#include "persistence/repair_store.hpp"

#include <caf/all.hpp>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace ef {

/// What a repairer is built from. Production: the database's repair store
/// and a broker probe over the cluster (production_repairer_deps);
/// deterministic actor tests give fakes. `probe` is called again for a
/// fresh client after the broker could not answer.
struct repairer_deps {
  std::function<std::unique_ptr<persistence::broker_epochs>()> store;
  std::function<std::unique_ptr<kafka::log_probe>()> probe;
};

repairer_deps production_repairer_deps(const context_ptr& ctx);

/// Keeps the broker honest against the outbox, the source of truth.
///
/// Each round it (1) verifies, per partition, that the broker still holds a
/// record the outbox says it wrote there (the witness); if not, the topic's
/// logs were lost (a new in-process broker, a recreated topic) and it begins
/// a new broker epoch; (2) queues again every row published under an older
/// epoch that some enabled consumer has not applied nor parked; (3) sweeps
/// recent consumer gaps once more for rows whose mark came late.
/// Consumers record their own gaps (group_member); the relay republishes
/// whatever is queued, in seq order, with the original IDs and keys.
///
/// One repairer is active per database (a session advisory lock); the others
/// stand by. Blocking (libpq, librdkafka), so detached; supervised under
/// "maintenance".
struct repairer_state {
  context_ptr ctx;
  repairer_deps deps;
  std::unique_ptr<persistence::broker_epochs> store;
  std::unique_ptr<kafka::log_probe> probe;
  bool active = false;
  /// Rounds since this repairer became active: the database's side of the
  /// checks runs on some rounds only (see repairer.cpp), so an idle system
  /// costs the database about one statement a round.
  long rounds = 0;
  /// The witness of each partition, as last saved or read: verified against
  /// the broker every round without asking the database. Emptied when a new
  /// epoch begins or this repairer becomes active.
  std::map<std::int32_t, persistence::broker_witness> witnesses;
  /// Whether an older epoch may still hold rows to queue again.
  bool sweep_due = true;

  /// One round; returns the delay before the next.
  std::chrono::milliseconds round();
  /// Why the broker no longer holds what the outbox says, or nullopt.
  /// `advance`: also read the database for each partition's newest record
  /// (and for a witness not known yet), and move the witness on to it.
  std::optional<std::string> lost_log(bool advance);
  /// Whether `w` is where the outbox says: nullopt if so (or unverifiable:
  /// trimmed), else the reason.
  std::optional<std::string> check(const persistence::broker_witness& w);

  static inline const char* name = "repairer";
};

caf::behavior repairer(caf::stateful_actor<repairer_state>* self,
                       context_ptr ctx);

/// The same actor, built from `deps`.
caf::behavior repairer_with(caf::stateful_actor<repairer_state>* self,
                            context_ptr ctx, repairer_deps deps);

} // namespace ef
