// The Admin API's write half: PUT, POST, PATCH and DELETE. Each request is validated whole
// before anything is written; the store write is one transaction.

#include <fmt/format.h>

#include "admin/api.h"
#include "admin/api_internal.h"
#include "admin/json_patch.h"
#include "common/log.h"
#include "config/field_decoder.h"
#include "config/secret_fields.h"
#include "config/snapshot_builder.h"
#include "config/validate.h"

namespace sluice::admin {

using common::Status;
using common::StatusOr;
using config::Json;
using server::AdminResponse;

namespace {

constexpr int kMaxNesting = 64;
constexpr int64_t kMaxTtl = 10LL * 365 * 86400;

// The field that names a resource: consumers are known by username.
const char* id_field(const Kind& k) { return k.name == "consumers" ? "username" : "id"; }

}  // namespace

StatusOr<Json> parse_body(const std::string& body, bool object_only) {
  if (!nesting_within(body, kMaxNesting)) {
    return Status::error(
        fmt::format("invalid request body: nested deeper than {} levels", kMaxNesting));
  }
  Json j;
  try {
    auto escaped = escape_raw_controls(body);
    j = Json::parse(escaped ? *escaped : body);
  } catch (const Json::parse_error& e) {
    // Our own words, not the library's: only the position is passed on.
    return Status::error(body.empty() ? std::string("invalid request body: empty body")
                                      : fmt::format("invalid request body: malformed JSON near "
                                                    "byte {}",
                                                    e.byte));
  } catch (const Json::exception&) {
    return Status::error("invalid request body: malformed JSON");
  }
  if (object_only && !j.is_object()) {
    return Status::error("invalid configuration: " + schema::wrong_type("object", j).message());
  }
  return j;
}

// An id in a body as text, read as the decoders read it (a string, or an integer >= 1
// including a whole-number float such as 1.0); nullopt when absent, "" when not a valid id.
// A consumer's username must be a string.
std::optional<std::string> body_id(const Json& obj, const char* field) {
  auto it = obj.find(field);
  if (it == obj.end()) {
    return std::nullopt;
  }
  if (std::string_view(field) == "username") {
    return it->is_string() ? it->get<std::string>() : std::string();
  }
  if (it->is_string()) {
    return it->get<std::string>();
  }
  auto id = config::as_id(*it);
  return id ? *id : std::string();
}

// APISIX's check_forbidden_properties (admin/resource.lua): the times are the server's, on the
// object itself, on its inline upstream and among its plugins; its text has the two spaces.
Status server_set_fields(const Json& obj) {
  if (!obj.is_object()) {
    return Status::ok();
  }
  for (const char* where : {"", "upstream", "plugins"}) {
    const Json* in = &obj;
    if (*where != '\0') {
      auto it = obj.find(where);
      if (it == obj.end() || !it->is_object()) {
        continue;
      }
      in = &*it;
    }
    for (const char* f : {"create_time", "update_time"}) {
      if (in->contains(f)) {
        return Status::error(
            fmt::format("the property is forbidden:  {}{}{}", where, *where != '\0' ? "." : "", f));
      }
    }
  }
  return Status::ok();
}

namespace {

// `body` placed where a sub path PATCH puts it ("upstream/nodes" -> {"upstream":{"nodes":..}}),
// so that the checks on a whole object see it.
Json nest_at(std::string_view sub_path, const Json& body) {
  Json out = body;
  while (!sub_path.empty()) {
    size_t slash = sub_path.rfind('/');
    std::string_view last = slash == std::string_view::npos ? sub_path : sub_path.substr(slash + 1);
    out = Json{{std::string(last), std::move(out)}};
    sub_path = slash == std::string_view::npos ? std::string_view() : sub_path.substr(0, slash);
  }
  return out;
}

}  // namespace

StatusOr<int64_t> ttl_arg(std::string_view query) {
  auto v = query_value(query, "ttl");
  if (!v) {
    return int64_t{0};
  }
  char* end = nullptr;
  long long n = std::strtoll(v->c_str(), &end, 10);
  if (v->empty() || *end != '\0' || n < 1 || n > kMaxTtl) {
    return Status::error(
        fmt::format("invalid argument ttl: expected an integer 1-{}, got \"{}\"", kMaxTtl, *v));
  }
  return static_cast<int64_t>(n);
}

namespace {

std::string id_error(const Kind& k) {
  return k.name == "consumers" ? "wrong username" : fmt::format("wrong {} id", k.singular);
}

// What DELETE says when `key`'s resource is still referenced by `referrer`.
std::string in_use_message(const Kind& k, std::string_view prefix, const std::string& referrer) {
  store::KeyParts parts;
  std::string who = referrer;
  if (store::split_key(prefix, referrer, &parts)) {
    const Kind* rk = find_kind(parts.kind);
    who = fmt::format("{} [{}]", rk ? rk->singular : parts.kind, parts.id);
  }
  std::string what = k.name == "services"          ? "service directly"
                     : k.name == "plugin_configs"  ? "plugin config"
                     : k.name == "consumer_groups" ? "consumer group"
                                                   : std::string(k.singular);
  return fmt::format("can not delete this {}, {} is still using it now", what, who);
}

}  // namespace

Status Api::check_references(const Json& obj, const Kind& kind) {
  struct Ref {
    const char* field;
    const char* kind;
    const char* what;  // as APISIX words it
  };
  static constexpr Ref kRefs[] = {
      {"upstream_id", "upstreams", "upstream"},
      {"service_id", "services", "service"},
      {"plugin_config_id", "plugin_configs", "plugin config"},
      {"group_id", "consumer_groups", "consumer group"},
  };
  for (const Ref& r : kRefs) {
    bool applies = kind.name == "routes" || kind.name == "stream_routes"
                       ? std::string_view(r.field) != "group_id"
                   : kind.name == "services"  ? std::string_view(r.field) == "upstream_id"
                   : kind.name == "consumers" ? std::string_view(r.field) == "group_id"
                                              : false;
    auto id = applies ? body_id(obj, r.field) : std::nullopt;
    if (!id || id->empty()) {
      continue;
    }
    auto e = store_.get(fmt::format("{}/{}/{}", index_.prefix(), r.kind, *id));
    if (!e) {
      return e.status();
    }
    if (!*e) {
      return Status::error(fmt::format("failed to fetch {} info by {} id [{}], response code: 404",
                                       r.what, r.what, *id));
    }
  }
  return check_client_cert_ref(obj, kind);
}

// An upstream's tls.client_cert_id (inline in a route or a service too) must name an `ssls`
// object of type client, as APISIX's check_upstream_conf requires.
Status Api::check_client_cert_ref(const Json& obj, const Kind& kind) {
  const Json* up = kind.name == "upstreams" ? &obj : nullptr;
  if ((kind.name == "routes" || kind.name == "services") && obj.contains("upstream")) {
    up = &obj["upstream"];
  }
  if (up == nullptr || !up->is_object() || !up->contains("tls") || !(*up)["tls"].is_object()) {
    return Status::ok();
  }
  auto id = body_id((*up)["tls"], "client_cert_id");
  if (!id || id->empty()) {
    return Status::ok();
  }
  auto e = store_.get(fmt::format("{}/ssls/{}", index_.prefix(), *id));
  if (!e) {
    return e.status();
  }
  if (!*e) {
    return Status::error(
        fmt::format("failed to fetch ssl info by ssl id [{}], response code: 404", *id));
  }
  Json ssl = Json::parse((*e)->value, nullptr, false);
  if (!ssl.is_object() || ssl.value("type", "") != "client") {
    return Status::error(
        fmt::format("failed to fetch ssl info by ssl id [{}], wrong ssl type", *id));
  }
  return Status::ok();
}

AdminResponse Api::write(const Call& c, const std::string& id, Json obj, bool created,
                         int64_t create_time, int64_t ttl, std::optional<int64_t> expect) {
  const Kind& k = *c.kind;
  obj[id_field(k)] = id;  // already checked equal to any id given; stored as a string
  Status st = config::check_resource(k.name, id, obj);
  if (!st) {
    return error_reply(400, st.message());
  }
  st = check_references(obj, k);
  if (!st) {
    return error_reply(400, st.message());
  }
  // Sealed once valid, as APISIX encrypts after check_conf: what is stored, and answered, is
  // the ciphertext. A value sealed already (a GET body sent back) is not sealed again.
  st = config::seal_secrets(k.name, &obj);
  if (!st) {
    SLUICE_LOG(kError, "admin: {} {}: encrypting: {}", k.singular, id, st.message());
    return error_reply(500, "failed to encrypt the private key; see the gateway's log");
  }
  int64_t now = now_();
  obj["create_time"] = create_time != 0 ? create_time : now;
  obj["update_time"] = now;
  std::string key = key_of(k, id);
  auto e = store_.put(key, dump(obj), ttl, expect);
  if (!e) {
    if (e.status().message().rfind("conflict", 0) == 0) {
      return error_reply(409, "conflict: the object changed while this request was handled");
    }
    return store_error(e.status());
  }
  if (after_write_) {
    after_write_();
  }
  config::omit_clear_secrets(k.name, &obj);  // with `keyring: ~`: never answered in clear
  return json_reply(created ? 201 : 200, Json{{"key", key}, {"value", std::move(obj)}});
}

// APISIX answers the schema's own message without the "invalid configuration: " its writes add,
// and 200 with no body when the object passes. References (upstream_id...) are not looked up:
// APISIX checks the schema only.
AdminResponse Api::validate(std::string_view rest, const server::AdminRequest& req) {
  constexpr std::string_view kValidate = "validate/";
  if (!rest.starts_with(kValidate)) {
    return error_reply(404,
                       "resource schemas are not served; POST "
                       "/apisix/admin/schema/validate/{resource} checks an object");
  }
  const Kind* k = find_kind(rest.substr(kValidate.size()));
  if (k == nullptr || k->name == "plugin_metadata" || k->name == "secrets") {
    return error_reply(404,
                       fmt::format("Unsupported resource type: {}", rest.substr(kValidate.size())));
  }
  if (req.method != "POST") {
    return error_reply(405,
                       fmt::format("not supported `{}` method for schema validation", req.method));
  }
  auto body = parse_body(req.body, true);
  if (!body) {
    return error_reply(400, body.status().message());
  }
  Json obj = std::move(body).value();
  Status st = server_set_fields(obj);
  if (st) {
    // The id, when the body has none, is only there to satisfy the decoders.
    auto given = body_id(obj, id_field(*k));
    std::string id = given && !given->empty() ? *given : "validate";
    if (!given) {
      obj[id_field(*k)] = id;
    }
    st = config::check_resource(k->name, id, obj);
  }
  if (!st) {
    constexpr std::string_view kPrefix = "invalid configuration: ";
    std::string_view msg = st.message();
    return error_reply(400, msg.starts_with(kPrefix) ? msg.substr(kPrefix.size()) : msg);
  }
  AdminResponse r;
  r.headers = {{"X-API-VERSION", "v3"}};
  return r;
}

AdminResponse Api::put(Call& c) {
  const Kind& k = *c.kind;
  if (!c.sub_path.empty()) {
    return error_reply(400, fmt::format("sub path is only for PATCH: {}", c.sub_path));
  }
  auto ttl = ttl_arg(c.req.query);
  auto body = parse_body(c.req.body, true);
  if (!ttl || !body) {
    return error_reply(400, (!ttl ? ttl.status() : body.status()).message());
  }
  Json obj = std::move(body).value();
  if (Status st = server_set_fields(obj); !st) {
    return error_reply(400, st.message());
  }
  const char* field = id_field(k);
  std::string id = c.id;
  if (k.name != "plugin_metadata" && k.name != "consumers" && k.name != "secrets" &&
      obj.contains("id")) {
    auto checked = config::as_id(obj["id"]);
    if (!checked) {
      return error_reply(400, fmt::format("invalid configuration: property \"id\" validation "
                                          "failed: {}",
                                          checked.status().message()));
    }
  }
  if (k.name != "plugin_metadata") {
    auto given = body_id(obj, field);
    if (given && !given->empty() && !id.empty() && *given != id) {
      return error_reply(400, id_error(k));
    }
    if (given && id.empty()) {
      id = *given;
    }
    if (id.empty()) {
      return error_reply(400, k.name == "consumers" ? std::string("missing consumer username")
                                                    : fmt::format("missing {} id", k.singular));
    }
    if (!given) {
      obj[field] = id;
    } else if (!given->empty()) {
      obj[field] = *given;  // an integer id is kept as a string, as APISIX stores it
    }
  } else if (id.empty()) {
    return error_reply(400, "missing plugin_metadata id");
  } else {
    obj["id"] = id;
  }
  auto existing = store_.get(key_of(k, id));
  if (!existing) {
    return store_error(existing.status());
  }
  int64_t create_time = 0;
  if (*existing) {
    Json old = Json::parse((*existing)->value, nullptr, false);
    if (old.is_object() && old.contains("create_time") && old["create_time"].is_number_integer()) {
      create_time = old["create_time"].get<int64_t>();
    }
  }
  return write(c, id, std::move(obj), !*existing, create_time, *ttl,
               *existing ? std::optional<int64_t>((*existing)->mod_revision) : int64_t{0});
}

AdminResponse Api::post(Call& c) {
  const Kind& k = *c.kind;
  auto ttl = ttl_arg(c.req.query);
  auto body = parse_body(c.req.body, true);
  if (!ttl || !body) {
    return error_reply(400, (!ttl ? ttl.status() : body.status()).message());
  }
  Json obj = std::move(body).value();
  if (!c.id.empty() || obj.contains("id")) {
    return error_reply(400, fmt::format("wrong {} id, do not need it", k.singular));
  }
  if (Status st = server_set_fields(obj); !st) {
    return error_reply(400, st.message());
  }
  // The next revision, as APISIX takes etcd's; a client may already have PUT that id, so
  // step past taken ones.
  auto first = store_.generate_id();
  if (!first) {
    return store_error(first.status());
  }
  std::string id;
  for (int64_t n = *first;; ++n) {
    id = fmt::format("{:020}", n);
    auto taken = store_.get(key_of(k, id));
    if (!taken) {
      return store_error(taken.status());
    }
    if (!*taken) {
      break;
    }
  }
  obj["id"] = id;
  return write(c, id, std::move(obj), true, 0, *ttl, int64_t{0});
}

AdminResponse Api::patch(Call& c) {
  const Kind& k = *c.kind;
  if (c.id.empty()) {
    return error_reply(400, fmt::format("missing {} id", k.singular));
  }
  auto ttl = ttl_arg(c.req.query);
  auto body = parse_body(c.req.body, c.sub_path.empty());
  if (!ttl || !body) {
    return error_reply(400, (!ttl ? ttl.status() : body.status()).message());
  }
  if (Status st = server_set_fields(nest_at(c.sub_path, *body)); !st) {
    return error_reply(400, st.message());
  }
  auto existing = store_.get(key_of(k, c.id));
  if (!existing) {
    return store_error(existing.status());
  }
  if (!*existing) {
    return key_not_found();
  }
  Json obj = Json::parse((*existing)->value, nullptr, false);
  if (!obj.is_object()) {
    return error_reply(500, "the stored value is not a JSON object");
  }
  int64_t create_time = obj.value("create_time", int64_t{0});
  // Merged onto the opened values, which write() seals once: merging onto the ciphertext would
  // seal it again (APISIX's #13351, fixed by decrypting before the merge in #13525).
  if (k.name == "consumers") {
    (void)config::reveal_secrets(k.name, &obj);  // cannot fail for consumers
  }
  if (c.sub_path.empty()) {
    merge_patch(obj, *body);
  } else if (Status st = patch_at(obj, c.sub_path, std::move(body).value()); !st) {
    return error_reply(400, st.message());
  }
  const char* field = id_field(k);
  if (k.name != "plugin_metadata" && body_id(obj, field) != c.id) {
    return error_reply(400, id_error(k));
  }
  // ?ttl= sets a new lifetime; without it the object keeps what is left of its old one.
  int64_t keep = *ttl;
  if (keep == 0 && (*existing)->expire_at > 0) {
    keep = std::max<int64_t>(1, (*existing)->expire_at - now_());
  }
  return write(c, c.id, std::move(obj), false, create_time, keep, (*existing)->mod_revision);
}

AdminResponse Api::remove(const Call& c) {
  const Kind& k = *c.kind;
  if (c.id.empty()) {
    return error_reply(400, fmt::format("missing {} id", k.singular));
  }
  if (!c.sub_path.empty()) {
    return key_not_found();
  }
  std::string key = key_of(k, c.id);
  auto existing = store_.get(key);
  if (!existing) {
    return store_error(existing.status());
  }
  if (!*existing) {
    return key_not_found();
  }
  auto force = query_value(c.req.query, "force");
  std::string referrer = index_.first_referrer(key);
  if (!referrer.empty() && !(force && *force == "true")) {
    return error_reply(400, in_use_message(k, index_.prefix(), referrer));
  }
  if (k.name == "consumers") {
    if (AdminResponse r = remove_credentials_of(key); r.status != 200) {
      return r;
    }
  }
  auto removed = store_.remove(key, (*existing)->mod_revision);
  if (!removed) {
    if (removed.status().message().rfind("conflict", 0) == 0) {  // another writer (etcd)
      return error_reply(409, "conflict: the object changed while this request was handled");
    }
    return store_error(removed.status());
  }
  if (after_write_) {
    after_write_();
  }
  // APISIX passes on etcd's count of deleted keys, as a string.
  return json_reply(200, Json{{"deleted", "1"}, {"key", key}});
}

}  // namespace sluice::admin
