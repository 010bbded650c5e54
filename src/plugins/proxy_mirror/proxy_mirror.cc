#include "plugins/proxy_mirror/proxy_mirror.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>

#include <algorithm>
#include <chrono>

#include "common/log.h"

namespace sluice::plugins::proxy_mirror {

using common::Status;
using common::StatusOr;
using plugin::Json;

namespace {

constexpr std::string_view kSchema = R"({"type":"object","properties":{"host":{"type":"string",
"pattern":"^(http(s)?|grpc(s)?):\\/\\/([\\da-zA-Z.-]+|\\[[\\da-fA-F:]+\\])(:\\d+)?$"},
"path":{"type":"string","pattern":"^/[^?&]+$"},"path_concat_mode":{"type":"string",
"default":"replace","enum":["replace","prefix"],"description":"the concatenation mode for custom path"},
"sample_ratio":{"type":"number","minimum":0.00001,"maximum":1,"default":1}},"required":["host"]})";

const char kTag = 0;  // the worker's MirrorClient slot

// An nginx time as plugin_attr writes it ("60s", "2000ms", "1m", or bare seconds); 0 when it
// is none of those.
uint32_t nginx_ms(const Json& v) {
  if (v.is_number_unsigned()) {
    return static_cast<uint32_t>(std::min<uint64_t>(v.get<uint64_t>() * 1000, 4000000000u));
  }
  if (!v.is_string()) {
    return 0;
  }
  const auto& s = v.get_ref<const std::string&>();
  uint64_t n = 0;
  size_t i = 0;
  for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])) && n < 4000000000u; ++i) {
    n = n * 10 + static_cast<uint64_t>(s[i] - '0');
  }
  std::string_view unit = std::string_view(s).substr(i);
  uint64_t ms = unit == "ms"                  ? n
                : unit == "s" || unit.empty() ? n * 1000
                : unit == "m"                 ? n * 60000
                                              : 0;
  return i == 0 ? 0 : static_cast<uint32_t>(std::min<uint64_t>(ms, 4000000000u));
}

StatusOr<std::shared_ptr<const plugin::Plugin>> make(const Json& conf,
                                                     const plugin::BuildEnv& env) {
  auto c = parse(conf);
  if (!c.is_ok()) {
    return c.status();
  }
  auto made = resolve_peer(*c);
  const Json& attr = env.shared.attr_of("proxy-mirror");
  if (auto t = attr.find("timeout"); t != attr.end() && t->is_object()) {
    for (auto [key, field] :
         {std::pair{"connect", &MirrorPeer::connect_ms}, std::pair{"send", &MirrorPeer::send_ms},
          std::pair{"read", &MirrorPeer::read_ms}}) {
      if (auto v = t->find(key); v != t->end() && nginx_ms(*v) != 0) {
        made.get()->*field = nginx_ms(*v);
      }
    }
  }
  std::shared_ptr<const MirrorPeer> peer = std::move(made);
  if (!peer->resolved) {
    SLUICE_LOG(kWarn, "proxy-mirror: {} does not resolve; its copies are dropped", c->host);
  }
  return std::shared_ptr<const plugin::Plugin>(
      std::make_shared<ProxyMirror>(std::move(c).value(), std::move(peer)));
}

void worker_init(plugin::Shared&, plugin::WorkerLocal& local) {
  io::EventLoop* loop = local.loop;
  if (loop == nullptr) {
    return;  // a test's WorkerLocal without a loop: no mirroring
  }
  auto& client = local.object<MirrorClient>(
      "proxy-mirror", [loop] { return std::make_unique<MirrorClient>(*loop); });
  local.set_slot(&kTag, &client);
}

const plugin::PluginInfo kInfo{"proxy-mirror", 1010,    false,   check,
                               make,           kSchema, nullptr, worker_init};

// Fields that describe one hop's connection or the body's framing: the copy gets its own.
bool hop_field(std::string_view name) {
  for (std::string_view h :
       {"host", "connection", "keep-alive", "proxy-connection", "te", "trailer",
        "transfer-encoding", "upgrade", "content-length", "expect"}) {
    if (http::iequals(name, h)) {
      return true;
    }
  }
  return false;
}

// A per-thread generator for sample_ratio (APISIX: math.random() < sample_ratio).
double uniform() {
  thread_local uint64_t s =
      static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) | 1;
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  return static_cast<double>(s >> 11) * 0x1.0p-53;
}

}  // namespace

const plugin::PluginInfo& info() { return kInfo; }

std::shared_ptr<MirrorPeer> resolve_peer(const Conf& c) {
  auto peer = std::make_shared<MirrorPeer>();
  peer->host = c.host;
  std::string ip;
  if (io::make_sockaddr(c.host, c.port, &peer->addr)) {
    ip = c.host;
  } else {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (getaddrinfo(c.host.c_str(), nullptr, &hints, &res) == 0 && res != nullptr) {
      char buf[INET6_ADDRSTRLEN] = {};
      const void* a =
          res->ai_family == AF_INET6
              ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(res->ai_addr)->sin6_addr)
              : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr);
      if (inet_ntop(res->ai_family, a, buf, sizeof(buf)) != nullptr &&
          io::make_sockaddr(buf, c.port, &peer->addr)) {
        ip = buf;
      }
      freeaddrinfo(res);
    }
  }
  peer->resolved = !ip.empty();
  peer->key = ip.find(':') != std::string::npos ? fmt::format("[{}]:{}", ip, c.port)
                                                : fmt::format("{}:{}", ip, c.port);
  if (c.https) {
    auto tls = tls::ClientContext::create(tls::ClientContext::Options{});
    if (tls.is_ok()) {
      peer->tls = std::move(tls).value();
    } else {
      peer->resolved = false;  // no TLS context: nothing can be sent
    }
  }
  return peer;
}

ProxyMirror::ProxyMirror(Conf conf, std::shared_ptr<const MirrorPeer> peer)
    : conf_(std::move(conf)), peer_(std::move(peer)) {}

MirrorCopy ProxyMirror::copy_of(const plugin::Context& ctx) const {
  const http::RequestHead& req = *ctx.req;
  MirrorCopy copy;
  copy.method = req.method_text;
  mirror_target(conf_, req.path, req.query, &copy.target);
  copy.host = ctx.upstream.host.empty() ? std::string(req.host) : ctx.upstream.host;
  for (size_t i = 0; i < req.num_headers; ++i) {
    const http::Header& h = req.headers[i];
    if (!hop_field(h.name)) {
      copy.fields.emplace_back(h.name, h.value);
    }
  }
  copy.has_body = req.body_kind != http::BodyKind::kNone || !ctx.request_body.empty();
  copy.body = ctx.request_body;
  return copy;
}

plugin::Action ProxyMirror::before_proxy(plugin::Context& ctx) const {
  if (conf_.sample_ratio < 1 && uniform() >= conf_.sample_ratio) {
    return plugin::Action::kContinue;
  }
  auto* client = ctx.worker != nullptr ? ctx.worker->slot<MirrorClient>(&kTag) : nullptr;
  if (client == nullptr || ctx.req == nullptr) {
    return plugin::Action::kContinue;
  }
  client->send(peer_, copy_of(ctx));
  return plugin::Action::kContinue;
}

}  // namespace sluice::plugins::proxy_mirror
