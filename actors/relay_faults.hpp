#pragma once

#include "actors/chaos.hpp"
#include "persistence/outbox_store.hpp"

#include <memory>
#include <vector>

namespace ef {

/// The seam through which a relay meets its two crash points (docs/chaos.md),
/// as partition_faults is a partition actor's. Decisions are made per row, in
/// seq order, and the first row whose decision says so crashes the batch:
/// which rows share a batch then does not change which logical events crash.
class relay_faults {
public:
  explicit relay_faults(std::shared_ptr<chaos> faults);

  /// relay.after_publish_before_ack: the batch is handed to the producer,
  /// no acknowledgement is read yet.
  void after_send(const std::vector<persistence::outbox_row>& rows) const;

  /// relay.after_ack_before_mark: acknowledged, not yet marked sent (the
  /// seed's relay window: the republish is the accepted duplicate).
  void after_ack(const std::vector<persistence::outbox_row>& rows) const;

private:
  void check(crash_point p,
             const std::vector<persistence::outbox_row>& rows) const;

  std::shared_ptr<chaos> faults_;
};

} // namespace ef
