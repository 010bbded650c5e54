#pragma once
// The exchange's test doubles: an in-memory downstream (what the client's codec would do), a
// scripted upstream request (what a node would answer), a test plugin, and the fixture that
// serves one route to them (exchange_test.cc, exchange_upgrade_test.cc, exchange_log_test.cc).

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "codec/h1/parser.h"
#include "plugin/chain.h"
#include "server/exchange.h"
#include "server/worker.h"

namespace sluice::server {
namespace {

using Fields = std::vector<std::pair<std::string, std::string>>;

// What a client's codec would do, in memory.
class FakeDownstream final : public Downstream {
 public:
  std::deque<std::string> body_in;  // pieces the client will send
  bool body_complete = true;        // after body_in, the body ends
  bool client_gone = false;
  bool blocked = false;  // flush() says kWait
  // What came out.
  int status = 0;
  Fields fields;
  int64_t content_length = -2;
  bool bodiless = false, gateway_made = false, close = false;
  std::string body, pending;
  bool ended = false;
  int continues = 0, wakes = 0;
  bool head_released = false;
  size_t consumed = 0;

  std::string_view raw;  // the bytes the head was parsed from
  std::string_view request_head() const override { return raw; }
  void release_head() override {
    head_released = true;
    // What a codec does with released bytes: they may be overwritten.
    if (!raw.empty()) {
      std::fill(const_cast<char*>(raw.data()), const_cast<char*>(raw.data()) + raw.size(), '#');
    }
  }
  Body read_body(std::string_view* piece) override {
    if (holding_) {
      *piece = current_;
      return Body::kData;
    }
    if (!body_in.empty()) {
      current_ = std::move(body_in.front());
      body_in.pop_front();
      holding_ = true;
      *piece = current_;
      return Body::kData;
    }
    if (client_gone) {
      return Body::kClosed;
    }
    return body_complete ? Body::kEnd : Body::kWait;
  }
  void consume_body() override {
    consumed += current_.size();
    holding_ = false;
  }
  bool body_done() const override { return body_in.empty() && !holding_ && body_complete; }
  void send_continue() override { ++continues; }
  void send_head(const ResponseStart& r) override {
    status = r.status;
    fields.clear();
    for (const auto& f : r.upstream_fields) {
      fields.emplace_back(f.name, f.value);
    }
    for (const auto& f : r.fields) {
      fields.emplace_back(f.name, f.value);
    }
    content_length = r.content_length;
    bodiless = r.bodiless;
    gateway_made = r.gateway_made;
    close = r.close;
    upgrade_to = r.upgrade;
  }
  void send_data(std::string_view data) override { pending.append(data); }
  void send_end() override { ended = true; }
  Flush flush() override {
    if (blocked) {
      return Flush::kWait;
    }
    body += pending;
    pending.clear();
    return Flush::kDone;
  }
  uint64_t head_bytes() const override { return 0; }
  uint64_t body_bytes() const override { return body.size() + pending.size(); }
  uint64_t request_bytes() const override { return raw.size() + consumed; }
  void wake() override { ++wakes; }
  proxy::TunnelEnd upgrade() override {
    ++upgrades;
    return tunnel_end;
  }
  proxy::TunnelEnd tunnel_end;  // what upgrade() hands the tunnel
  int upgrades = 0;
  std::string upgrade_to;  // the last head's ResponseStart::upgrade

  std::string field(std::string_view name) const {
    for (const auto& [n, v] : fields) {
      if (http::iequals(n, name)) {
        return v;
      }
    }
    return "<none>";
  }

 private:
  std::string current_;
  bool holding_ = false;
};

// One scripted try of the upstream.
struct Try {
  enum class Kind {
    kAnswer,       // answers status/fields/body
    kRefused,      // open() fails (connection refused at once)
    kConnectFail,  // the connect fails later
    kCloseEarly,   // closes before a response head
    kWriteFail,    // writing the request fails
    kEarlyAnswer,  // writing fails, but an answer is already there
  };
  Kind kind = Kind::kAnswer;
  int status = 200;
  Fields fields;
  std::vector<std::string> body;
  bool reused = false;  // the try's connection came from the pool
};

// A node's side, scripted try by try; records what each try was sent.
class FakeUpstream final : public proxy::UpstreamRequest {
 public:
  std::deque<Try> tries;
  std::vector<std::string> keys;   // each open()'s node
  std::vector<bool> fresh;         // each open()'s `fresh`
  std::vector<std::string> heads;  // each try's request head
  std::string sent_body;           // the last try's body bytes (framing included)
  bool body_end = false;
  int released = 0, released_reusable = 0;
  bool stall_body = false;  // read_body says kWait after the first piece

