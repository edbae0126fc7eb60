#pragma once

#include "actors/chaos.hpp"
#include "actors/delivery.hpp"
#include "messages/tree_messages.hpp"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace ef {

/// The one seam through which a partition actor meets the crash points and
/// demo faults (docs/chaos.md): each failure window is a named call, and a
/// record's crash key (consumer, trace, event type) is made here. With
/// nothing enabled or armed, every call is one relaxed atomic load.
class partition_faults {
public:
  partition_faults(std::shared_ptr<chaos> faults, std::string consumer);

  /// A demo scenario's poison: the delivery fails like a database that
  /// keeps refusing it until it is parked; a DLQ replay goes through.
  bool poisoned(const order_event& ev, const partition_record& rec) const;

  /// consumer.before_db_commit for each delivery of a transaction, inside
  /// it, right before COMMIT: throws injected_crash at the first that must
  /// crash (the whole transaction rolls back).
  void before_db_commit(const std::vector<delivery>& batch) const;

  /// consumer.after_db_before_offset, once the transaction committed: every
  /// delivery gets its decision, as it would after a commit of its own; the
  /// index of the first that crashes (batch.size() if none). The caller
  /// reports the ones before it done, then throws injected_crash.
  size_t after_db_before_offset(const std::vector<delivery>& batch) const;

  /// dlq.after_dlq_ack_before_offset: the DLQ acknowledged a parked copy.
  void after_dlq_ack(const partition_record& rec, const std::string& event_type,
                     const std::string& event_id) const;

private:
  std::string key(const order_event& ev, const partition_record& rec) const;

  std::shared_ptr<chaos> faults_;
  std::string consumer_;
};

} // namespace ef
