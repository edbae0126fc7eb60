#pragma once

// What a chaos run found (app/tools, private): the figures gathered at its
// end, the JSON report (--report) and the lines printed.

#include "app/tools/chaos_client.hpp"
#include "persistence/repair_store.hpp"
#include <eventforge/actors/eventforge.hpp>
#include <eventforge/embedded/verifier.hpp>

#include <nlohmann/json.hpp>

#include <map>
#include <string>
#include <vector>

namespace ef::app::chaos_run {

struct chaos_outcome {
  const drive_stats* clients = nullptr;
  bool settled = false; ///< quiescent within the timeout
  int broker_restarts = 0;
  std::vector<std::string> fault_lines; ///< "at_order fault", in turn
  std::map<std::string, int> faults_by_kind;
  counter_map metrics; ///< the tree's counters at the end
  double peak_rss_mib = 0;
  verification result;
  persistence::repair_summary repairs;
  std::vector<std::string> crashed; ///< the crashes injected, in turn
  nlohmann::json phases_seconds = nlohmann::json::object();
  nlohmann::json seconds; ///< drive, settle, total

  /// Settled, the verifier found nothing, and every order was placed.
  bool ok() const { return settled && result.ok() && clients->failed == 0; }
};

/// The report: what was driven and injected, what the verifier found, and
/// the digests that let two runs with one seed be compared.
nlohmann::json chaos_report(const config::settings& cfg, const chaos_plan& plan,
                            const chaos_outcome& o);

/// The run's summary on stdout, ending in OK or FAILED.
void print_chaos_report(const nlohmann::json& report, const chaos_outcome& o);

} // namespace ef::app::chaos_run
