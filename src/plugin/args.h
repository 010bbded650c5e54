#pragma once
// Request values as ngx.req's Lua tables hold them, for the plugins that hand them to JSON
// (request-validation's schemas, the loggers' entries): a repeated key becomes an array of
// its values, and query strings and form bodies decode as ngx.decode_args does.

#include <string>
#include <string_view>

#include "plugin/info.h"

namespace sluice::plugin {

// Adds `value` under `key` of `obj`; a second value for the key turns it into an array.
void add_value(Json& obj, const std::string& key, Json value);

// ngx.decode_args(s, 0): `a=1&b&a=2` -> {"a": ["1", "2"], "b": true}; %XX and '+' decoded
// (ngx.unescape_uri), empty pairs and pairs with an empty name left out.
Json decode_args(std::string_view s);

}  // namespace sluice::plugin
