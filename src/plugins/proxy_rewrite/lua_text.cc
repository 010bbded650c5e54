#include "plugins/proxy_rewrite/lua_text.h"

#include <fmt/format.h>

namespace sluice::plugins::proxy_rewrite {

std::string lua_quoted(std::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\' || c == '\n') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c == '\r') {
      out.append("\\r");
    } else if (c < 0x20 || c == 0x7f) {
      // A following digit would be read into the escape: then it takes three digits.
      bool digit_next = i + 1 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '9';
      out.append(digit_next ? fmt::format("\\{:03d}", c) : fmt::format("\\{}", c));
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  out.push_back('"');
  return out;
}

std::string lua_number_text(const nlohmann::json& n) {
  return fmt::format("{:.14g}", n.get<double>());
}

}  // namespace sluice::plugins::proxy_rewrite
