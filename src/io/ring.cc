#include "io/ring.h"

#include <linux/io_uring.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "common/log.h"
#include "io/event_loop.h"

namespace sluice::io {

thread_local Ring::EnterFaults Ring::faults_for_test;

namespace {

int sys_setup(unsigned entries, io_uring_params* p) {
  return static_cast<int>(syscall(__NR_io_uring_setup, entries, p));
}

int sys_enter(int fd, unsigned to_submit, unsigned min_complete, unsigned flags) {
  return static_cast<int>(
      syscall(__NR_io_uring_enter, fd, to_submit, min_complete, flags, nullptr, size_t{0}));
}

unsigned load_acquire(const unsigned* p) {
  return std::atomic_ref<unsigned>(*const_cast<unsigned*>(p)).load(std::memory_order_acquire);
}

void store_release(unsigned* p, unsigned v) {
  std::atomic_ref<unsigned>(*p).store(v, std::memory_order_release);
}

template <typename T>
T* at(void* base, uint32_t off) {
  return reinterpret_cast<T*>(static_cast<char*>(base) + off);
}

}  // namespace

void RingOp::cancel() {
  if (state_ == State::kQueued && ring_ != nullptr) {
    ring_->forget(slot_);
  }
  state_ = State::kIdle;
}

std::unique_ptr<Ring> Ring::create(unsigned entries, std::string* why) {
  io_uring_params p{};
  // SUBMIT_ALL: one failed call does not stop the rest of a submission (5.18).
  p.flags = IORING_SETUP_SUBMIT_ALL;
  int fd = sys_setup(entries, &p);
  if (fd < 0 && errno == EINVAL) {
    p = io_uring_params{};
    fd = sys_setup(entries, &p);
  }
  if (fd < 0) {
    *why = std::string("io_uring_setup: ") + strerror(errno);
    return nullptr;
  }
  std::unique_ptr<Ring> r(new Ring());
  r->fd_ = fd;
  r->sq_entries_ = p.sq_entries;
  r->sq_map_len_ = p.sq_off.array + p.sq_entries * sizeof(unsigned);
  r->cq_map_len_ = p.cq_off.cqes + p.cq_entries * sizeof(io_uring_cqe);
  bool single = (p.features & IORING_FEAT_SINGLE_MMAP) != 0;
  if (single) {
    r->sq_map_len_ = r->cq_map_len_ = std::max(r->sq_map_len_, r->cq_map_len_);
  }
  r->sq_map_ = mmap(nullptr, r->sq_map_len_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd,
                    IORING_OFF_SQ_RING);
  if (r->sq_map_ == MAP_FAILED) {
    r->sq_map_ = nullptr;
    *why = std::string("mmap of the io_uring submission ring: ") + strerror(errno);
    return nullptr;
  }
  if (single) {
    r->cq_map_ = r->sq_map_;
  } else {
    r->cq_map_ = mmap(nullptr, r->cq_map_len_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
                      fd, IORING_OFF_CQ_RING);
    if (r->cq_map_ == MAP_FAILED) {
      r->cq_map_ = nullptr;
      *why = std::string("mmap of the io_uring completion ring: ") + strerror(errno);
      return nullptr;
    }
  }
  r->sqes_map_len_ = p.sq_entries * sizeof(io_uring_sqe);
  r->sqes_map_ = mmap(nullptr, r->sqes_map_len_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
                      fd, IORING_OFF_SQES);
  if (r->sqes_map_ == MAP_FAILED) {
    r->sqes_map_ = nullptr;
    *why = std::string("mmap of the io_uring entries: ") + strerror(errno);
    return nullptr;
  }
  r->sqes_ = r->sqes_map_;
  r->sq_tail_ = at<unsigned>(r->sq_map_, p.sq_off.tail);
  r->sq_mask_ = *at<unsigned>(r->sq_map_, p.sq_off.ring_mask);
  r->sq_array_ = at<unsigned>(r->sq_map_, p.sq_off.array);
  r->cq_head_ = at<unsigned>(r->cq_map_, p.cq_off.head);
  r->cq_tail_ = at<unsigned>(r->cq_map_, p.cq_off.tail);
  r->cq_mask_ = *at<unsigned>(r->cq_map_, p.cq_off.ring_mask);
  r->cqes_ = at<void>(r->cq_map_, p.cq_off.cqes);

  // The probe: two reads with MSG_DONTWAIT on an empty socket and a write must all be
  // completed by the enter itself (-EAGAIN, -EAGAIN, 1 byte). A kernel that arms a poll
  // instead would leave them in flight, and the design above (buffers valid only until
  // run() returns) would not hold. The buffers are static: a read left in flight by such a
  // kernel has nowhere else to write when the ring is torn down.
  std::string probe_error = r->probe();
  if (!probe_error.empty()) {
    *why = probe_error;
    return nullptr;
  }
  r->stats_ = RingStats{};
  return r;
}

std::string Ring::probe() {
  static char rd[2];
  static char wr[1] = {'p'};
  static iovec iov{wr, 1};
  static msghdr msg{nullptr, 0, &iov, 1, nullptr, 0, 0};
  int p[2], q[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p) != 0) {
    return std::string("socketpair for the io_uring probe: ") + strerror(errno);
  }
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, q) != 0) {
    int e = errno;
    close(p[0]);
    close(p[1]);
    return std::string("socketpair for the io_uring probe: ") + strerror(e);
  }
  RingOp a, b, c;
  round_ = (round_ + 1) & 0x7fffffff;
  done_ = {Entry{&a, nullptr, p[0], false, &rd[0], 1, nullptr},
           Entry{&b, nullptr, p[0], false, &rd[1], 1, nullptr},
           Entry{&c, nullptr, q[0], true, nullptr, 0, &msg}};
  fill(0, 3);
  int r = enter(3, 0, 0);
  int enter_errno = errno;
  reap(0, 3);
  std::string error;
  if (r != 3) {
    error = r < 0 ? std::string("io_uring_enter: ") + strerror(enter_errno)
                  : "io_uring_enter submitted " + std::to_string(r) + " of 3 calls";
  } else if (!a.done() || !b.done() || !c.done()) {
    error = "this kernel does not complete MSG_DONTWAIT socket calls inline in io_uring_enter";
  } else if (a.take() != -EAGAIN || b.take() != -EAGAIN || c.take() != 1) {
    error = "unexpected results from the io_uring probe";
  }
  done_.clear();
  a.cancel();
  b.cancel();
  c.cancel();
  close(p[0]);
  close(p[1]);
  close(q[0]);
  close(q[1]);
  return error;
}

