#pragma once

#include <map>
#include <string>
#include <vector>

namespace ef {

enum class metric_kind { counter, gauge, histogram };

/// One metric family: its type, its help text, and a histogram's buckets.
struct metric_family {
  metric_kind type;
  const char* help;
  const std::vector<double>* buckets = nullptr;
};

/// Every metric EventForge exports: the one place its type and meaning are
/// declared (telemetry registers them all at construction).
const std::map<std::string, metric_family>& metric_catalog();

} // namespace ef
