#include "plugins/referer_restriction/referer_host.h"

namespace sluice::plugins::referer_restriction {

namespace {

bool ends_host(char c) { return c == '[' || c == ']' || c == ':' || c == '/' || c == '?'; }

void drop_scheme(std::string_view* s) {
  for (std::string_view scheme : {"https:", "http:"}) {
    if (s->substr(0, scheme.size()) == scheme) {
      s->remove_prefix(scheme.size());
      return;
    }
  }
}

}  // namespace

bool referer_host(std::string_view referer, std::string_view* host) {
  std::string_view s = referer;
  drop_scheme(&s);
  if (s.substr(0, 2) != "//") {
    return false;
  }
  s.remove_prefix(2);
  if (!s.empty() && s[0] == '[') {
    // `\[.+\]`: greedy, so up to the last `]` with something between; `.` stops at a newline,
    // which a header value cannot hold.
    const size_t close = s.rfind(']');
    if (close == std::string_view::npos || close < 2) {
      return false;
    }
    *host = s.substr(0, close + 1);
    return true;
  }
  size_t n = 0;
  while (n < s.size() && !ends_host(s[n])) {
    ++n;
  }
  if (n == 0) {
    return false;
  }
  *host = s.substr(0, n);
  return true;
}

}  // namespace sluice::plugins::referer_restriction
