#include "plugins/jwt_auth/jwt_auth.h"

#include <ctime>

#include "common/log.h"
#include "plugins/jwt_auth/token_source.h"

namespace sluice::plugins::jwt_auth {

using common::Status;
using common::StatusOr;
using plugin::Action;
using plugin::Context;
using plugin::Credential;

namespace {

constexpr std::string_view kName = "jwt-auth";

// APISIX's 401 messages (apisix/plugins/jwt-auth.lua, rewrite).
constexpr std::string_view kMissingToken = "Missing JWT token in request";
constexpr std::string_view kInvalidToken = "JWT token invalid";
constexpr std::string_view kMissingKey = "missing user key in JWT token";
constexpr std::string_view kInvalidKey = "Invalid user key in JWT token";
constexpr std::string_view kFailedVerify = "failed to verify jwt";

StatusOr<std::shared_ptr<const plugin::Plugin>> make(const plugin::Json& json,
                                                     const plugin::BuildEnv&) {
  auto conf = parse_route(json);
  if (!conf.is_ok()) {
    return conf.status();
  }
  return std::shared_ptr<const plugin::Plugin>(
      std::make_shared<const JwtAuth>(std::move(conf).value()));
}

StatusOr<std::shared_ptr<const plugin::ConsumerIndex>> make_index(
    std::span<const plugin::AuthConf> confs, std::vector<std::string>* warnings) {
  auto index = Index::build(confs, warnings);
  if (!index.is_ok()) {
    return index.status();
  }
  return std::shared_ptr<const plugin::ConsumerIndex>(std::move(index).value());
}

// Buffers a worker reuses for every request: the decoded query token and the parsed token.
struct Scratch {
  std::string token;
  Token parsed;
};
Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

}  // namespace

const plugin::PluginInfo& info() {
  static const plugin::PluginInfo kInfo = [] {
    plugin::PluginInfo i{kName, 2510, false, check, make, kSchema};
    i.auth = true;
    i.index = make_index;
    return i;
  }();
  return kInfo;
}

StatusOr<std::shared_ptr<const Index>> Index::build(std::span<const plugin::AuthConf> confs,
                                                    std::vector<std::string>* warnings) {
  auto index = std::make_shared<Index>();
  for (const plugin::AuthConf& ac : confs) {
    auto conf = parse_consumer(*ac.conf);
    if (!conf.is_ok()) {
      return Status::error("consumer " + ac.credential->consumer->name +
                           ": jwt-auth: " + conf.status().message());
    }
    auto key =
        Key::make(conf->algorithm, is_hmac(conf->algorithm) ? conf->hmac_key() : conf->public_key);
    if (!key.is_ok()) {
      return Status::error("consumer " + ac.credential->consumer->name +
                           ": jwt-auth: " + key.status().message());
    }
    Entry e{ac.credential, std::move(key).value(), conf->lifetime_grace_period};
    auto [it, inserted] = index->by_key_.try_emplace(conf->key, e);
    if (!inserted) {
      if (warnings != nullptr) {
        warnings->push_back("jwt-auth: consumer " + ac.credential->consumer->name +
                            " has the key \"" + conf->key + "\" of consumer " +
                            it->second.credential->consumer->name + ", and replaces it");
      }
      it->second = std::move(e);
    }
  }
  return std::shared_ptr<const Index>(std::move(index));
}

const Index::Entry* Index::find(std::string_view key) const {
  auto it = by_key_.find(key);
  return it == by_key_.end() ? nullptr : &it->second;
}

const Credential* JwtAuth::authenticate(Context& ctx, int64_t now, std::string_view* message,
                                        std::string* why) const {
  Scratch& s = scratch();
  std::string_view text;
  if (fetch_token(conf_, ctx, &s.token, &text) == Source::kNone) {
    *message = kMissingToken;
    return nullptr;
  }
  Token& tok = s.parsed;
  if (ParseError e = parse(text, &tok, conf_.key_claim_name); e != ParseError::kNone) {
    *message = kInvalidToken;
    *why = parse_error_text(e);
    return nullptr;
  }
  const JsonValue& claim = tok.payload.key;
  if (claim.type == JsonValue::Type::kAbsent || claim.type == JsonValue::Type::kFalse) {
    *message = kMissingKey;
    return nullptr;
  }
  // A key that is not a string (a number, null) finds no consumer, as in Lua's table lookup.
  const Index* index = ctx.consumers != nullptr ? ctx.consumers->index_as<Index>(kName) : nullptr;
  const Index::Entry* entry = nullptr;
  if (claim.type == JsonValue::Type::kString && index != nullptr) {
    entry = index->find(claim.string);
  }
  if (entry == nullptr) {
    *message = kInvalidKey;
    return nullptr;
  }
  *message = kFailedVerify;
  // The consumer's algorithm decides, never the token's: `none`, or HS256 signed with an RSA
  // consumer's public key as the secret, is refused here.
  if (tok.alg != alg_name(entry->key.alg())) {
    *why = "the token's alg is not the consumer's " + std::string(alg_name(entry->key.alg()));
    return nullptr;
  }
  if (!entry->key.verify(tok.signing_input, tok.signature)) {
    *why = "signature mismatch";
    return nullptr;
  }
  if (!check_claims(tok.payload, conf_.claims, entry->grace, now, why)) {
    return nullptr;
  }
  return entry->credential;
}

Action JwtAuth::rewrite(Context& ctx) const {
  std::string_view message;
  std::string why;
  const Credential* cred = authenticate(ctx, static_cast<int64_t>(time(nullptr)), &message, &why);
  if (cred != nullptr) {
    plugin::attach_consumer(ctx, *cred);
    return Action::kContinue;
  }
  if (!why.empty()) {
    SLUICE_LOG(kWarn, "jwt-auth: {}: {}", message, why);
  }
  if (!conf_.anonymous_consumer.empty()) {
    return plugin::attach_anonymous(ctx, kName, conf_.anonymous_consumer) ? Action::kContinue
                                                                          : Action::kReply;
  }
  plugin::auth_reply(ctx, 401, message);
  return Action::kReply;
}

}  // namespace sluice::plugins::jwt_auth
