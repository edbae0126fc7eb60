#include "kafka/lead_limit.hpp"

#include "kafka/client_config.hpp"
#include <eventforge/config/logging.hpp>

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

namespace ef::kafka {

std::optional<retention> describe_retention(const connection& cluster,
                                            const std::string& topic,
                                            int timeout_ms, std::string& why,
                                            const std::atomic<bool>& stop) {
  auto conf = make_conf(cluster, {{"client.id", "eventforge-admin"},
                                  {"log.connection.close", "false"}});
  std::string err;
  std::unique_ptr<RdKafka::Producer> client(
    RdKafka::Producer::create(conf.get(), err));
  if (!client) {
    why = "cannot create kafka admin client: " + err;
    return std::nullopt;
  }
  rd_kafka_t* rk = client->c_ptr();
  auto* queue = rd_kafka_queue_new(rk);
  auto* options =
    rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS);
  char errstr[256];
  rd_kafka_AdminOptions_set_request_timeout(options, timeout_ms, errstr,
                                            sizeof(errstr));
  auto* resource =
    rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic.c_str());
  rd_kafka_DescribeConfigs(rk, &resource, 1, options, queue);
  rd_kafka_ConfigResource_destroy(resource);
  rd_kafka_AdminOptions_destroy(options);
  std::optional<retention> out;
  // The request times out on its own; the extra second only bounds a
  // client that never answers at all. In slices, so that a stop is seen.
  rd_kafka_event_t* ev = nullptr;
  for (int waited = 0; ev == nullptr && waited < timeout_ms + 1000 && !stop;
       waited += 100)
    ev = rd_kafka_queue_poll(queue, 100);
  if (ev == nullptr) {
    why = stop ? "stopped"
               : "no answer within " + std::to_string(timeout_ms) + " ms";
  } else if (rd_kafka_event_error(ev) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    why = rd_kafka_event_error_string(ev);
  } else {
    size_t n = 0;
    auto* result = rd_kafka_event_DescribeConfigs_result(ev);
    auto** resources =
      result ? rd_kafka_DescribeConfigs_result_resources(result, &n) : nullptr;
    if (n != 1) {
      why = "the broker described " + std::to_string(n) + " resources";
    } else if (rd_kafka_ConfigResource_error(resources[0]) !=
               RD_KAFKA_RESP_ERR_NO_ERROR) {
      why = rd_kafka_ConfigResource_error_string(resources[0]);
    } else {
      retention r;
      size_t m = 0;
      auto** entries = rd_kafka_ConfigResource_configs(resources[0], &m);
      for (size_t i = 0; i < m; ++i) {
        std::string name = rd_kafka_ConfigEntry_name(entries[i]);
        const char* value = rd_kafka_ConfigEntry_value(entries[i]);
        if (value == nullptr)
          continue;
        if (name == "retention.bytes")
          r.bytes = std::strtoll(value, nullptr, 10);
        else if (name == "retention.ms")
          r.ms = std::strtoll(value, nullptr, 10);
      }
      out = r;
    }
  }
  if (ev)
    rd_kafka_event_destroy(ev);
  rd_kafka_queue_destroy(queue);
  return out;
}

lead_limit::lead_limit(std::int64_t configured, ask_fn ask,
                       std::int64_t declared_bytes, std::int64_t fallback)
    : configured_(configured), ask_(std::move(ask)), declared_(declared_bytes),
      fallback_(fallback) {
  if (configured_ >= 0)
    decide(configured_, "relay.max-lead-bytes=" + std::to_string(configured_) +
                          " as configured");
  else if (declared_ >= 0)
    // The cluster said its size up front (the in-process broker): start
    // from it, not from the smaller fallback, while the broker is asked.
    decide(from_retention(declared_),
           "derived from the in-process broker's " +
             std::to_string(declared_ >> 10) +
             " KiB log per partition, until the broker describes the topic");
  else
    decide(fallback_, "until the broker describes the topic's retention");
}

lead_limit::~lead_limit() {
  {
    std::lock_guard<std::mutex> guard{mtx_};
    stopping_ = true; // an ask in progress gives up within 100 ms
  }
  wake_.notify_all();
  if (watcher_.joinable())
    watcher_.join();
}

std::int64_t lead_limit::from_retention(std::int64_t retention_bytes) {
  if (retention_bytes < 0)
    return 0;
  return std::max<std::int64_t>(1, retention_bytes / 5 * 4);
}

void lead_limit::decide(std::int64_t value, std::string why) {
  std::lock_guard<std::mutex> guard{mtx_};
  if (value == value_ && why == reason_)
    return;
  bool changed = value != value_ || reason_.empty();
  value_ = value;
  reason_ = std::move(why);
  if (changed)
    ef::log::info("relays: lead limit {} ({})",
                  value_ == 0
                    ? std::string("off")
                    : std::to_string(value_ >> 10) + " KiB per partition",
                  reason_);
}

std::string lead_limit::reason() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return reason_;
}

std::int64_t lead_limit::bytes() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return value_;
}

void lead_limit::refresh() {
  if (configured_ >= 0 || !ask_)
    return;
  std::string why;
  auto r = ask_(why, stopping_);
  if (stopping_)
    return;
  {
    std::lock_guard<std::mutex> guard{mtx_};
    described_ = r.has_value();
  }
  if (r)
    decide(
      from_retention(r->bytes),
      "derived from the topic's retention.bytes=" + std::to_string(r->bytes) +
        " and retention.ms=" + std::to_string(r->ms) +
        " as the broker describes them");
  else if (declared_ >= 0)
    decide(from_retention(declared_),
           "derived from the in-process broker's " +
             std::to_string(declared_ >> 10) +
             " KiB log per partition; the broker does not describe topic "
             "configs (" +
             why + ")");
  else
    decide(fallback_, "the broker did not describe the topic's retention (" +
                        why + "); set relay.max-lead-bytes to choose");
}

void lead_limit::watch(std::chrono::milliseconds every) {
  if (configured_ >= 0 || watcher_.joinable())
    return;
  watcher_ = std::thread([this, every] {
    std::unique_lock<std::mutex> lock{mtx_};
    while (!stopping_) {
      lock.unlock();
      refresh();
      lock.lock();
      wake_.wait_for(lock, described_ ? every : 10 * every,
                     [this] { return stopping_.load(); });
    }
  });
}

} // namespace ef::kafka
