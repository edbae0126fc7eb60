#include "kafka/topic_admin.hpp"

#include "kafka/client_config.hpp"
#include "kafka/client_health.hpp"
#include <eventforge/config/options.hpp>

#include <librdkafka/rdkafka.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <memory>
#include <set>

namespace ef::kafka {

namespace {

/// The role (client.id) of the admin client: its errors are looked up by it.
constexpr const char* admin_role = "eventforge-topics";

using observed_map = std::map<std::string, observed_topic>;

/// An admin request's answer: its event, or why there is none.
struct admin_answer {
  rd_kafka_event_t* ev = nullptr;
  std::string why;
  ~admin_answer() {
    if (ev)
      rd_kafka_event_destroy(ev);
  }
};

std::string timeout_words(const char* request, int timeout_ms) {
  return std::string("the broker did not answer ") + request + " within " +
         std::to_string(timeout_ms) + " ms";
}

/// Waits for the one event an admin request puts on `queue`. The request
/// times out on its own (request_timeout); the extra second only bounds a
/// client that never answers at all.
void await_answer(rd_kafka_queue_t* queue, const char* request, int timeout_ms,
                  admin_answer& out) {
  out.ev = rd_kafka_queue_poll(queue, timeout_ms + 1000);
  if (out.ev == nullptr) {
    out.why = timeout_words(request, timeout_ms);
  } else if (auto err = rd_kafka_event_error(out.ev)) {
    out.why = err == RD_KAFKA_RESP_ERR__TIMED_OUT
                ? timeout_words(request, timeout_ms) + " (" +
                    rd_kafka_event_error_string(out.ev) + ")"
                : std::string(request) +
                    " failed: " + rd_kafka_event_error_string(out.ev);
  }
}

rd_kafka_AdminOptions_t* admin_options(rd_kafka_t* rk, rd_kafka_admin_op_t op,
                                       int timeout_ms) {
  char errstr[256];
  auto* options = rd_kafka_AdminOptions_new(rk, op);
  rd_kafka_AdminOptions_set_request_timeout(options, timeout_ms, errstr,
                                            sizeof(errstr));
  if (op == RD_KAFKA_ADMIN_OP_CREATETOPICS)
    // "Created" then means created on the controller, not only accepted.
    rd_kafka_AdminOptions_set_operation_timeout(options, timeout_ms, errstr,
                                                sizeof(errstr));
  return options;
}

/// The newest error the admin client reported (a refused connection, a
/// failed handshake), for a line that says why the cluster is unreachable.
std::string last_admin_error() {
  auto errors =
    client_health::process().recent_errors(std::chrono::seconds(600));
  const client_error* newest = nullptr;
  for (auto& e : errors)
    if (e.role == admin_role && (newest == nullptr || e.at > newest->at))
      newest = &e;
  return newest ? "; last error: " + newest->reason : "";
}

/// Every topic the cluster's metadata names. Asks for all topics: a
/// request naming a missing topic may make a broker auto-create it.
std::optional<observed_map> read_metadata(rd_kafka_t* rk, int timeout_ms,
                                          std::string& why) {
  const rd_kafka_metadata_t* md = nullptr;
  auto err = rd_kafka_metadata(rk, 1, nullptr, &md, timeout_ms);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    // The client's error events reach client_health only when served.
    rd_kafka_poll(rk, 0);
    why = std::string(rd_kafka_err2str(err)) + last_admin_error();
    return std::nullopt;
  }
  observed_map out;
  for (int i = 0; i < md->topic_cnt; ++i) {
    const auto& t = md->topics[i];
    if (t.err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)
      continue;
    observed_topic o;
    o.exists = true;
    o.partitions = t.partition_cnt;
    for (int p = 0; p < t.partition_cnt; ++p)
      if (p == 0 || t.partitions[p].replica_cnt < o.replication_factor)
        o.replication_factor = t.partitions[p].replica_cnt;
    out[t.topic] = o;
  }
  rd_kafka_metadata_destroy(md);
  return out;
}

/// Creates `specs` in one CreateTopics request; the broker's answer per
/// topic (NO_ERROR, TOPIC_ALREADY_EXISTS, ...) and its words, or for every
/// topic the one reason when the request itself failed.
std::map<std::string, std::pair<rd_kafka_resp_err_t, std::string>>
create_topics(rd_kafka_t* rk, const std::vector<const topic_spec*>& specs,
              int timeout_ms) {
  std::map<std::string, std::pair<rd_kafka_resp_err_t, std::string>> out;
  std::vector<rd_kafka_NewTopic_t*> topics;
  for (auto* s : specs) {
    char errstr[512];
    auto* t =
      rd_kafka_NewTopic_new(s->name.c_str(), s->partitions,
                            s->replication_factor, errstr, sizeof(errstr));
    if (t == nullptr) {
      out[s->name] = {RD_KAFKA_RESP_ERR__INVALID_ARG, errstr};
      continue;
    }
    for (auto& [key, value] : s->configs)
      rd_kafka_NewTopic_set_config(t, key.c_str(), value.c_str());
    topics.push_back(t);
  }
  if (topics.empty())
    return out;
  auto* queue = rd_kafka_queue_new(rk);
  auto* options = admin_options(rk, RD_KAFKA_ADMIN_OP_CREATETOPICS, timeout_ms);
  rd_kafka_CreateTopics(rk, topics.data(), topics.size(), options, queue);
  rd_kafka_AdminOptions_destroy(options);
  rd_kafka_NewTopic_destroy_array(topics.data(), topics.size());
  admin_answer answer;
  await_answer(queue, "CreateTopics", timeout_ms, answer);
  if (answer.why.empty()) {
    size_t n = 0;
    auto* result = rd_kafka_event_CreateTopics_result(answer.ev);
    auto** results =
      result ? rd_kafka_CreateTopics_result_topics(result, &n) : nullptr;
    for (size_t i = 0; i < n; ++i) {
      auto* msg = rd_kafka_topic_result_error_string(results[i]);
      auto err = rd_kafka_topic_result_error(results[i]);
      out[rd_kafka_topic_result_name(results[i])] = {
        err, msg ? msg : rd_kafka_err2str(err)};
    }
  }
  for (auto* s : specs)
    if (out.count(s->name) == 0)
      out[s->name] = {RD_KAFKA_RESP_ERR__TIMED_OUT,
                      answer.why.empty() ? "not in the broker's answer"
                                         : answer.why};
  rd_kafka_queue_destroy(queue);
  return out;
}

/// Fills the configs of each topic of `names` in `observed` through one
/// DescribeConfigs request, or says per topic why they are not known.
void describe_configs(rd_kafka_t* rk, const std::vector<std::string>& names,
                      int timeout_ms, observed_map& observed) {
  if (names.empty())
    return;
  std::vector<rd_kafka_ConfigResource_t*> resources;
  for (auto& n : names)
    resources.push_back(
      rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, n.c_str()));
  auto* queue = rd_kafka_queue_new(rk);
  auto* options =
    admin_options(rk, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS, timeout_ms);
  rd_kafka_DescribeConfigs(rk, resources.data(), resources.size(), options,
                           queue);
  rd_kafka_AdminOptions_destroy(options);
  rd_kafka_ConfigResource_destroy_array(resources.data(), resources.size());
  admin_answer answer;
  await_answer(queue, "DescribeConfigs", timeout_ms, answer);
  rd_kafka_queue_destroy(queue);
  size_t n = 0;
  auto* result = answer.why.empty()
                   ? rd_kafka_event_DescribeConfigs_result(answer.ev)
                   : nullptr;
  auto** described =
    result ? rd_kafka_DescribeConfigs_result_resources(result, &n) : nullptr;
  for (size_t i = 0; i < n; ++i) {
    auto& o = observed[rd_kafka_ConfigResource_name(described[i])];
    if (rd_kafka_ConfigResource_error(described[i])) {
      o.configs_unchecked = std::string("DescribeConfigs failed: ") +
                            rd_kafka_ConfigResource_error_string(described[i]);
      continue;
    }
    std::map<std::string, std::string> configs;
    size_t m = 0;
    auto** entries = rd_kafka_ConfigResource_configs(described[i], &m);
    for (size_t j = 0; j < m; ++j)
      if (const char* value = rd_kafka_ConfigEntry_value(entries[j]))
        configs[rd_kafka_ConfigEntry_name(entries[j])] = value;
    o.configs = std::move(configs);
  }
  for (auto& name : names) {
    auto& o = observed[name];
    if (!o.configs && o.configs_unchecked.empty())
      o.configs_unchecked =
        answer.why.empty() ? "not in the broker's answer" : answer.why;
  }
}

