#include "codec/h1/chunked.h"

#include <algorithm>

#include "codec/h1/scan.h"
#include "common/strings.h"

namespace sluice::h1 {

namespace {

// qdtext or the byte after a backslash: HTAB, SP, VCHAR, obs-text.
bool is_quoted_char(char ch) {
  auto c = static_cast<uint8_t>(ch);
  return c == '\t' || (c >= 0x20 && c != 0x7f);
}

}  // namespace

// State machine: outside chunk data it moves one byte at a time (on_byte and the handlers it
// dispatches to); chunk data is handed out as one span per call.
ChunkedDecoder::Step ChunkedDecoder::step(std::string_view in) {
  size_t i = 0;
  while (i < in.size() && state_ != State::kDone && state_ != State::kError) {
    if (state_ == State::kData) {
      auto n = static_cast<size_t>(std::min<uint64_t>(remaining_, in.size() - i));
      remaining_ -= n;
      if (remaining_ == 0) {
        state_ = State::kDataCr;
      }
      return {Status::kData, i + n, in.substr(i, n)};
    }
    if (!on_byte(in[i])) {
      return {Status::kError, i, {}};
    }
    ++i;
  }
  if (state_ == State::kDone) {
    return {Status::kDone, i, {}};
  }
  if (state_ == State::kError) {
    return {Status::kError, 0, {}};
  }
  return {Status::kNeedMore, i, {}};
}

bool ChunkedDecoder::fail(const char* why) {
  error_ = why;
  state_ = State::kError;
  return false;
}

bool ChunkedDecoder::on_byte(char c) {
  if (state_ <= State::kSizeLf) {
    return on_size_line_byte(c);
  }
  if (state_ == State::kDataCr) {
    state_ = State::kDataLf;
    return c == '\r' || fail("chunk data longer than its size");
  }
  if (state_ == State::kDataLf) {
    state_ = State::kSize;
    digits_ = 0;
    line_bytes_ = 0;
    remaining_ = 0;
    return c == '\n' || fail("missing CRLF after chunk data");
  }
  return on_trailer_byte(c);
}

bool ChunkedDecoder::on_size_line_byte(char c) {
  if (state_ == State::kSizeLf) {
    state_ = remaining_ == 0 ? State::kTrailerStart : State::kData;
    return c == '\n' || fail("bare CR in chunk size line");
  }
  if (c != '\r' && ++line_bytes_ > kMaxSizeLine) {
    return fail("chunk size line too long");
  }
  if (state_ != State::kSize) {
    return on_ext_byte(c);
  }
  int d = common::hex_value(c);
  if (d < 0) {
    return digits_ == 0 ? fail("invalid chunk size") : end_size_line(c);
  }
  if (++digits_ > 16 || remaining_ > (kMaxChunkSize - static_cast<uint64_t>(d)) / 16) {
    return fail("chunk size too large");
  }
  remaining_ = remaining_ * 16 + static_cast<uint64_t>(d);
  return true;
}

// After the size or a complete extension: ';' starts another extension, CR ends the line.
bool ChunkedDecoder::end_size_line(char c) {
  if (c == ';') {
    state_ = State::kExtName;
    return true;
  }
  if (c == '\r') {
    state_ = State::kSizeLf;
    return true;
  }
  if (c == '\n') {
    return fail("bare LF in chunk size line");
  }
  return fail(state_ == State::kSize ? "invalid chunk size" : "invalid chunk extension");
}

// chunk-ext = *( ";" name [ "=" ( token / quoted-string ) ] ), without the BWS RFC 9112 allows.
bool ChunkedDecoder::on_ext_byte(char c) {
  switch (state_) {
    case State::kExtName:
      state_ = State::kExtNameMore;
      return is_tchar(c) || fail("invalid chunk extension");
    case State::kExtNameMore:
      if (c == '=') {
        state_ = State::kExtValue;
        return true;
      }
      return is_tchar(c) || end_size_line(c);
    case State::kExtValue:
      state_ = c == '"' ? State::kExtQuoted : State::kExtToken;
      return c == '"' || is_tchar(c) || fail("invalid chunk extension");
    case State::kExtToken:
      return is_tchar(c) || end_size_line(c);
    case State::kExtQuoted:
      if (c == '"' || c == '\\') {
        state_ = c == '"' ? State::kExtQuotedEnd : State::kExtQuotedEscape;
        return true;
      }
      return is_quoted_char(c) || fail("invalid chunk extension");
    case State::kExtQuotedEscape:
      state_ = State::kExtQuoted;
      return is_quoted_char(c) || fail("invalid chunk extension");
    default:  // kExtQuotedEnd
      return end_size_line(c);
  }
}

// Trailer fields are checked like header fields, then dropped: a gateway does not forward them.
bool ChunkedDecoder::on_trailer_byte(char c) {
  if (++trailer_bytes_ > kMaxTrailerBytes) {
    return fail("trailer section too large");
  }
  switch (state_) {
    case State::kTrailerStart:
      state_ = c == '\r' ? State::kFinalLf : State::kTrailerName;
      return c == '\r' || is_tchar(c) || fail("invalid trailer field");
    case State::kTrailerName:
      if (c == ':') {
        state_ = State::kTrailerValue;
        return true;
      }
      return is_tchar(c) || fail("invalid trailer field");
    case State::kTrailerValue:
      if (c == '\r') {
        state_ = State::kTrailerLf;
        return true;
      }
      return !is_line_stop(c) || fail("invalid trailer field");
    case State::kTrailerLf:
      state_ = State::kTrailerStart;
      return c == '\n' || fail("bare CR in trailer section");
    default:  // kFinalLf
      state_ = State::kDone;
      return c == '\n' || fail("bare CR in trailer section");
  }
}

size_t format_chunk_size(uint64_t n, char out[20]) {
  static constexpr char kHex[] = "0123456789abcdef";
  char digits[16];
  size_t len = 0;
  do {
    digits[len++] = kHex[n & 15];
    n >>= 4;
  } while (n != 0);
  for (size_t i = 0; i < len; ++i) {
    out[i] = digits[len - 1 - i];
  }
  out[len] = '\r';
  out[len + 1] = '\n';
  return len + 2;
}

}  // namespace sluice::h1
