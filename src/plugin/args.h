#pragma once
// Request values as ngx.req's Lua tables hold them, for the plugins that hand them to JSON
// (request-validation's schemas, the loggers' entries): a repeated key becomes an array of
// its values, and query strings and form bodies decode as ngx.decode_args does.

#include <string>
#include <string_view>

#include "plugin/info.h"

namespace sluice::plugin {

// ngx.unescape_uri as ngx.decode_args applies it: %XX decoded, '+' a space; appended to `out`.
void unescape_arg(std::string_view s, std::string* out);

// The pairs of `s` as ngx.decode_args splits them, undecoded: f(name, value, has_value) for
// each; empty pairs and pairs with an empty name are left out; `b` alone has no value.
template <class F>
void each_arg(std::string_view s, F&& f) {
  while (!s.empty()) {
    const size_t amp = s.find('&');
    const std::string_view pair = s.substr(0, amp);
    s = amp == std::string_view::npos ? std::string_view() : s.substr(amp + 1);
    const size_t eq = pair.find('=');
    if (pair.empty() || eq == 0) {
      continue;
    }
    if (eq == std::string_view::npos) {
      f(pair, std::string_view(), false);
    } else {
      f(pair.substr(0, eq), pair.substr(eq + 1), true);
    }
  }
}

// Adds `value` under `key` of `obj`; a second value for the key turns it into an array.
void add_value(Json& obj, const std::string& key, Json value);

// ngx.decode_args(s, 0): `a=1&b&a=2` -> {"a": ["1", "2"], "b": true}; %XX and '+' decoded
// (ngx.unescape_uri), empty pairs and pairs with an empty name left out.
Json decode_args(std::string_view s);

}  // namespace sluice::plugin
