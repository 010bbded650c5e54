#pragma once
// hmac-auth's confs, typed and checked with APISIX's schema texts: the route side (which
// algorithms, how much clock skew, which headers must be signed, body digests, what to hide)
// and the consumer side (key_id and secret_key).

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "plugin/info.h"
#include "plugins/hmac_auth/signature.h"

namespace sluice::plugins::hmac_auth {

// Thread: any (immutable after parse)
struct Conf {
  uint8_t allowed = algorithm_bit(Algorithm::kSha1) | algorithm_bit(Algorithm::kSha256) |
                    algorithm_bit(Algorithm::kSha512);
  int64_t clock_skew = 300;
  std::vector<std::string> signed_headers;  // each must be named in the request's `headers`
  bool validate_request_body = false;
  bool hide_credentials = false;
  std::string anonymous_consumer;  // empty: none
};

// Thread: any (immutable after parse)
struct ConsumerConf {
  std::string key_id;
  std::string secret_key;
};

// Errors are the text after APISIX's `... plugin hmac-auth err: `, e.g.
// `property "clock_skew" validation failed: expected 0 to be at least 1`,
// `property "allowed_algorithms" validation failed: failed to validate item 1: matches none of
// the enum values`.
common::StatusOr<Conf> parse(const plugin::Json& conf);
// `property "key_id" is required`, `property "secret_key" validation failed: string too long,
// expected at most 256, got 257`.
common::StatusOr<ConsumerConf> parse_consumer(const plugin::Json& conf);
common::Status check(const plugin::Json& conf, plugin::PluginUse use);

// The JSON schema served by GET /apisix/admin/plugins/hmac-auth.
extern const char kSchema[];

}  // namespace sluice::plugins::hmac_auth
