#include "etcd/client.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>

#include "common/log.h"

namespace sluice::etcd {

using common::Status;
using common::StatusOr;

namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int b64_value(char c) {
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '+' || c == '-')
    return 62;  // the gateway writes the standard alphabet; accept URL-safe too
  if (c == '/' || c == '_')
    return 63;
  return -1;
}

constexpr auto kConnectTimeout = std::chrono::seconds(3);

// Requests that may be sent twice without harm: reads, and leases (one granted twice expires
// unused).
bool retry_safe(std::string_view path) {
  return path == "/v3/kv/range" || path == "/v3/auth/authenticate" || path == "/v3/lease/grant" ||
         path == "/v3/lease/timetolive" || path == "/v3/lease/revoke";
}

// The errors after which another member may well succeed. A timeout is one only for a
// request that may be sent twice: a write that timed out may have been applied.
bool member_trouble(int code, std::string_view msg, bool safe) {
  bool not_applied = code == 14 /* UNAVAILABLE */ ||
                     msg.find("no leader") != std::string_view::npos ||
                     msg.find("not capable") != std::string_view::npos;
  bool timed_out =
      code == 4 /* DEADLINE_EXCEEDED */ || msg.find("timed out") != std::string_view::npos;
  return not_applied || (safe && timed_out);
}

}  // namespace

