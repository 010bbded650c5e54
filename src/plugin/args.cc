#include "plugin/args.h"

namespace sluice::plugin {

namespace {

int hex(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  c = static_cast<char>(c | 0x20);
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

// ngx.unescape_uri as decode_args uses it: %XX decoded, '+' is a space.
std::string unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out.push_back(' ');
    } else if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

}  // namespace

void add_value(Json& obj, const std::string& key, Json value) {
  auto it = obj.find(key);
  if (it == obj.end()) {
    obj[key] = std::move(value);
  } else if (it->is_array()) {
    it->push_back(std::move(value));
  } else {
    Json arr = Json::array({std::move(*it), std::move(value)});
    *it = std::move(arr);
  }
}

Json decode_args(std::string_view s) {
  Json out = Json::object();
  while (!s.empty()) {
    size_t amp = s.find('&');
    std::string_view pair = s.substr(0, amp);
    s = amp == std::string_view::npos ? std::string_view() : s.substr(amp + 1);
    if (pair.empty()) {
      continue;
    }
    size_t eq = pair.find('=');
    if (eq == std::string_view::npos) {
      add_value(out, unescape(pair), Json(true));
    } else if (eq > 0) {
      add_value(out, unescape(pair.substr(0, eq)), Json(unescape(pair.substr(eq + 1))));
    }
  }
  return out;
}

}  // namespace sluice::plugin
