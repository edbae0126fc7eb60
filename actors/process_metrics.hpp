#pragma once

#include <prometheus/metric_family.h>

#include <vector>

namespace ef {

/// The process_* families the Prometheus clients of other languages export
/// (CPU seconds, resident and virtual memory, open and maximum descriptors,
/// threads, start time), read from /proc/self when /metrics is scraped.
/// Empty where /proc is not there.
std::vector<prometheus::MetricFamily> process_metrics();

} // namespace ef