  bool open(const proxy::Target& t, bool f, proxy::UpstreamOwner*, int* err) override {
    keys.push_back(*t.key);
    fresh.push_back(f);
    if (tries.empty()) {
      ADD_FAILURE() << "an unscripted try on " << *t.key;
      *err = ECONNREFUSED;
      return false;
    }
    cur_ = tries.front();
    tries.pop_front();
    if (f) {
      cur_.reused = false;
    }
    std::string head = prepared_;
    if (!t.host.empty()) {
      head.insert(head.find("\r\n") + 2, "Host: " + std::string(t.host) + "\r\n");
    }
    heads.push_back(head);
    sent_body.clear();
    body_end = false;
    piece_ = 0;
    written_ = false;
    if (cur_.kind == Try::Kind::kRefused) {
      *err = ECONNREFUSED;
      return false;
    }
    open_ = true;
    connected_ = cur_.reused;
    return true;
  }
  bool reused() const override { return cur_.reused; }
  bool connected() const override { return connected_; }
  // Renders the head as HTTP/1.1 would (the Host line goes in at open()).
  void prepare(const proxy::RequestStart& r) override {
    prepared_ = std::string(r.method) + " " + std::string(r.target) + " HTTP/1.1\r\n";
    for (const auto& f : r.fields) {
      prepared_ += std::string(f.name) + ": " + std::string(f.value) + "\r\n";
    }
    if (r.body == proxy::RequestStart::Body::kLength) {
      prepared_ += "Content-Length: " + std::to_string(r.length) + "\r\n";
    } else if (r.body == proxy::RequestStart::Body::kChunked) {
      prepared_ += "Transfer-Encoding: chunked\r\n";
    } else if (r.body == proxy::RequestStart::Body::kEmpty) {
      prepared_ += "Content-Length: 0\r\n";
    }
    prepared_ += "\r\n";
  }
  void add_body(std::string_view piece, bool chunked) override {
    sent_body += chunked ? "[" + std::string(piece) + "]" : std::string(piece);
    queued_ = true;
  }
  void add_body_end(bool chunked) override {
    body_end = true;
    if (chunked) {
      sent_body += "[end]";
    }
  }
  bool queued() const override { return queued_; }
  Send send(int* err) override {
    if (!connected_) {
      if (cur_.kind == Try::Kind::kConnectFail) {
        *err = ECONNREFUSED;
        return Send::kConnectFailed;
      }
      connected_ = true;
    }
    if (cur_.kind == Try::Kind::kWriteFail || cur_.kind == Try::Kind::kEarlyAnswer) {
      *err = EPIPE;
      return Send::kWriteFailed;
    }
    written_ = true;
    queued_ = false;
    return Send::kDone;
  }
  bool answered_early() override { return cur_.kind == Try::Kind::kEarlyAnswer || answer_now; }
  bool has_input() const override { return false; }
  bool answer_now = false;  // the node has answered while the request body is still coming
  Head read_head(http::Method, http::ResponseHead* head) override {
    if (cur_.kind == Try::Kind::kCloseEarly) {
      return Head::kClosed;
    }
    head->status = cur_.status;
    head->reason = "Scripted";
    head->num_headers = 0;
    size_t length = 0;
    for (const auto& b : cur_.body) {
      length += b.size();
    }
    for (const auto& [n, v] : cur_.fields) {
      head->headers[head->num_headers++] = {n, v};
    }
    head->body_kind = length > 0 ? http::BodyKind::kLength : http::BodyKind::kNone;
    head->content_length = length;
    head->keep_alive = true;
    return Head::kHead;
  }
  std::string_view error() const override { return "scripted"; }
  Body read_body(std::string_view* piece) override {
    if (piece_ < cur_.body.size()) {
      if (stall_body && piece_ == 1) {
        return Body::kWait;
      }
      *piece = cur_.body[piece_];
      consumable_ = true;
      return Body::kData;
    }
    return Body::kEnd;
  }
  void consume() override {
    if (consumable_) {
      ++piece_;
      consumable_ = false;
    }
  }
  bool reusable() const override { return open_ && piece_ == cur_.body.size(); }
  void release(bool reusable) override {
    if (open_) {
      ++released;
      released_reusable += reusable ? 1 : 0;
    }
    open_ = false;
  }
  bool written() const override { return written_; }
  uint64_t received() const override { return 0; }
  proxy::TunnelEnd upgrade() override { return tunnel_end; }
  proxy::TunnelEnd tunnel_end;  // what upgrade() hands the tunnel

