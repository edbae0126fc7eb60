// Parking idle partitions (kafka.park-idle-ms): a partition read to its end
// is paused until a relay announces a new record on it, or rechecked after
// kafka.park-recheck-ms; only while a healthy listener brings the
// announcements.

#include "actors/group_member.hpp"

#include <eventforge/config/logging.hpp>

namespace ef {

void group_member_state::keep_listening() {
  if (!deps.listener || ctx->cfg.kafka.park_idle_ms <= 0 ||
      (listener && listener->healthy()))
    return;
  bool had = listener != nullptr;
  listener.reset();
  try {
    listener = deps.listener();
    listener->subscribe(heard);
    repairs->epoch_news(); // one may have begun before this session listened
  } catch (const std::exception& e) {
    ef::log::debug("{}: no announcements ({}); partitions do not park",
                   consumer_name, e.what());
  }
  // Announcements may have been missed meanwhile: fetch everything again
  // (what has nothing new parks again at its end).
  if (had)
    for (auto p : flow->unpark_all(now()))
      consumer->resume_at_once(p, flow->find(p)->end_offset);
}

void group_member_state::settle_parking(caf::actor_clock::time_point at) {
  for (auto& [p, offset] : heard->take())
    if (flow->announced(p, offset, at)) {
      ef::log::debug("{}: partition {} resumed: a relay published offset {}",
                     consumer_name, p, offset);
      consumer->resume_at_once(p, flow->find(p)->end_offset);
    }
  // Without a healthy listener nobody would wake a parked partition.
  if (listener && listener->healthy() && !flow->draining()) {
    using ms = std::chrono::milliseconds;
    for (auto p : flow->to_park(ms(ctx->cfg.kafka.park_idle_ms), at)) {
      ef::log::debug("{}: partition {} parked at its end, offset {}",
                     consumer_name, p, flow->find(p)->end_offset);
      consumer->pause(p);
    }
    for (auto p : flow->to_recheck(ms(ctx->cfg.kafka.park_recheck_ms), at))
      consumer->resume_at_once(p, flow->find(p)->end_offset);
  }
  if (auto parked = flow->parked(); parked != parked_shown) {
    ctx->metrics->set("consumer_partitions_parked",
                      {{"consumer", consumer_name}},
                      static_cast<double>(parked));
    parked_shown = parked;
  }
}

} // namespace ef
