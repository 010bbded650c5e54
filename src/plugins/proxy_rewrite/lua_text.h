#pragma once
// How APISIX's Lua prints values into its messages and headers, for texts that must match.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace sluice::plugins::proxy_rewrite {

// Lua's string.format("%q", s): quoted, with '"' and '\' escaped, a newline as '\' plus
// newline, '\r' as \r, NUL and other control bytes as decimal escapes.
std::string lua_quoted(std::string_view s);

// Lua's tostring of a JSON number ("%.14g": 1, 1.5, 1e+20), as ngx.req.set_header sends it.
std::string lua_number_text(const nlohmann::json& n);

}  // namespace sluice::plugins::proxy_rewrite
