// The Admin API's entry point and its read half: auth, path parsing, GET one and GET list,
// the plugins endpoints.

#include "admin/api.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <random>
#include <thread>

#include "admin/api_internal.h"
#include "common/log.h"
#include "common/strings.h"
#include "config/plugin_registry.h"
#include "config/secret_fields.h"

namespace sluice::admin {

using common::Status;
using config::Json;
using server::AdminResponse;

namespace {

constexpr std::string_view kRoot = "/apisix/admin";
constexpr int kPatchRetries = 8;  // PATCHes re-merged after a conflict before answering 409

// The pause before the `again`-th re-merge: random, up to 0.5 ms doubling per try (20 ms at
// most, about 70 ms over all tries). Without it, a node whose writer PATCHes in a loop can win
// every race against another node's one PATCH, which then runs out of tries.
std::chrono::microseconds patch_backoff(int again) {
  thread_local std::minstd_rand rng{std::random_device{}()};
  const uint32_t cap = std::min<uint32_t>(500u << again, 20000u);
  return std::chrono::microseconds(rng() % (cap + 1));
}

constexpr std::array<Kind, 12> kKinds = {{
    {"routes", "route", true, true},
    {"services", "service", true, true},
    {"upstreams", "upstream", true, true},
    {"consumers", "consumer", false, true},
    {"ssls", "ssl", true, true},
    {"global_rules", "global_rule", false, true},
    {"plugin_configs", "plugin_config", false, true},
    {"plugin_metadata", "plugin_metadata", false, false},
    {"stream_routes", "stream_route", true, false},
    {"protos", "proto", true, false},
    {"consumer_groups", "consumer_group", false, true},
    {"secrets", "secret", false, true},
}};

std::string percent_decode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && common::hex_value(s[i + 1]) >= 0 &&
        common::hex_value(s[i + 2]) >= 0) {
      out += static_cast<char>(common::hex_value(s[i + 1]) * 16 + common::hex_value(s[i + 2]));
      i += 2;
    } else {
      out += s[i] == '+' ? ' ' : s[i];
    }
  }
  return out;
}

// An item's `labels` has `filter` ("env" or "env:prod").
bool has_label(const Json& value, std::string_view filter) {
  auto labels = value.find("labels");
  if (labels == value.end() || !labels->is_object()) {
    return false;
  }
  size_t colon = filter.find(':');
  std::string k(filter.substr(0, colon));
  auto it = labels->find(k);
  if (it == labels->end()) {
    return false;
  }
  return colon == std::string_view::npos ||
         (it->is_string() && it->get<std::string>() == filter.substr(colon + 1));
}

bool has_uri(const Json& value, std::string_view filter) {
  auto contains = [&](const Json& u) {
    return u.is_string() && u.get<std::string>().find(filter) != std::string::npos;
  };
  if (auto u = value.find("uri"); u != value.end() && contains(*u)) {
    return true;
  }
  if (auto us = value.find("uris"); us != value.end() && us->is_array()) {
    for (const auto& u : *us) {
      if (contains(u)) {
        return true;
      }
    }
  }
  return false;
}

// APISIX 3.13's `filter` argument: itself a query string ("service_id=1&upstream_id=2"),
// taken on routes and stream routes for service_id and upstream_id. Anything else is refused
// rather than ignored, so a script never reads "every route" as "the routes of service 1".
std::optional<std::string> reference_filter(const Kind& k, std::string_view filter,
                                            std::vector<std::pair<std::string, std::string>>* out) {
  if (k.name != "routes" && k.name != "stream_routes") {
    return fmt::format("invalid argument filter: {} cannot be filtered by reference", k.name);
  }
  while (!filter.empty()) {
    size_t amp = filter.find('&');
    std::string_view pair = filter.substr(0, amp);
    filter = amp == std::string_view::npos ? std::string_view() : filter.substr(amp + 1);
    if (pair.empty()) {
      continue;
    }
    size_t eq = pair.find('=');
    std::string key = percent_decode(pair.substr(0, eq));
    if (key != "service_id" && key != "upstream_id") {
      return fmt::format(
          "invalid argument filter: filter field '{}' is not supported by "
          "resource: {} (service_id and upstream_id are)",
          key, k.name);
    }
    std::string value = eq == std::string_view::npos ? "" : percent_decode(pair.substr(eq + 1));
    out->emplace_back(std::move(key), std::move(value));
  }
  return std::nullopt;
}

