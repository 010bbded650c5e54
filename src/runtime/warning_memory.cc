#include "runtime/warning_memory.h"

#include "common/log.h"

namespace sluice::runtime {

void WarningMemory::report(std::string_view source, const std::vector<std::string>& warnings) {
  std::set<std::string> now(warnings.begin(), warnings.end());
  for (const std::string& w : now) {
    if (!last_.contains(w)) {
      SLUICE_LOG(kWarn, "{}: {}", source, w);
    }
  }
  for (const std::string& w : last_) {
    if (!now.contains(w)) {
      SLUICE_LOG(kNotice, "{}: no longer so: {}", source, w);
    }
  }
  last_ = std::move(now);
}

}  // namespace sluice::runtime
