#include "plugins/hmac_auth/hmac_auth.h"

#include <fmt/format.h>

#include <cstdlib>
#include <ctime>

#include "common/log.h"
#include "plugin/consumer.h"

namespace sluice::plugins::hmac_auth {

using plugin::Action;
using plugin::Context;

namespace {

constexpr std::string_view kPlugin = "hmac-auth";
constexpr std::string_view kCannotValidate = "client request can't be validated";

common::StatusOr<std::shared_ptr<const plugin::Plugin>> make(const plugin::Json& json,
                                                             const plugin::BuildEnv&) {
  auto conf = parse(json);
  if (!conf.is_ok()) {
    return conf.status();
  }
  return std::shared_ptr<const plugin::Plugin>(
      std::make_shared<const HmacAuth>(std::move(conf).value()));
}

int64_t now_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME_COARSE, &ts);
  return ts.tv_sec;
}

// Every name of conf.signed_headers is one of the request's `headers` (exact match, as
// APISIX's array_to_map lookup).
Failure check_signed_headers(const Conf& conf, const SignatureParams& p) {
  if (conf.signed_headers.empty()) {
    return Failure::kNone;
  }
  if (!p.has_headers) {
    return Failure::kHeadersMissing;
  }
  for (const std::string& want : conf.signed_headers) {
    bool found = false;
    std::string_view list = p.headers;
    while (!found && !list.empty()) {
      const size_t sp = list.find(' ');
      found = list.substr(0, sp) == want;
      list = sp == std::string_view::npos ? std::string_view() : list.substr(sp + 1);
    }
    if (!found) {
      return Failure::kSignedHeaderMissing;
    }
  }
  return Failure::kNone;
}

Failure check_date(const Conf& conf, const http::RequestHead& req, int64_t now) {
  const std::string_view* date = find_header(req.headers, req.num_headers, "Date");
  if (date == nullptr) {
    date = find_header(req.headers, req.num_headers, "X-Date");
  }
  if (date == nullptr) {
    return Failure::kDateMissing;
  }
  int64_t t = 0;
  if (!parse_imf_fixdate(*date, &t)) {
    return Failure::kInvalidDate;
  }
  return std::llabs(now - t) > conf.clock_skew ? Failure::kClockSkewExceeded : Failure::kNone;
}

}  // namespace

const plugin::PluginInfo& info() {
  static const plugin::PluginInfo kInfo = [] {
    plugin::PluginInfo i{"hmac-auth", 2530, false, check, make, kSchema};
    i.auth = true;
    i.index = build_index;
    return i;
  }();
  return kInfo;
}

