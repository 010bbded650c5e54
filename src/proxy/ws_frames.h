#pragma once
// WebSocket frame boundaries in one direction of a tunnel, from the frame headers alone
// (RFC 6455 5.2: FIN/RSV/opcode byte, MASK and payload length, the extended length, the
// masking key); payloads are counted and skipped, never read. A draining gateway uses it to
// put its own Close frame between two frames rather than inside one (control frames may come
// between the fragments of a message, 5.4, so any frame boundary will do).

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace sluice::proxy {

// Thread: worker
class WsFrameScanner {
 public:
  // Steps over `data`, the next bytes of the stream. With `stop_at_boundary`, stops just after
  // the first frame that ends in it (at once when already between frames). Returns the bytes
  // stepped over.
  size_t advance(std::string_view data, bool stop_at_boundary);
  // Between two frames: every frame seen so far is complete.
  bool at_boundary() const { return !broken_ && !in_payload_ && have_ == 0; }
  // A header no WebSocket peer sends (a 64-bit length with its top bit set): boundaries are no
  // longer known, and at_boundary() stays false.
  bool broken() const { return broken_; }

 private:
  // Takes header bytes; true when the header is complete.
  bool take_header(std::string_view data, size_t* used);

  uint8_t hdr_[14];  // the header being read: 2 bytes, extended length, masking key
  size_t have_ = 0;  // header bytes read so far
  size_t need_ = 2;  // header bytes this frame has (known once the first two are read)
  bool in_payload_ = false;
  uint64_t left_ = 0;  // payload bytes still to come
  bool broken_ = false;
};

// The Close frames a draining gateway sends (status 1001, Going Away, without a reason): to a
// client unmasked, to a server masked with a key from the kernel's random source (5.3: a
// client's frames are masked with an unpredictable key).
inline constexpr uint16_t kWsGoingAway = 1001;
inline constexpr size_t kWsCloseFrameToClientLen = 4;
inline constexpr size_t kWsCloseFrameToServerLen = 8;
// Writes the frame for a client into `out` (kWsCloseFrameToClientLen bytes).
void ws_close_frame_to_client(uint16_t code, char* out);
// Writes the frame for a server into `out` (kWsCloseFrameToServerLen bytes), masked with
// `mask`.
void ws_close_frame_to_server(uint16_t code, const uint8_t mask[4], char* out);

}  // namespace sluice::proxy