// Every (field, id) of a reference filter names the item's field; an integer id matches its
// text, as ids are stored as strings.
bool has_references(const Json& value,
                    const std::vector<std::pair<std::string, std::string>>& refs) {
  for (const auto& [field, id] : refs) {
    auto it = value.find(field);
    if (it == value.end()) {
      return false;
    }
    std::string text = it->is_string() ? it->get<std::string>() : it->dump();
    if (text != id) {
      return false;
    }
  }
  return true;
}

}  // namespace

// A stored entry as the Admin API shows it. Private keys held in clear are left out (stored
// before encryption was on, by a node without a keyring, or with `keyring: ~`); sealed ones are
// shown as stored, as APISIX shows them. Consumers' and credentials' sealed plugin fields are
// shown opened: APISIX's admin/init.lua decrypts them for every GET.
Json entry_json(std::string_view secret_kind, const store::Entry& e) {
  Json value = Json::parse(e.value, nullptr, false);
  if (value.is_object()) {
    config::omit_clear_secrets(secret_kind, &value);
    if (secret_kind == "consumers" || secret_kind == "credentials") {
      (void)config::reveal_secrets(secret_kind, &value);  // cannot fail for these kinds
    }
  }
  return Json{{"key", e.key},
              {"value", value.is_discarded() ? Json() : std::move(value)},
              {"createdIndex", e.create_revision},
              {"modifiedIndex", e.mod_revision}};
}

namespace {

// page / page_size: integers, page >= 1, page_size 10-500 (APISIX's bounds).
bool paging_arg(std::string_view query, const char* name, int64_t lo, int64_t hi, int64_t* out,
                std::string* err) {
  auto v = query_value(query, name);
  if (!v) {
    return true;
  }
  char* end = nullptr;
  long long n = std::strtoll(v->c_str(), &end, 10);
  if (v->empty() || *end != '\0' || n < lo || n > hi) {
    *err =
        fmt::format("invalid argument {}: expected an integer {}-{}, got \"{}\"", name, lo, hi, *v);
    return false;
  }
  *out = n;
  return true;
}

// No empty segment (but a trailing slash) and no dot segment: ids never look like paths.
bool clean_path(std::string_view path) {
  while (!path.empty()) {
    size_t slash = path.find('/');
    std::string_view seg = path.substr(0, slash);
    if (seg == "." || seg == ".." || (seg.empty() && slash != std::string_view::npos)) {
      return false;
    }
    if (slash == std::string_view::npos) {
      break;
    }
    path.remove_prefix(slash + 1);
  }
  return true;
}

}  // namespace

const Kind* find_kind(std::string_view name) {
  for (const auto& k : kKinds) {
    if (k.name == name) {
      return &k;
    }
  }
  return nullptr;
}

AdminResponse json_reply(int status, const Json& body) {
  AdminResponse r;
  r.status = status;
  r.body = dump(body) + "\n";
  r.headers.emplace_back("X-API-VERSION", "v3");
  return r;
}

AdminResponse error_reply(int status, std::string_view message) {
  return json_reply(status, Json{{"error_msg", message}});
}

AdminResponse key_not_found() { return json_reply(404, Json{{"message", "Key not found"}}); }

AdminResponse store_error(const Status& st) {
  // The store's message names files and carries SQLite's text: it goes to the log only.
  SLUICE_LOG(kError, "admin: the configuration store failed: {}", st.message());
  return error_reply(503, "the configuration store is unavailable; see the gateway's log");
}

std::optional<std::string> query_value(std::string_view query, std::string_view name) {
  auto v = query_param(query, name);
  if (!v) {
    return std::nullopt;
  }
  return percent_decode(*v);
}

std::string dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

Api::Api(Auth auth, store::ConfigStore& store, const store::ConfigIndex& index,
         std::function<int64_t()> now, std::function<void()> after_write)
    : auth_(std::move(auth)),
      recording_(store),
      store_(recording_),
      index_(index),
      now_(std::move(now)),
      after_write_(std::move(after_write)) {}

