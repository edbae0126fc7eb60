#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace ef::persistence {

class session;

/// One recovery-page scenario armed through the database (table
/// scenario_arms): the crash point and poison of one trace, which every node
/// that takes scenarios arms in its own crash points.
struct scenario_arm {
  std::string trace_id;
  std::string scenario;
  std::string point;    ///< crash point name; "" for a poison only
  std::string consumer; ///< "" for any consumer (or none)
  bool poison = false;
  std::string armed_by;             ///< the node the scenario was posted to
  std::vector<std::string> seen_by; ///< nodes that armed it
  std::string order_id;             ///< "" until the order is placed
  std::string fired_by;             ///< "" until a node fired the crash
  std::string fired_at;
  bool disarmed = false;
};

/// The table scenario_arms on one lazily reopened session. Thread-safe;
/// throws db_error.
class scenario_arm_store {
public:
  explicit scenario_arm_store(std::string dsn);
  ~scenario_arm_store();

  /// Arms `arm` (seen by its own node) until `ttl` has passed.
  void insert(const scenario_arm& arm, std::chrono::seconds ttl);

  /// The arms neither disarmed nor expired.
  std::vector<scenario_arm> live();

  /// Adds `node` to seen_by of each of `traces`.
  void seen(const std::string& node, const std::vector<std::string>& traces);

  /// Claims the crash of `trace_id` for `node`: true for the one node that
  /// fires it, false if another already did or it was disarmed.
  bool claim(const std::string& trace_id, const std::string& node);

  /// Records the order the scenario placed.
  void placed(const std::string& trace_id, const std::string& order_id);

  /// Ends the arm: no node fires or poisons anything for it any more.
  void disarm(const std::string& trace_id);

  /// Forgets an arm that never ran (its scenario was refused).
  void remove(const std::string& trace_id);

  /// The arm of the scenario that placed `order_id`, if any.
  std::optional<scenario_arm> of_order(const std::string& order_id);

  /// The node names of the trees connected to the database now (their
  /// sessions' application_name, node_session_prefix + name).
  std::vector<std::string> live_nodes();

private:
  std::mutex mtx_;
  std::unique_ptr<session> session_;
};

} // namespace ef::persistence
