#pragma once
// Socket reads and writes batched through io_uring, without changing the readiness model.
//
// The worker stays an edge-triggered epoll loop. What changes is when a socket call runs:
// instead of calling recv()/sendmsg() at once, a connection queues the call here and waits;
// after the loop has dispatched its batch of events, Ring::run() performs every queued call
// with one io_uring_enter(), then drives the connections again with their results. A
// request costs four socket calls (client read, upstream write, upstream read, client write);
// on this kind of machine each system call costs about a microsecond on entry and exit alone,
// so one enter per batch instead of one per call is worth having (docs/performance.md).
//
// Every call is issued with MSG_DONTWAIT, which makes io_uring complete it inline during
// the enter, -EAGAIN included, instead of arming a poll: after run() returns nothing is in
// flight, so the buffers a call names need to live only until then, and cancelling a queued
// call is just forgetting it. create() checks that behaviour on the running kernel before
// the ring is used. A round of a single call goes through a plain system call, which is
// cheaper than io_uring for one.

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sluice::io {

class IoHandler;
class Ring;

// One queued call's slot, kept by the connection that queued it. kDone holds the result
// (bytes, or -errno) until the owner takes it.
// Thread: worker
class RingOp {
 public:
  RingOp() = default;
  ~RingOp() { cancel(); }
  RingOp(const RingOp&) = delete;
  RingOp& operator=(const RingOp&) = delete;

  bool idle() const { return state_ == State::kIdle; }
  bool queued() const { return state_ == State::kQueued; }
  bool done() const { return state_ == State::kDone; }
  // The result of a finished call; the slot is idle afterwards.
  int take() {
    state_ = State::kIdle;
    return result_;
  }
  // Forgets a queued call (it will not run) or an untaken result.
  void cancel();

 private:
  friend class Ring;
  enum class State : uint8_t { kIdle, kQueued, kDone };
  State state_ = State::kIdle;
  int result_ = 0;
  uint32_t slot_ = 0;  // index in the ring's queue while kQueued
  Ring* ring_ = nullptr;
};

// Counts for the operator and for tests: how the socket calls were made.
struct RingStats {
  uint64_t batched_calls = 0;  // calls made through io_uring
  uint64_t enters = 0;         // io_uring_enter() system calls for them
  uint64_t direct_calls = 0;   // rounds of one call, made as a plain system call
};

// Thread: worker
class Ring {
 public:
  // A ring of `entries` submission slots, or null with `*why` set when io_uring cannot be
  // used here: not built into the kernel or the emulator (qemu-user), forbidden by seccomp
  // or kernel.io_uring_disabled, or a kernel that does not complete MSG_DONTWAIT calls
  // inline.
  static std::unique_ptr<Ring> create(unsigned entries, std::string* why);
  ~Ring();
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  // Queues recv(fd, buf, len, MSG_DONTWAIT). `buf` must stay valid until run() returns; `h`
  // is driven (on_io(0)) once the result is in `op`. `op` must be idle.
  void queue_recv(RingOp* op, IoHandler* h, int fd, void* buf, size_t len);
  // Queues sendmsg(fd, msg, MSG_NOSIGNAL | MSG_DONTWAIT); `msg` and the memory it names must
  // stay valid until run() returns.
  void queue_sendmsg(RingOp* op, IoHandler* h, int fd, const msghdr* msg);
  bool empty() const { return live_ == 0; }

  // Performs every queued call, then drives each caller (on_io(0)) for which `alive` says
  // yes; repeats while those calls queue more. Never blocks waiting for a socket.
  template <typename Alive>
  void run(Alive&& alive) {
    while (live_ != 0) {
      perform();
      for (const Entry& e : done_) {
        if (e.handler != nullptr && alive(e.handler)) {
          drive(e.handler);
        }
      }
      done_.clear();
    }
  }

  const RingStats& stats() const { return stats_; }
  // After an io_uring_enter failure, or a call the kernel did not complete inline, the ring
  // makes every call as a plain system call (logged once).
  bool broken() const { return broken_; }

  // Tests: faults injected into this thread's io_uring_enter calls. After `ok_before`
  // enters, the next `failures` fail with `err`; `submit_at_most` (0: no cap) limits what one
  // enter submits, as a kernel short of requests does.
  struct EnterFaults {
    int ok_before = 0;
    int failures = 0;
    int err = 0;
    unsigned submit_at_most = 0;
  };
  static thread_local EnterFaults faults_for_test;
  // Tests: queue calls without MSG_DONTWAIT, as a kernel that does not honour it would
  // behave (the ring must notice, cancel them and fall back).
  void set_dontwait_for_test(bool on) { dontwait_ = on; }

 private:
  friend class RingOp;
  struct Entry {
    RingOp* op;
    IoHandler* handler;
    int fd;
    bool send;
    void* buf;
    size_t len;
    const msghdr* msg;
  };
  static constexpr uint64_t kCancelTag = uint64_t{1} << 63;
  Ring() = default;
  // Empty when the running kernel completes MSG_DONTWAIT calls inline; else why not.
  std::string probe();
  void push(const Entry& e);
  void forget(uint32_t slot);
  // Runs the queued calls (moved to done_), each op marked kDone with its result.
  void perform();
  void perform_direct(Entry& e);
  int enter(unsigned to_submit, unsigned min_complete, unsigned flags);
  // Writes submission entries for done_[from, to) and publishes them.
  void fill(size_t from, size_t to);
  // Takes the completions posted so far for this round's done_[from, to).
  unsigned reap(size_t from, size_t to);
  // Submits done_[from, to), reaps their completions, makes the rest the plain way.
  void submit_chunk(size_t from, size_t to);
  // After a submission that left calls in flight: the entries [first + submitted, ...) not
  // yet submitted become no-ops, the calls in flight are cancelled and waited for.
  void cancel_in_flight(size_t from, size_t to, unsigned first, unsigned submitted);
  void set_broken(const std::string& why);
  static void drive(IoHandler* h);

  int fd_ = -1;
  unsigned sq_entries_ = 0;
  void* sq_map_ = nullptr;
  size_t sq_map_len_ = 0;
  void* cq_map_ = nullptr;  // == sq_map_ with IORING_FEAT_SINGLE_MMAP
  size_t cq_map_len_ = 0;
  void* sqes_map_ = nullptr;
  size_t sqes_map_len_ = 0;
  unsigned* sq_tail_ = nullptr;
  unsigned sq_mask_ = 0;
  unsigned* sq_array_ = nullptr;
  unsigned* cq_head_ = nullptr;
  unsigned* cq_tail_ = nullptr;
  unsigned cq_mask_ = 0;
  void* cqes_ = nullptr;
  void* sqes_ = nullptr;

  std::vector<Entry> queue_;  // queued calls; a forgotten one has op == nullptr
  size_t live_ = 0;           // entries of queue_ not forgotten
  std::vector<Entry> done_;   // the round being performed
  uint32_t round_ = 0;        // in each entry's user_data, so a stale completion is ignored
  bool broken_ = false;
  bool dontwait_ = true;
  RingStats stats_;
};

}  // namespace sluice::io