std::string base64_encode(std::string_view in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 3 <= in.size(); i += 3) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (i + 1 == in.size()) {
    uint32_t v = uint8_t(in[i]) << 16;
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += kAlphabet[v >> 18];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

bool base64_decode(std::string_view in, std::string* out) {
  out->clear();
  while (!in.empty() && in.back() == '=') {
    in.remove_suffix(1);
  }
  if (in.size() % 4 == 1) {
    return false;
  }
  out->reserve(in.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    int v = b64_value(c);
    if (v < 0) {
      return false;
    }
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out->push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return true;
}

std::string prefix_end(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    if (static_cast<uint8_t>(end.back()) < 0xff) {
      end.back() = static_cast<char>(static_cast<uint8_t>(end.back()) + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every key
}

int64_t json_i64(const Json& obj, const char* name) {
  if (!obj.is_object()) {
    return 0;
  }
  auto it = obj.find(name);
  if (it == obj.end()) {
    return 0;
  }
  if (it->is_number_integer()) {
    return it->get<int64_t>();
  }
  if (it->is_string()) {
    const std::string& s = it->get_ref<const std::string&>();
    int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() && p == s.data() + s.size() ? v : 0;
  }
  return 0;
}

Header decode_header(const Json& obj) {
  Header h;
  auto it = obj.find("header");
  if (it != obj.end()) {
    h.revision = json_i64(*it, "revision");
    h.cluster_id = static_cast<uint64_t>(json_i64(*it, "cluster_id"));
    if (h.cluster_id == 0 && it->contains("cluster_id") && (*it)["cluster_id"].is_string()) {
      // uint64 above INT64_MAX: parse unsigned
      const std::string& s = (*it)["cluster_id"].get_ref<const std::string&>();
      std::from_chars(s.data(), s.data() + s.size(), h.cluster_id);
    }
  }
  return h;
}

bool decode_kv(const Json& j, KeyValue* out) {
  if (!j.is_object()) {
    return false;
  }
  auto key = j.find("key");
  auto value = j.find("value");
  if (key == j.end() || !key->is_string() || !base64_decode(key->get<std::string>(), &out->key)) {
    return false;
  }
  out->value.clear();
  if (value != j.end() &&
      (!value->is_string() || !base64_decode(value->get<std::string>(), &out->value))) {
    return false;
  }
  out->create_revision = json_i64(j, "create_revision");
  out->mod_revision = json_i64(j, "mod_revision");
  out->lease = json_i64(j, "lease");
  return true;
}

StatusOr<ClientOptions> client_options(const config::EtcdConfig& conf) {
  ClientOptions o;
  bool any_tls = false;
  for (const auto& h : conf.hosts) {
    auto ep = parse_endpoint(h);
    if (!ep) {
      return Status::error("deployment.etcd.host: " + ep.status().message());
    }
    any_tls |= ep->tls;
    o.endpoints.push_back(std::move(ep).value());
  }
  if (o.endpoints.empty()) {
    return Status::error("deployment.etcd.host: no etcd member given");
  }
  if (any_tls) {
    auto tls = TlsContext::create(conf.tls);
    if (!tls) {
      return tls.status();
    }
    o.tls = std::move(tls).value();
  }
  o.user = conf.user;
  o.password = conf.password;
  o.timeout_ms = static_cast<int>(std::clamp(conf.timeout * 1000, 1.0, 3600e3));
  return o;
}

Client::Client(ClientOptions opts, int cancel_fd) : opts_(std::move(opts)), cancel_fd_(cancel_fd) {}

void Client::rotate() {
  conn_.reset();
  current_ = (current_ + 1) % opts_.endpoints.size();
}

Status Client::authenticate(const Endpoint& ep, Deadline deadline) {
  Json body = {{"name", opts_.user}, {"password", opts_.password}};
  Outcome outcome;
  token_.clear();
  auto r = attempt(ep, "/v3/auth/authenticate", body.dump(), deadline, &outcome);
  if (!r) {
    return r.status();
  }
  auto it = r->find("token");
  if (it == r->end() || !it->is_string()) {
    return Status::error(fmt::format("{}: authentication answered without a token", ep.url));
  }
  token_ = it->get<std::string>();
  return Status::ok();
}

StatusOr<Json> Client::attempt(const Endpoint& ep, std::string_view path, const std::string& body,
                               Deadline deadline, Outcome* outcome) {
  *outcome = Outcome::kTryNext;
  const bool safe = retry_safe(path);
  for (int tries = 0; tries < 2; ++tries) {
    if (conn_ && conn_->idle_broken()) {
      conn_.reset();  // closed by the member while idle (a restart): not worth a request
    }
    bool fresh = !conn_;
    if (fresh) {
      Deadline connect_by = std::min(deadline, Clock::now() + kConnectTimeout);
      auto c = Conn::open(ep, opts_.tls.get(), connect_by, cancel_fd_);
      if (!c) {
        return c.status();
      }
      conn_ = std::move(c).value();
    }
    Status st = conn_->post(path, body, token_, deadline);
    if (!st) {
      conn_.reset();  // a member cannot act on a request it did not get whole
      if (!fresh) {
        continue;
      }
      return st;
    }
    auto resp = conn_->read_response(deadline);
    if (!resp) {
      bool nothing_back = !conn_->got_bytes();
      conn_.reset();
      // A kept-alive connection the member closed just as we sent: it never read the request.
      if (!fresh && nothing_back && resp.status().message().ends_with("connection closed")) {
        continue;
      }
      if (!safe) {
        // The request went out and no answer came: it may have been applied. Sending it to
        // another member could apply it twice (or fail its compare): say so instead.
        *outcome = Outcome::kDone;
        return Status::error(resp.status().message() +
                             " (the request was sent; it may or may not have been applied)");
      }
      return resp.status();
    }
    if (!conn_->reusable()) {
      conn_.reset();
    }
    Json j = Json::parse(resp->body, nullptr, false);
    if (resp->status == 200 && j.is_object()) {
      *outcome = Outcome::kDone;
      return j;
    }
    std::string msg = j.is_object() && j.contains("message") && j["message"].is_string()
                          ? j["message"].get<std::string>()
                      : j.is_object() && j.contains("error") && j["error"].is_string()
                          ? j["error"].get<std::string>()
                          : fmt::format("HTTP {}", resp->status);
    int code = j.is_object() && j.contains("code") && j["code"].is_number_integer()
                   ? j["code"].get<int>()
                   : 0;
    if (code == 16 /* UNAUTHENTICATED */ && !opts_.user.empty() &&
        path != "/v3/auth/authenticate") {
      *outcome = Outcome::kReauth;
    } else if (!member_trouble(code, msg, safe)) {
      *outcome = Outcome::kDone;
    }
    return Status::error(fmt::format("{}: {}", ep.url, msg));
  }
  return Status::error(fmt::format("{}: connection closed", ep.url));
}

StatusOr<Json> Client::call(std::string_view path, const Json& body) {
  std::string text = body.dump();
  // One budget for the whole call, across members: a cluster that does not answer costs the
  // caller `timeout`, not `timeout` per member.
  Deadline deadline = Clock::now() + std::chrono::milliseconds(opts_.timeout_ms);
  std::vector<std::string> errors;
  bool reauthed = false;
  for (size_t n = 0; n < opts_.endpoints.size() && Clock::now() < deadline; ++n) {
    const Endpoint& ep = opts_.endpoints[current_];
    if (!opts_.user.empty() && token_.empty()) {
      Status a = authenticate(ep, deadline);
      if (!a) {
        if (a.message().find("authentication failed") != std::string::npos) {
          return Status::error("etcd: " + a.message());  // wrong user or password
        }
        errors.push_back(a.message());
        rotate();
        continue;
      }
    }
    Outcome outcome;
    auto r = attempt(ep, path, text, deadline, &outcome);
    if (outcome == Outcome::kReauth && !reauthed) {
      reauthed = true;
      token_.clear();
      --n;  // the same member again, with a new token
      continue;
    }
    if (r || outcome == Outcome::kDone) {
      return r;
    }
    errors.push_back(r.status().message());
    rotate();
  }
  if (errors.empty()) {
    errors.push_back("no time left for a member to answer");
  }
  return Status::error("etcd unreachable: " + fmt::format("{}", fmt::join(errors, "; ")));
}

StatusOr<Client::Range> Client::range(std::string_view key, std::string_view range_end) {
  Json body = {{"key", base64_encode(key)}};
  if (!range_end.empty()) {
    body["range_end"] = base64_encode(range_end);
  }
  auto r = call("/v3/kv/range", body);
  if (!r) {
    return r.status();
  }
  Range out;
  out.header = decode_header(*r);
  auto kvs = r->find("kvs");
  if (kvs != r->end() && kvs->is_array()) {
    for (const auto& j : *kvs) {
      KeyValue kv;
      if (!decode_kv(j, &kv)) {
        return Status::error("etcd: a range answer holds a key or value that is not base64");
      }
      out.kvs.push_back(std::move(kv));
    }
  }
  return out;
}

StatusOr<int64_t> Client::lease_grant(int64_t ttl) {
  auto r = call("/v3/lease/grant", Json{{"TTL", std::to_string(ttl)}, {"ID", "0"}});
  if (!r) {
    return r.status();
  }
  int64_t id = json_i64(*r, "ID");
  if (id == 0) {
    return Status::error("etcd: lease grant answered without an ID");
  }
  return id;
}

}  // namespace sluice::etcd
