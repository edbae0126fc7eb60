// A scenario's faults armed: its crash point and poison through the
// database on every node that shares it (refused, naming the node, when
// one cannot fire them), its Kafka fault here, and the broker's answers
// kept for the order's journal.

#include "app/page/scenarios.hpp"

#include "app/page/scenario_arms_sync.hpp"
#include "persistence/ops_queries.hpp"
#include <eventforge/config/logging.hpp>

#include <algorithm>
#include <thread>

namespace ef::app {

namespace {

bool consumer_side(crash_point p) {
  return p == crash_point::consumer_before_db_commit ||
         p == crash_point::consumer_after_db_before_offset ||
         p == crash_point::dlq_after_dlq_ack_before_offset ||
         p == crash_point::dlq_replay_after_mark_before_publish ||
         p == crash_point::dlq_replay_after_publish_before_mark;
}

std::string joined(const std::vector<std::string>& xs) {
  std::string out;
  for (auto& x : xs)
    out += (out.empty() ? "" : ", ") + x;
  return out;
}

/// The nodes in `live` missing from `seen`.
std::vector<std::string> missing(const std::vector<std::string>& live,
                                 const std::vector<std::string>& seen) {
  std::vector<std::string> out;
  for (auto& n : live)
    if (std::find(seen.begin(), seen.end(), n) == seen.end())
      out.push_back(n);
  return out;
}

} // namespace

scenario_runner::arming
scenario_runner::arm_everywhere(const scenario& s, const std::string& trace_id,
                                const std::string& focus) {
  arming out;
  if (!s.point && !s.poison)
    return out;
  persistence::scenario_arm arm;
  arm.trace_id = trace_id;
  arm.scenario = s.name;
  arm.point = s.point ? to_string(*s.point) : "";
  arm.consumer = s.poison || consumer_side(*s.point) ? focus : "";
  arm.poison = s.poison;
  arm.armed_by = node();
  try {
    arms_->store().insert(arm, max_run);
  } catch (const std::exception& e) {
    out.why = std::string("the scenario could not be armed in the "
                          "database: ") +
              e.what();
    return out;
  }
  if (!arms_->arm_here(arm)) {
    arms_->disarm(trace_id);
    out.why = "too many crashes armed already";
    return out;
  }
  out.nodes = {node()};
  // The API's window is this node's own: the order is placed here.
  if (!s.poison && s.point == crash_point::api_after_commit_before_reply)
    return out;
  std::vector<std::string> absent;
  auto deadline = std::chrono::steady_clock::now() + arm_wait;
  do {
    try {
      auto live = arms_->store().live_nodes();
      for (auto& a : arms_->store().live())
        if (a.trace_id == trace_id) {
          absent = missing(live, a.seen_by);
          out.nodes = a.seen_by;
        }
    } catch (const std::exception& e) {
      ef::log::debug("scenario: arms not readable yet: {}", e.what());
    }
    if (absent.empty())
      return out;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  } while (std::chrono::steady_clock::now() < deadline && !cancelled_);
  arms_->disarm(trace_id);
  try {
    arms_->store().remove(trace_id);
  } catch (const std::exception& e) {
    ef::log::warn("scenario: refused arm {} not removed: {}", trace_id,
                  e.what());
  }
  out.refused = true;
  out.why =
    "scenario \"" + s.name + "\" refused: node " + joined(absent) +
    (absent.size() == 1 ? " shares" : " share") +
    " this database but did not arm its crash within " +
    std::to_string(arm_wait.count()) +
    " s (a node arms scenarios only with demo.enabled=true or an admin "
    "token); the order's relay shard or partition may be owned there, where "
    "nothing would fire. This node is " +
    node() + "; nothing was run";
  return out;
}

std::string scenario_runner::leader_move_refusal() {
  std::map<std::string, std::vector<int>> by_node;
  try {
    for (auto& [shard, owner] : persistence::read_ops_rows(dsn_).shard_owners)
      by_node[owner].push_back(shard);
  } catch (const std::exception& e) {
    return std::string("relay shard owners not readable: ") + e.what();
  }
  auto list = [](const std::vector<int>& xs) {
    std::string out;
    for (auto x : xs)
      out += (out.empty() ? "" : ",") + std::to_string(x);
    return out.empty() ? std::string("none") : out;
  };
  for (auto& [owner, shards] : by_node)
    if (owner != node())
      return "relay shard" + std::string(shards.size() > 1 ? "s " : " ") +
             list(shards) + " of " + cfg_.kafka.topic + " " +
             (shards.size() > 1 ? "are" : "is") + " owned by node " + owner +
             "; this node (" + node() + ") owns " + list(by_node[node()]) +
             ": the leader moves in the window of the relay that publishes "
             "the order, and only this node holds the broker's controls";
  return {};
}

std::string scenario_runner::arm(const scenario& s, const std::string& trace_id,
                                 const std::shared_ptr<run_state>& state) {
  if (auto why = unavailable(s, broker_); !why.empty())
    return why;
  if (s.kafka == kafka_fault::leader_move) {
    if (auto why = leader_move_refusal(); !why.empty())
      return why;
    // Moved by the relay's own thread, in the window itself.
    auto moves = std::make_shared<std::vector<std::string>>();
    for (int p = 0; p < cfg_.kafka.partitions; ++p)
      moves->push_back("leader " + cfg_.kafka.topic + " " + std::to_string(p));
    auto run_fault = broker_.run;
    auto notes = state->notes;
    if (!faults_->arm_action(crash_point::relay_after_publish_before_ack,
                             trace_id, [moves, run_fault, notes] {
                               // Each partition to the next broker that is up
                               // after its leader.
                               for (auto& move : *moves) {
                                 auto answer = run_fault(move + " next");
                                 ef::log::warn("scenario: {}", answer);
                                 notes->note(answer);
                               }
                             }))
      return std::string("too many crashes armed already");
  }
  if (s.kafka == kafka_fault::broker_down) {
    for (int b = 1; b <= broker_.brokers; ++b)
      if (!fault("down " + std::to_string(b), *state->notes))
        return std::string("the broker refused the fault");
    state->following = true;
    bring_brokers_back(std::chrono::seconds(5), state);
  }
  return {};
}

bool scenario_runner::fault(const std::string& command, fault_notes& notes) {
  auto answer = broker_.run(command);
  ef::log::warn("scenario: {}: {}", command, answer);
  notes.note(answer);
  return answer.rfind("fault ok", 0) == 0;
}

void scenario_runner::fault_notes::note(const std::string& answer) {
  persistence::journal_line line;
  line.what = persistence::journal_line::kind::broker;
  line.actor = "kafka";
  // "fault ok: leader of orders/0 moved from broker 1 to 2" -> the rest.
  auto colon = answer.find(": ");
  line.detail = colon == std::string::npos ? answer : answer.substr(colon + 2);
  if (answer.rfind("fault ok", 0) != 0)
    line.detail = "refused: " + line.detail;
  std::lock_guard<std::mutex> guard{mtx};
  if (order_id.empty())
    return pending.push_back(std::move(line));
  line.order_id = order_id;
  journal->record(std::move(line));
}

void scenario_runner::fault_notes::placed(const std::string& id) {
  std::lock_guard<std::mutex> guard{mtx};
  order_id = id;
  for (auto& line : pending) {
    line.order_id = id;
    journal->record(std::move(line));
  }
  pending.clear();
}

} // namespace ef::app
