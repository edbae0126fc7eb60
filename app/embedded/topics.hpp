#pragma once

#include "kafka/embedded_broker.hpp"
#include <eventforge/config/settings.hpp>

#include <vector>

namespace ef::app {

/// Topics the in-process broker creates for these settings.
std::vector<kafka::embedded_broker::topic_spec>
broker_topics(const config::settings& cfg);

} // namespace ef::app
