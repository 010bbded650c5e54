#pragma once
// The access log as the workers write it: the compiled format, the file and its buffering.

#include <cstddef>
#include <cstdint>
#include <string>

#include "accesslog/format.h"

namespace sluice::accesslog {

// Thread: any (immutable once the workers start)
struct Config {
  std::string path;  // absolute, or relative to the working directory
  Format format;
  // nginx's access_log buffer= (APISIX: access_log_buffer, 16384) and flush= (APISIX: 3 s):
  // a worker writes its lines when they reach this many bytes, or this long after the first
  // of them, whichever comes first.
  size_t buffer_size = 16384;
  uint32_t flush_ms = 3000;
};

}  // namespace sluice::accesslog
