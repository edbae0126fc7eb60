#pragma once

namespace ef::app::http {

/// Makes sure http.max-connections fits in RLIMIT_NOFILE next to what the
/// process already holds (and a headroom for what it opens later), raising
/// the soft limit up to the hard one if it must; throws
/// std::runtime_error, naming both numbers and the largest setting that
/// fits, if it cannot.
void check_descriptor_limit(int max_connections);

} // namespace ef::app::http
