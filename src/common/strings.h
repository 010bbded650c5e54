#pragma once
// Small string builders for the request path, cheaper than a format call.

#include <charconv>
#include <cstdint>
#include <string>

namespace sluice::common {

inline void append_uint(std::string& out, uint64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out.append(buf, static_cast<size_t>(r.ptr - buf));
}

}  // namespace sluice::common