void Index::add(const plugin::Credential* cred, const ConsumerConf& c,
                std::vector<std::string>* warn) {
  by_name_.add(c.key_id, cred, c.secret_key, "hmac-auth", "key_id", warn);
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

std::string_view failure_text(Failure f) {
  switch (f) {
    case Failure::kNone:
      return "";
    case Failure::kKeyIdOrSignatureMissing:
      return "keyId or signature missing";
    case Failure::kAlgorithmMissing:
      return "algorithm missing";
    case Failure::kInvalidKeyId:
      return "Invalid key_id";
    case Failure::kInvalidAlgorithm:
      return "Invalid algorithm";
    case Failure::kDateMissing:
      return "Date header missing. failed to validate clock skew";
    case Failure::kInvalidDate:
      return "Invalid GMT format time";
    case Failure::kClockSkewExceeded:
      return "Clock skew exceeded";
    case Failure::kHeadersMissing:
      return "headers missing";
    case Failure::kSignedHeaderMissing:
      return "expected header missing in signing";
    case Failure::kInvalidSignature:
      return "Invalid signature";
    case Failure::kInvalidDigest:
      return "Invalid digest";
  }
  return "";
}

Failure verify(const Conf& conf, const Index* index, const SignatureParams& p,
               const http::RequestHead& req, std::string_view body, int64_t now,
               std::string* scratch, const plugin::Credential** cred) {
  if (!p.has_key_id || !p.has_signature) {
    return Failure::kKeyIdOrSignatureMissing;
  }
  if (!p.has_algorithm) {
    return Failure::kAlgorithmMissing;
  }
  Algorithm algo{};
  if (!parse_algorithm(p.algorithm, &algo) || (conf.allowed & algorithm_bit(algo)) == 0) {
    return Failure::kInvalidAlgorithm;
  }
  if (Failure f = check_date(conf, req, now); f != Failure::kNone) {
    return f;
  }
  if (Failure f = check_signed_headers(conf, p); f != Failure::kNone) {
    return f;
  }
  // The MAC is computed whether or not the key_id is known, so the answer's time does not
  // tell which key_ids exist.
  static const std::string kDecoy(32, 'x');
  const Index::Entry* entry = index != nullptr ? index->find(p.key_id) : nullptr;
  build_signing_string(p, req.method_text, request_uri(req), req.headers, req.num_headers, scratch);
  unsigned char mac[kMaxMac];
  const size_t mac_len =
      compute_hmac(algo, entry != nullptr ? entry->secret : kDecoy, *scratch, mac);
  unsigned char given[kMaxMac];
  size_t given_len = 0;
  if (!decode_base64(p.signature, given, sizeof(given), &given_len)) {
    given_len = 0;
  }
  const bool same =
      plugin::secret_equal(std::string_view(reinterpret_cast<const char*>(given), given_len),
                           std::string_view(reinterpret_cast<const char*>(mac), mac_len));
  if (entry == nullptr) {
    return Failure::kInvalidKeyId;
  }
  if (!same || mac_len == 0) {
    return Failure::kInvalidSignature;
  }
  if (conf.validate_request_body) {
    const std::string_view* digest = find_header(req.headers, req.num_headers, "Digest");
    if (digest == nullptr || !body_digest_matches(*digest, body)) {
      return Failure::kInvalidDigest;
    }
  }
  *cred = entry->credential;
  return Failure::kNone;
}

Action HmacAuth::fail(Context& ctx, std::string_view message) const {
  if (!conf_.anonymous_consumer.empty()) {
    if (!plugin::attach_anonymous(ctx, kPlugin, conf_.anonymous_consumer)) {
      return Action::kReply;
    }
    if (conf_.hide_credentials) {
      ctx.upstream.headers.remove("Authorization");
    }
    return Action::kContinue;
  }
  plugin::auth_reply(ctx, 401, message);
  return Action::kReply;
}

Action HmacAuth::rewrite(Context& ctx) const {
  const http::RequestHead& req = *ctx.req;
  const std::string_view* auth = find_header(req.headers, req.num_headers, "Authorization");
  if (auth == nullptr) {
    SLUICE_LOG(kWarn, "client request can't be validated: missing Authorization header");
    return fail(ctx, "client request can't be validated: missing Authorization header");
  }
  SignatureParams p;
  switch (parse_signature_header(*auth, &p)) {
    case ParseResult::kNotSignature:
      SLUICE_LOG(kWarn,
                 "client request can't be validated: Authorization header does not start "
                 "with 'Signature'");
      return fail(ctx,
                  "client request can't be validated: Authorization header does not start with "
                  "'Signature'");
    case ParseResult::kMalformed:
      SLUICE_LOG(kWarn, "client request can't be validated: malformed Signature parameters");
      return fail(ctx, kCannotValidate);
    case ParseResult::kOk:
      break;
  }
  const auto* index = ctx.consumers != nullptr ? ctx.consumers->index_as<Index>(kPlugin) : nullptr;
  const plugin::Credential* cred = nullptr;
  Failure f = verify(conf_, index, p, req, ctx.request_body, now_seconds(), &ctx.scratch, &cred);
  if (f != Failure::kNone) {
    SLUICE_LOG(kWarn, "client request can't be validated: {}", failure_text(f));
    return fail(ctx, kCannotValidate);
  }
  if (conf_.hide_credentials) {
    ctx.upstream.headers.remove("Authorization");
  }
  plugin::attach_consumer(ctx, *cred);
  return Action::kContinue;
}

}  // namespace sluice::plugins::hmac_auth
