#pragma once
// The pure parts of the HTTP/2 downstream, kept apart so they are tested without sockets:
// telling an h2c connection from an HTTP/1.1 one by its first bytes, and the token buckets
// that cap how fast a client may send the frames that cost a server work but the client
// nothing (RST_STREAM, PING, SETTINGS, empty DATA).

#include <algorithm>
#include <cstdint>
#include <string_view>

namespace sluice::server {

// RFC 9113 3.4: the client connection preface a prior-knowledge h2c client starts with.
inline constexpr std::string_view kH2Preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

enum class Preface : uint8_t {
  kHttp2,     // the whole preface is there
  kHttp1,     // the bytes differ from it: an HTTP/1.x request (or garbage its parser rejects)
  kNeedMore,  // what came is a proper prefix of the preface
};

// Decides from the first bytes of a connection. An HTTP/1.1 request line can never start
// with the 24 preface bytes ("PRI" is no method nginx serves), so the first differing byte
// settles it and an HTTP/1.1 client is never kept waiting for bytes it will not send.
inline Preface detect_preface(std::string_view first) {
  size_t n = std::min(first.size(), kH2Preface.size());
  if (first.substr(0, n) != kH2Preface.substr(0, n)) {
    return Preface::kHttp1;
  }
  return n == kH2Preface.size() ? Preface::kHttp2 : Preface::kNeedMore;
}

// A token bucket: `burst` tokens at first and at most, `rate` more per second. Integer
// arithmetic in thousandths of a token, so no drift and no floating point on the data path.
// Thread: worker
class TokenBucket {
 public:
  TokenBucket(uint32_t burst, uint32_t rate)
      : cap_(uint64_t{burst} * 1000), rate_(rate), milli_(cap_) {}
  // Spends one token; false when none is left (the caller's limit is exceeded).
  bool take(uint64_t now_ms) {
    if (last_ms_ != 0 && now_ms > last_ms_) {
      milli_ = std::min(cap_, milli_ + (now_ms - last_ms_) * rate_);
    }
    last_ms_ = std::max(last_ms_, now_ms);
    if (milli_ < 1000) {
      return false;
    }
    milli_ -= 1000;
    return true;
  }

 private:
  uint64_t cap_;
  uint64_t rate_;  // tokens per second = thousandths per millisecond
  uint64_t milli_;
  uint64_t last_ms_ = 0;
};

// sluice.http2 in config.yaml: what an HTTP/2 connection announces and enforces.
// Thread: any (immutable, inside Settings)
struct H2Settings {
  uint32_t max_concurrent_streams = 128;  // SETTINGS_MAX_CONCURRENT_STREAMS
  uint32_t initial_window_size = 65535;   // SETTINGS_INITIAL_WINDOW_SIZE: request body per stream
  // The connection's receive window: request body bytes buffered for all streams together.
  uint32_t connection_window_size = 1 << 20;
  uint32_t max_frame_size = 16384;        // SETTINGS_MAX_FRAME_SIZE
  uint32_t max_header_list_size = 32768;  // SETTINGS_MAX_HEADER_LIST_SIZE; beyond: 431
  uint32_t max_requests = 10000;          // streams per connection, then a graceful GOAWAY
  uint32_t max_continuations = 8;         // CONTINUATION frames after one HEADERS
  uint32_t reset_burst = 200;             // client RST_STREAM frames: burst, then per second
  uint32_t reset_rate = 50;
  uint32_t control_burst = 100;  // PING, SETTINGS, empty DATA: burst, then per second
  uint32_t control_rate = 20;
  bool operator==(const H2Settings&) const = default;
};

}  // namespace sluice::server
