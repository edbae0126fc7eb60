// The failure scenarios the recovery page offers: one entry per scenario
// with its crash point or Kafka fault, its explanation and the deliveries
// and business changes it should leave (the page checks them), and which
// of them this process can run.

#include "app/page/scenarios.hpp"

namespace ef::app {

const std::vector<scenario>& scenarios() {
  static const std::vector<scenario> all{
    {"none", "No failure", std::nullopt, false,
     "The order takes the whole path once: one commit of the order and its "
     "outbox row, one publish, one delivery per consumer, one business "
     "change each, then the offset commit.",
     1, 1},
    {"api-after-commit-before-reply", "API: after the commit, before the reply",
     crash_point::api_after_commit_before_reply, false,
     "The API worker crashes after the order and its outbox row are "
     "committed but before the client hears about it. The client retries "
     "with the same Idempotency-Key and gets the same order back: nothing "
     "is written twice, and the event is published once.",
     1, 1},
    {"relay-after-publish-before-ack",
     "Relay: after the publish, before the ack",
     crash_point::relay_after_publish_before_ack, false,
     "The relay crashes after handing the record to the producer but before "
     "the broker's ack comes back. The row is still unsent, so the restarted "
     "relay publishes it again; whether the first copy reached the broker "
     "decides if consumers see one delivery or two.",
     1, 1},
    {"relay-after-ack-before-mark", "Relay: after the ack, before the mark",
     crash_point::relay_after_ack_before_mark, false,
     "The broker has acknowledged the record, but the relay crashes before "
     "marking the row sent (the publish and the mark are not atomic). The "
     "restarted relay publishes it again: two copies on the topic, and each "
     "consumer's second delivery is suppressed by processed_events.",
     2, 1},
    {"consumer-before-db-commit", "Consumer: before the DB commit",
     crash_point::consumer_before_db_commit, false,
     "The partition worker crashes inside its transaction, after the "
     "business change but before COMMIT. PostgreSQL rolls back the mark and "
     "the change; the offset was never committed, so the record is "
     "delivered again and applied then, once.",
     2, 1},
    {"consumer-after-db-before-offset",
     "Consumer: after the DB commit, before the offset commit",
     crash_point::consumer_after_db_before_offset, false,
     "The business change and the processed_events mark are committed, but "
     "the worker crashes before the Kafka offset is. The record is delivered "
     "again; the mark's UNIQUE key suppresses the second business change.",
     2, 1},
    {"poison-event", "Poison event: retries, DLQ, replay", std::nullopt, true,
     "The first consumer fails on this event every time. It retries inline "
     "(the partition waits, order is kept), parks the event in the DLQ after "
     "the last attempt, acknowledged before the offset moves on; an operator "
     "replay (done here for you) publishes it again with the same event ID "
     "and it is applied once.",
     2, 1},
    {"dlq-after-ack-before-offset",
     "DLQ: after the DLQ ack, before the offset commit",
     crash_point::dlq_after_dlq_ack_before_offset, true,
     "A poison event is acknowledged by the DLQ topic, then the worker "
     "crashes before recording the entry and committing the offset. The "
     "record comes again, fails again and is parked once (one DLQ entry per "
     "consumer and event); the replay applies it once.",
     3, 1},
    {"dlq-replay-after-mark-before-publish",
     "DLQ replay: after recording the replay, before publishing it",
     crash_point::dlq_replay_after_mark_before_publish, true,
     "A poison event is parked; its replay records its intent (the entry "
     "says replaying) and the DLQ handler crashes before publishing the "
     "record. Nothing is on the topic yet, but nothing is lost: once the "
     "replay's delivery timeout has passed, the restarted handler finds the "
     "entry still replaying, publishes it and marks it replayed. It is "
     "applied once.",
     2, 1},
    {"dlq-replay-after-publish-before-mark",
     "DLQ replay: after the publish, before marking it replayed",
     crash_point::dlq_replay_after_publish_before_mark, true,
     "A poison event is parked and replayed; the broker acknowledges the "
     "replayed record, then the DLQ handler crashes before marking the "
     "entry replayed. The consumer applies the record (its entry says "
     "replaying); the handler later publishes it again, and that copy is "
     "suppressed by processed_events. Three deliveries, one business "
     "change.",
     3, 1},
    {"kafka-leader-moves-before-ack",
     "Kafka: the partition leader moves between publish and ack", std::nullopt,
     false,
     "The relay has sent the order's record and waits for the broker's "
     "acknowledgement when every partition's leader moves to another broker, "
     "as when a broker of a real cluster is restarted. The producer is told "
     "the old leader is no longer one, finds the new leader and sends again "
     "with the same producer sequence: the broker appends the record once, "
     "and the relay marks the row only after the acknowledgement comes. One "
     "delivery, one business change. The journal shows each partition's "
     "leader moving from one broker to the next. With several nodes, it "
     "runs only on the node that owns every relay shard.",
     1, 1, kafka_fault::leader_move},
    {"kafka-broker-down-5s", "Kafka: the broker is down for 5 s", std::nullopt,
     false,
     "Every broker refuses connections for five seconds, from just before "
     "the order. The API commits the order and its outbox row as usual; the "
     "relay cannot publish, so the row waits in the outbox (unsent) while "
     "the producer retries within kafka.delivery-timeout-ms. When the "
     "brokers are back the record is acknowledged, the row is marked and "
     "the consumers apply it: the outbox grew and drained, nothing was lost "
     "and nothing applied twice. A consumer whose offset commit fails while "
     "its group rebalances around the outage (\"Unknown member\") gets the "
     "record again and suppresses it: a second delivery, still one business "
     "change, which at-least-once allows. The journal shows each broker "
     "going down and coming back.",
     1, 1, kafka_fault::broker_down},
  };
  return all;
}

std::string unavailable(const scenario& s, const broker_controls& broker) {
  if (s.kafka == kafka_fault::none)
    return {};
  if (!broker.run)
    return "needs the in-process broker (serve without kafka.brokers)";
  if (s.kafka == kafka_fault::leader_move && broker.brokers < 2)
    return "needs kafka.embedded-brokers >= 2: a leader has nowhere to move";
  return {};
}

const scenario* find_scenario(const std::string& name) {
  for (auto& s : scenarios())
    if (s.name == name)
      return &s;
  return nullptr;
}

} // namespace ef::app
