#pragma once
// Sans-I/O reader of HTTP/1.1 responses to GET requests, for the load generator: it consumes
// a connection's read buffer and says when one response has ended.

#include <cstdint>

#include "codec/h1/chunked.h"
#include "codec/h1/parser.h"
#include "http/message.h"
#include "io/buffer.h"

namespace sluice::bench {

// Frames one response at a time (Content-Length, chunked, or until close) and discards its
// body. Interim 1xx responses are skipped and counted.
// Thread: worker
class ResponseReader {
 public:
  enum class Result { kNeedMore, kComplete, kError };

  // Consumes from `in` the bytes of the current response. Stops right after it ends, so any
  // bytes left in `in` belong to something else.
  Result feed(io::Buffer& in);
  // The peer closed: completes a response framed by the close, else is an error.
  Result on_eof();
  // Readies the reader for the next response.
  void reset();

  bool head_done() const { return head_done_; }
  int status() const { return status_; }
  bool keep_alive() const { return keep_alive_; }
  uint32_t interim() const { return interim_; }  // 1xx heads since reset()
  const char* error() const { return error_; }

 private:
  Result fail(const char* why) {
    error_ = why;
    return Result::kError;
  }
  Result feed_head(io::Buffer& in);
  Result feed_body(io::Buffer& in);

  http::ResponseHead head_;
  h1::ChunkedDecoder chunked_;
  http::BodyKind body_kind_ = http::BodyKind::kNone;
  uint64_t remaining_ = 0;
  int status_ = 0;
  uint32_t interim_ = 0;
  bool head_done_ = false;
  bool keep_alive_ = true;
  const char* error_ = "";
};

}  // namespace sluice::bench
