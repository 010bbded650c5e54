#include "http/message.h"

#include <array>

namespace sluice::http {

namespace {
constexpr std::array<std::string_view, 10> kMethodNames = {
    "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "TRACE", "PURGE"};

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

template <typename Fn>
void for_each_token(const Header* headers, size_t n, Fn&& fn) {
  for (size_t i = 0; i < n; ++i) {
    if (!iequals(headers[i].name, "connection")) {
      continue;
    }
    std::string_view v = headers[i].value;
    while (!v.empty()) {
      size_t comma = v.find(',');
      std::string_view tok = trim_ows(v.substr(0, comma));
      if (!tok.empty() && !iequals(tok, "close") && !iequals(tok, "keep-alive")) {
        fn(tok);
      }
      v = comma == std::string_view::npos ? std::string_view() : v.substr(comma + 1);
    }
  }
}

ConnectionTokens::ConnectionTokens(const Header* headers, size_t n)
    : headers_(headers), num_headers_(n) {
  for_each_token(headers, n, [this](std::string_view tok) {
    if (n_ < kMax) {
      names_[n_++] = tok;
    } else {
      overflow_ = true;
    }
  });
}

bool ConnectionTokens::contains(std::string_view name) const {
  for (size_t i = 0; i < n_; ++i) {
    if (iequals(names_[i], name)) {
      return true;
    }
  }
  if (!overflow_) {
    return false;
  }
  bool found = false;
  for_each_token(headers_, num_headers_,
                 [&](std::string_view tok) { found = found || iequals(tok, name); });
  return found;
}

const Header* RequestHead::find(std::string_view name) const { return find_header(*this, name); }

void RequestHead::rebase(const char* from, size_t len, const char* to) {
  auto move = [from, len, to](std::string_view& v) {
    if (v.data() != nullptr && v.data() >= from && v.data() + v.size() <= from + len) {
      v = {to + (v.data() - from), v.size()};
    }
  };
  for (std::string_view* v : {&method_text, &target, &path, &query, &authority, &host}) {
    move(*v);
  }
  if (uri.data() != nullptr && !(uri.data() >= from && uri.data() + uri.size() <= from + len)) {
    // The normalised path was written into uri_buf (at its start): a copied head's own.
    uri = std::string_view(uri_buf.data(), uri.size());
  } else {
    move(uri);
  }
  for (size_t i = 0; i < num_headers; ++i) {
    move(headers[i].name);
    move(headers[i].value);
  }
}
const Header* ResponseHead::find(std::string_view name) const { return find_header(*this, name); }

}  // namespace sluice::http
