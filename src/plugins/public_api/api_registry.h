#pragma once
// The plugin APIs public-api can expose on a route (APISIX's router.api: the `api()` of each
// enabled plugin): Sluice's is prometheus's metrics page at its export_uri. The gateway fills
// the registry once, before any worker starts; each answer is made on the control thread,
// which owns what the pages read.

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace sluice::io {
class EventLoop;
}

namespace sluice::plugins::public_api {

// Thread: any (immutable once the workers run; `render` is called on the control thread)
struct ApiRegistry {
  struct Api {
    std::string uri;           // matched exactly, as APISIX's api router does
    std::string content_type;  // of the answer
    // The body for a GET, or nullopt when the plugin behind it is not enabled (then: 404).
    std::function<std::optional<std::string>()> render;
  };
  io::EventLoop* control = nullptr;  // where `render` runs
  std::vector<Api> apis;

  const Api* find(std::string_view uri) const {
    for (const Api& a : apis) {
      if (a.uri == uri) {
        return &a;
      }
    }
    return nullptr;
  }
};

// Its key in plugin::Shared.
inline constexpr const char* kRegistryKey = "public-api/apis";

}  // namespace sluice::plugins::public_api
