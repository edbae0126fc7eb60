#pragma once

#include <string>
#include <vector>

namespace ef::config {

/// Edit distance (insertions, deletions, substitutions) between two names.
std::size_t edit_distance(const std::string& a, const std::string& b);

/// The candidate closest to `name` if it is close enough to be a typo of it
/// (at most 2 edits, or half its length: [loging] is [log]), else "". For "did
/// you mean".
std::string nearest(const std::string& name,
                    const std::vector<std::string>& candidates);

/// " (did you mean \"x\"?)" for the nearest candidate, or "".
std::string did_you_mean(const std::string& name,
                         const std::vector<std::string>& candidates);

} // namespace ef::config
