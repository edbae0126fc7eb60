#pragma once

#include <eventforge/actors/telemetry.hpp>
#include <eventforge/config/settings.hpp>

namespace ef {

/// Declares a zero-valued series for every label this configuration knows
/// of (each consumer, shard, actor kind and restart reason, ...), so that
/// /metrics shows them before anything happened and a rate() over them has
/// a start.
void declare_series(telemetry& m, const config::settings& cfg);

} // namespace ef
