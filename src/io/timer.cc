#include "io/timer.h"

#include <algorithm>

namespace sluice::io {

Timer::~Timer() { TimerQueue::cancel(*this); }

Timer::List* TimerQueue::list_for(uint64_t duration_ms) {
  for (auto& l : lists_) {
    if (l->duration_ms == duration_ms) {
      return l.get();
    }
  }
  lists_.push_back(std::make_unique<Timer::List>(Timer::List{duration_ms}));
  return lists_.back().get();
}

void TimerQueue::cancel(Timer& t) {
  Timer::List* l = t.list_;
  if (l == nullptr) {
    return;
  }
  (t.prev_ ? t.prev_->next_ : l->head) = t.next_;
  (t.next_ ? t.next_->prev_ : l->tail) = t.prev_;
  t.prev_ = t.next_ = nullptr;
  t.list_ = nullptr;
}

void TimerQueue::arm(Timer& t, uint64_t now_ms, uint64_t duration_ms) {
  cancel(t);
  Timer::List* l = list_for(duration_ms);
  t.deadline_ms_ = now_ms + duration_ms;
  t.list_ = l;
  t.prev_ = l->tail;
  t.next_ = nullptr;
  (l->tail ? l->tail->next_ : l->head) = &t;
  l->tail = &t;
}

void TimerQueue::run_due(uint64_t now_ms) {
  for (size_t i = 0; i < lists_.size(); ++i) {
    Timer::List* l = lists_[i].get();
    while (l->head != nullptr && l->head->deadline_ms_ <= now_ms) {
      Timer* t = l->head;
      cancel(*t);
      t->cb_(t->arg_);
    }
  }
}

int TimerQueue::next_timeout_ms(uint64_t now_ms) const {
  int64_t best = -1;
  for (const auto& l : lists_) {
    if (l->head == nullptr) {
      continue;
    }
    int64_t d = static_cast<int64_t>(l->head->deadline_ms_) - static_cast<int64_t>(now_ms);
    d = std::max<int64_t>(d, 0);
    if (best < 0 || d < best) {
      best = d;
    }
  }
  return static_cast<int>(std::min<int64_t>(best, 1 << 30));
}

}  // namespace sluice::io
