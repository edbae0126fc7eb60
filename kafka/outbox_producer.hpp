#pragma once

#include "kafka/connection.hpp"

#include <eventforge/messages/events.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace ef::kafka {

/// What the broker said about one produced record.
struct delivery {
  bool persisted = false;      ///< acknowledged by all in-sync replicas
  std::string error;           ///< why not, when !persisted
  std::int32_t partition = -1; ///< where it landed, when persisted
  std::int64_t offset = -1;
};

/// What a relay publishes outbox rows through: the outbox_producer, or a
/// fake in deterministic actor tests.
class event_publisher {
public:
  virtual ~event_publisher() = default;

  /// One delivery per event, same order as `events`. Never returns before
  /// each record is either acknowledged or failed. `after_send` runs once
  /// all records are handed to the client, before any report is awaited.
  /// Throws if the producer hit a fatal error (e.g. a broker that lost its
  /// idempotence state): only a new producer can publish again.
  virtual std::vector<delivery>
  publish(const std::vector<order_event>& events,
          const std::function<void()>& after_send) = 0;

  /// Serves the client's queued callbacks (its statistics, its errors)
  /// without waiting: librdkafka calls them only from a producer's poll,
  /// and an idle relay polls nowhere else.
  virtual void serve_callbacks() {}
};

/// What a DLQ replay republishes an original record through: the
/// outbox_producer, or a fake in deterministic actor tests.
class record_publisher {
public:
  virtual ~record_publisher() = default;

  /// Raw produce of an already encoded value; waits for its delivery.
  virtual delivery publish_raw(
    const std::string& key, const std::string& value,
    const std::vector<std::pair<std::string, std::string>>& headers) = 0;
};

/// An idempotent producer (enable.idempotence, acks=all) for order events.
/// publish() sends a batch in order, keyed by order ID, and waits for every
/// delivery report: the relay marks rows only from these reports.
class outbox_producer : public event_publisher, public record_publisher {
public:
  outbox_producer(const connection& cluster, const std::string& topic,
                  int delivery_timeout_ms, const std::string& client_id);
  ~outbox_producer() override;

  std::vector<delivery>
  publish(const std::vector<order_event>& events,
          const std::function<void()>& after_send) override;

  void serve_callbacks() override;

  /// Raw produce of an already encoded value, e.g. to put a test record or
  /// a replay onto the topic. Returns the delivery.
  delivery publish_raw(
    const std::string& key, const std::string& value,
    const std::vector<std::pair<std::string, std::string>>& headers) override;

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

} // namespace ef::kafka
