#pragma once
// Timers kept in one FIFO list per duration (as h2o does): every timer in a list has the same
// duration and was armed at a non-decreasing time, so each list stays sorted and arming,
// re-arming and cancelling are O(1). A loop has only a handful of distinct durations.

#include <cstdint>
#include <memory>
#include <vector>

namespace sluice::io {

class TimerQueue;

// Thread: worker
class Timer {
 public:
  using Callback = void (*)(void* arg);
  Timer(Callback cb, void* arg) : cb_(cb), arg_(arg) {}
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;
  bool armed() const { return list_ != nullptr; }

 private:
  friend class TimerQueue;
  struct List;
  Callback cb_;
  void* arg_;
  uint64_t deadline_ms_ = 0;
  Timer* prev_ = nullptr;
  Timer* next_ = nullptr;
  List* list_ = nullptr;
};

struct Timer::List {
  uint64_t duration_ms;
  Timer* head = nullptr;
  Timer* tail = nullptr;
};

// Thread: worker
class TimerQueue {
 public:
  // (Re)arms `t` to fire `duration_ms` after `now_ms`.
  void arm(Timer& t, uint64_t now_ms, uint64_t duration_ms);
  static void cancel(Timer& t);
  // Fires every timer due at `now_ms`. Callbacks may arm or cancel timers.
  void run_due(uint64_t now_ms);
  // Milliseconds until the next deadline, or -1 if none.
  int next_timeout_ms(uint64_t now_ms) const;

 private:
  Timer::List* list_for(uint64_t duration_ms);
  std::vector<std::unique_ptr<Timer::List>> lists_;
};

}  // namespace sluice::io