/// "6 partitions, replication factor 3, min.insync.replicas=2, ..."
std::string describe_spec(const topic_spec& s) {
  auto text = std::to_string(s.partitions) +
              " partitions, replication factor " +
              std::to_string(s.replication_factor);
  for (auto& [key, value] : s.configs)
    text += ", " + key + "=" + value;
  return text;
}

/// The report of a topic that existed (or was created meanwhile).
topic_report report_existing(const topic_spec& want,
                             const observed_topic& seen) {
  topic_report r;
  r.name = want.name;
  r.differences = differences(want, seen);
  r.state = r.differences.empty() ? topic_state::matches : topic_state::differs;
  r.detail = std::to_string(seen.partitions) +
             " partitions, replication factor " +
             std::to_string(seen.replication_factor);
  if (!seen.configs)
    r.configs_unchecked = seen.configs_unchecked;
  return r;
}

} // namespace

std::vector<topic_spec> wanted_topics(const config::settings& cfg) {
  const auto& k = cfg.kafka;
  int min_insync = k.min_insync_replicas > 0
                     ? k.min_insync_replicas
                     : std::max(1, k.replication_factor - 1);
  std::map<std::string, std::string> configs{
    {"min.insync.replicas", std::to_string(min_insync)},
    {"retention.bytes", std::to_string(k.retention_bytes)},
    {"retention.ms", std::to_string(k.retention_ms)},
  };
  return {
    {k.topic, k.partitions, k.replication_factor, configs},
    {config::dlq_topic_of(cfg), k.partitions, k.replication_factor, configs}};
}

