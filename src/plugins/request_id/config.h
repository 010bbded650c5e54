#pragma once
// request-id's conf, typed and checked with the texts of APISIX 3.x's schema (header_name,
// include_in_response, algorithm, range_id.{length, char_set}, with their defaults).

#include <cstddef>
#include <string>

#include "common/status.h"
#include "plugin/info.h"

namespace sluice::plugins::request_id {

enum class Algorithm { kUuid, kNanoid, kRangeId, kKsuid };

// APISIX's default char_set, its "HIGK" (no J) included.
inline constexpr const char* kDefaultCharSet =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIGKLMNOPQRSTUVWXYZ0123456789";
// Sluice's bound on range_id.length (APISIX has none): the id is a header value.
inline constexpr int64_t kMaxLength = 4096;

// Thread: any (immutable after parse)
struct Conf {
  std::string header_name = "X-Request-Id";
  bool include_in_response = true;
  Algorithm algorithm = Algorithm::kUuid;
  size_t length = 16;  // range_id
  std::string char_set = kDefaultCharSet;
};

// Errors are the text after APISIX's `... plugin request-id err: `, e.g.
// `property "algorithm" validation failed: matches none of the enum values`,
// `property "range_id" validation failed: property "length" validation failed: expected 5 to
// be at least 6`.
common::StatusOr<Conf> parse(const plugin::Json& conf);
common::Status check(const plugin::Json& conf, plugin::PluginUse use);

extern const char kSchema[];

}  // namespace sluice::plugins::request_id
