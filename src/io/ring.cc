#include "io/ring.h"

#include <linux/io_uring.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "io/event_loop.h"

namespace sluice::io {

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

  // The probe: two reads with MSG_DONTWAIT on an empty socket must come back -EAGAIN from
  // the enter itself. A kernel that arms a poll instead would leave them in flight, and the
  // design above (buffers valid only until run() returns) would not hold.
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    *why = std::string("socketpair for the io_uring probe: ") + strerror(errno);
    return nullptr;
  }
  char byte[2];
  RingOp a, b;
  r->queue_recv(&a, nullptr, sv[0], &byte[0], 1);
  r->queue_recv(&b, nullptr, sv[0], &byte[1], 1);
  r->perform();
  bool inline_eagain = a.done() && a.take() == -EAGAIN && b.done() && b.take() == -EAGAIN;
  r->done_.clear();
  close(sv[0]);
  close(sv[1]);
  if (!inline_eagain) {
    *why = "this kernel does not complete MSG_DONTWAIT reads inline in io_uring_enter";
    return nullptr;
  }
  r->stats_ = RingStats{};
  return r;
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
  done_.clear();
  for (const Entry& e : queue_) {
    if (e.op != nullptr) {
      done_.push_back(e);
    }
  }
  queue_.clear();
  live_ = 0;
  if (done_.size() == 1) {
    perform_direct(done_[0]);
    return;
  }
  for (size_t from = 0; from < done_.size(); from += sq_entries_) {
    submit_chunk(from, std::min(done_.size(), from + sq_entries_));
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

void Ring::submit_chunk(size_t from, size_t to) {
  auto* sqes = static_cast<io_uring_sqe*>(sqes_);
  unsigned tail = *sq_tail_;
  for (size_t i = from; i < to; ++i) {
    const Entry& e = done_[i];
    unsigned idx = tail & sq_mask_;
    io_uring_sqe& s = sqes[idx];
    std::memset(&s, 0, sizeof(s));
    s.fd = e.fd;
    s.user_data = i;
    if (e.send) {
      s.opcode = IORING_OP_SENDMSG;
      s.addr = reinterpret_cast<uintptr_t>(e.msg);
      s.len = 1;
      s.msg_flags = MSG_NOSIGNAL | MSG_DONTWAIT;
    } else {
      s.opcode = IORING_OP_RECV;
      s.addr = reinterpret_cast<uintptr_t>(e.buf);
      s.len = static_cast<uint32_t>(std::min<size_t>(e.len, UINT32_MAX));
      s.msg_flags = MSG_DONTWAIT;
    }
    sq_array_[idx] = idx;
    ++tail;
  }
  store_release(sq_tail_, tail);
  auto want = static_cast<unsigned>(to - from);
  unsigned submitted = 0;
  unsigned reaped = 0;
  auto* cqes = static_cast<io_uring_cqe*>(cqes_);
  while (reaped < want) {
    // Submit what is left; once all is submitted, wait for completions still missing (none
    // expected: the calls complete inline, as create() checked).
    unsigned to_submit = want - submitted;
    unsigned flags = to_submit == 0 ? IORING_ENTER_GETEVENTS : 0;
    unsigned min_complete = to_submit == 0 ? 1 : 0;
    int r = sys_enter(fd_, to_submit, min_complete, flags);
    ++stats_.enters;
    if (r < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EBUSY) {
        // EAGAIN/EBUSY: the kernel is short of resources or the completion queue is full;
        // reaping below makes room.
      } else if (to_submit != 0) {
        // The ring is broken: make the calls not submitted the plain way.
        for (size_t i = from + submitted; i < to; ++i) {
          perform_direct(done_[i]);
        }
        want = submitted;
      } else {
        // Cannot wait for calls already submitted (not seen with MSG_DONTWAIT): report them
        // failed rather than spin.
        for (size_t i = from; i < to; ++i) {
          if (!done_[i].op->done()) {
            done_[i].op->result_ = -EIO;
            done_[i].op->state_ = RingOp::State::kDone;
          }
        }
        break;
      }
    } else {
      submitted += static_cast<unsigned>(r);
    }
    unsigned head = *cq_head_;
    unsigned ctail = load_acquire(cq_tail_);
    while (head != ctail) {
      const io_uring_cqe& c = cqes[head & cq_mask_];
      size_t i = static_cast<size_t>(c.user_data);
      if (i >= from && i < to) {
        done_[i].op->result_ = c.res;
        done_[i].op->state_ = RingOp::State::kDone;
        ++reaped;
      }
      ++head;
    }
    store_release(cq_head_, head);
  }
  stats_.batched_calls += want;
}

}  // namespace sluice::io
