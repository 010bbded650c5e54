#pragma once
// Where jwt-auth finds a request's token, as APISIX's fetch_jwt_token looks: the header (a
// "Bearer " or "bearer " prefix dropped), else the query argument, else the cookie; and
// hide_credentials, which takes it out of the request the upstream gets.

#include <string>
#include <string_view>

#include "plugin/plugin.h"
#include "plugins/jwt_auth/config.h"

namespace sluice::plugins::jwt_auth {

enum class Source : uint8_t { kNone, kHeader, kQuery, kCookie };

// Finds the token; *token views into the request head or into *buf (a query argument is
// percent-decoded there). With conf.hide_credentials, the place it came from is removed from
// ctx.upstream: the header, every occurrence of the query argument, or the cookie.
Source fetch_token(const RouteConf& conf, plugin::Context& ctx, std::string* buf,
                   std::string_view* token);

// ngx.unescape_uri: %XX decoded ('%' without two hex digits kept), '+' read as a space.
void unescape_arg(std::string_view in, std::string* out);

}  // namespace sluice::plugins::jwt_auth
