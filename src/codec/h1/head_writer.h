#pragma once
// Writes an HTTP/1.1 response head: the status line, the fields in order, the framing field
// (Content-Length or Transfer-Encoding: chunked) and the connection verdict. Pure: the caller
// decides what goes in (which fields, which framing, keep-alive or close); this writes it out.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "http/message.h"

namespace sluice::h1 {

// Thread: any (value type)
struct ResponseHeadOut {
  enum class Connection : uint8_t {
    kNone,       // HTTP/1.1 persistence by default: no field
    kKeepAlive,  // an HTTP/1.0 client kept alive
    kClose,
  };
  int status = 200;
  std::string_view reason;
  // Written in this order: `first_line` (complete "Name: value\r\n" lines, may be empty), then
  // each group of fields. A field of `skip_name` (e.g. "server", when the gateway writes its
  // own token) is left out of `upstream`.
  std::string_view first_lines;
  std::span<const http::Header> upstream;
  std::string_view skip_name;
  std::string_view middle_lines;
  std::span<const http::Header> fields;
  int64_t content_length = -1;  // >= 0: written
  bool chunked = false;         // Transfer-Encoding: chunked (when no length)
  Connection connection = Connection::kNone;
  // A 101's protocol: written as its Upgrade field with `Connection: upgrade`, in place of
  // the verdict above (the connection is neither kept for HTTP nor closed).
  std::string_view upgrade;
};

// Appends the head to `out` (cleared first).
void write_response_head(std::string* out, const ResponseHeadOut& h);

}  // namespace sluice::h1
