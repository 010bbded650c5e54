#pragma once
// gRPC's pure parts, kept apart so they are tested without sockets: the grpc-timeout header
// (the client's deadline) and the status codes the gateway answers with when no upstream
// answered.

#include <cstdint>
#include <string_view>

namespace sluice::proxy {

// gRPC status codes the gateway itself sends (grpc/doc/statuscodes.md).
inline constexpr int kGrpcDeadlineExceeded = 4;
inline constexpr int kGrpcUnavailable = 14;

// The deadline a grpc-timeout value names, in milliseconds rounded up (at least 1); 0 when the
// value is malformed. gRPC's PROTOCOL-HTTP2.md: TimeoutValue is 1 to 8 ASCII digits, TimeoutUnit
// one of H M S m u n (hours, minutes, seconds, milli-, micro-, nanoseconds).
inline uint64_t parse_grpc_timeout(std::string_view v) {
  if (v.size() < 2 || v.size() > 9) {
    return 0;
  }
  uint64_t n = 0;
  for (char c : v.substr(0, v.size() - 1)) {
    if (c < '0' || c > '9') {
      return 0;
    }
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  uint64_t ms = 0;
  switch (v.back()) {
    case 'H':
      ms = n * 3600000;
      break;
    case 'M':
      ms = n * 60000;
      break;
    case 'S':
      ms = n * 1000;
      break;
    case 'm':
      ms = n;
      break;
    case 'u':
      ms = (n + 999) / 1000;
      break;
    case 'n':
      ms = (n + 999999) / 1000000;
      break;
    default:
      return 0;
  }
  return ms == 0 ? 1 : ms;
}

}  // namespace sluice::proxy
