#include "bench/upstream_options.h"

#include <fmt/format.h>

#include "bench/args.h"

namespace sluice::bench {

using common::Status;

common::StatusOr<io::SockAddr> parse_listen(std::string_view text) {
  std::string host;
  std::string_view port_text;
  if (text.starts_with('[')) {
    size_t close = text.find("]:");
    if (close == std::string_view::npos) {
      return Status::error(fmt::format("--listen '{}': expected [IPv6]:PORT", text));
    }
    host = std::string(text.substr(1, close - 1));
    port_text = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) {
      return Status::error(fmt::format("--listen '{}': expected IPv4:PORT", text));
    }
    host = std::string(text.substr(0, colon));
    port_text = text.substr(colon + 1);
  }
  auto port = parse_int_flag("--listen port", port_text, 0, 65535);
  if (!port) {
    return port.status();
  }
  if (host == "localhost") {
    host = "127.0.0.1";
  }
  io::SockAddr addr;
  if (!io::make_sockaddr(host, static_cast<uint16_t>(*port), &addr)) {
    return Status::error(
        fmt::format("--listen '{}': '{}' is not a numeric IP address", text, host));
  }
  return addr;
}

common::StatusOr<std::string> unescape_body(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\') {
      out += text[i];
      continue;
    }
    size_t at = i;
    char e = i + 1 < text.size() ? text[++i] : '\0';
    switch (e) {
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case '\\':
        out += '\\';
        break;
      default:
        return Status::error(
            fmt::format("--body: unknown escape at offset {} (use \\n \\r \\t \\\\)", at));
    }
  }
  return out;
}

std::string address_text(const io::SockAddr& addr) {
  if (addr.storage.ss_family == AF_INET6) {
    return fmt::format("[{}]:{}", addr.ip_text(), addr.port());
  }
  return fmt::format("{}:{}", addr.ip_text(), addr.port());
}

common::StatusOr<UpstreamOptions> parse_upstream_args(const std::vector<std::string>& args) {
  UpstreamOptions o;
  io::make_sockaddr("127.0.0.1", 0, &o.listen);
  ArgReader r(args);
  while (r.next()) {
    if (!r.is({"--listen", "-l", "--body", "--service-us", "--threads", "-t"})) {
      return Status::error(fmt::format("unknown argument {}", r.name()));
    }
    auto v = r.value();
    if (!v) {
      return v.status();
    }
    std::string_view flag = r.name();
    Status st = Status::ok();
    if (r.is({"--listen", "-l"})) {
      auto a = parse_listen(*v);
      if (!a) {
        return a.status();
      }
      o.listen = *a;
    } else if (r.is({"--body"})) {
      auto b = unescape_body(*v);
      if (!b) {
        return b.status();
      }
      o.body = *b;
    } else if (r.is({"--service-us"})) {
      st = set_int_flag(flag, *v, 0, 60'000'000, &o.service_us);
    } else {
      st = set_int_flag(flag, *v, 1, 1024, &o.threads);  // --threads, -t
    }
    if (!st) {
      return st;
    }
  }
  return o;
}

}  // namespace sluice::bench