Ring::~Ring() {
  if (sqes_map_ != nullptr) {
    munmap(sqes_map_, sqes_map_len_);
  }
  if (cq_map_ != nullptr && cq_map_ != sq_map_) {
    munmap(cq_map_, cq_map_len_);
  }
  if (sq_map_ != nullptr) {
    munmap(sq_map_, sq_map_len_);
  }
  if (fd_ >= 0) {
    close(fd_);
  }
}

void Ring::push(const Entry& e) {
  e.op->state_ = RingOp::State::kQueued;
  e.op->ring_ = this;
  e.op->slot_ = static_cast<uint32_t>(queue_.size());
  queue_.push_back(e);
  ++live_;
}

void Ring::queue_recv(RingOp* op, IoHandler* h, int fd, void* buf, size_t len) {
  push(Entry{op, h, fd, false, buf, len, nullptr});
}

void Ring::queue_sendmsg(RingOp* op, IoHandler* h, int fd, const msghdr* msg) {
  push(Entry{op, h, fd, true, nullptr, 0, msg});
}

void Ring::forget(uint32_t slot) {
  if (slot < queue_.size() && queue_[slot].op != nullptr) {
    queue_[slot].op = nullptr;
    queue_[slot].handler = nullptr;
    --live_;
  }
}

void Ring::drive(IoHandler* h) { h->on_io(0); }

