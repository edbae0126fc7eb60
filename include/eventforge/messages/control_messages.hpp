#pragma once

// The control conversation: what the tree answers about itself as a whole.

#include <caf/all.hpp>

#include <chrono>
#include <string>
#include <vector>

namespace ef {

/// Answer to drain_atom, from every actor of the tree. A leaf answers
/// `drained` once it holds nothing more; a supervisor answers once every
/// live child answered (or did not within shutdown.drain-timeout-ms), and
/// lists each descendant that did not drain as "<path>: <why>", e.g.
/// "consumer-billing/group-member: no answer within 5000 ms".
struct drain_report {
  bool drained = false;
  std::vector<std::string> not_drained;

  explicit operator bool() const { return drained; }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, drain_report& x) {
  return f(caf::meta::type_name("drain_report"), x.drained, x.not_drained);
}

/// How much longer a supervisor waits for a sub-supervisor's drain report
/// than that one waits for its children, so the report names the actor that
/// did not answer instead of its supervisor. The tree is at most three
/// supervisors deep.
constexpr std::chrono::milliseconds drain_grace_per_level{1000};

} // namespace ef
