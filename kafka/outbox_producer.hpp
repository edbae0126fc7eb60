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

/// One delivery report, named by the ticket its record was sent with.
struct ticketed_delivery {
  std::uint64_t ticket = 0;
  delivery report;
};

/// What a relay publishes outbox rows through: the outbox_producer, or a
/// fake in deterministic actor tests. Records are sent without waiting and
/// their reports collected as they come, so a partition whose leader does
/// not answer holds only its own records, not the others' (issue 42.4).
class event_publisher {
public:
  virtual ~event_publisher() = default;

  /// Hands the records to the client, in order, keyed by order ID; the
  /// i-th carries ticket `first_ticket + i`. Never waits for the broker.
  /// A record the client refuses at once is reported failed by reports().
  virtual void send(const std::vector<order_event>& events,
                    std::uint64_t first_ticket) = 0;

  /// The reports that arrived, waiting up to `wait_ms` for the first one.
  /// Every sent record is reported exactly once: acknowledged, or failed
  /// after message.timeout.ms at the latest. Throws if the producer hit a
  /// fatal error (e.g. a broker that lost its idempotence state): only a new
  /// producer can publish again.
  virtual std::vector<ticketed_delivery> reports(int wait_ms) = 0;

  /// Serves the client's queued callbacks (its statistics, its errors)
  /// without waiting: librdkafka calls them only from a producer's poll,
  /// and an idle relay polls nowhere else.
  virtual void serve_callbacks() {}

  /// Sends `events` and waits for all their reports (tools and tests).
  /// `after_send` runs once the records are handed to the client.
  std::vector<delivery> publish(const std::vector<order_event>& events,
                                const std::function<void()>& after_send);

private:
  std::uint64_t next_ticket_ = 1;
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
/// send() hands records over in order, keyed by order ID; reports() gives
/// back their delivery reports: the relay marks rows only from these.
class outbox_producer : public event_publisher, public record_publisher {
public:
  outbox_producer(const connection& cluster, const std::string& topic,
                  int delivery_timeout_ms, const std::string& client_id);
  ~outbox_producer() override;

  void send(const std::vector<order_event>& events,
            std::uint64_t first_ticket) override;
  std::vector<ticketed_delivery> reports(int wait_ms) override;
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