 private:
  Try cur_;
  std::string prepared_;
  bool open_ = false, connected_ = false, written_ = false, queued_ = false;
  bool consumable_ = false;
  size_t piece_ = 0;
};

// A plugin for the tests: suspends in access (until resumed), or rewrites the response.
class TestPlugin final : public plugin::Plugin {
 public:
  enum class Mode { kSuspend, kReject, kRewrite, kBody };
  explicit TestPlugin(Mode m) : mode_(m) {}
  bool needs_body() const override { return mode_ == Mode::kBody; }
  uint32_t phases() const override {
    return plugin::phase_bit(plugin::Phase::kAccess) |
           plugin::phase_bit(plugin::Phase::kHeaderFilter) |
           plugin::phase_bit(plugin::Phase::kBodyFilter) | plugin::phase_bit(plugin::Phase::kLog);
  }
  plugin::Action access(plugin::Context& ctx) const override {
    if (mode_ == Mode::kSuspend) {
      token = ctx.worker->host->suspend(ctx);
      return plugin::Action::kPending;
    }
    if (mode_ == Mode::kBody) {
      seen_body = std::string(ctx.request_body);
      seen_path = std::string(ctx.req->path);  // the head is still readable after the body
      if (ctx.request_body.find("deny") != std::string_view::npos) {
        ctx.reply_status = 403;
        return plugin::Action::kReply;
      }
      return plugin::Action::kContinue;
    }
    if (mode_ == Mode::kReject) {
      ctx.reply_status = 429;
      ctx.reply_body = "{\"error_msg\":\"slow down\"}\n";
      return plugin::Action::kReply;
    }
    ctx.upstream.headers.set("X-Added", "1");
    ctx.upstream.uri = "/rewritten?x=1";
    return plugin::Action::kContinue;
  }
  void header_filter(plugin::Context& ctx) const override {
    if (mode_ == Mode::kRewrite) {
      ctx.resp.status = 201;
      ctx.resp.headers.set("X-Via", "test");
      ctx.resp.content_length = 8;
    }
  }
  void body_filter(plugin::Context&, plugin::BodyPiece& piece) const override {
    if (mode_ == Mode::kRewrite) {
      piece.eof() ? piece.replace("new body") : piece.drop();
    }
  }
  void log(plugin::Context& ctx) const override { logged_status = ctx.status; }
  mutable uint64_t token = 0;
  mutable int logged_status = 0;
  mutable std::string seen_body, seen_path;

 private:
  Mode mode_;
};

std::shared_ptr<upstream::Upstream> make_upstream(int nodes, int retries) {
  auto u = std::make_shared<upstream::Upstream>();
  for (int i = 0; i < nodes; ++i) {
    upstream::Node n;
    n.ip = "127.0.0.1";
    n.port = static_cast<uint16_t>(9001 + i);
    n.host = n.ip;
    n.resolved = true;
    io::make_sockaddr(n.ip, n.port, &n.addr);
    n.addr_key = n.ip + ":" + std::to_string(n.port);
    n.host_header = n.addr_key;
    u->nodes.push_back(n);
  }
  u->any_resolved = nodes > 0;
  u->retries = retries;
  return u;
}

class ExchangeTest : public ::testing::Test {
 protected:
  ExchangeTest() : worker_(0, settings_, std::make_shared<ConnLimits>(1000)) {}
  // With these settings (exchange_log_test.cc: an access log).
  explicit ExchangeTest(std::shared_ptr<Settings> settings)
      : settings_(std::move(settings)), worker_(0, settings_, std::make_shared<ConnLimits>(1000)) {}

  // One route `/hello*` to an upstream of `nodes` nodes, with `plugin` on it when given.
  // `websocket`: the route's enable_websocket.
  void serve(int nodes, int retries, std::shared_ptr<const plugin::Plugin> plugin = nullptr,
             bool websocket = false) {
    auto snap = std::make_shared<snapshot::Snapshot>();
    auto up = make_upstream(nodes, retries);
    snap->upstreams.push_back(std::make_unique<upstream::Upstream>(*up));
    snapshot::Route r;
    r.id = "1";
    r.uris = {"/hello*"};
    r.target = snapshot::RouteTarget::kUpstream;
    r.upstream = snap->upstreams.back().get();
    r.websocket = websocket;
    if (plugin) {
      plugin::Entry e;
      e.name = "test";
      e.plugin = std::move(plugin);
      std::vector<plugin::Entry> entries;
      entries.push_back(std::move(e));
      r.chain = std::make_shared<const plugin::Chain>(std::move(entries));
    }
    snap->routes.push_back(std::move(r));
    router::RouteSpec spec;
    spec.uris = {"/hello*"};
    auto table = router::RouteTable::build({spec});
    ASSERT_TRUE(table.is_ok());
    snap->table = std::move(*table);
    worker_.set_snapshot(std::move(snap));
  }

  // Parses `raw` and begins an exchange on it.
  void begin(std::string raw) {
    raw_ = std::move(raw);
    auto r = h1::parse_request(raw_, h1::Limits{}, &req_);
    ASSERT_EQ(r.status, h1::ParseStatus::kComplete);
    ClientInfo client{"192.0.2.7", {}, 9080};
    router::parse_ip("192.0.2.7", &client.addr);
    down_.raw = std::string_view(raw_).substr(0, r.consumed);
    ex_->begin(down_, req_, r.consumed, client);
  }

  // Steps until the exchange waits or ends.
  Exchange::Step run() {
    for (int i = 0; i < 100; ++i) {
      Exchange::Step s = ex_->step();
      if (s != Exchange::Step::kProgress) {
        return s;
      }
    }
    ADD_FAILURE() << "the exchange never settled";
    return Exchange::Step::kClose;
  }

  std::shared_ptr<Settings> settings_ = std::make_shared<Settings>();
  Worker worker_;
  FakeDownstream down_;
  FakeUpstream* up_ = new FakeUpstream;  // owned by ex_
  std::unique_ptr<Exchange> ex_ =
      std::make_unique<Exchange>(worker_, std::unique_ptr<proxy::UpstreamRequest>(up_));
  std::string raw_;
  http::RequestHead req_;
};

}  // namespace
}  // namespace sluice::server