std::vector<std::string> differences(const topic_spec& wanted,
                                     const observed_topic& observed) {
  if (!observed.exists)
    return {"missing"};
  std::vector<std::string> out;
  if (observed.partitions != wanted.partitions)
    out.push_back(std::to_string(observed.partitions) + " partitions, wanted " +
                  std::to_string(wanted.partitions));
  if (observed.replication_factor != wanted.replication_factor)
    out.push_back("replication factor " +
                  std::to_string(observed.replication_factor) + ", wanted " +
                  std::to_string(wanted.replication_factor));
  if (observed.configs)
    for (auto& [key, value] : wanted.configs) {
      auto i = observed.configs->find(key);
      if (i == observed.configs->end())
        out.push_back(key + " not described, wanted " + value);
      else if (i->second != value)
        out.push_back(key + "=" + i->second + ", wanted " + value);
    }
  return out;
}

topics_outcome ensure_topics(const connection& cluster,
                             const std::vector<topic_spec>& wanted, bool create,
                             int timeout_ms) {
  topics_outcome out;
  auto conf = make_conf(
    cluster, {{"client.id", admin_role}, {"log.connection.close", "false"}});
  std::string err;
  std::unique_ptr<RdKafka::Producer> client(
    RdKafka::Producer::create(conf.get(), err));
  if (!client)
    throw std::runtime_error("cannot create a Kafka admin client for " +
                             cluster.brokers + ": " + err);
  rd_kafka_t* rk = client->c_ptr();
  std::string why;
  auto observed = read_metadata(rk, timeout_ms, why);
  if (!observed) {
    out.unreachable = "cannot read the metadata of the cluster at " +
                      cluster.brokers + " within " +
                      std::to_string(timeout_ms) + " ms: " + why;
    return out;
  }
  std::vector<const topic_spec*> to_create;
  for (auto& w : wanted)
    if (create && observed->count(w.name) == 0)
      to_create.push_back(&w);
  auto created = create_topics(rk, to_create, timeout_ms);
  bool raced = false;
  for (auto& [name, answer] : created)
    raced = raced || answer.first == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS;
  // Another client created it between our metadata and our request: read
  // what it created, and check it like a topic that existed.
  if (raced)
    if (auto again = read_metadata(rk, timeout_ms, why))
      for (auto& [name, answer] : created)
        if (answer.first == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS &&
            again->count(name))
          (*observed)[name] = (*again)[name];
  std::vector<std::string> existing;
  for (auto& w : wanted)
    if (observed->count(w.name))
      existing.push_back(w.name);
  describe_configs(rk, existing, timeout_ms, *observed);
  for (auto& w : wanted) {
    auto c = created.find(w.name);
    if (observed->count(w.name)) {
      out.topics.push_back(report_existing(w, (*observed)[w.name]));
      continue;
    }
    topic_report r;
    r.name = w.name;
    if (c == created.end()) {
      r.state = topic_state::missing;
    } else if (c->second.first == RD_KAFKA_RESP_ERR_NO_ERROR) {
      r.state = topic_state::created;
      r.detail = describe_spec(w);
    } else {
      r.state = c->second.first == RD_KAFKA_RESP_ERR__TIMED_OUT
                  ? topic_state::unanswered
                  : topic_state::refused;
      r.detail = c->second.second;
    }
    out.topics.push_back(std::move(r));
  }
  return out;
}

