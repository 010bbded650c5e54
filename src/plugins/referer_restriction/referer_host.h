#pragma once
// The host part of a Referer, read as lua-resty-http's parse_uri reads it (APISIX's
// referer-restriction calls it): the pattern
// `^(?:(http[s]?):)?//((?:[^\[\]:/\?]+)|(?:\[.+\]))...` searched in the value, so an optional
// lower-case `http:` or `https:`, then `//`, then a run of characters other than `[ ] : / ?`,
// or a bracketed literal up to its last `]`.

#include <string_view>

namespace sluice::plugins::referer_restriction {

// Writes the host (a view into `referer`, brackets kept) to *host; false when the value does
// not parse (APISIX then takes the Referer as missing).
bool referer_host(std::string_view referer, std::string_view* host);

}  // namespace sluice::plugins::referer_restriction