void Api::set_audit_log(std::string path) {
  audit_ = AuditLog(std::move(path));
  recording_.set_recording(audit_.on());
}

AdminResponse Api::handle(const server::AdminRequest& req) {
  const config::AdminKey* who = nullptr;
  auto denied = auth_.check(req, &who);
  if (!denied && req.path == "/apisix/admin/audit") {
    return audit_.list(req);
  }
  if (req.method == "GET" || req.method == "HEAD") {
    return denied ? *denied : route(req);
  }
  // Every request that may change something is recorded, refused ones too.
  (void)recording_.take();
  AdminResponse r = denied ? *denied : route(req);
  audit_.record(req, who, r, store_.revision(), recording_.take(), index_.prefix());
  return r;
}

AdminResponse Api::route(const server::AdminRequest& req) {
  std::string_view path = req.path;
  if (path.substr(0, kRoot.size()) != kRoot ||
      (path.size() > kRoot.size() && path[kRoot.size()] != '/')) {
    return error_reply(404, "404 Route Not Found");
  }
  path.remove_prefix(std::min(path.size(), kRoot.size() + 1));
  if (!clean_path(path)) {
    return error_reply(400, "invalid path: empty, \".\" and \"..\" segments are not allowed");
  }
  size_t slash = path.find('/');
  std::string_view kind = path.substr(0, slash);
  std::string_view rest = slash == std::string_view::npos ? "" : path.substr(slash + 1);
  Call c{.req = req};
  if (kind == "plugins") {
    c.id = std::string(rest);
    return plugins(c);
  }
  if (kind == "schema") {
    return validate(rest, req);
  }
  c.kind = find_kind(kind);
  if (c.kind == nullptr) {
    return error_reply(404, fmt::format("Unsupported resource type: {}", kind));
  }
  // A secret's id is <manager>/<id>; everything else has a one-segment id.
  size_t id_end = rest.find('/');
  if (c.kind->name == "secrets" && id_end != std::string_view::npos) {
    id_end = rest.find('/', id_end + 1);
  }
  c.id = std::string(rest.substr(0, id_end));
  if (id_end != std::string_view::npos) {
    c.sub_path = std::string(rest.substr(id_end + 1));
  }
  try {
    return dispatch(c);
  } catch (const std::exception& e) {
    SLUICE_LOG(kError, "admin: {} {}: {}", req.method, req.path, e.what());
    return error_reply(500, "internal error; see the gateway's log");
  }
}

AdminResponse Api::dispatch(Call& c) {
  const std::string& m = c.req.method;
  if (c.kind->name == "consumers" &&
      (c.sub_path == "credentials" || c.sub_path.starts_with("credentials/"))) {
    return credentials(c);  // APISIX 3.7's sub-resource (api_credentials.cc)
  }
  if (m == "GET") {
    return c.id.empty() ? get_list(c) : get_one(c);
  }
  if (m == "PUT") {
    return put(c);
  }
  if (m == "POST" && c.kind->post) {
    return post(c);
  }
  if (m == "PATCH" && c.kind->patch) {
    // A PATCH is merged onto what is stored when it runs, so when another writer (another
    // node on the same etcd) changed the object between our read and our compare-and-swap,
    // it is simply merged again onto the newer value, after a short random pause.
    AdminResponse r = patch(c);
    for (int again = 0; r.status == 409 && again < kPatchRetries; ++again) {
      std::this_thread::sleep_for(patch_backoff(again));
      r = patch(c);
    }
    return r;
  }
  if (m == "DELETE") {
    return remove(c);
  }
  return error_reply(405, fmt::format("not supported `{}` method for {}", m, c.kind->singular));
}

AdminResponse Api::get_one(const Call& c) {
  if (!c.sub_path.empty()) {
    return key_not_found();
  }
  auto e = store_.get(key_of(*c.kind, c.id));
  if (!e) {
    return store_error(e.status());
  }
  if (!*e) {
    return key_not_found();
  }
  Json item = entry_json(c.kind->name, **e);
  if (c.kind->name == "ssls" && item["value"].is_object()) {
    // "not return private key for security": APISIX's admin/resource.lua drops `key` from
    // GET one (not from lists, nor `keys`), sealed or not.
    item["value"].erase("key");
  }
  return json_reply(200, item);
}

