// Fuzz target: the resource decoders the Admin API will use (decode_route, decode_service,
// decode_upstream), on the input parsed as JSON. Invalid JSON is skipped (parsed without
// exceptions, as the Admin API must).
//
// Each decoder's result is checked: an error starts with "invalid configuration: ", carries
// no library exception text and can be sent back as JSON; a decoded resource satisfies the
// ranges resources.h promises and is accepted by the router. The decoded resources are then
// built into a snapshot, as the control plane would.

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "config/resources.h"
#include "fuzz/config_checks.h"

namespace {

using namespace sluice;

template <typename T>
void check_error(const common::StatusOr<T>& r, std::string_view input) {
  if (!r.is_ok()) {
    const std::string& msg = r.status().message();
    fuzz::check_error_text(msg, input, /*json_reply=*/true);
    // Plugin errors, and APISIX's checks after its schema (apisix/upstream.lua,
    // check_upstream_conf), carry APISIX's own wording instead of the schema prefix.
    FUZZ_CHECK(msg.starts_with("invalid configuration: ") || msg.starts_with("unknown plugin [") ||
               msg.starts_with("invalid plugin conf ") ||
               msg.starts_with("failed to check the configuration of plugin ") ||
               msg == "missing key" ||
               msg == "`upstream_host` can't be empty when `pass_host` is `rewrite`");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const config::Json obj = config::Json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (obj.is_discarded()) {
    return 0;
  }
  config::ConfigSet set;
  auto route = config::decode_route(obj);
  check_error(route, in);
  if (route.is_ok()) {
    fuzz::check_route(*route);
    set.routes.push_back(*route);
  }
  auto service = config::decode_service(obj);
  check_error(service, in);
  if (service.is_ok()) {
    fuzz::check_service(*service);
    set.services.push_back(*service);
  }
  auto upstream = config::decode_upstream(obj);
  check_error(upstream, in);
  if (upstream.is_ok()) {
    fuzz::check_upstream(*upstream);
    set.upstreams.push_back(*upstream);
  }
  if (!set.routes.empty() || !set.services.empty() || !set.upstreams.empty()) {
    fuzz::check_build(std::move(set), in, /*json_reply=*/true);
  }
  return 0;
}
