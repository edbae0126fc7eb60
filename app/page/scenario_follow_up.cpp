// A poison scenario's follow-up: its DLQ entry replayed as an operator
// would, once it is parked and the consumer has moved past it, and the run
// ended once the entry says replayed (or after a bounded wait).

#include "app/page/scenarios.hpp"

#include "app/page/scenario_arms_sync.hpp"
#include "kafka/offsets.hpp"
#include "persistence/dlq_store.hpp"
#include <eventforge/config/logging.hpp>
#include <eventforge/messages/atoms.hpp>
#include <eventforge/messages/dlq_messages.hpp>

namespace ef::app {

namespace {

/// How often and how long the follow-up of a poison run looks for the
/// parked entry before it gives up (the page then shows it still parked).
constexpr auto dlq_poll = std::chrono::milliseconds(200);
constexpr int dlq_polls = 600;

/// What the follow-up actor polls with, and how it ends the run.
struct follow_up {
  std::shared_ptr<persistence::dlq_store> store;
  std::string order_id;
  std::string consumer;
  /// True once the consumer's group committed past the parked record.
  std::function<bool(const persistence::dlq_entry&)> moved_past;
  /// Ends the follow-up: the run's poison (and anything else still armed
  /// for it) goes, and the runner may start the next scenario.
  std::function<void()> finish;

  std::optional<persistence::dlq_entry> read(bool replayed,
                                             std::int64_t replayed_id) const {
    try {
      // Before the replay: the parked head of the order; after it, the same
      // entry until it says replayed.
      return replayed ? store->get(replayed_id)
                      : store->head_of(consumer, order_id);
    } catch (const std::exception& e) {
      ef::log::debug("demo: DLQ or offsets not readable yet: {}", e.what());
      return std::nullopt;
    }
  }

  bool past(const persistence::dlq_entry& entry) const {
    try {
      return moved_past(entry);
    } catch (const std::exception& e) {
      ef::log::debug("demo: offsets not readable yet: {}", e.what());
      return false;
    }
  }

  /// The actor: polls every dlq_poll, replays the entry once, quits when
  /// it says replayed, when the tree goes (it monitors the root), or after
  /// dlq_polls polls.
  caf::behavior operator()(caf::event_based_actor* self,
                           eventforge_actor root) const {
    self->monitor(root);
    auto end = finish;
    self->set_down_handler([self, end](caf::down_msg&) {
      end();
      self->quit();
    });
    auto polls = std::make_shared<int>(0);
    auto replayed = std::make_shared<bool>(false);
    auto replayed_id = std::make_shared<std::int64_t>(0);
    self->send(self, poll_atom::value);
    auto f = *this;
    return caf::behavior{
      [=](poll_atom) {
        auto entry = f.read(*replayed, *replayed_id);
        if (!*replayed && entry && entry->status == dlq_status::parked) {
          if (f.past(*entry)) {
            ef::log::info("demo: replaying DLQ entry {} of order {}", entry->id,
                          f.order_id);
            self->send(root,
                       dlq_command{dlq_verb::replay, entry->id, "", "demo"});
            *replayed = true;
            *replayed_id = entry->id;
          }
        } else if (*replayed && entry &&
                   entry->status == dlq_status::replayed) {
          f.finish();
          self->quit();
          return;
        }
        if (++*polls >= dlq_polls) {
          ef::log::warn("demo: order {} was not {} in time", f.order_id,
                        *replayed ? "replayed" : "parked");
          f.finish();
          self->quit();
          return;
        }
        self->delayed_send(self, dlq_poll, poll_atom::value);
      },
      // The replay's answer: what it did is read from the database above
      // (a late answer must not reach CAF's default handler, which prints
      // to stdout).
      [](dlq_reply&) {},
      [](caf::error&) {},
    };
  }
};

} // namespace

void scenario_runner::replay_when_parked(const std::string& order_id,
                                         const std::string& consumer,
                                         std::shared_ptr<run_state> state) {
  state->following = true;
  follow_up f;
  f.store = std::make_shared<persistence::dlq_store>(dsn_);
  f.order_id = order_id;
  f.consumer = consumer;
  f.moved_past = [cluster = cluster_, topic = cfg_.kafka.topic,
                  partitions = cfg_.kafka.partitions,
                  group =
                    "eventforge." + consumer](const persistence::dlq_entry& e) {
    auto committed =
      kafka::committed_offsets(cluster, group, topic, partitions, 2000);
    return e.source_partition >= 0 &&
           e.source_partition < static_cast<int>(committed.size()) &&
           committed[e.source_partition] > e.source_offset;
  };
  f.finish = [arms = arms_, state] {
    arms->disarm(state->trace_id); // on every node
    state->following = false;
  };
  // A detached actor: it waits on the database, never on a scheduler
  // thread. The root is a spawn argument, never an empty argument list
  // (see http_frontend's ask()).
  sys_.spawn<caf::detached>(std::move(f), root_);
}

} // namespace ef::app
