#include "plugins/basic_auth/basic_auth.h"

#include <fmt/format.h>

#include "common/log.h"
#include "http/message.h"
#include "plugin/consumer.h"
#include "plugins/hmac_auth/signature.h"

namespace sluice::plugins::basic_auth {

using plugin::Action;
using plugin::Context;

namespace {

constexpr std::string_view kPlugin = "basic-auth";

common::StatusOr<std::shared_ptr<const plugin::Plugin>> make(const plugin::Json& json,
                                                             const plugin::BuildEnv&) {
  auto conf = parse(json);
  if (!conf.is_ok()) {
    return conf.status();
  }
  return std::shared_ptr<const plugin::Plugin>(
      std::make_shared<const BasicAuth>(std::move(conf).value()));
}

const std::string_view* find_header(const http::RequestHead& req, std::string_view name) {
  for (size_t i = 0; i < req.num_headers; ++i) {
    if (http::iequals(req.headers[i].name, name)) {
      return &req.headers[i].value;
    }
  }
  return nullptr;
}

}  // namespace

const plugin::PluginInfo& info() {
  static const plugin::PluginInfo kInfo = [] {
    plugin::PluginInfo i{"basic-auth", 2520, false, check, make, kSchema};
    i.auth = true;
    i.index = build_index;
    return i;
  }();
  return kInfo;
}

void Index::add(const plugin::Credential* cred, const ConsumerConf& c,
                std::vector<std::string>* warn) {
  by_name_.add(c.username, cred, c.password, "basic-auth", "username", warn);
}

common::StatusOr<std::shared_ptr<const plugin::ConsumerIndex>> build_index(
    std::span<const plugin::AuthConf> confs, std::vector<std::string>* warnings) {
  auto index = std::make_shared<Index>();
  for (const plugin::AuthConf& a : confs) {
    auto c = parse_consumer(*a.conf);
    if (!c.is_ok()) {
      return c.status();
    }
    index->add(a.credential, *c, warnings);
  }
  return std::shared_ptr<const plugin::ConsumerIndex>(std::move(index));
}

bool parse_basic(std::string_view value, std::string* buffer, std::string_view* user,
                 std::string_view* password) {
  constexpr std::string_view kScheme = "Basic";
  if (value.size() <= kScheme.size() || !http::iequals(value.substr(0, 5), kScheme) ||
      value[5] != ' ') {
    return false;
  }
  std::string_view b64 = value.substr(kScheme.size());
  b64.remove_prefix(std::min(b64.find_first_not_of(' '), b64.size()));
  if (b64.empty()) {
    return false;
  }
  buffer->resize(b64.size() / 4 * 3 + 3);
  size_t len = 0;
  if (!hmac_auth::decode_base64(b64, reinterpret_cast<unsigned char*>(buffer->data()),
                                buffer->size(), &len)) {
    return false;
  }
  buffer->resize(len);
  for (char ch : *buffer) {
    auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) {
      return false;  // RFC 7617: no control characters in either part
    }
  }
  const size_t colon = buffer->find(':');
  if (colon == std::string::npos) {
    return false;
  }
  *user = std::string_view(*buffer).substr(0, colon);
  *password = std::string_view(*buffer).substr(colon + 1);
  return true;
}

BasicAuth::BasicAuth(Conf conf) : conf_(std::move(conf)) {
  challenge_ = "Basic realm='" + conf_.realm + "'";
}

Action BasicAuth::fail(Context& ctx, std::string_view message) const {
  if (!conf_.anonymous_consumer.empty()) {
    if (!plugin::attach_anonymous(ctx, kPlugin, conf_.anonymous_consumer)) {
      ctx.resp.headers.set("WWW-Authenticate", challenge_);
      return Action::kReply;
    }
    if (conf_.hide_credentials) {
      ctx.upstream.headers.remove("Authorization");
    }
    return Action::kContinue;
  }
  ctx.resp.headers.set("WWW-Authenticate", challenge_);
  plugin::auth_reply(ctx, 401, message);
  return Action::kReply;
}

Action BasicAuth::rewrite(Context& ctx) const {
  const std::string_view* auth = find_header(*ctx.req, "Authorization");
  if (auth == nullptr) {
    return fail(ctx, "Missing authorization in request");
  }
  std::string_view user, password;
  if (!parse_basic(*auth, &ctx.scratch, &user, &password)) {
    SLUICE_LOG(kWarn, "basic-auth: invalid authorization header format");
    return fail(ctx, "Invalid authorization in request");
  }
  const auto* index = ctx.consumers != nullptr ? ctx.consumers->index_as<Index>(kPlugin) : nullptr;
  const Index::Entry* entry = index != nullptr ? index->find(user) : nullptr;
  // A user no consumer has costs the same comparison as a wrong password: against a decoy.
  static const std::string kDecoy(16, '\0');
  const bool same = plugin::secret_equal(password, entry != nullptr ? entry->secret : kDecoy);
  if (entry == nullptr || !same) {
    if (entry == nullptr) {
      SLUICE_LOG(kWarn, "failed to find user: invalid user");
    }
    return fail(ctx, "Invalid user authorization");
  }
  if (conf_.hide_credentials) {
    ctx.upstream.headers.remove("Authorization");
  }
  plugin::attach_consumer(ctx, *entry->credential);
  return Action::kContinue;
}

}  // namespace sluice::plugins::basic_auth