int exit_code(const topics_outcome& outcome) {
  if (!outcome.unreachable.empty())
    return 4;
  std::set<topic_state> states;
  for (auto& t : outcome.topics)
    states.insert(t.state);
  if (states.count(topic_state::unanswered))
    return 4;
  if (states.count(topic_state::refused))
    return 1;
  if (states.count(topic_state::differs) || states.count(topic_state::missing))
    return 3;
  return 0;
}

const char* to_string(topic_state state) {
  switch (state) {
  case topic_state::created:
    return "created";
  case topic_state::matches:
    return "matches";
  case topic_state::differs:
    return "differs";
  case topic_state::missing:
    return "missing";
  case topic_state::refused:
    return "refused";
  case topic_state::unanswered:
    return "unanswered";
  }
  return "unknown";
}

namespace {

std::string report_line(const topic_report& t) {
  std::string line = t.name + ": ";
  switch (t.state) {
  case topic_state::created:
    return line + "created (" + t.detail + ")";
  case topic_state::matches:
    line += "exists and matches (" + t.detail + ")";
    break;
  case topic_state::differs:
    line += "exists and differs: ";
    for (size_t i = 0; i < t.differences.size(); ++i)
      line += (i ? "; " : "") + t.differences[i];
    line += " (left as it is)";
    break;
  case topic_state::missing:
    return line + "missing (`eventforge topics create` creates it)";
  case topic_state::refused:
    return line + "not created: the broker refused: " + t.detail;
  case topic_state::unanswered:
    return line + "not created: " + t.detail;
  }
  if (!t.configs_unchecked.empty())
    line += "; configs not checked: " + t.configs_unchecked;
  return line;
}

} // namespace

std::string to_text(const topics_outcome& outcome) {
  if (!outcome.unreachable.empty())
    return "kafka unreachable: " + outcome.unreachable + "\n";
  std::string text;
  for (auto& t : outcome.topics)
    text += report_line(t) + "\n";
  return text;
}

std::string to_json(const topics_outcome& outcome) {
  nlohmann::json topics = nlohmann::json::array();
  for (auto& t : outcome.topics)
    topics.push_back({{"name", t.name},
                      {"state", to_string(t.state)},
                      {"differences", t.differences},
                      {"detail", t.detail},
                      {"configs_unchecked", t.configs_unchecked}});
  int code = exit_code(outcome);
  nlohmann::json doc{{"ok", code == 0},
                     {"exit_code", code},
                     {"unreachable", outcome.unreachable},
                     {"topics", topics}};
  return doc.dump();
}

} // namespace ef::kafka
