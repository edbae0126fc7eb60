#pragma once

#include <string>

namespace ef {

/// The version of the EventForge library this process runs (the project's
/// version, e.g. "1.0.0"), whatever the headers it was compiled against.
std::string version();

} // namespace ef
