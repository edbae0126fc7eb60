#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ef::persistence {

class session;

/// What a consumer's lost position cost, as recorded.
struct gap_record {
  int epoch = 0;
  /// Sent events in the lost range that this consumer had not applied (nor
  /// parked): each was queued for republishing in the same transaction.
  long at_risk = 0;
};

/// A broker record the outbox says is at (partition, offset).
struct broker_witness {
  int epoch = 0;
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  std::string event_id;
};

/// Which rows a manual republish covers; empty fields do not filter.
struct republish_scope {
  std::vector<std::string> consumers;           ///< unapplied by any of these
  std::optional<std::int64_t> from_seq, to_seq; ///< inclusive
  std::optional<std::string> since, until;      ///< created_at, RFC 3339
  std::string describe() const;
};

/// One line of the repair history (consumer_gaps and republish_log).
struct repair_summary {
  int epoch = 0;
  long gaps = 0;              ///< consumer_gaps rows
  long republished_total = 0; ///< events queued again, all reasons
  struct recent_gap {
    std::string consumer;
    std::int32_t partition;
    std::int64_t from_offset, to_offset;
    long at_risk;
    double age_seconds;
  };
  std::vector<recent_gap> recent; ///< newest first, at most 10
};

/// What the repairer asks of the database each round: its lease, the
/// witnesses, new epochs and the sweeps that queue rows again. Production:
/// repair_store; deterministic actor tests give a fake. Throws db_error.
class broker_epochs {
public:
  virtual ~broker_epochs() = default;
  virtual int current_epoch() = 0;
  /// Holds (or takes) the cluster-wide repairer lease; false while another
  /// repairer holds it.
  virtual bool hold_repairer_lease() = 0;
  /// Queues again what the gaps of the last `window_s` seconds cover.
  virtual long resweep_recent_gaps(int window_s) = 0;
  /// The last verified record of `partition` under the current epoch, else
  /// the newest position recorded there; nullopt if none.
  virtual std::optional<broker_witness> witness_of(std::int32_t partition) = 0;
  /// The newest position recorded for `partition` under the current epoch.
  virtual std::optional<broker_witness>
  newest_position(std::int32_t partition) = 0;
  virtual void save_witness(const broker_witness& w) = 0;
  /// Starts a new broker epoch and returns it.
  virtual int begin_epoch(const std::string& reason) = 0;
  /// Queues again every row published under an older epoch that one of
  /// `consumers` has not applied nor parked; returns the rows queued.
  virtual long sweep_old_epochs(const std::vector<std::string>& consumers,
                                int batch_size) = 0;
};

/// The durable side of "no accepted order is ever lost": broker epochs, the
/// record positions the relay stored, consumer gaps, and republishing (a row
/// queued again is simply unsent again, so the relay republishes it in seq
/// order with its original event ID and key). Throws db_error.
///
/// Every republish selects rows that a consumer has NOT applied (no
/// processed_events mark) and has not parked (no dlq_events entry). That is
/// only sound while every existing outbox row still has the marks of its
/// deliveries: config validation refuses a processed-events retention
/// shorter than the outbox retention, which bounds the repair window.
class repair_store : public broker_epochs {
public:
  explicit repair_store(std::string dsn);
  ~repair_store() override;

  int current_epoch() override;

  /// Holds (or takes) the cluster-wide repairer lease on this store's
  /// session; false while another repairer holds it.
  bool hold_repairer_lease() override;

  /// Records that `consumer` cannot read offsets [from, to) of `partition`
  /// in the current epoch and queues its unapplied events there again.
  gap_record record_gap(const std::string& consumer, std::int32_t partition,
                        std::int64_t from, std::int64_t to,
                        std::int64_t log_end);

  /// Queues again what the gaps of the last `window_s` seconds cover: rows
  /// acknowledged before a trim but marked after the gap was recorded.
  long resweep_recent_gaps(int window_s) override;

  /// The last verified record of `partition` under the current epoch, else
  /// the newest position recorded there; nullopt if none.
  std::optional<broker_witness> witness_of(std::int32_t partition) override;
  /// The newest position recorded for `partition` under the current epoch.
  std::optional<broker_witness>
  newest_position(std::int32_t partition) override;
  void save_witness(const broker_witness& w) override;

  /// Starts a new broker epoch (exclusive against every mark) and returns it.
  int begin_epoch(const std::string& reason) override;

  /// Queues again every row published under an older epoch that one of
  /// `consumers` has not applied nor parked, in seq-ordered batches, then
  /// marks those epochs swept. Returns the rows queued; 0 if nothing was
  /// pending.
  long sweep_old_epochs(const std::vector<std::string>& consumers,
                        int batch_size) override;

  /// Manual republish (eventforge republish): counts, and unless `dry_run`
  /// queues, the sent rows in `scope` not applied by one of the consumers;
  /// records the decision in republish_log under `actor`.
  long republish(const republish_scope& scope, bool dry_run,
                 const std::string& actor);

  repair_summary summary();

private:
  std::unique_ptr<session> db_;
};

} // namespace ef::persistence
