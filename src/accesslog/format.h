#pragma once
// An access log format (nginx's log_format, APISIX's nginx_config.http.access_log_format)
// compiled once into literal and variable parts. Variables are nginx's `$name` / `${name}`;
// names are case-insensitive, as nginx's are, and an unknown one is refused when the format is
// compiled, with nginx's words: `unknown "foo" variable`.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "router/expr.h"

namespace sluice::accesslog {

// APISIX's default access_log_format (apisix/cli/config.lua, nginx_config.http).
inline constexpr std::string_view kApisixFormat =
    "$remote_addr - $remote_user [$time_local] $http_host \"$request\" $status $body_bytes_sent "
    "$request_time \"$http_referer\" \"$http_user_agent\" $upstream_addr $upstream_status "
    "$upstream_response_time \"$upstream_scheme://$upstream_host$upstream_uri\"";

// nginx's log_format escape=: default (\xHH for ", \, bytes below 0x20 and from 0x7f; a value
// that is not there prints "-"), json (JSON string escapes; a value that is not there prints
// nothing), none (bytes as they are; nothing for a value that is not there).
enum class Escape : uint8_t { kDefault, kJson, kNone };

// "default", "json" or "none"; false for anything else.
bool parse_escape(std::string_view text, Escape* out);

// What one part of a format prints.
enum class Var : uint8_t {
  kLiteral,  // text of the format
  kConn,     // a router variable of the connection (remote_addr, server_port, scheme, ssl_*)
  kHead,     // a value read from the request head, kept while the head was there (HeadVar)
  kStatus,
  kBodyBytesSent,
  kBytesSent,
  kRequestLength,
  kRequestTime,
  kMsec,
  kTimeLocal,
  kTimeIso8601,
  kUpstreamAddr,
  kUpstreamStatus,
  kUpstreamResponseTime,
  kUpstreamConnectTime,
  kUpstreamHeaderTime,
  kUpstreamScheme,
  kUpstreamHost,
  kUpstreamUri,
  kServerAddr,
  kRemotePort,
  kRequestId,
  kRouteId,
  kRouteName,
  kServiceId,
  kServiceName,
  kConsumerName,
  kHostname,
  kPid,
  kCount,
};

// A variable read from the request head: it is evaluated while the head is there (capture.h),
// since the request's bytes are gone by the time the line is written.
// Thread: any (immutable)
struct HeadVar {
  enum class Kind : uint8_t {
    kRouter,          // `var`: arg_*, http_*, cookie_*, uri, request_uri, args, host, ...
    kRequest,         // the request line
    kServerProtocol,  // HTTP/1.x
    kRemoteUser,      // the user of a Basic Authorization
    kIsArgs,          // "?" when the request has a query
  };
  Kind kind = Kind::kRouter;
  router::Var var;
};

// Thread: any (immutable)
struct Part {
  Var var = Var::kLiteral;
  uint32_t begin = 0;  // kLiteral: offset in Format::literals(); kConn, kHead: the index
  uint32_t size = 0;   // kLiteral: length
};

// Thread: any (immutable once compiled)
class Format {
 public:
  static common::StatusOr<Format> compile(std::string_view text, Escape escape);

  Escape escape() const { return escape_; }
  std::span<const Part> parts() const { return parts_; }
  std::string_view literal(const Part& p) const {
    return std::string_view(literals_).substr(p.begin, p.size);
  }
  std::span<const HeadVar> head_vars() const { return head_vars_; }
  const router::Var& conn_var(const Part& p) const { return conn_vars_[p.begin]; }
  bool uses(Var v) const { return (used_ >> static_cast<unsigned>(v) & 1) != 0; }
  // The head variable holding $http_host, which $upstream_host prints for a request that
  // reached no upstream (APISIX: `set $upstream_host $http_host`); -1 when not needed.
  int host_slot() const { return host_slot_; }
  const std::string& hostname() const { return hostname_; }

 private:
  common::Status add_var(std::string_view name);
  // The slot of head variable `name` (lower-case), added when new: a variable the format
  // names twice ($http_host, and $upstream_host's fallback) is read once per request.
  uint32_t add_head(HeadVar::Kind kind, std::string_view name, router::Var var = {});

  Escape escape_ = Escape::kDefault;
  std::vector<Part> parts_;
  std::string literals_;
  std::vector<HeadVar> head_vars_;
  std::vector<std::string> head_names_;  // beside head_vars_
  std::vector<router::Var> conn_vars_;
  uint64_t used_ = 0;
  int host_slot_ = -1;
  std::string hostname_;
};

}  // namespace sluice::accesslog
