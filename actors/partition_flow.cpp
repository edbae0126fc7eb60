#include "actors/partition_flow.hpp"

#include <algorithm>

namespace ef {

partition_flow::partition_flow(int max_in_flight)
    : max_in_flight_(std::max(1, max_in_flight)) {
  // nop
}

void partition_flow::start(std::int32_t p, bool paused, clock::time_point now) {
  auto& s = slots_[p];
  s = slot{};
  s.paused = paused || draining_;
  s.last_fed = now;
}

void partition_flow::stop(std::int32_t p) {
  slots_.erase(p);
}

const partition_flow::slot* partition_flow::find(std::int32_t p) const {
  auto i = slots_.find(p);
  return i == slots_.end() ? nullptr : &i->second;
}

bool partition_flow::fed(std::int32_t p, clock::time_point now) {
  auto i = slots_.find(p);
  if (i == slots_.end())
    return false;
  auto& s = i->second;
  ++s.in_flight;
  s.last_fed = now;
  s.at_end_since.reset();
  s.rechecking = false;
  if (s.paused || s.in_flight < max_in_flight_)
    return false;
  s.paused = true;
  return true;
}

bool partition_flow::done(std::int32_t p, std::int64_t offset) {
  auto i = slots_.find(p);
  if (i == slots_.end())
    return false;
  auto& s = i->second;
  --s.in_flight;
  s.done_up_to = std::max(s.done_up_to, offset + 1);
  // Resume at half, not at max - 1: the partition then fetches in large
  // steps instead of one record per resume.
  if (draining_ || !s.paused || s.in_flight > max_in_flight_ / 2)
    return false;
  s.paused = false;
  return true;
}

void partition_flow::begin_drain() {
  draining_ = true;
  for (auto& [p, s] : slots_) {
    s.paused = true;
    s.parked = false; // paused by the drain now
    s.at_end_since.reset();
  }
}

bool partition_flow::idle() const {
  return std::all_of(slots_.begin(), slots_.end(),
                     [](const auto& x) { return x.second.in_flight == 0; });
}

partition_flow::offsets
partition_flow::to_commit(const std::vector<std::int32_t>* only) const {
  offsets out;
  for (auto& [p, s] : slots_) {
    if (only && std::find(only->begin(), only->end(), p) == only->end())
      continue;
    if (s.done_up_to > s.committed)
      out.emplace_back(p, s.done_up_to);
  }
  return out;
}

void partition_flow::committed(const offsets& done) {
  for (auto& [p, offset] : done)
    if (auto i = slots_.find(p); i != slots_.end())
      i->second.committed = std::max(i->second.committed, offset);
}

std::int64_t partition_flow::next_offset(std::int32_t p) const {
  auto* s = find(p);
  return s ? std::max(s->done_up_to, s->committed) : -1;
}

std::vector<std::int32_t> partition_flow::unfed_since(clock::duration after,
                                                      clock::time_point now) {
  std::vector<std::int32_t> out;
  if (draining_)
    return out; // a drain pauses everything on purpose
  for (auto& [p, s] : slots_) {
    if (s.paused || s.parked || s.in_flight > 0 || now - s.last_fed < after)
      continue;
    s.last_fed = now;
    out.push_back(p);
  }
  return out;
}

void partition_flow::refetched(std::int32_t p, clock::time_point now) {
  if (auto i = slots_.find(p); i != slots_.end())
    i->second.last_fed = now;
}

void partition_flow::at_end(std::int32_t p, std::int64_t next_offset,
                            clock::time_point now) {
  auto i = slots_.find(p);
  if (i == slots_.end() || i->second.paused || i->second.parked)
    return;
  i->second.at_end_since = now;
  i->second.end_offset = next_offset;
}

std::vector<std::int32_t> partition_flow::to_park(clock::duration idle,
                                                  clock::time_point now) {
  std::vector<std::int32_t> out;
  for (auto& [p, s] : slots_) {
    if (s.paused || s.parked || !s.at_end_since ||
        (!s.rechecking && now - *s.at_end_since < idle))
      continue;
    s.at_end_since.reset();
    auto known = announced_end_.find(p);
    if (known != announced_end_.end() && known->second > s.end_offset)
      continue; // a record past this end is on its way: keep fetching
    s.parked = true;
    s.rechecking = false;
    out.push_back(p);
  }
  return out;
}

void partition_flow::unpark(slot& s, clock::time_point now) {
  s.parked = false;
  s.last_fed = now;
}

bool partition_flow::announced(std::int32_t p, std::int64_t offset,
                               clock::time_point now) {
  auto& end = announced_end_[p];
  end = std::max(end, offset + 1);
  auto i = slots_.find(p);
  if (i == slots_.end())
    return false;
  auto& s = i->second;
  if (s.at_end_since && end > s.end_offset)
    s.at_end_since.reset(); // it fetches that record, then ends again
  if (!s.parked)
    return false;
  unpark(s, now);
  return true;
}

std::vector<std::int32_t> partition_flow::to_recheck(clock::duration every,
                                                     clock::time_point now) {
  std::vector<std::int32_t> out;
  if (!last_recheck_)
    last_recheck_ = now;
  if (now - *last_recheck_ < every)
    return out;
  last_recheck_ = now;
  for (auto& [p, s] : slots_)
    if (s.parked) {
      unpark(s, now);
      s.rechecking = true;
      out.push_back(p);
    }
  return out;
}

std::vector<std::int32_t> partition_flow::unpark_all(clock::time_point now) {
  std::vector<std::int32_t> out;
  for (auto& [p, s] : slots_)
    if (s.parked) {
      unpark(s, now);
      out.push_back(p);
    }
  return out;
}

std::size_t partition_flow::parked() const {
  return static_cast<std::size_t>(
    std::count_if(slots_.begin(), slots_.end(),
                  [](const auto& x) { return x.second.parked; }));
}

bool partition_flow::busy() const {
  return std::any_of(slots_.begin(), slots_.end(), [](const auto& x) {
    return x.second.in_flight > 0 || x.second.done_up_to > x.second.committed;
  });
}

} // namespace ef
