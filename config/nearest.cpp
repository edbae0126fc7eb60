#include "config/nearest.hpp"

#include <algorithm>

namespace ef::config {

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1,
                         diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string nearest(const std::string& name,
                    const std::vector<std::string>& candidates) {
  std::string best;
  auto best_distance = std::max<std::size_t>(2, name.size() / 2) + 1;
  for (auto& c : candidates) {
    auto d = edit_distance(name, c);
    if (d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  return best;
}

std::string did_you_mean(const std::string& name,
                         const std::vector<std::string>& candidates) {
  auto n = nearest(name, candidates);
  return n.empty() ? "" : " (did you mean \"" + n + "\"?)";
}

} // namespace ef::config
