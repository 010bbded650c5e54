#pragma once
// http-logger's sink: a POST of each batch on one kept-alive HTTP/1.1 connection (TLS for an
// https uri, verified with ssl_verify), the response read whole; a status >= 400 fails the
// batch with APISIX's message (send_http_data in http-logger.lua).

#include <memory>
#include <string_view>

#include "batch/processor.h"
#include "common/status.h"
#include "plugins/loggers/conf.h"

namespace sluice::plugins::loggers {

std::unique_ptr<batch::Sink> make_http_sink(const Conf& conf);

// The response head's facts the sink needs. Sans-I/O: tested on its own.
// Thread: any (stack-local)
struct ResponseFacts {
  int status = 0;
  bool chunked = false;
  bool close = false;
  int64_t content_length = -1;  // -1: none
};
// Parses a head ending in CRLFCRLF; an error for anything that is not an HTTP/1.x response.
common::StatusOr<ResponseFacts> parse_response_head(std::string_view head);

}  // namespace sluice::plugins::loggers
