#pragma once

#include "kafka/connection.hpp"
#include <eventforge/config/settings.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ef::kafka {

/// A topic as EventForge wants it: what a CreateTopics request carries.
struct topic_spec {
  std::string name;
  int partitions = 0;
  int replication_factor = 0;
  /// Topic configs set at creation and checked afterwards, by name
  /// ("retention.bytes" -> "-1").
  std::map<std::string, std::string> configs;
};

/// The order topic and the DLQ topic for `cfg`: kafka.partitions,
/// kafka.replication-factor, and as configs min.insync.replicas,
/// retention.bytes and retention.ms.
std::vector<topic_spec> wanted_topics(const config::settings& cfg);

/// A topic as the broker describes it.
struct observed_topic {
  bool exists = false;
  int partitions = 0;
  /// The fewest replicas any partition has (metadata).
  int replication_factor = 0;
  /// The topic's configs as DescribeConfigs returned them; empty when the
  /// broker did not describe them, and `configs_unchecked` says why.
  std::optional<std::map<std::string, std::string>> configs;
  std::string configs_unchecked;
};

/// How `observed` differs from `wanted`, one text each: "3 partitions,
/// wanted 8", "replication factor 1, wanted 3", "retention.bytes=-1, wanted
/// 1048576", "missing". Configs are compared only when the broker described
/// them; a wanted config the description lacks is a difference.
std::vector<std::string> differences(const topic_spec& wanted,
                                     const observed_topic& observed);

enum class topic_state {
  created,    ///< created now, as wanted
  matches,    ///< existed, and matches in everything checked
  differs,    ///< existed, and differs (never changed by EventForge)
  missing,    ///< does not exist (check only)
  refused,    ///< the broker refused to create it (its error is named)
  unanswered, ///< the broker did not answer in time
};

/// One line's worth of the outcome for one topic.
struct topic_report {
  std::string name;
  topic_state state = topic_state::missing;
  std::vector<std::string> differences; ///< for differs
  /// refused / unanswered: the broker's words; created: what was created.
  std::string detail;
  /// Empty when the topic's configs were checked; else why not.
  std::string configs_unchecked;
};

struct topics_outcome {
  /// Non-empty when the cluster's metadata could not be read: then no
  /// topic was checked or created, and `topics` is empty.
  std::string unreachable;
  std::vector<topic_report> topics;
};

/// Reads the cluster's metadata and, with `create`, creates the topics of
/// `wanted` that do not exist (one CreateTopics request; a topic another
/// client created meanwhile, TOPIC_ALREADY_EXISTS, is checked like one that
/// existed). Every existing topic is compared with what is wanted:
/// partitions and replication factor from metadata, configs through
/// DescribeConfigs where the broker answers it. Never alters a topic.
/// `timeout_ms` bounds each request.
topics_outcome ensure_topics(const connection& cluster,
                             const std::vector<topic_spec>& wanted, bool create,
                             int timeout_ms);

/// The exit status for an outcome (docs/operations.md, "Creating the
/// topics"): 0 every topic exists as wanted in all that was checked; 3 one
/// differs or is missing; 4 the cluster was unreachable or did not answer
/// in time; 1 the broker refused to create one. The highest of these
/// applies: 4, then 1, then 3.
int exit_code(const topics_outcome& outcome);

/// One line per topic ("orders: exists and matches (6 partitions, ...)"),
/// or the one line saying the cluster was unreachable.
std::string to_text(const topics_outcome& outcome);

/// The outcome as one JSON document: {"ok", "exit_code", "unreachable",
/// "topics": [{"name", "state", "differences", "detail",
/// "configs_unchecked"}]}.
std::string to_json(const topics_outcome& outcome);

/// "created", "matches", ...
const char* to_string(topic_state state);

} // namespace ef::kafka
