#pragma once
// hmac-auth (priority 2530, rewrite phase): authenticates a request by the HMAC signature in
// its `Authorization: Signature ...` header (APISIX 3.x's scheme), checks the Date against
// clock_skew and, when asked, the body against its Digest. See README.md beside this file.

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "plugin/info.h"
#include "plugins/hmac_auth/config.h"

namespace sluice::plugins::hmac_auth {

const plugin::PluginInfo& info();

// key_id -> credential and secret, over every consumer-side conf.
// Thread: any (immutable)
class Index final : public plugin::ConsumerIndex {
 public:
  using Entry = plugin::NamedSecrets::Entry;
  // A later conf with the same key_id replaces the earlier (APISIX's table overwrite), with
  // a warning naming both consumers.
  void add(const plugin::Credential* cred, const ConsumerConf& c, std::vector<std::string>* warn);
  const Entry* find(std::string_view key_id) const { return by_name_.find(key_id); }
  size_t size() const { return by_name_.size(); }

 private:
  plugin::NamedSecrets by_name_;
};

common::StatusOr<std::shared_ptr<const plugin::ConsumerIndex>> build_index(
    std::span<const plugin::AuthConf> confs, std::vector<std::string>* warnings);

// Why a request did not authenticate: logged, never sent (APISIX answers every failure after
// parsing with the same "client request can't be validated").
enum class Failure : uint8_t {
  kNone,
  kKeyIdOrSignatureMissing,
  kAlgorithmMissing,
  kInvalidKeyId,
  kInvalidAlgorithm,
  kDateMissing,
  kInvalidDate,
  kClockSkewExceeded,
  kHeadersMissing,
  kSignedHeaderMissing,
  kInvalidSignature,
  kInvalidDigest,
};
// APISIX's words for each (its validate()'s errors).
std::string_view failure_text(Failure f);

// Checks a parsed request against the conf and the index at `now` (unix seconds); on success
// *cred is the credential. `scratch` holds the signing string afterwards. A key_id no consumer
// has costs a MAC all the same, under a decoy key.
Failure verify(const Conf& conf, const Index* index, const SignatureParams& p,
               const http::RequestHead& req, std::string_view body, int64_t now,
               std::string* scratch, const plugin::Credential** cred);

// Thread: any (immutable)
class HmacAuth final : public plugin::Plugin {
 public:
  explicit HmacAuth(Conf conf) : conf_(std::move(conf)) {}
  uint32_t phases() const override { return plugin::phase_bit(plugin::Phase::kRewrite); }
  bool needs_body() const override { return conf_.validate_request_body; }
  plugin::Action rewrite(plugin::Context& ctx) const override;

 private:
  plugin::Action fail(plugin::Context& ctx, std::string_view message) const;

  Conf conf_;
};

}  // namespace sluice::plugins::hmac_auth
