// A consumer's credentials (APISIX 3.7+): /apisix/admin/consumers/{username}/credentials[/{id}],
// stored at <prefix>/consumers/{username}/credentials/{id} as APISIX lays them out in etcd.
// APISIX's admin/credentials.lua serves PUT, GET and DELETE; POST and PATCH are refused.

#include <fmt/format.h>

#include "admin/api.h"
#include "admin/api_internal.h"
#include "common/log.h"
#include "config/secret_fields.h"

namespace sluice::admin {

using common::Status;
using config::Json;
using server::AdminResponse;

namespace {

constexpr std::string_view kCredentials = "credentials";

AdminResponse conflict() {
  return error_reply(409, "conflict: the object changed while this request was handled");
}

bool is_conflict(const Status& st) { return st.message().rfind("conflict", 0) == 0; }

}  // namespace

AdminResponse Api::credentials(Call& c) {
  const std::string& m = c.req.method;
  // "credentials" or "credentials/<id>"; anything deeper names nothing.
  std::string id = c.sub_path.size() > kCredentials.size()
                       ? c.sub_path.substr(kCredentials.size() + 1)
                       : std::string();
  if (id.find('/') != std::string::npos) {
    return key_not_found();
  }
  const std::string dir = key_of(*c.kind, c.id) + "/credentials/";
  if (m == "GET") {
    if (id.empty()) {
      Call list{.req = c.req, .kind = c.kind, .list_prefix = dir};
      return get_list(list);
    }
    auto e = store_.get(dir + id);
    if (!e) {
      return store_error(e.status());
    }
    return *e ? json_reply(200, entry_json("credentials", **e)) : key_not_found();
  }
  if (m == "PUT") {
    return put_credential(c, c.id, std::move(id));
  }
  if (m == "DELETE") {
    if (id.empty()) {
      return error_reply(400, "missing credential id");
    }
    auto e = store_.get(dir + id);
    if (!e) {
      return store_error(e.status());
    }
    if (!*e) {
      return key_not_found();
    }
    auto removed = store_.remove(dir + id, (*e)->mod_revision);
    if (!removed) {
      return is_conflict(removed.status()) ? conflict() : store_error(removed.status());
    }
    if (after_write_) {
      after_write_();
    }
    return json_reply(200, Json{{"deleted", "1"}, {"key", dir + id}});
  }
  return error_reply(405, fmt::format("not supported `{}` method for credential", m));
}

AdminResponse Api::remove_credentials_of(const std::string& consumer_key) {
  auto creds = store_.list(consumer_key + "/credentials/");
  if (!creds) {
    return store_error(creds.status());
  }
  for (const auto& e : *creds) {
    if (!store::is_credential_key(index_.prefix(), e.key)) {
      continue;
    }
    auto removed = store_.remove(e.key, e.mod_revision);
    if (!removed) {
      return is_conflict(removed.status()) ? conflict() : store_error(removed.status());
    }
  }
  AdminResponse ok;
  ok.status = 200;
  return ok;
}

// APISIX's order: the body's own checks (times, id, schema, plugins), then the consumer.
AdminResponse Api::put_credential(const Call& c, const std::string& user, std::string id) {
  auto ttl = ttl_arg(c.req.query);
  auto body = parse_body(c.req.body, true);
  if (!ttl || !body) {
    return error_reply(400, (!ttl ? ttl.status() : body.status()).message());
  }
  Json obj = std::move(body).value();
  if (Status st = server_set_fields(obj); !st) {
    return error_reply(400, st.message());
  }
  auto given = body_id(obj, "id");
  if (given && !given->empty() && !id.empty() && *given != id) {
    return error_reply(400, "wrong credential id");
  }
  if (id.empty() && given) {
    id = given->empty() ? obj["id"].dump() : *given;  // an invalid id fails the schema below
  }
  if (id.empty()) {
    return error_reply(400, "missing credential id");
  }
  if (!given || !given->empty()) {
    obj["id"] = id;  // stored as a string, as APISIX stores it
  }
  if (auto cred = config::decode_credential(obj); !cred) {
    return error_reply(400, cred.status().message());
  }
  const std::string consumer_key = key_of(*c.kind, user);
  auto consumer = store_.get(consumer_key);
  if (!consumer) {
    return store_error(consumer.status());
  }
  if (!*consumer) {
    return error_reply(404, "consumer not found");
  }
  if (Status st = config::seal_secrets("credentials", &obj); !st) {
    SLUICE_LOG(kError, "admin: credential {}/{}: encrypting: {}", user, id, st.message());
    return error_reply(500, "failed to encrypt the credential; see the gateway's log");
  }
  const std::string key = consumer_key + "/credentials/" + id;
  auto existing = store_.get(key);
  if (!existing) {
    return store_error(existing.status());
  }
  int64_t now = now_();
  int64_t create_time = now;
  if (*existing) {
    Json old = Json::parse((*existing)->value, nullptr, false);
    if (old.is_object() && old.contains("create_time") && old["create_time"].is_number_integer()) {
      create_time = old["create_time"].get<int64_t>();
    }
  }
  obj["create_time"] = create_time;
  obj["update_time"] = now;
  auto put = store_.put(key, dump(obj), *ttl,
                        *existing ? std::optional<int64_t>((*existing)->mod_revision) : 0);
  if (!put) {
    return is_conflict(put.status()) ? conflict() : store_error(put.status());
  }
  if (after_write_) {
    after_write_();
  }
  // The answer carries what is stored, sealed fields included, as APISIX's etcd.set answer does.
  return json_reply(*existing ? 200 : 201, Json{{"key", key}, {"value", std::move(obj)}});
}

}  // namespace sluice::admin
