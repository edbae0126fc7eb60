#pragma once

#include <string>
#include <variant>
#include <vector>

namespace ef::kafka {

/// One fault asked of the in-process cluster, as a real cluster would fail:
/// a broker goes away or comes back, a partition's leader moves, a broker
/// answers slowly, requests are refused with an error, a group's
/// coordinator moves. The text form (parse_fault) is the standalone
/// broker's control surface and what a chaos schedule is made of.
struct broker_fault {
  enum class kind {
    down,        ///< broker N refuses connections; its partitions' leaders move
    up,          ///< broker N is back (leaders stay where they are)
    leader,      ///< partition P of topic T is led by broker N (0: the next
                 ///< broker that is up after its leader)
    rtt,         ///< broker N answers every request after MS milliseconds
    errors,      ///< the next COUNT requests of an API fail with ERROR
    coordinator, ///< group G's coordinator is broker N
    clear,       ///< every broker up, no RTT, no pending errors
    status,      ///< changes nothing: "brokers N; down: ..."
  };
  kind what = kind::clear;
  int broker = 0;
  std::string topic;
  int partition = 0;
  int rtt_ms = 0;
  std::string api;   ///< errors: produce, fetch, offset-commit, ...
  int count = 0;     ///< errors
  std::string error; ///< errors: a Kafka error name (NOT_LEADER_FOR_PARTITION)
  std::string group; ///< coordinator
};

/// The command's words again ("leader orders 3 2").
std::string to_string(const broker_fault& f);

/// Parses one command:
///   down N | up N | leader TOPIC P N|next | rtt N MS |
///   errors API COUNT ERROR | coordinator GROUP N | clear | status
/// API is one of fault_apis(); ERROR a Kafka error name (e.g.
/// NOT_LEADER_FOR_PARTITION, REQUEST_TIMED_OUT, COORDINATOR_NOT_AVAILABLE)
/// or its number. Returns the fault or what is wrong with the line.
std::variant<broker_fault, std::string> parse_fault(const std::string& line);

/// The request types `errors` accepts, in protocol order.
const std::vector<std::string>& fault_apis();

/// The protocol's ApiKey of a request type of fault_apis() (-1: none).
int api_key_of(const std::string& api);

/// The code of a Kafka error name or number (-1: none).
int error_code_of(const std::string& error);

} // namespace ef::kafka
