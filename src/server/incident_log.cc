#include "server/incident_log.h"

namespace sluice::server {

uint64_t IncidentLog::admit(std::string_view key, uint64_t now_ms) {
  auto it = kinds_.find(std::string(key));
  if (it == kinds_.end()) {
    if (kinds_.size() >= max_kinds_) {
      // Bounded: a storm of ever-new kinds (one per client port, say) must not grow the map.
      // Forgetting them all costs at most one early report per kind.
      std::erase_if(kinds_,
                    [&](const auto& k) { return now_ms - k.second.reported_ms >= window_ms_; });
      if (kinds_.size() >= max_kinds_) {
        kinds_.clear();
      }
    }
    kinds_.emplace(std::string(key), Kind{now_ms, 0});
    return 0;
  }
  Kind& k = it->second;
  if (now_ms - k.reported_ms < window_ms_) {
    ++k.repeats;
    return kNotNow;
  }
  uint64_t repeats = k.repeats;
  k = Kind{now_ms, 0};
  return repeats;
}

}  // namespace sluice::server
