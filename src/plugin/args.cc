#include "plugin/args.h"

#include "common/strings.h"

namespace sluice::plugin {

namespace {

std::string unescape(std::string_view s) {
  std::string out;
  unescape_arg(s, &out);
  return out;
}

}  // namespace

void unescape_arg(std::string_view s, std::string* out) {
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out->push_back(' ');
    } else if (s[i] == '%' && i + 2 < s.size() && common::hex_value(s[i + 1]) >= 0 &&
               common::hex_value(s[i + 2]) >= 0) {
      out->push_back(
          static_cast<char>(common::hex_value(s[i + 1]) * 16 + common::hex_value(s[i + 2])));
      i += 2;
    } else {
      out->push_back(s[i]);
    }
  }
}

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
  each_arg(s, [&](std::string_view name, std::string_view value, bool has_value) {
    add_value(out, unescape(name), has_value ? Json(unescape(value)) : Json(true));
  });
  return out;
}

}  // namespace sluice::plugin
