// WsFrameScanner: frame boundaries from the headers alone (every length encoding, masked and
// not, empty frames), fed whole, byte by byte and at every split; stopping at the next
// boundary; a header no peer sends. The Close frames a draining gateway writes.

#include "proxy/ws_frames.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sluice::proxy {
namespace {

// A frame: `opcode` with FIN, `payload` bytes of 'p', masked with a zero key when `masked`.
std::string frame(uint8_t opcode, size_t payload, bool masked, bool fin = true) {
  std::string f;
  f.push_back(static_cast<char>((fin ? 0x80 : 0) | opcode));
  uint8_t m = masked ? 0x80 : 0;
  if (payload < 126) {
    f.push_back(static_cast<char>(m | payload));
  } else if (payload <= 0xffff) {
    f.push_back(static_cast<char>(m | 126));
    f.push_back(static_cast<char>(payload >> 8));
    f.push_back(static_cast<char>(payload & 0xff));
  } else {
    f.push_back(static_cast<char>(m | 127));
    for (int shift = 56; shift >= 0; shift -= 8) {
      f.push_back(static_cast<char>((static_cast<uint64_t>(payload) >> shift) & 0xff));
    }
  }
  if (masked) {
    f.append(4, '\0');
  }
  f.append(payload, 'p');
  return f;
}

// The stream used below, and the offsets where each of its frames ends.
struct Stream {
  std::string bytes;
  std::vector<size_t> ends;
  void add(const std::string& f) {
    bytes += f;
    ends.push_back(bytes.size());
  }
};

Stream sample() {
  Stream s;
  s.add(frame(0x1, 5, false));          // short text
  s.add(frame(0x2, 0, true));           // empty binary, masked
  s.add(frame(0x1, 300, true, false));  // 16-bit length, first fragment
  s.add(frame(0x9, 2, true));           // a ping between the fragments
  s.add(frame(0x0, 70000, false));      // 64-bit length, last fragment
  s.add(frame(0x8, 2, false));          // close
  return s;
}

TEST(WsFrameScanner, FollowsBoundariesFedWholeByteByByteAndAtEverySplit) {
  Stream s = sample();
  {
    WsFrameScanner sc;
    EXPECT_TRUE(sc.at_boundary());
    EXPECT_EQ(sc.advance(s.bytes, false), s.bytes.size());
    EXPECT_TRUE(sc.at_boundary());
  }
  {
    WsFrameScanner sc;
    size_t next_end = 0;
    for (size_t i = 0; i < s.bytes.size(); ++i) {
      ASSERT_EQ(sc.advance(std::string_view(s.bytes).substr(i, 1), false), 1u);
      bool is_end = i + 1 == s.ends[next_end];
      EXPECT_EQ(sc.at_boundary(), is_end) << "after byte " << i;
      next_end += is_end;
    }
  }
  for (size_t cut = 0; cut <= s.bytes.size(); cut += 97) {
    WsFrameScanner sc;
    std::string_view all = s.bytes;
    ASSERT_EQ(sc.advance(all.substr(0, cut), false), cut);
    ASSERT_EQ(sc.advance(all.substr(cut), false), all.size() - cut);
    EXPECT_TRUE(sc.at_boundary()) << "split at " << cut;
  }
}

TEST(WsFrameScanner, StopsAtTheNextBoundary) {
  Stream s = sample();
  std::string_view all = s.bytes;
  WsFrameScanner sc;
  EXPECT_EQ(sc.advance(all, true), 0u) << "between frames already: nothing more passes";
  // Three bytes into the first frame, then stop at its end; the empty frame's end next.
  ASSERT_EQ(sc.advance(all.substr(0, 3), false), 3u);
  EXPECT_EQ(sc.advance(all.substr(3), true), s.ends[0] - 3);
  EXPECT_TRUE(sc.at_boundary());
  EXPECT_EQ(sc.advance(all.substr(s.ends[0], 1), false), 1u);
  EXPECT_EQ(sc.advance(all.substr(s.ends[0] + 1), true), s.ends[1] - s.ends[0] - 1);
  // A frame cut in the middle of its extended length: all of what came passes, no boundary.
  std::string_view third = all.substr(s.ends[1], 3);
  EXPECT_EQ(sc.advance(third, false), 3u);
  EXPECT_FALSE(sc.at_boundary());
  EXPECT_EQ(sc.advance(all.substr(s.ends[1] + 3), true), s.ends[2] - s.ends[1] - 3);
  EXPECT_TRUE(sc.at_boundary());
}

TEST(WsFrameScanner, ALengthWithItsTopBitSetIsNotFollowed) {
  std::string bad = "\x82\x7f\x80";
  bad.append(7, '\0');
  bad.append("more bytes");
  WsFrameScanner sc;
  EXPECT_EQ(sc.advance(bad, false), bad.size());
  EXPECT_TRUE(sc.broken());
  EXPECT_FALSE(sc.at_boundary());
  EXPECT_EQ(sc.advance(frame(0x1, 1, false), true), 3u) << "boundaries are no longer known";
  EXPECT_FALSE(sc.at_boundary());
}

TEST(WsCloseFrames, GoingAwayToEachSide) {
  char c[kWsCloseFrameToClientLen];
  ws_close_frame_to_client(kWsGoingAway, c);
  EXPECT_EQ(std::string(c, sizeof(c)), std::string("\x88\x02\x03\xe9", 4));
  const uint8_t mask[4] = {0x11, 0x22, 0x33, 0x44};
  char s[kWsCloseFrameToServerLen];
  ws_close_frame_to_server(4001, mask, s);
  // 4001 = 0x0fa1, each byte XORed with the key's first two.
  EXPECT_EQ(std::string(s, sizeof(s)),
            std::string("\x88\x82\x11\x22\x33\x44", 6) + char(0x0f ^ 0x11) + char(0xa1 ^ 0x22));
  WsFrameScanner sc;
  EXPECT_EQ(sc.advance({s, 5}, false), 5u);
  EXPECT_EQ(sc.advance({s + 5, 3}, true), 3u) << "the frame reads as one frame";
  EXPECT_TRUE(sc.at_boundary());
}

}  // namespace
}  // namespace sluice::proxy
