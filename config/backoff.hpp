#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <random>

namespace ef::config {

/// How long to wait before trying again after a failure: the one backoff
/// rule of EventForge. Supervisors restarting a child, partition actors
/// retrying a record, relays retrying a publish and the recovery journal
/// retrying a write each hold a `backoff` made from one of these. Base and
/// cap come from configuration; the rest is fixed where it is not an
/// operator's choice: a retry or a publish has no healthy spell (a success
/// ends its run), and a relay's publish backoff has equal jitter (0.5), so
/// relays that failed together do not retry together.
///
/// The n-th failure in a row waits base * 2^(n-1), at most `cap`; a
/// `jitter` share of that is random (0: none; 0.5: "equal jitter", half
/// fixed, half random), so many actors failing together do not retry in
/// lockstep. A run of failures ends when the thing was healthy for
/// `reset_after` (a restarted actor that stayed up that long) or succeeded.
struct backoff_policy {
  std::chrono::milliseconds base{100};
  std::chrono::milliseconds cap{5000};
  double jitter = 0;
  std::chrono::milliseconds reset_after{1000};
};

/// The backoff state of one thing that fails and tries again. Not
/// thread-safe: one owner.
///
/// Time comes in from the owner: an actor passes its actor clock's now
/// (`self->clock().now()`, the same steady clock in production, the test
/// coordinator's clock in deterministic tests), so a healthy spell is
/// measured on the clock that schedules the actor's delayed messages.
class backoff {
public:
  /// The actor clock's time (caf::actor_clock::time_point).
  using clock = std::chrono::steady_clock;

  /// `seed` fixes the jitter (tests); by default it is random.
  explicit backoff(backoff_policy p,
                   std::uint64_t seed = std::random_device{}());

  /// An attempt (a start, a run) began at `now`: if it is still healthy
  /// policy.reset_after later, its next failure starts a new run.
  void began(clock::time_point now);

  /// The attempt succeeded: the next failure starts a new run.
  void succeeded();

  /// Records a failure at `now`; returns how long to wait before the next
  /// attempt.
  std::chrono::milliseconds failed(clock::time_point now);
  /// The same at the steady clock's now, for an owner with no actor clock
  /// (a thread of its own) or one that never calls began() (no healthy
  /// spell to measure, so the time does not matter).
  std::chrono::milliseconds failed() { return failed(clock::now()); }

  /// Failures in the current run (0 after a success or a healthy spell).
  int failures_in_a_row() const { return failures_; }

  const backoff_policy& policy() const { return policy_; }

private:
  backoff_policy policy_;
  std::mt19937_64 rng_;
  int failures_ = 0;
  std::optional<clock::time_point> began_;
};

struct settings;

/// The policies of the configuration, one per kind of retry.
/// Supervisors (and the group member for its partition actors) restarting a
/// crashed child: supervisor.restart-*.
backoff_policy restart_backoff(const settings& s);
/// A partition actor retrying a record, and the recovery journal retrying a
/// write: both wait for the database (consumer.backoff-*).
backoff_policy retry_backoff(const settings& s);
/// A relay publishing again after the broker refused rows:
/// relay.publish-backoff-*.
backoff_policy publish_backoff(const settings& s);

} // namespace ef::config
