#include "redis/client.h"

#include <charconv>
#include <string>
#include <utility>

#include "common/log.h"

// The request side of Client: the FIFO of requests, their timeouts and their callbacks. The
// socket side is in client_io.cc.

namespace sluice::redis {

// One request awaiting its reply, with its own timeout: every slot is armed with the same
// duration, so the loop keeps them all in one O(1) timer list.
// Thread: worker
struct Client::Slot {
  explicit Slot(Client* c) : client(c) {}
  Client* client;
  Slot* next = nullptr;
  Kind kind = Kind::kUser;
  Callback cb;
  const Script* script = nullptr;  // kEvalSha: resent as EVAL on NOSCRIPT
  size_t eval_argc = 0;
  std::string eval_tail;  // kEvalSha: numkeys, keys and args, encoded; capacity reused
  io::Timer timer{&Client::on_slot_timeout, this};
};

Client::Client(io::EventLoop& loop, ClientOptions options)
    : loop_(loop), opts_(std::move(options)), parser_(opts_.limits) {
  auto addr = resolve_address(opts_.host, opts_.port);
  if (addr.is_ok()) {
    addr_ = *addr;
  } else {
    config_error_ = addr.status().message();
  }
}

Client::Client(io::EventLoop& loop, ClientOptions options, const io::SockAddr& addr)
    : loop_(loop), opts_(std::move(options)), addr_(addr), parser_(opts_.limits) {}

Client::~Client() {
  // Pending callbacks are not called (see the class comment); the slots' timers cancel
  // themselves as the slots go.
  close_conn();
}

Client::Slot* Client::take_slot(Kind kind, Callback cb) {
  Slot* s = free_;
  if (s != nullptr) {
    free_ = s->next;
  } else {
    slots_.push_back(std::make_unique<Slot>(this));
    s = slots_.back().get();
  }
  s->next = nullptr;
  s->kind = kind;
  s->cb = cb;
  s->script = nullptr;
  return s;
}

void Client::release(Slot* s) {
  io::TimerQueue::cancel(s->timer);
  s->cb = Callback{};
  s->script = nullptr;
  s->next = free_;
  free_ = s;
}

void Client::push_back(Slot* s) {
  (tail_ != nullptr ? tail_->next : head_) = s;
  tail_ = s;
  ++pending_;
  loop_.arm(s->timer, opts_.timeout_ms > 0 ? opts_.timeout_ms : 1);
}

void Client::push_front(Slot* s) {
  s->next = head_;
  head_ = s;
  if (tail_ == nullptr) {
    tail_ = s;
  }
  ++pending_;
  loop_.arm(s->timer, opts_.timeout_ms > 0 ? opts_.timeout_ms : 1);
}

Client::Slot* Client::pop_front() {
  Slot* s = head_;
  if (s != nullptr) {
    head_ = s->next;
    if (head_ == nullptr) {
      tail_ = nullptr;
    }
    --pending_;
    s->next = nullptr;
  }
  return s;
}

// Writing (or connecting) waits for the end of the current batch of events, so every command
// issued in one batch goes out in one write.
void Client::kick() {
  if (!kick_timer_.armed()) {
    loop_.arm(kick_timer_, 0);
  }
}

void Client::command(std::span<const std::string_view> args, Callback cb) {
  if (args.empty()) {
    // Redis ignores an empty command without a reply, which would shift every later reply.
    Slot* s = take_slot(Kind::kUser, cb);
    s->next = rejected_;
    rejected_ = s;
    kick();
    return;
  }
  append_command(&out_, args);
  push_back(take_slot(Kind::kUser, cb));
  kick();
}

void Client::eval(const Script& script, std::span<const std::string_view> keys,
                  std::span<const std::string_view> args, Callback cb) {
  Slot* s = take_slot(Kind::kEvalSha, cb);
  s->script = &script;
  s->eval_argc = 3 + keys.size() + args.size();
  s->eval_tail.clear();
  char numkeys[24];
  auto r = std::to_chars(numkeys, numkeys + sizeof(numkeys), keys.size());
  append_bulk(&s->eval_tail, std::string_view(numkeys, static_cast<size_t>(r.ptr - numkeys)));
  for (std::string_view k : keys) {
    append_bulk(&s->eval_tail, k);
  }
  for (std::string_view a : args) {
    append_bulk(&s->eval_tail, a);
  }
  append_array_header(&out_, s->eval_argc);
  append_bulk(&out_, "EVALSHA");
  append_bulk(&out_, script.sha1());
  out_.append(s->eval_tail);
  push_back(s);
  kick();
}

size_t Client::cancel(uint64_t token) {
  size_t n = 0;
  for (Slot* list : {head_, rejected_}) {
    for (Slot* s = list; s != nullptr; s = s->next) {
      if (s->cb.fn != nullptr && s->cb.token == token) {
        s->cb.fn = nullptr;
        ++n;
      }
    }
  }
  return n;
}

void Client::fail_rejected() {
  Slot* list = rejected_;
  rejected_ = nullptr;
  while (list != nullptr) {
    Slot* s = list;
    list = s->next;
    const Callback cb = s->cb;
    release(s);
    if (cb.fn != nullptr) {
      cb.fn(cb.ctx, cb.token, nullptr, "empty command");
    }
  }
}

void Client::on_kick(void* self) {
  auto* c = static_cast<Client*>(self);
  c->fail_rejected();
  switch (c->state_) {
    case State::kReady:
      c->flush();
      return;
    case State::kConnecting:
      return;  // flushed once connected
    case State::kIdle:
      break;
  }
  if (c->head_ == nullptr) {
    return;
  }
  if (!c->config_error_.empty()) {
    c->fail_all(c->config_error_);
  } else if (c->loop_.now_ms() < c->retry_at_ms_) {
    c->fail_all(c->last_error_);
  } else {
    c->start_connect();
  }
}

// AUTH and SELECT go before every command queued so far; their replies come first.
void Client::queue_handshake() {
  std::string hs;
  if (opts_.database != 0) {
    const std::string db = std::to_string(opts_.database);
    const std::string_view args[] = {"SELECT", db};
    append_command(&hs, args);
    push_front(take_slot(Kind::kSelect, Callback{}));
  }
  if (opts_.password) {
    if (opts_.username) {
      const std::string_view args[] = {"AUTH", *opts_.username, *opts_.password};
      std::string auth;
      append_command(&auth, args);
      hs.insert(0, auth);
    } else {
      const std::string_view args[] = {"AUTH", *opts_.password};
      std::string auth;
      append_command(&auth, args);
      hs.insert(0, auth);
    }
    push_front(take_slot(Kind::kAuth, Callback{}));
  }
  out_.insert(0, hs);
}

void Client::on_slot_timeout(void* slot) {
  Client* c = static_cast<Slot*>(slot)->client;
  if (c->state_ == State::kReady) {
    c->close_with_error("timeout");
  } else {
    c->connect_failed("timeout");
  }
}

void Client::on_reply(const Reply& reply) {
  Slot* s = pop_front();
  if (s == nullptr) {
    close_with_error("protocol error: a reply with no request pending");
    return;
  }
  io::TimerQueue::cancel(s->timer);
  if (s->kind == Kind::kAuth || s->kind == Kind::kSelect) {
    const bool auth = s->kind == Kind::kAuth;
    release(s);
    if (reply.is_error()) {
      connect_failed(fmt::format("{} failed: {}", auth ? "AUTH" : "SELECT", reply.str));
    }
    return;
  }
  if (s->kind == Kind::kEvalSha && reply.is_error() && reply.str.starts_with("NOSCRIPT")) {
    // Same arguments, with the script's text: the server caches it for the next EVALSHA.
    s->kind = Kind::kUser;
    append_array_header(&out_, s->eval_argc);
    append_bulk(&out_, "EVAL");
    append_bulk(&out_, s->script->source());
    out_.append(s->eval_tail);
    push_back(s);
    kick();
    return;
  }
  const Callback cb = s->cb;
  release(s);  // first, so the callback's own commands can reuse it
  if (cb.fn != nullptr) {
    cb.fn(cb.ctx, cb.token, &reply, {});
  }
}

// Every request in flight fails, and the bytes not yet written go with them. Callbacks may
// queue new commands: those start a fresh queue (and, after the kick, a fresh connection).
void Client::fail_all(std::string_view error) {
  const std::string why(error);
  Slot* list = head_;
  head_ = tail_ = nullptr;
  pending_ = 0;
  out_.clear();
  out_off_ = 0;
  while (list != nullptr) {
    Slot* s = list;
    list = s->next;
    const Callback cb = s->cb;
    const bool user = s->kind == Kind::kUser || s->kind == Kind::kEvalSha;
    release(s);
    if (user && cb.fn != nullptr) {
      cb.fn(cb.ctx, cb.token, nullptr, why);
    }
  }
}

}  // namespace sluice::redis
