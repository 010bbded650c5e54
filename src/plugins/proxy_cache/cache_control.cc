#include "plugins/proxy_cache/cache_control.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <ctime>

#include "http/message.h"

namespace sluice::plugins::proxy_cache {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

// A delta-seconds value; quoted values are read too. -2 when not a number.
int64_t seconds(std::string_view v) {
  v = trim(v);
  if (v.size() >= 2 && v.front() == '"' && v.back() == '"') {
    v = v.substr(1, v.size() - 2);
  }
  int64_t n = 0;
  auto r = std::from_chars(v.data(), v.data() + v.size(), n);
  if (r.ec != std::errc() || r.ptr != v.data() + v.size()) {
    return -2;
  }
  return std::max<int64_t>(n, 0);
}

int month_of(std::string_view m) {
  static const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                  "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  for (int i = 0; i < 12; ++i) {
    if (http::iequals(m, kMonths[i])) {
      return i;
    }
  }
  return -1;
}

}  // namespace

void parse_directives(std::string_view value, Directives* d) {
  while (!value.empty()) {
    size_t comma = value.find(',');
    std::string_view item = trim(value.substr(0, comma));
    value = comma == std::string_view::npos ? std::string_view() : value.substr(comma + 1);
    size_t eq = item.find('=');
    std::string_view name = trim(item.substr(0, eq));
    std::string_view arg = eq == std::string_view::npos ? std::string_view() : item.substr(eq + 1);
    bool has_arg = eq != std::string_view::npos;
    if (http::iequals(name, "no-cache")) {
      d->no_cache = true;
    } else if (http::iequals(name, "no-store")) {
      d->no_store = true;
    } else if (http::iequals(name, "private")) {
      d->is_private = true;
    } else if (http::iequals(name, "only-if-cached")) {
      d->only_if_cached = true;
    } else if (http::iequals(name, "max-age") && has_arg) {
      d->max_age = seconds(arg) >= 0 ? seconds(arg) : d->max_age;
    } else if (http::iequals(name, "s-maxage") && has_arg) {
      d->s_maxage = seconds(arg) >= 0 ? seconds(arg) : d->s_maxage;
    } else if (http::iequals(name, "max-stale")) {
      d->max_stale = !has_arg ? Directives::kAny : std::max<int64_t>(seconds(arg), -1);
    } else if (http::iequals(name, "min-fresh") && has_arg) {
      d->min_fresh = seconds(arg) >= 0 ? seconds(arg) : d->min_fresh;
    }
  }
}

bool parse_http_date(std::string_view s, int64_t* unix_s) {
  // IMF-fixdate "Sun, 06 Nov 1994 08:49:37 GMT", RFC 850 "Sunday, 06-Nov-94 08:49:37 GMT",
  // asctime "Sun Nov  6 08:49:37 1994".
  char buf[64];
  s = trim(s);
  if (s.size() >= sizeof(buf)) {
    return false;
  }
  std::memcpy(buf, s.data(), s.size());
  buf[s.size()] = '\0';
  char wd[16], mon[4];
  int day = 0, year = 0, hh = 0, mm = 0, ss = 0;
  struct tm t = {};
  if (std::sscanf(buf, "%15[A-Za-z], %d %3s %d %d:%d:%d GMT", wd, &day, mon, &year, &hh, &mm,
                  &ss) == 7) {
  } else if (std::sscanf(buf, "%15[A-Za-z], %d-%3s-%d %d:%d:%d GMT", wd, &day, mon, &year, &hh, &mm,
                         &ss) == 7) {
    year += year < 70 ? 2000 : (year < 100 ? 1900 : 0);
  } else if (std::sscanf(buf, "%15[A-Za-z] %3s %d %d:%d:%d %d", wd, mon, &day, &hh, &mm, &ss,
                         &year) == 7) {
  } else {
    return false;
  }
  int m = month_of(mon);
  if (m < 0 || day < 1 || day > 31 || hh > 23 || mm > 59 || ss > 60 || year < 1970) {
    return false;
  }
  t.tm_year = year - 1900;
  t.tm_mon = m;
  t.tm_mday = day;
  t.tm_hour = hh;
  t.tm_min = mm;
  t.tm_sec = ss;
  *unix_s = static_cast<int64_t>(timegm(&t));
  return true;
}

int64_t resource_ttl(const Directives& d, std::string_view expires, bool has_expires,
                     int64_t now_s) {
  int64_t ttl = d.s_maxage >= 0 ? d.s_maxage : d.max_age;
  if (ttl < 0 && has_expires) {
    int64_t at = 0;
    if (parse_http_date(expires, &at)) {
      ttl = at - now_s;
    }
  }
  return std::max<int64_t>(ttl, 0);
}

}  // namespace sluice::plugins::proxy_cache
