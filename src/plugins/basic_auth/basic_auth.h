#pragma once
// basic-auth (priority 2520, rewrite phase): authenticates a request by the username and
// password of its `Authorization: Basic ...` header (RFC 7617) against the consumers'
// basic-auth confs. See README.md beside this file.

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "plugin/info.h"
#include "plugins/basic_auth/config.h"

namespace sluice::plugins::basic_auth {

const plugin::PluginInfo& info();

// username -> credential and password, over every consumer-side conf.
// Thread: any (immutable)
class Index final : public plugin::ConsumerIndex {
 public:
  using Entry = plugin::NamedSecrets::Entry;
  // A later conf with the same username replaces the earlier (APISIX's table overwrite), with
  // a warning naming both consumers.
  void add(const plugin::Credential* cred, const ConsumerConf& c, std::vector<std::string>* warn);
  const Entry* find(std::string_view username) const { return by_name_.find(username); }
  size_t size() const { return by_name_.size(); }

 private:
  plugin::NamedSecrets by_name_;
};

common::StatusOr<std::shared_ptr<const plugin::ConsumerIndex>> build_index(
    std::span<const plugin::AuthConf> confs, std::vector<std::string>* warnings);

// The user-id and password of an Authorization value, strictly: the scheme "Basic" (any case,
// RFC 7235), one or more spaces, then canonical base64 (RFC 4648, padding optional) of
// `user-id ":" password` with no control byte; the first ':' splits (RFC 7617). The decoded
// bytes are kept in *buffer, which the views point into. False for anything else.
bool parse_basic(std::string_view value, std::string* buffer, std::string_view* user,
                 std::string_view* password);

// Thread: any (immutable)
class BasicAuth final : public plugin::Plugin {
 public:
  explicit BasicAuth(Conf conf);
  uint32_t phases() const override { return plugin::phase_bit(plugin::Phase::kRewrite); }
  plugin::Action rewrite(plugin::Context& ctx) const override;

 private:
  plugin::Action fail(plugin::Context& ctx, std::string_view message) const;

  Conf conf_;
  std::string challenge_;  // Basic realm='<realm>'
};

}  // namespace sluice::plugins::basic_auth
