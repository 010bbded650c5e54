#include "plugin/upstreams.h"

#include <atomic>

namespace sluice::plugin {

namespace {
std::atomic<UpstreamCheck> g_check{nullptr};
}

void set_upstream_check(UpstreamCheck check) { g_check.store(check); }

common::Status check_upstream(const nlohmann::json& conf) {
  UpstreamCheck check = g_check.load();
  if (check == nullptr) {
    return common::Status::error("upstream objects cannot be checked here");
  }
  return check(conf);
}

}  // namespace sluice::plugin