AdminResponse Api::get_list(const Call& c) {
  std::string_view q = c.req.query;
  int64_t page = 0, page_size = 0;
  std::string err;
  if (!paging_arg(q, "page", 1, INT32_MAX, &page, &err) ||
      !paging_arg(q, "page_size", 10, 500, &page_size, &err)) {
    return error_reply(400, err);
  }
  // A consumer's credentials are listed under it; the consumers' own list leaves them out, as
  // APISIX's filter_consumers_list does (etcd's range over /consumers/ holds both).
  const bool creds = !c.list_prefix.empty();
  auto entries = store_.list(creds ? c.list_prefix : key_of(*c.kind, ""));
  if (!entries) {
    return store_error(entries.status());
  }
  if (c.kind->name == "consumers") {
    std::erase_if(*entries, [&](const store::Entry& e) {
      return store::is_credential_key(index_.prefix(), e.key) != creds;
    });
  }
  if (creds && entries->empty()) {
    // etcd's range finds no key under the consumer (none made, or the consumer is gone): APISIX
    // answers it as a missing key, there being no directory placeholder for credentials.
    return key_not_found();
  }
  auto name = query_value(q, "name");
  auto uri = query_value(q, "uri");
  auto label = query_value(q, "label");
  std::vector<std::pair<std::string, std::string>> refs;
  if (auto filter = query_value(q, "filter")) {
    if (auto bad = reference_filter(*c.kind, *filter, &refs)) {
      return error_reply(400, *bad);
    }
  }
  Json list = Json::array();
  for (const auto& e : *entries) {
    Json item = entry_json(creds ? "credentials" : c.kind->name, e);
    const Json& v = item["value"];
    if (!v.is_object()) {
      continue;
    }
    if (name && !(v.contains("name") && v["name"].is_string() &&
                  v["name"].get<std::string>().find(*name) != std::string::npos)) {
      continue;
    }
    if ((uri && !has_uri(v, *uri)) || (label && !has_label(v, *label)) ||
        !has_references(v, refs)) {
      continue;
    }
    list.push_back(std::move(item));
  }
  size_t total = list.size();
  if (page != 0 || page_size != 0) {
    size_t size = page_size != 0 ? static_cast<size_t>(page_size) : 10;
    size_t first = (page != 0 ? static_cast<size_t>(page) - 1 : 0) * size;
    Json paged = Json::array();
    for (size_t i = first; i < list.size() && i < first + size; ++i) {
      paged.push_back(std::move(list[i]));
    }
    list = std::move(paged);
  }
  return json_reply(200, Json{{"list", std::move(list)}, {"total", total}});
}

AdminResponse Api::plugins(const Call& c) {
  if (c.req.method == "PUT" && c.id == "reload") {
    if (reload_) {
      if (common::Status st = reload_(); !st.is_ok()) {
        SLUICE_LOG(kError, "plugins reload failed: {}", st.message());
        return error_reply(400, "failed to reload plugins: " + st.message());
      }
    }
    AdminResponse r;
    r.body = "done";
    r.headers = {{"Content-Type", "text/plain"}, {"X-API-VERSION", "v3"}};
    return r;
  }
  if (c.req.method != "GET") {
    return error_reply(405, fmt::format("not supported `{}` method for plugins", c.req.method));
  }
  if (c.id == "list" || c.id.empty()) {
    bool all = c.id.empty();
    Json out = all ? Json::object() : Json::array();
    for (const auto& p : config::all_plugins()) {
      if (all) {
        out[std::string(p.name)] = Json{{"priority", p.priority}};
      } else {
        out.push_back(std::string(p.name));
      }
    }
    return json_reply(200, out);
  }
  const config::PluginInfo* p = config::find_plugin(c.id);
  if (p == nullptr) {
    return error_reply(404, fmt::format("plugin not found: {}", c.id));
  }
  if (p->schema.empty()) {
    return json_reply(200, Json{{"type", "object"}});
  }
  return json_reply(200, Json::parse(p->schema));
}

std::string Api::key_of(const Kind& kind, std::string_view id) const {
  return fmt::format("{}/{}/{}", index_.prefix(), kind.name, id);
}

}  // namespace sluice::admin
