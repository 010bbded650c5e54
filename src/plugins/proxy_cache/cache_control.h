#pragma once
// Cache-Control directives as APISIX's memory strategy reads them (parse_directive_header in
// memory_handler.lua), the Expires date, and the TTL they give a response.

#include <cstdint>
#include <string_view>

namespace sluice::plugins::proxy_cache {

struct Directives {
  bool no_cache = false, no_store = false, is_private = false, only_if_cached = false;
  // Seconds; -1: absent. A max-stale without a value is any staleness (kAny).
  int64_t max_age = -1, s_maxage = -1, max_stale = -1, min_fresh = -1;
  static constexpr int64_t kAny = INT64_MAX;
};

// Adds the directives of one Cache-Control field value (comma-separated, names
// case-insensitive) to `d`; a field given twice is read as the two values joined.
void parse_directives(std::string_view value, Directives* d);

// An HTTP date (IMF-fixdate, RFC 850 or asctime) as Unix seconds; false when unreadable.
bool parse_http_date(std::string_view text, int64_t* unix_s);

// APISIX's parse_resource_ttl: s-maxage, else max-age, else Expires minus now; 0 when none.
int64_t resource_ttl(const Directives& d, std::string_view expires, bool has_expires,
                     int64_t now_s);

}  // namespace sluice::plugins::proxy_cache
