#pragma once

// EventForge for CAF applications: everything a host needs, in one header.
// Link eventforge::eventforge (find_package(eventforge CONFIG REQUIRED)).
// docs/architecture.md ("Extending EventForge") shows how the pieces fit.

// Options on the host's caf::actor_system_config, and the typed settings
// read back from it.
#include "config/caf_options.hpp"
#include "config/logging.hpp"
#include "config/settings.hpp"

// Consumers: the interface a host implements, the registry it adds them to.
#include "consumers/consumer.hpp"
#include "consumers/consumer_registry.hpp"

// Starting, draining and stopping the tree inside the host's actor system,
// and its typed protocol (order_api, dlq_api, control_api).
#include "actors/applied.hpp"
#include "actors/eventforge.hpp"
#include "messages/api_error.hpp"
#include "messages/interfaces.hpp"

// The embedded defaults (private PostgreSQL, in-process Kafka-protocol
// broker when none is configured), quiescence and the invariant verifier.
#include "app/embedded/runtime.hpp"
#include "app/tools/pipeline_host.hpp"
#include "app/tools/verifier.hpp"
