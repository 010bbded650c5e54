#include "proxy/ws_frames.h"

#include <algorithm>

namespace sluice::proxy {

namespace {

constexpr uint8_t kFinClose = 0x88;  // FIN, opcode 0x8 (Close)
constexpr uint8_t kMaskBit = 0x80;

}  // namespace

bool WsFrameScanner::take_header(std::string_view data, size_t* used) {
  size_t i = 0;
  while (have_ < need_ && i < data.size()) {
    hdr_[have_++] = static_cast<uint8_t>(data[i++]);
    if (have_ == 2) {
      uint8_t len7 = hdr_[1] & 0x7f;
      need_ = 2 + (len7 == 126 ? 2 : len7 == 127 ? 8 : 0) + ((hdr_[1] & kMaskBit) ? 4 : 0);
    }
  }
  *used = i;
  if (have_ < need_) {
    return false;
  }
  uint8_t len7 = hdr_[1] & 0x7f;
  if (len7 < 126) {
    left_ = len7;
  } else if (len7 == 126) {
    left_ = (uint64_t{hdr_[2]} << 8) | hdr_[3];
  } else {
    left_ = 0;
    for (int b = 2; b < 10; ++b) {
      left_ = (left_ << 8) | hdr_[b];
    }
    broken_ = (left_ >> 63) != 0;  // 5.2: "the most significant bit MUST be 0"
  }
  have_ = 0;
  need_ = 2;
  return true;
}

size_t WsFrameScanner::advance(std::string_view data, bool stop_at_boundary) {
  if (stop_at_boundary && at_boundary()) {
    return 0;
  }
  size_t at = 0;
  while (at < data.size() && !broken_) {
    if (in_payload_) {
      uint64_t n = std::min<uint64_t>(left_, data.size() - at);
      at += static_cast<size_t>(n);
      left_ -= n;
      if (left_ == 0) {
        in_payload_ = false;
        if (stop_at_boundary) {
          return at;
        }
      }
      continue;
    }
    size_t used = 0;
    bool complete = take_header(data.substr(at), &used);
    at += used;
    if (!complete || broken_) {
      continue;
    }
    if (left_ != 0) {
      in_payload_ = true;
    } else if (stop_at_boundary) {
      return at;  // a frame with no payload (an empty ping or close) ends with its header
    }
  }
  return broken_ ? data.size() : at;
}

void ws_close_frame_to_client(uint16_t code, char* out) {
  out[0] = static_cast<char>(kFinClose);
  out[1] = 2;  // payload: the status code, no reason
  out[2] = static_cast<char>(code >> 8);
  out[3] = static_cast<char>(code & 0xff);
}

void ws_close_frame_to_server(uint16_t code, const uint8_t mask[4], char* out) {
  out[0] = static_cast<char>(kFinClose);
  out[1] = static_cast<char>(kMaskBit | 2);
  for (int i = 0; i < 4; ++i) {
    out[2 + i] = static_cast<char>(mask[i]);
  }
  out[6] = static_cast<char>((code >> 8) ^ mask[0]);
  out[7] = static_cast<char>((code & 0xff) ^ mask[1]);
}

}  // namespace sluice::proxy
