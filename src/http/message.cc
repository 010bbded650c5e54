#include "http/message.h"

#include <array>

namespace sluice::http {

namespace {
constexpr std::array<std::string_view, 10> kMethodNames = {
    "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "TRACE", "PURGE"};

inline char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

template <typename Head>
const Header* find_header(const Head& h, std::string_view name) {
  for (size_t i = 0; i < h.num_headers; ++i) {
    if (iequals(h.headers[i].name, name)) {
      return &h.headers[i];
    }
  }
  return nullptr;
}
}  // namespace

Method parse_method(std::string_view token) {
  for (size_t i = 0; i < kMethodNames.size(); ++i) {
    if (kMethodNames[i] == token) {
      return static_cast<Method>(i);
    }
  }
  return Method::kOther;
}

std::string_view method_name(Method m) {
  auto i = static_cast<size_t>(m);
  return i < kMethodNames.size() ? kMethodNames[i] : std::string_view("OTHER");
}

bool is_idempotent(Method m) {
  switch (m) {
    case Method::kGet:
    case Method::kHead:
    case Method::kPut:
    case Method::kDelete:
    case Method::kOptions:
    case Method::kTrace:
      return true;
    default:
      return false;
  }
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) {
      return false;
    }
  }
  return true;
}

bool is_hop_by_hop(std::string_view name) {
  switch (name.size()) {
    case 2:
      return iequals(name, "te");
    case 7:
      return iequals(name, "trailer") || iequals(name, "upgrade");
    case 10:
      return iequals(name, "connection") || iequals(name, "keep-alive");
    case 16:
      return iequals(name, "proxy-connection");
    case 17:
      return iequals(name, "transfer-encoding");
    case 18:
      return iequals(name, "proxy-authenticate");
    case 19:
      return iequals(name, "proxy-authorization");
    default:
      return false;
  }
}

namespace {
std::string_view trim_ows(std::string_view t) {
  while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) {
    t.remove_prefix(1);
  }
  while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) {
    t.remove_suffix(1);
  }
  return t;
}
}  // namespace

bool named_in_connection(const Header* headers, size_t n, std::string_view name) {
  for (size_t i = 0; i < n; ++i) {
    if (!iequals(headers[i].name, "connection")) {
      continue;
    }
    std::string_view v = headers[i].value;
    while (!v.empty()) {
      size_t comma = v.find(',');
      if (iequals(trim_ows(v.substr(0, comma)), name)) {
        return true;
      }
      v = comma == std::string_view::npos ? std::string_view() : v.substr(comma + 1);
    }
  }
  return false;
}

const Header* RequestHead::find(std::string_view name) const { return find_header(*this, name); }
const Header* ResponseHead::find(std::string_view name) const { return find_header(*this, name); }

}  // namespace sluice::http
