// Fuzz target: the Admin API (admin::Api::handle) over an in-memory store, fed a short
// sequence of hostile requests.
//
// Input: up to 8 requests separated by NUL bytes. Each request is one control byte, then
// `METHOD SP target LF body`. The control byte picks who asks (see kCallers): K admin key
// header, V viewer key, N no key, C admin key in the x_api_key cookie, Q ?api_key=k,
// W an unknown key, F the admin key from 192.0.2.1 (outside allow_admin). A lowercase letter
// first moves the clock 100 s and sweeps expired entries, as the runtime's timer does; any
// other byte derives caller, clock step and sweep from its bits.
//
// After each request: the status is one the API documents (never 500; never 503, as this
// store cannot fail; no 409, as nothing runs between a request's read and its write); the
// auth outcome is the caller's; the body is JSON ending in "\n" with X-API-VERSION: v3
// (except PUT /plugins/reload's "done", and the auth refusals, which APISIX also sends
// without it); an error has a string `error_msg` or `message` and wrote nothing; a 2xx write
// takes one revision, re-validates as its kind, is stored exactly as answered, is read back
// the same by GET, names only existing objects, and PUT back (less its times) is accepted
// unchanged; every change applies to a ConfigIndex (as the runtime's after_write does), which
// mirrors the store and builds into a snapshot.

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "admin/api.h"
#include "admin/api_internal.h"
#include "config/field_decoder.h"
#include "config/snapshot_builder.h"
#include "config/validate.h"
#include "fuzz/config_checks.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/memory_store.h"
#include "store/config_index.h"

