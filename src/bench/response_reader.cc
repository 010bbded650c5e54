#include "bench/response_reader.h"

#include <algorithm>

namespace sluice::bench {

using http::BodyKind;

namespace {
const h1::Limits kResponseLimits{};
}  // namespace

void ResponseReader::reset() {
  chunked_.reset();
  body_kind_ = BodyKind::kNone;
  remaining_ = 0;
  status_ = 0;
  interim_ = 0;
  head_done_ = false;
  keep_alive_ = true;
  error_ = "";
}

ResponseReader::Result ResponseReader::feed(io::Buffer& in) {
  while (!head_done_) {
    Result r = feed_head(in);
    if (r != Result::kComplete) {
      return r;
    }
  }
  return feed_body(in);
}

// kComplete here means "a head was read" (interim or final); feed() loops over interim ones.
ResponseReader::Result ResponseReader::feed_head(io::Buffer& in) {
  h1::ParseResult r = h1::parse_response(in.view(), kResponseLimits, http::Method::kGet, &head_);
  if (r.status == h1::ParseStatus::kIncomplete) {
    return Result::kNeedMore;
  }
  if (r.status == h1::ParseStatus::kError) {
    return fail(r.error);
  }
  in.consume(r.consumed);
  if (head_.status < 200) {
    ++interim_;  // 100 Continue and friends: the final response follows
    return Result::kComplete;
  }
  head_done_ = true;
  status_ = head_.status;
  keep_alive_ = head_.keep_alive;
  body_kind_ = head_.body_kind;
  remaining_ = head_.content_length;
  return Result::kComplete;
}

ResponseReader::Result ResponseReader::feed_body(io::Buffer& in) {
  switch (body_kind_) {
    case BodyKind::kNone:
      return Result::kComplete;
    case BodyKind::kLength: {
      size_t n = static_cast<size_t>(std::min<uint64_t>(remaining_, in.size()));
      in.consume(n);
      remaining_ -= n;
      return remaining_ == 0 ? Result::kComplete : Result::kNeedMore;
    }
    case BodyKind::kChunked:
      while (true) {
        h1::ChunkedDecoder::Step s = chunked_.step(in.view());
        in.consume(s.consumed);
        if (s.status == h1::ChunkedDecoder::Status::kDone) {
          return Result::kComplete;
        }
        if (s.status == h1::ChunkedDecoder::Status::kError) {
          return fail(chunked_.error());
        }
        if (s.status == h1::ChunkedDecoder::Status::kNeedMore) {
          return Result::kNeedMore;
        }
      }
    case BodyKind::kUntilClose:
      in.clear();
      return Result::kNeedMore;
  }
  return fail("unknown body framing");
}

ResponseReader::Result ResponseReader::on_eof() {
  if (head_done_ && body_kind_ == BodyKind::kUntilClose) {
    return Result::kComplete;
  }
  return fail(head_done_ ? "connection closed inside the body" : "connection closed");
}

}  // namespace sluice::bench
