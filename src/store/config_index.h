#pragma once
// The control thread's decoded view of a store: every resource under the key prefix, typed,
// plus who references whom. Fed by the store's change feed (or a full load at start); the
// snapshot is rebuilt from it and the Admin API asks it for reference checks.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "config/resources.h"
#include "store/store.h"

namespace sluice::store {

// A store key split into its parts: "/apisix/routes/1" -> {"routes", "1"};
// "/apisix/secrets/vault/1" -> {"secrets", "vault/1"}.
struct KeyParts {
  std::string_view kind;
  std::string_view id;
};
// False when `key` is not `<prefix>/<kind>/<id>`. A credential's key splits as a consumer's
// with a longer id: "/apisix/consumers/jack/credentials/a" -> {"consumers", "jack/credentials/a"}.
bool split_key(std::string_view prefix, std::string_view key, KeyParts* out);
// True for `<prefix>/consumers/<username>/credentials/<id>` (APISIX 3.7+'s layout).
bool is_credential_key(std::string_view prefix, std::string_view key);

// Thread: control
class ConfigIndex {
 public:
  explicit ConfigIndex(std::string prefix = "/apisix") : prefix_(std::move(prefix)) {}

  // Applies one change. A value that does not decode is refused with the decoder's message
  // and the index keeps what it had for that key (the last good value). Kinds Sluice does
  // not serve are kept for reference checks only.
  common::Status apply(const Change& c);
  // Every served resource (routes, services, upstreams, global_rules, plugin_configs, ssls,
  // consumers and their credentials, whose sealed plugin fields are opened). Routes stay
  // in the order they were first applied, which is creation order when changes arrive in revision
  // order (apply a full load sorted by create revision). Kept up to date in place, so a rebuild
  // copies nothing.
  const config::ConfigSet& set() const { return set_; }
  // The smallest key of a resource that references `key` (by upstream_id, service_id,
  // plugin_config_id or group_id), or empty when none does.
  std::string first_referrer(const std::string& key) const;
  const std::string& prefix() const { return prefix_; }
  size_t route_count() const { return set_.routes.size(); }

 private:
  using Positions = std::unordered_map<std::string, size_t>;  // key -> index in a vector
  void set_refs(const std::string& key, std::vector<std::string> targets);
  std::vector<std::string> refs_of(std::string_view kind, const config::Json& v) const;
  void erase(const std::string& key, std::string_view kind);

  std::string prefix_;
  config::ConfigSet set_;
  Positions routes_, services_, upstreams_, global_rules_, plugin_configs_, ssls_, consumers_,
      credentials_, consumer_groups_, plugin_metadata_;
  std::map<std::string, std::vector<std::string>> refs_;    // key -> keys it references
  std::map<std::string, std::set<std::string>> referrers_;  // key -> keys referencing it
};

}  // namespace sluice::store