namespace {

using namespace sluice;
using config::Json;

constexpr size_t kMaxRequests = 8;
constexpr int64_t kStart = 1'700'000'000;
constexpr std::string_view kRoot = "/apisix/admin/";

// Who sends a request: the key and where it travels, and the client address.
struct Caller {
  char letter;
  const char* header;  // header name; nullptr for none
  const char* value;
  bool query_key;  // ?api_key=k
  bool foreign;    // from 192.0.2.1
  enum class Key { kAdmin, kViewer, kNone, kWrong } key;
};
constexpr Caller kCallers[] = {
    {'K', "x-api-key", "k", false, false, Caller::Key::kAdmin},
    {'V', "x-api-key", "v", false, false, Caller::Key::kViewer},
    {'N', nullptr, nullptr, false, false, Caller::Key::kNone},
    {'C', "cookie", "lang=en; x_api_key=k", false, false, Caller::Key::kAdmin},
    {'Q', nullptr, nullptr, true, false, Caller::Key::kAdmin},
    {'W', "x-api-key", "edd1c9f034335f136f87ad84b625c8f1", false, false, Caller::Key::kWrong},
    {'F', "x-api-key", "k", false, true, Caller::Key::kAdmin},
};
constexpr size_t kCallerCount = sizeof(kCallers) / sizeof(kCallers[0]);

// One request decoded from the input, and what happens before it.
struct Step {
  const Caller* caller = nullptr;
  int64_t clock_step = 0;
  bool sweep = false;
  bool target_api_key = false;  // the target's own query names api_key
  server::AdminRequest req;
};

Step decode_step(std::string_view seg) {
  Step s;
  const auto b = static_cast<unsigned char>(seg[0]);
  const char upper = static_cast<char>(b >= 'a' && b <= 'z' ? b - 32 : b);
  for (const Caller& c : kCallers) {
    if (c.letter == upper) {
      s.caller = &c;
    }
  }
  if (s.caller != nullptr) {
    s.sweep = upper != static_cast<char>(b);
    s.clock_step = s.sweep ? 100 : 0;
  } else {
    static constexpr int64_t kSteps[] = {0, 1, 100, 86400};
    s.caller = &kCallers[b % kCallerCount];
    s.clock_step = kSteps[(b >> 4) & 3];
    s.sweep = (b & 0x80) != 0;
  }
  std::string_view rest = seg.substr(1);
  const size_t lf = rest.find('\n');
  const std::string_view line = rest.substr(0, lf);
  s.req.body = lf == std::string_view::npos ? "" : std::string(rest.substr(lf + 1));
  const size_t sp = line.find(' ');
  s.req.method = std::string(line.substr(0, sp));
  const std::string_view target = sp == std::string_view::npos ? "" : line.substr(sp + 1);
  const size_t q = target.find('?');
  s.req.path = std::string(target.substr(0, q));
  s.req.query = q == std::string_view::npos ? "" : std::string(target.substr(q + 1));
  s.target_api_key = s.req.query.find("api_key") != std::string::npos;
  if (s.caller->header != nullptr) {
    s.req.headers.emplace_back(s.caller->header, s.caller->value);
  }
  if (s.caller->query_key) {
    s.req.query += s.req.query.empty() ? "api_key=k" : "&api_key=k";
  }
  s.req.peer_ip = s.caller->foreign ? "192.0.2.1" : "127.0.0.1";
  FUZZ_CHECK(router::parse_ip(s.req.peer_ip, &s.req.peer));
  return s;
}

// Keys {admin: "k", viewer: "v"}; allow_admin as the default (127.0.0.0/24, ::1).
const admin::Auth& auth() {
  static const admin::Auth a = [] {
    config::AdminConfig conf;
    conf.keys = {{"admin", "k", config::AdminRole::kAdmin},
                 {"viewer", "v", config::AdminRole::kViewer}};
    auto made = admin::Auth::create(conf);
    FUZZ_CHECK(made.is_ok());
    return std::move(made).value();
  }();
  return a;
}

// A request of the harness's own, by the admin from loopback.
server::AdminRequest admin_request(const char* method, std::string_view kind, std::string_view id) {
  server::AdminRequest r;
  r.method = method;
  r.path = fmt::format("/apisix/admin/{}/{}", kind, id);
  r.headers = {{"x-api-key", "k"}};
  r.peer_ip = "127.0.0.1";
  FUZZ_CHECK(router::parse_ip(r.peer_ip, &r.peer));
  return r;
}

// The auth answer the request must get (403 or 401), 0 when it must pass, -1 when the target
// carries an api_key of its own that decides instead of the caller's key.
int expected_auth(const Step& s) {
  if (s.caller->foreign) {
    return 403;
  }
  const bool by_header =
      s.caller->header != nullptr && s.caller->header != std::string_view("cookie");
  if (!by_header && s.target_api_key) {
    return -1;
  }
  switch (s.caller->key) {
    case Caller::Key::kNone:
    case Caller::Key::kWrong:
      return 401;
    case Caller::Key::kViewer:
      return s.req.method == "GET" ? 0 : 401;
    case Caller::Key::kAdmin:
      return 0;
  }
  return -1;
}

// SLUICE_FUZZ_TRACE=1 prints every request and answer (to read a reproducer's story).
bool trace() {
  static const bool on = [] {
    const char* v = std::getenv("SLUICE_FUZZ_TRACE");
    return v != nullptr && std::string_view(v) == "1";
  }();
  return on;
}

// A resource id field as text (an integer 1 reads "1"), as the API compares ids.
std::optional<std::string> id_text(const Json& v, const char* field) {
  auto it = v.find(field);
  if (it == v.end()) {
    return std::nullopt;
  }
  if (it->is_string()) {
    return it->get<std::string>();
  }
  if (it->is_number_unsigned() || it->is_number_integer()) {
    return std::to_string(it->get<int64_t>());
  }
  return std::nullopt;
}

// j[name], or null when j is not an object or lacks it (const operator[] would be undefined).
const Json& field(const Json& j, const char* name) {
  static const Json kNull;
  if (!j.is_object()) {
    return kNull;
  }
  auto it = j.find(name);
  return it == j.end() ? kNull : *it;
}

// Thread: control (one per input)
class Harness {
 public:
  explicit Harness(std::string_view input)
      : input_(input),
        store_([this] { return now_; }),
        api_(
            auth(), store_, index_, [this] { return now_; }, [this] { absorb(); }) {}

  void run(const Step& s);

 private:
  void absorb() {
    for (store::Change& c : store_.take_changes()) {
      common::Status st = index_.apply(c);
      if (!st) {
        std::fprintf(stderr, "change not applied to the index: %s\n", st.message().c_str());
      }
      FUZZ_CHECK(st.is_ok());
      absorbed_.push_back(std::move(c));
    }
  }
  void check_reply(const Step& s, const server::AdminResponse& r, const Json& body);
  void check_write(const Step& s, const server::AdminResponse& r, const Json& body);
  void check_references(std::string_view kind, const Json& value);
  void check_put_back(std::string_view kind, std::string_view id, const Json& value);
  void check_delete(const Json& body);
  void check_index_mirrors_store();
  void check_build();

