#pragma once
// The byte tunnel an upgraded connection becomes (a 101 Switching Protocols: WebSocket): what
// one side sends is written to the other, both ways at once, through the two connections'
// own transports (plain or TLS) and read buffers. Each direction reads only once the bytes it
// read before were all written, so a side that does not read stops the other side from
// being read (the kernel's windows then push back on the sender) and memory stays at the two
// read buffers. A side that closes its sending half has that passed on as a half-close of the
// other; the tunnel is done when both directions are. A draining gateway may close it
// politely: a WebSocket Close frame (1001, Going Away) to each side at the next frame
// boundary, then a half-close.
//
// It knows no timers and no owner: whoever drives it calls step() on every event of either
// connection and applies its own timeouts (activity() tells whether bytes moved).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "io/buffer.h"
#include "io/outbox.h"
#include "io/transport.h"
#include "proxy/ws_frames.h"

namespace sluice::proxy {

// One side of a tunnel: a connection's byte stream and the buffer its reads fill, which may
// already hold bytes that came before the tunnel began (they are passed on first). Both stay
// owned by the connection and must outlive the tunnel.
struct TunnelEnd {
  io::Transport* stream = nullptr;
  io::Buffer* in = nullptr;
  size_t max_buffer = 0;  // what a read may grow `in` to
};

// Thread: worker
class Tunnel {
 public:
  enum class State : uint8_t {
    kOpen,    // bytes may still move: step() again on the next event
    kDone,    // both sides closed their sending halves and all they sent was passed on
    kFailed,  // a side reset or a write failed (error() says which): close both now
  };

  // `websocket`: the connection was upgraded to WebSocket, so close_politely() can frame.
  Tunnel(TunnelEnd client, TunnelEnd upstream, bool websocket);
  Tunnel(const Tunnel&) = delete;
  Tunnel& operator=(const Tunnel&) = delete;

  // Moves what can be moved in both directions without waiting.
  State step();
  // The drain: in each direction still open, lets the frame in flight finish, then sends a
  // Close frame (1001) and half-closes; what that side's peer sends from then on (its own
  // Close answering ours) is read and dropped. A tunnel that is not WebSocket, or whose frames
  // could not be followed, is left as it is (its owner closes it at its deadline).
  void close_politely();
  // Counts reads and writes made so far: an owner's idle timeout restarts when it changes.
  uint64_t activity() const { return activity_; }
  uint64_t to_upstream() const { return up_.moved; }
  uint64_t to_client() const { return down_.moved; }
  std::string_view error() const { return error_; }

 private:
  // One direction: bytes read from `src` into `buf`, then written to `dst`.
  struct Pipe {
    Pipe(TunnelEnd from, io::Transport* to)
        : src(from.stream), buf(from.in), max(from.max_buffer), dst(to) {}
    io::Transport* src;
    io::Buffer* buf;
    size_t max;
    io::Transport* dst;
    io::Outbox out;
    // A write is under way: `out` was handed bytes that dst has not all taken. (`out` alone
    // cannot tell: a TLS transport takes the bytes into its records before they are sent.)
    bool writing = false;
    size_t inflight = 0;  // bytes of buf handed to `out`
    uint64_t moved = 0;   // bytes written to dst (our Close frame not counted)
    bool eof = false;     // src closed its sending half
    bool shut = false;    // dst's sending half was closed
    bool ended = false;   // nothing more to do in this direction
    // The polite close: pass bytes up to the next frame boundary, then the Close frame.
    bool closing = false;
    bool close_queued = false;  // the Close frame is in `out`
    bool dropping = false;      // the Close frame went out: src's bytes are dropped
    WsFrameScanner frames;
    char close_frame[kWsCloseFrameToServerLen];
    size_t close_len = 0;
  };
  enum class Flow : uint8_t { kWait, kDone, kFailed };

  Flow pump(Pipe& p);
  // Writes what `p.out` holds; kDone when it is all out.
  Flow write_out(Pipe& p);
  // Hands `p.dst` the next bytes: the Close frame when it is due, else buffered bytes (up to a
  // frame boundary while closing). False when there was nothing to hand over.
  bool queue_next(Pipe& p);
  void fail(const char* what, int err);

  Pipe up_;    // client -> upstream
  Pipe down_;  // upstream -> client
  bool websocket_;
  State state_ = State::kOpen;
  uint64_t activity_ = 0;
  std::string error_;
};

}  // namespace sluice::proxy
