#pragma once
// etcd's v3 API through its HTTP/JSON gateway (POST /v3/kv/range, /v3/kv/put, /v3/kv/txn,
// /v3/kv/deleterange, /v3/lease/grant, /v3/auth/authenticate): keys and values travel
// base64-encoded, 64-bit numbers as JSON strings. A Client keeps one connection, fails over
// to the next member when the request was provably not acted on (no connection, no leader;
// a read also on a timeout: a write that got no answer may have been applied, and is not
// sent twice), and authenticates with user/password when configured, again after the token
// expires. A call blocks the calling thread up to deployment.etcd.timeout in all (a connect
// up to 3 s of it).

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "etcd/conn.h"
#include "etcd/endpoint.h"

namespace sluice::etcd {

using Json = nlohmann::json;

// Thread: any (value type)
struct ClientOptions {
  std::vector<Endpoint> endpoints;
  std::shared_ptr<TlsContext> tls;  // needed when an endpoint is https
  std::string user, password;
  int timeout_ms = 30000;
};

// Builds ClientOptions from deployment.etcd.
common::StatusOr<ClientOptions> client_options(const config::EtcdConfig& conf);

// Thread: any (value type)
struct KeyValue {
  std::string key;
  std::string value;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t lease = 0;
};

// Thread: any (value type)
struct Header {
  uint64_t cluster_id = 0;
  int64_t revision = 0;
};

// Thread: one owner (not thread-safe; the watch thread has its own)
class Client {
 public:
  explicit Client(ClientOptions opts, int cancel_fd = -1);

  // One call: POST `path` with `body`; the decoded answer of a 200. Errors name the member;
  // an error starting "etcd unreachable" means no member answered.
  common::StatusOr<Json> call(std::string_view path, const Json& body);

  struct Range {
    Header header;
    std::vector<KeyValue> kvs;
  };
  // Every key in [key, range_end) (range_end empty: the key alone), sorted by key.
  common::StatusOr<Range> range(std::string_view key, std::string_view range_end);
  // Grants a lease of `ttl` seconds; returns its id.
  common::StatusOr<int64_t> lease_grant(int64_t ttl);

  const ClientOptions& options() const { return opts_; }
  // The member the next call goes to first.
  const Endpoint& current() const { return opts_.endpoints[current_]; }
  // The auth token the last call used (empty without user/password); valid on current().
  const std::string& token() const { return token_; }
  // Moves to the next member (after a broken watch, so the two spread over the cluster).
  void rotate();

 private:
  enum class Outcome { kDone, kTryNext, kReauth };
  common::StatusOr<Json> attempt(const Endpoint& ep, std::string_view path, const std::string& body,
                                 Deadline deadline, Outcome* outcome);
  common::Status authenticate(const Endpoint& ep, Deadline deadline);

  ClientOptions opts_;
  int cancel_fd_;
  size_t current_ = 0;
  std::unique_ptr<Conn> conn_;  // to opts_.endpoints[current_], when open
  std::string token_;
};

// Encoding helpers, exposed for the watch and the tests.
std::string base64_encode(std::string_view in);
// False on bad input (characters outside the alphabet, bad padding).
bool base64_decode(std::string_view in, std::string* out);
// The range_end that selects every key starting with `prefix` (last byte + 1, carried).
std::string prefix_end(std::string_view prefix);
// A 64-bit field as etcd's gateway writes it: a string, a number, or absent (= 0).
int64_t json_i64(const Json& obj, const char* name);
// Decodes one mvccpb.KeyValue; false when its key or value is not valid base64.
bool decode_kv(const Json& j, KeyValue* out);
Header decode_header(const Json& obj);

}  // namespace sluice::etcd
