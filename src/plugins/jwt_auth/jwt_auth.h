#pragma once
// jwt-auth (APISIX's, priority 2510): authenticates a request by a JSON Web Token in a header,
// query argument or cookie. The token's `key` claim (key_claim_name) names the consumer; the
// token must be signed with that consumer's algorithm and secret or public key, and its
// `exp`/`nbf` hold (with the consumer's lifetime_grace_period). See README.md beside this file.

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "plugin/info.h"
#include "plugins/jwt_auth/config.h"
#include "plugins/jwt_auth/jwt.h"

namespace sluice::plugins::jwt_auth {

const plugin::PluginInfo& info();

// Every consumer-side conf of jwt-auth, by key, with its key material parsed.
// Thread: any (immutable)
class Index final : public plugin::ConsumerIndex {
 public:
  struct Entry {
    const plugin::Credential* credential;
    Key key;
    int64_t grace;  // lifetime_grace_period
  };
  // A later conf with an earlier one's key replaces it (APISIX's table overwrite), with a
  // warning naming both consumers. Errors: a conf the consumer check would refuse.
  static common::StatusOr<std::shared_ptr<const Index>> build(
      std::span<const plugin::AuthConf> confs, std::vector<std::string>* warnings);
  const Entry* find(std::string_view key) const;
  size_t size() const { return by_key_.size(); }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, Entry, Hash, std::equal_to<>> by_key_;
};

// Thread: any (immutable)
class JwtAuth final : public plugin::Plugin {
 public:
  explicit JwtAuth(RouteConf conf) : conf_(std::move(conf)) {}
  uint32_t phases() const override { return plugin::phase_bit(plugin::Phase::kRewrite); }
  plugin::Action rewrite(plugin::Context& ctx) const override;

  // The authentication alone, at time `now`: the credential, or null with the message of the
  // 401 (*why: more for the log).
  const plugin::Credential* authenticate(plugin::Context& ctx, int64_t now,
                                         std::string_view* message, std::string* why) const;

 private:
  RouteConf conf_;
};

}  // namespace sluice::plugins::jwt_auth
