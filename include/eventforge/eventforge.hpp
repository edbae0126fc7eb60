#pragma once

// EventForge for CAF applications: everything a host needs, in one header.
// Link eventforge::core (find_package(eventforge 1.0 CONFIG REQUIRED
// COMPONENTS core)). The HTTP front is optional: <eventforge/http/frontend.hpp>
// and eventforge::http. docs/library.md shows how the pieces fit.
//
// Only the headers under <eventforge/...> are EventForge's interface; the
// library's own folders are not installed.

// Options on the host's caf::actor_system_config, and the typed settings
// read back from it.
#include <eventforge/config/caf_options.hpp>
#include <eventforge/config/logging.hpp>
#include <eventforge/config/settings.hpp>

// Consumers: the interface a host implements, the registry it adds them to.
#include <eventforge/consumers/consumer.hpp>
#include <eventforge/consumers/consumer_registry.hpp>

// Starting, draining and stopping the tree inside the host's actor system,
// and its typed protocol (order_api, dlq_api, control_api).
#include <eventforge/actors/applied.hpp>
#include <eventforge/actors/eventforge.hpp>
#include <eventforge/messages/api_error.hpp>
#include <eventforge/messages/interfaces.hpp>

// The embedded defaults (private PostgreSQL, in-process Kafka-protocol
// broker when none is configured), one object that owns them and the tree
// in the right order, the invariant verifier, the version.
#include <eventforge/embedded/instance.hpp>
#include <eventforge/embedded/runtime.hpp>
#include <eventforge/embedded/verifier.hpp>
#include <eventforge/embedded/version.hpp>
