#include "bench/load_options.h"

#include <fmt/format.h>

#include "bench/args.h"
#include "http/message.h"

namespace sluice::bench {

using common::Status;

namespace {

bool has_ctl_or_space(std::string_view s) {
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) {
      return true;
    }
  }
  return false;
}

// Splits "HOST[:PORT]" / "[V6][:PORT]" into the address text and the port.
Status split_authority(std::string_view auth, std::string* host, uint16_t* port) {
  std::string_view port_text;
  if (auth.starts_with('[')) {
    size_t close = auth.find(']');
    if (close == std::string_view::npos) {
      return Status::error("unterminated '[' in the URL's host");
    }
    *host = std::string(auth.substr(1, close - 1));
    std::string_view rest = auth.substr(close + 1);
    if (!rest.empty()) {
      if (rest[0] != ':') {
        return Status::error("junk after ']' in the URL's host");
      }
      port_text = rest.substr(1);
    }
  } else {
    size_t colon = auth.find(':');
    *host = std::string(auth.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = auth.substr(colon + 1);
    }
  }
  *port = 80;
  if (!port_text.empty()) {
    auto p = parse_int_flag("URL port", port_text, 1, 65535);
    if (!p) {
      return p.status();
    }
    *port = static_cast<uint16_t>(*p);
  }
  return Status::ok();
}

}  // namespace

common::StatusOr<Target> parse_url(std::string_view url) {
  constexpr std::string_view kScheme = "http://";
  if (url.size() < kScheme.size() || !http::iequals(url.substr(0, kScheme.size()), kScheme)) {
    return Status::error(fmt::format("URL '{}': only http:// URLs are supported", url));
  }
  std::string_view rest = url.substr(kScheme.size());
  rest = rest.substr(0, rest.find('#'));
  size_t path_at = rest.find_first_of("/?");
  std::string_view auth = rest.substr(0, path_at);
  std::string_view path = path_at == std::string_view::npos ? "" : rest.substr(path_at);
  if (auth.empty() || auth.find('@') != std::string_view::npos || has_ctl_or_space(auth)) {
    return Status::error(fmt::format("URL '{}': missing or malformed host", url));
  }
  if (has_ctl_or_space(path)) {
    return Status::error(fmt::format("URL '{}': the path has spaces or control bytes", url));
  }
  Target t;
  std::string host;
  uint16_t port = 0;
  if (Status s = split_authority(auth, &host, &port); !s) {
    return Status::error(fmt::format("URL '{}': {}", url, s.message()));
  }
  if (http::iequals(host, "localhost")) {
    host = "127.0.0.1";
  }
  if (!io::make_sockaddr(host, port, &t.addr)) {
    return Status::error(fmt::format(
        "URL '{}': the host must be an IPv4 literal, a bracketed IPv6 literal or localhost "
        "(no DNS lookups)",
        url));
  }
  t.authority = std::string(auth);
  t.path = path.empty() || path[0] == '?' ? "/" + std::string(path) : std::string(path);
  return t;
}

namespace {

Status check_header(const std::string& h) {
  size_t colon = h.find(':');
  if (colon == std::string::npos || colon == 0 || h.find_first_of("\r\n") != std::string::npos) {
    return Status::error(fmt::format("--header '{}': expected 'Name: value' on one line", h));
  }
  for (char c : std::string_view(h).substr(0, colon)) {
    if (has_ctl_or_space(std::string_view(&c, 1))) {
      return Status::error(fmt::format("--header '{}': bad character in the name", h));
    }
  }
  return Status::ok();
}

// Applies one flag to `o`.
Status apply_flag(ArgReader& r, LoadOptions* o) {
  if (!r.name().starts_with("-")) {
    o->url = std::string(r.name());  // a bare URL
    return Status::ok();
  }
  if (!r.is({"--url", "-u", "-c", "--connections", "-t", "--threads", "-d", "--duration", "--rate",
             "-R", "--timeout-ms", "-H", "--header", "--host"})) {
    return Status::error(fmt::format("unknown argument {}", r.name()));
  }
  auto v = r.value();
  if (!v) {
    return v.status();
  }
  const std::string& s = *v;
  std::string_view flag = r.name();
  if (r.is({"-c", "--connections"})) {
    return set_int_flag(flag, s, 1, 100000, &o->connections);
  }
  if (r.is({"-t", "--threads"})) {
    return set_int_flag(flag, s, 1, 1024, &o->threads);
  }
  if (r.is({"-d", "--duration"})) {
    return set_positive_flag(flag, s, "s", &o->duration_s);
  }
  if (r.is({"--rate", "-R"})) {
    return set_positive_flag(flag, s, "", &o->rate);
  }
  if (r.is({"--timeout-ms"})) {
    return set_int_flag(flag, s, 1, 3'600'000, &o->timeout_ms);
  }
  if (r.is({"-H", "--header"})) {
    if (Status st = check_header(s); !st) {
      return st;
    }
    o->headers.push_back(s);
  } else if (r.is({"--host"})) {
    if (s.empty() || has_ctl_or_space(s)) {
      return Status::error(fmt::format("--host '{}': not a valid Host value", s));
    }
    o->host = s;
  } else {
    o->url = s;  // --url, -u
  }
  return Status::ok();
}

}  // namespace

common::StatusOr<LoadOptions> parse_load_args(const std::vector<std::string>& args) {
  LoadOptions o;
  ArgReader r(args);
  while (r.next()) {
    if (Status s = apply_flag(r, &o); !s) {
      return s;
    }
  }
  if (o.url.empty()) {
    return Status::error("--url is required");
  }
  if (o.threads > o.connections) {
    return Status::error(
        fmt::format("--threads {} is more than the {} connections", o.threads, o.connections));
  }
  return o;
}

std::string build_request(const LoadOptions& options, const Target& target) {
  bool user_host = false;
  for (const std::string& h : options.headers) {
    user_host = user_host || http::iequals(std::string_view(h).substr(0, h.find(':')), "host");
  }
  std::string req = fmt::format("GET {} HTTP/1.1\r\n", target.path);
  if (!user_host) {
    fmt::format_to(std::back_inserter(req), "Host: {}\r\n",
                   options.host.empty() ? target.authority : options.host);
  }
  for (const std::string& h : options.headers) {
    req += h;
    req += "\r\n";
  }
  req += "\r\n";
  return req;
}

}  // namespace sluice::bench
