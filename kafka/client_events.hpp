#pragma once

// Internal to kafka/: what librdkafka tells of each client goes through
// EventForge, never raw to stderr.

#include <librdkafka/rdkafkacpp.h>

#include <string>

namespace ef::kafka {

/// Attaches EventForge's callbacks to a client's configuration: its log
/// lines go through EventForge's logger (one JSON object each with
/// log.format=json; level and client role kept), its errors to the log and
/// client_health (error_cb: all brokers down, a failed TLS handshake or
/// SASL authentication, ...), and with `statistics_interval_ms` > 0 its
/// statistics to client_health. make_conf calls it for every client.
void attach_client_events(RdKafka::Conf& conf, int statistics_interval_ms);

/// For a client with an EventCb of its own (which replaces these
/// callbacks: a group member's debug capture): passes its events on.
void forward_client_event(RdKafka::Event& e, const std::string& client_name);

} // namespace ef::kafka