  std::string_view input_;  // the whole fuzz input (an error may quote it)
  int64_t now_ = kStart;
  fuzz::MemoryStore store_;
  store::ConfigIndex index_;
  admin::Api api_;
  std::vector<store::Change> absorbed_;  // what after_write drained during this request
  int64_t revision_before_ = 0;
  uint64_t version_ = 0;
};

bool is_header(const server::AdminResponse& r, std::string_view name, std::string_view value) {
  for (const auto& [n, v] : r.headers) {
    if (n == name && v == value) {
      return true;
    }
  }
  return false;
}

void Harness::run(const Step& s) {
  now_ += s.clock_step;
  if (s.sweep) {
    FUZZ_CHECK(store_.expire(now_).is_ok());
    absorb();
    check_index_mirrors_store();
    check_build();
  }
  absorbed_.clear();
  revision_before_ = store_.revision();
  const server::AdminResponse r = api_.handle(s.req);
  if (trace()) {
    std::fprintf(stderr, "%s %s?%s [%c] -> %d %s%s", s.req.method.c_str(), s.req.path.c_str(),
                 s.req.query.c_str(), s.caller->letter, r.status, r.body.c_str(),
                 r.body.ends_with('\n') ? "" : "\n");
  }
  const bool reload = r.body == "done";
  FUZZ_CHECK(r.status != 500 && r.status != 503);
  FUZZ_CHECK(r.status == 200 || r.status == 201 || r.status == 400 || r.status == 401 ||
             r.status == 403 || r.status == 404 || r.status == 405 || r.status == 409 ||
             r.status == 413);
  // One request at a time: nothing can change an object under a request, so no 409 (F9, fixed:
  // POST's generated id could name an object a client had PUT under that id).
  FUZZ_CHECK(r.status != 409);
  FUZZ_CHECK(reload || r.body.ends_with('\n'));
  FUZZ_CHECK(!reload ||
             (r.status == 200 && s.req.method == "PUT" && is_header(r, "X-API-VERSION", "v3")));
  Json body = reload ? Json() : Json::parse(r.body, nullptr, /*allow_exceptions=*/false);
  FUZZ_CHECK(reload || !body.is_discarded());
  const int want = expected_auth(s);
  FUZZ_CHECK(want < 0 || (want == 0 ? r.status != 401 && r.status != 403 : r.status == want));
  const bool auth_refusal = r.status == 401 || r.status == 403;
  // The auth refusals carry no X-API-VERSION (as in APISIX, whose check_token exits before
  // the header is set), though docs/admin-api.md says every answer does.
  FUZZ_CHECK(reload || auth_refusal || is_header(r, "X-API-VERSION", "v3"));
  if (!reload) {
    check_reply(s, r, body);
  }
  FUZZ_CHECK(store_.take_changes().empty());
  check_index_mirrors_store();
  check_build();
}

void Harness::check_reply(const Step& s, const server::AdminResponse& r, const Json& body) {
  if (r.status >= 400) {
    FUZZ_CHECK(body.is_object());
    auto msg = body.find("error_msg");
    if (msg == body.end()) {
      msg = body.find("message");
    }
    FUZZ_CHECK(msg != body.end() && msg->is_string());
    fuzz::check_error_text(msg->get<std::string>(), input_, /*json_reply=*/true);
    FUZZ_CHECK(store_.revision() == revision_before_);
    FUZZ_CHECK(absorbed_.empty());
    return;
  }
  const std::string& m = s.req.method;
  std::string_view rest = s.req.path;
  const bool under_root = rest.starts_with(kRoot);
  rest.remove_prefix(under_root ? kRoot.size() : rest.size());
  const bool resource = under_root && admin::find_kind(rest.substr(0, rest.find('/'))) != nullptr;
  if (resource && (m == "PUT" || m == "POST" || m == "PATCH")) {
    check_write(s, r, body);
  } else if (resource && m == "DELETE") {
    check_delete(body);
  } else {
    FUZZ_CHECK(store_.revision() == revision_before_);
    FUZZ_CHECK(absorbed_.empty());
    if (body.is_object() && body.contains("list")) {
      FUZZ_CHECK(field(body, "list").is_array() && field(body, "total").is_number_unsigned());
      FUZZ_CHECK(field(body, "list").size() <= field(body, "total").get<size_t>());
      FUZZ_CHECK(field(body, "list").size() <= 500);
    }
  }
}

void Harness::check_write(const Step& s, const server::AdminResponse& r, const Json& body) {
  FUZZ_CHECK(r.status == 200 || r.status == 201);
  FUZZ_CHECK(body.is_object() && body.contains("key") && field(body, "key").is_string());
  const std::string key = field(body, "key").get<std::string>();
  const Json& value = field(body, "value");
  FUZZ_CHECK(value.is_object());
  store::KeyParts parts;
  FUZZ_CHECK(store::split_key(index_.prefix(), key, &parts));
  const admin::Kind* kind = admin::find_kind(parts.kind);
  FUZZ_CHECK(kind != nullptr);
  common::Status valid = config::validate_resource(parts.kind, parts.id, value);
  if (!valid) {
    std::fprintf(stderr, "answered value does not validate: %s\n", valid.message().c_str());
  }
  FUZZ_CHECK(valid.is_ok());
  const char* id_field = kind->name == "consumers" ? "username" : "id";
  FUZZ_CHECK(id_text(value, id_field) == parts.id);
  FUZZ_CHECK(field(value, "update_time") == now_ &&
             field(value, "create_time").is_number_integer() &&
             field(value, "create_time").get<int64_t>() <= now_);
  // One revision, one change, at the answered key, holding exactly the answered value.
  FUZZ_CHECK(store_.revision() == revision_before_ + 1);
  FUZZ_CHECK(absorbed_.size() == 1 && !absorbed_[0].deleted && absorbed_[0].entry.key == key);
  auto stored = store_.get(key);
  FUZZ_CHECK(stored.is_ok() && stored->has_value());
  const store::Entry& e = **stored;
  FUZZ_CHECK(e.value == admin::dump(value) && e.value == absorbed_[0].entry.value);
  FUZZ_CHECK(e.mod_revision == store_.revision());
  FUZZ_CHECK((r.status == 201) == (e.create_revision == e.mod_revision));
  // GET answers what the write answered.
  const server::AdminRequest get = admin_request("GET", parts.kind, parts.id);
  absorbed_.clear();
  const server::AdminResponse g = api_.handle(get);
  FUZZ_CHECK(g.status == 200 && absorbed_.empty() && store_.revision() == revision_before_ + 1);
  const Json got = Json::parse(g.body, nullptr, false);
  Json shown = value;
  if (parts.kind == "ssls") {
    shown.erase("key");  // as APISIX, GET one never answers an ssl's private key
  }
  FUZZ_CHECK(got.is_object() && field(got, "key") == key && field(got, "value") == shown);
  FUZZ_CHECK(field(got, "createdIndex") == e.create_revision &&
             field(got, "modifiedIndex") == e.mod_revision);
  check_references(parts.kind, value);
  check_put_back(parts.kind, parts.id, value);
}

// A value read back, less the server's times, PUT to its own key is accepted unchanged (what
// a client that edits GET's answer does). Run on copies, so the input's own story (revisions,
// generated ids) is not disturbed.
void Harness::check_put_back(std::string_view kind, std::string_view id, const Json& value) {
  fuzz::MemoryStore store = store_;
  store::ConfigIndex index = index_;
  admin::Api api(
      auth(), store, index, [this] { return now_; },
      [&] {
        for (const store::Change& c : store.take_changes()) {
          FUZZ_CHECK(index.apply(c).is_ok());
        }
      });
  Json body = value;
  body.erase("create_time");
  body.erase("update_time");
  // F10 (fixed): a secret's body id ("vault/1", as the API stores and answers it) was refused.
  server::AdminRequest put = admin_request("PUT", kind, id);
  put.body = admin::dump(body);
  const server::AdminResponse r = api.handle(put);
  const Json got = Json::parse(r.body, nullptr, false);
  if (r.status != 200) {
    std::fprintf(stderr, "PUT back %s -> %d %s", put.body.c_str(), r.status, r.body.c_str());
  }
  // PUT stores an integer id as a string; PATCH /<kind>/<id>/id with an integer keeps it.
  Json expected = value;
  for (const char* name : {"id", "username"}) {
    if (expected.contains(name) && expected[name].is_number_integer()) {
      expected[name] = *id_text(expected, name);
    }
  }
  FUZZ_CHECK(r.status == 200 && got.is_object() && field(got, "value") == expected);
}

// What a written resource names by id exists, and the index knows it is named (so a DELETE
// of the target is refused without ?force=true).
void Harness::check_references(std::string_view kind, const Json& value) {
  struct Ref {
    const char* field;
    const char* target;
  };
  static constexpr Ref kRoute[] = {{"upstream_id", "upstreams"},
                                   {"service_id", "services"},
                                   {"plugin_config_id", "plugin_configs"}};
  static constexpr Ref kService[] = {{"upstream_id", "upstreams"}};
  static constexpr Ref kConsumer[] = {{"group_id", "consumer_groups"}};
  std::span<const Ref> refs;
  if (kind == "routes" || kind == "stream_routes") {
    refs = kRoute;
  } else if (kind == "services") {
    refs = kService;
  } else if (kind == "consumers") {
    refs = kConsumer;
  }
  for (const Ref& r : refs) {
    auto it = value.find(r.field);
    if (it == value.end()) {
      continue;
    }
    // F8 (fixed): an integral float id (1.0, 1e0) passed the decoders but not the API's
    // reference check nor the index.
    auto id = config::as_id(*it);
    FUZZ_CHECK(id.is_ok());
    const std::string target = index_.prefix() + "/" + r.target + "/" + *id;
    auto e = store_.get(target);
    if (!e.is_ok() || !e->has_value() || index_.first_referrer(target).empty()) {
      std::fprintf(stderr, "%s names %s, missing or not indexed as referenced\n", r.field,
                   target.c_str());
    }
    FUZZ_CHECK(e.is_ok() && e->has_value());
    FUZZ_CHECK(!index_.first_referrer(target).empty());
  }
}

void Harness::check_delete(const Json& body) {
  FUZZ_CHECK(body.is_object() && field(body, "deleted") == "1" && field(body, "key").is_string());
  const std::string key = field(body, "key").get<std::string>();
  FUZZ_CHECK(store_.revision() == revision_before_ + 1);
  FUZZ_CHECK(absorbed_.size() == 1 && absorbed_[0].deleted && absorbed_[0].entry.key == key);
  FUZZ_CHECK(absorbed_[0].entry.mod_revision == store_.revision());
  auto gone = store_.get(key);
  FUZZ_CHECK(gone.is_ok() && !gone->has_value());
}

// The index holds one decoded resource per stored route, service and upstream row (swept or
// not: the index forgets a row when its deletion or expiry is applied).
void Harness::check_index_mirrors_store() {
  const auto ids_in = [this](std::string_view kind) {
    std::vector<std::string> ids;
    const std::string prefix = index_.prefix() + "/" + std::string(kind) + "/";
    for (const auto& [key, e] : store_.rows()) {
      if (key.starts_with(prefix)) {
        ids.push_back(key.substr(prefix.size()));
      }
    }
    return ids;
  };
  const auto ids_of = [](const auto& items) {
    std::vector<std::string> ids;
    for (const auto& item : items) {
      ids.push_back(item.id);
    }
    std::sort(ids.begin(), ids.end());
    return ids;
  };
  const config::ConfigSet& set = index_.set();
  FUZZ_CHECK(ids_in("routes") == ids_of(set.routes));
  FUZZ_CHECK(ids_in("services") == ids_of(set.services));
  FUZZ_CHECK(ids_in("upstreams") == ids_of(set.upstreams));
}

// The runtime rebuilds its snapshot from the index after every write; the API refuses what
// would break that build, so it always succeeds. Node names become 127.0.0.1 (no DNS).
void Harness::check_build() {
  config::ConfigSet set = index_.set();
  for (auto& r : set.routes) {
    if (r.upstream) {
      fuzz::literal_hosts(&*r.upstream);
    }
  }
  for (auto& sv : set.services) {
    if (sv.upstream) {
      fuzz::literal_hosts(&*sv.upstream);
    }
  }
  for (auto& u : set.upstreams) {
    fuzz::literal_hosts(&u);
  }
  upstream::DnsCache dns(30);
  auto built = config::build_snapshot(set, dns, ++version_);
  if (!built) {
    std::fprintf(stderr, "snapshot build failed: %s\n", built.status().message().c_str());
  }
  FUZZ_CHECK(built.is_ok());
  size_t enabled = 0;
  for (const auto& r : set.routes) {
    enabled += r.status == 1 ? 1 : 0;
  }
  FUZZ_CHECK(built->snapshot->routes.size() == enabled);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  Harness h(in);
  for (size_t n = 0; n < kMaxRequests && !in.empty(); ++n) {
    const size_t nul = in.find('\0');
    const std::string_view seg = in.substr(0, nul);
    in = nul == std::string_view::npos ? std::string_view() : in.substr(nul + 1);
    if (!seg.empty()) {
      h.run(decode_step(seg));
    }
  }
  return 0;
}
