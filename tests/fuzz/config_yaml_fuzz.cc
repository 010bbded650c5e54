// Fuzz target: the YAML configuration files. The input is read both as apisix.yaml
// (parse_standalone: #END marker, ${{VAR}} substitution, routes/services/upstreams) and as
// config.yaml (parse_gateway_config).
//
// Errors must be non-empty text without library exception text; a decoded standalone set has
// unique ids per kind, resources within their promised ranges, and builds into a snapshot; a
// gateway config has at least one listener with a port, and its values are used the way the
// runtime uses them.

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "config/gateway_config.h"
#include "config/standalone.h"
#include "fuzz/config_checks.h"

namespace {

using namespace sluice;

template <typename T>
void check_unique_ids(const std::vector<T>& items) {
  std::set<std::string> ids;
  for (const T& item : items) {
    FUZZ_CHECK(!item.id.empty() && ids.insert(item.id).second);
  }
}

void check_standalone(const std::string& text) {
  auto set = config::parse_standalone(text);
  if (!set.is_ok()) {
    FUZZ_CHECK(set.status().message().starts_with("apisix.yaml"));
    fuzz::check_error_text(set.status().message(), text, /*json_reply=*/false);
    return;
  }
  check_unique_ids(set->routes);
  check_unique_ids(set->services);
  check_unique_ids(set->upstreams);
  for (const auto& r : set->routes) {
    fuzz::check_route(r);
  }
  for (const auto& s : set->services) {
    fuzz::check_service(s);
  }
  for (const auto& u : set->upstreams) {
    fuzz::check_upstream(u);
  }
  fuzz::check_build(std::move(set).value(), text, /*json_reply=*/false);
}

void check_gateway(const std::string& text) {
  auto cfg = config::parse_gateway_config(text, "/etc/sluice");
  if (!cfg.is_ok()) {
    FUZZ_CHECK(cfg.status().message().starts_with("config.yaml"));
    fuzz::check_error_text(cfg.status().message(), text, /*json_reply=*/false);
    return;
  }
  FUZZ_CHECK(!cfg->node_listen.empty());
  for (const auto& l : cfg->node_listen) {
    // F7: `- port:` (null) is taken as port 0 instead of being refused.
    FUZZ_CHECK(!l.ip.empty() && l.port != 0);
  }
  FUZZ_CHECK(cfg->worker_processes >= 0);
  FUZZ_CHECK(cfg->standalone_path == "/etc/sluice/apisix.yaml");
  // As runtime/gateway.cc does with it.
  upstream::DnsCache dns(30);
  dns.set_valid_seconds(cfg->dns_resolver_valid);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  check_standalone(text);
  check_gateway(text);
  return 0;
}