void Ring::perform() {
  done_.swap(queue_);
  queue_.clear();
  if (live_ != done_.size()) {
    std::erase_if(done_, [](const Entry& e) { return e.op == nullptr; });
  }
  live_ = 0;
  if (done_.size() == 1 || broken_) {
    for (Entry& e : done_) {
      perform_direct(e);
    }
    return;
  }
  for (size_t from = 0; from < done_.size(); from += sq_entries_) {
    size_t to = std::min(done_.size(), from + sq_entries_);
    if (broken_) {  // an earlier chunk broke the ring
      for (size_t i = from; i < to; ++i) {
        perform_direct(done_[i]);
      }
    } else {
      submit_chunk(from, to);
    }
  }
}

void Ring::perform_direct(Entry& e) {
  ++stats_.direct_calls;
  ssize_t n;
  do {
    n = e.send ? sendmsg(e.fd, e.msg, MSG_NOSIGNAL | MSG_DONTWAIT)
               : recv(e.fd, e.buf, e.len, MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  e.op->result_ = n < 0 ? -errno : static_cast<int>(n);
  e.op->state_ = RingOp::State::kDone;
}

int Ring::enter(unsigned to_submit, unsigned min_complete, unsigned flags) {
  ++stats_.enters;
  EnterFaults& f = faults_for_test;
  if (f.failures > 0 && f.ok_before == 0) {
    --f.failures;
    errno = f.err;
    return -1;
  }
  if (f.ok_before > 0) {
    --f.ok_before;
  }
  if (f.submit_at_most != 0) {
    to_submit = std::min(to_submit, f.submit_at_most);
  }
  return sys_enter(fd_, to_submit, min_complete, flags);
}

void Ring::fill(size_t from, size_t to) {
  auto* sqes = static_cast<io_uring_sqe*>(sqes_);
  unsigned tail = *sq_tail_;
  int nowait = dontwait_ ? MSG_DONTWAIT : 0;
  for (size_t i = from; i < to; ++i) {
    const Entry& e = done_[i];
    unsigned idx = tail & sq_mask_;
    io_uring_sqe& s = sqes[idx];
    std::memset(&s, 0, sizeof(s));
    s.fd = e.fd;
    s.user_data = (static_cast<uint64_t>(round_) << 32) | i;
    if (e.send) {
      s.opcode = IORING_OP_SENDMSG;
      s.addr = reinterpret_cast<uintptr_t>(e.msg);
      s.len = 1;
      s.msg_flags = static_cast<uint32_t>(MSG_NOSIGNAL | nowait);
    } else {
      s.opcode = IORING_OP_RECV;
      s.addr = reinterpret_cast<uintptr_t>(e.buf);
      s.len = static_cast<uint32_t>(std::min<size_t>(e.len, UINT32_MAX));
      s.msg_flags = static_cast<uint32_t>(nowait);
    }
    sq_array_[idx] = idx;
    ++tail;
  }
  store_release(sq_tail_, tail);
}

unsigned Ring::reap(size_t from, size_t to) {
  auto* cqes = static_cast<io_uring_cqe*>(cqes_);
  unsigned reaped = 0;
  unsigned head = *cq_head_;
  unsigned ctail = load_acquire(cq_tail_);
  while (head != ctail) {
    const io_uring_cqe& c = cqes[head & cq_mask_];
    uint64_t tag = c.user_data;
    size_t i = static_cast<size_t>(tag & 0xffffffffu);
    // Cancel requests (kCancelTag) and anything of another round are only counted off.
    if ((tag & kCancelTag) == 0 && (tag >> 32) == round_ && i >= from && i < to &&
        done_[i].op->state_ != RingOp::State::kDone) {
      done_[i].op->result_ = c.res;
      done_[i].op->state_ = RingOp::State::kDone;
      ++reaped;
    }
    ++head;
  }
  store_release(cq_head_, head);
  return reaped;
}

void Ring::set_broken(const std::string& why) {
  if (!broken_) {
    broken_ = true;
    SLUICE_LOG(kError, "io_uring: {}; plain system calls from now on", why);
  }
}

void Ring::submit_chunk(size_t from, size_t to) {
  round_ = (round_ + 1) & 0x7fffffff;
  unsigned first = *sq_tail_;  // the chunk's entries are first, first + 1, ... in the ring
  fill(from, to);
  auto want = static_cast<unsigned>(to - from);
  unsigned submitted = 0;
  unsigned reaped = 0;
  int transient = 0;
  while (submitted < want) {
    int r = enter(want - submitted, 0, 0);
    if (r > 0) {
      submitted += static_cast<unsigned>(r);
      continue;
    }
    if (r < 0 && (errno == EINTR || errno == EAGAIN || errno == EBUSY) && ++transient <= 8) {
      reaped += reap(from, to);  // the kernel is short of requests or completion room for now
      continue;
    }
    // Entries left in the submission ring would be picked up by a later enter, with this
    // round's pointers: no later enter is made.
    set_broken(r == 0 ? std::string("io_uring_enter submitted nothing")
                      : std::string("io_uring_enter: ") + strerror(errno));
    break;
  }
  reaped += reap(from, to);
  stats_.batched_calls += reaped;
  if (reaped < submitted) {
    // A call the kernel did not complete inline (create() checked that it does) would still
    // write into its buffer: cancel each, and wait for the cancellations, which complete at
    // once for a call that waits for its socket.
    cancel_in_flight(from, to, first, submitted);
  }
  for (size_t i = from; i < to; ++i) {
    RingOp* op = done_[i].op;
    if (op->state_ != RingOp::State::kDone) {
      perform_direct(done_[i]);  // not submitted
    } else if (i < from + submitted && (op->result_ == -ECANCELED || op->result_ == -EINTR) &&
               broken_) {
      perform_direct(done_[i]);  // stopped by the cancellation before it moved a byte
    }
  }
}

void Ring::cancel_in_flight(size_t from, size_t to, unsigned first, unsigned submitted) {
  set_broken("a call was not completed inline");
  auto* sqes = static_cast<io_uring_sqe*>(sqes_);
  // The entries not submitted are still in the ring, ahead of anything written now: they
  // become no-ops (made the plain way by the caller), so the next enter cannot run them.
  unsigned pending = static_cast<unsigned>(to - from) - submitted;
  for (unsigned k = 0; k < pending; ++k) {
    io_uring_sqe& s = sqes[(first + submitted + k) & sq_mask_];
    std::memset(&s, 0, sizeof(s));
    s.opcode = IORING_OP_NOP;
    s.user_data = kCancelTag;
  }
  // One cancellation per submitted call still in flight; with the no-ops they fit the ring
  // (pending + in flight <= the chunk <= its entries).
  unsigned tail = *sq_tail_;
  unsigned cancels = 0;
  for (size_t i = from; i < from + submitted; ++i) {
    if (done_[i].op->state_ == RingOp::State::kDone) {
      continue;
    }
    unsigned idx = tail & sq_mask_;
    io_uring_sqe& s = sqes[idx];
    std::memset(&s, 0, sizeof(s));
    s.opcode = IORING_OP_ASYNC_CANCEL;
    s.fd = -1;
    s.addr = (static_cast<uint64_t>(round_) << 32) | i;
    s.user_data = kCancelTag;
    sq_array_[idx] = idx;
    ++tail;
    ++cancels;
  }
  store_release(sq_tail_, tail);
  auto in_flight = [&] {
    for (size_t i = from; i < from + submitted; ++i) {
      if (done_[i].op->state_ != RingOp::State::kDone) {
        return true;
      }
    }
    return false;
  };
  // Submit without waiting, then look for the completions: bounded to about a second, and
  // never a wait that cannot end.
  unsigned to_submit = pending + cancels;
  for (int tries = 0; in_flight() && tries < 1000; ++tries) {
    if (to_submit > 0) {
      int r = sys_enter(fd_, to_submit, 0, 0);
      if (r > 0) {
        to_submit -= std::min(to_submit, static_cast<unsigned>(r));
      }
    }
    reap(from, to);
    if (in_flight()) {
      timespec ms{0, 1000000};
      nanosleep(&ms, nullptr);
    }
  }
  if (in_flight()) {
    // The kernel may still write into these calls' buffers, which their connections would
    // hand back to the worker's free lists: stop here rather than corrupt memory.
    SLUICE_LOG(kCrit, "io_uring: calls still in flight a second after cancellation; aborting");
    std::abort();
  }
}

}  // namespace sluice::io
