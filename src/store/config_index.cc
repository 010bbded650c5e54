#include "store/config_index.h"

#include <fmt/format.h>

#include <algorithm>

#include "config/field_decoder.h"
#include "config/secret_fields.h"
#include "config/snapshot_builder.h"

namespace sluice::store {

using common::Status;
using config::Json;

bool split_key(std::string_view prefix, std::string_view key, KeyParts* out) {
  if (key.size() <= prefix.size() + 1 || key.substr(0, prefix.size()) != prefix ||
      key[prefix.size()] != '/') {
    return false;
  }
  std::string_view rest = key.substr(prefix.size() + 1);
  size_t slash = rest.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == rest.size()) {
    return false;
  }
  out->kind = rest.substr(0, slash);
  out->id = rest.substr(slash + 1);
  return true;
}

namespace {

// An id field as the key part it names ("1" for 1, 1.0 and "1"); empty when absent or odd.
std::string id_text(const Json& v, const char* field) {
  auto it = v.find(field);
  if (it == v.end()) {
    return {};
  }
  if (it->is_string()) {
    return it->get<std::string>();
  }
  auto id = config::as_id(*it);
  return id ? *id : std::string();
}

template <typename T>
void upsert(std::vector<T>& v, std::unordered_map<std::string, size_t>& pos, const std::string& key,
            T item) {
  auto [it, fresh] = pos.try_emplace(key, v.size());
  if (fresh) {
    v.push_back(std::move(item));
  } else {
    v[it->second] = std::move(item);
  }
}

template <typename T>
void erase_key(std::vector<T>& v, std::unordered_map<std::string, size_t>& pos,
               const std::string& key) {
  auto it = pos.find(key);
  if (it == pos.end()) {
    return;
  }
  size_t i = it->second;
  pos.erase(it);
  v.erase(v.begin() + static_cast<std::ptrdiff_t>(i));
  for (auto& [k, p] : pos) {
    p -= p > i ? 1 : 0;
  }
}

template <typename T>
Status decoded(common::StatusOr<T> r, std::string_view key, T* out) {
  if (!r.is_ok()) {
    return Status::error(fmt::format("{}: {}", key, r.status().message()));
  }
  *out = std::move(r).value();
  return Status::ok();
}

// Decodes one stored value into its place in `v` (decoded() names the key in errors).
template <typename T>
Status absorb(common::StatusOr<T> r, const std::string& key, std::vector<T>& v,
              std::unordered_map<std::string, size_t>& pos) {
  T value;
  Status st = decoded(std::move(r), key, &value);
  if (st) {
    upsert(v, pos, key, std::move(value));
  }
  return st;
}

// A route whose vars or remote_addrs no longer compile (stored by an older Sluice, before a
// rule was refused) is skipped like any invalid value, so it cannot fail the whole build.
common::StatusOr<config::RouteConf> compiled_route(const Json& v) {
  auto r = config::decode_route(v);
  if (r.is_ok()) {
    if (Status st = config::check_route_compiles(*r); !st.is_ok()) {
      return st;
    }
  }
  return r;
}

// A consumer's or a credential's plugins with their sealed fields opened, so that the plugins'
// checks and the snapshot see what the client sent (APISIX decrypts in its plugin_checker).
Json revealed(std::string_view kind, const Json& v) {
  Json clear = v;
  (void)config::reveal_secrets(kind, &clear);  // never fails for these kinds: see its comment
  return clear;
}

// A credential as its key names it: the id and the consumer come from the key, as APISIX reads
// them (consumer.lua), whatever the value says.
common::StatusOr<config::CredentialConf> keyed_credential(const Json& v, std::string_view user,
                                                          std::string_view id) {
  auto c = config::decode_credential(revealed("credentials", v));
  if (c.is_ok()) {
    c->consumer = std::string(user);
    c->id = std::string(id);
  }
  return c;
}

}  // namespace

bool is_credential_key(std::string_view prefix, std::string_view key) {
  KeyParts parts;
  std::string_view user, id;
  return split_key(prefix, key, &parts) && parts.kind == "consumers" &&
         config::split_credential_id(parts.id, &user, &id);
}

std::vector<std::string> ConfigIndex::refs_of(std::string_view kind, const Json& v) const {
  std::vector<std::string> out;
  auto add = [&](const char* field, const char* target) {
    std::string id = id_text(v, field);
    if (!id.empty()) {
      out.push_back(fmt::format("{}/{}/{}", prefix_, target, id));
    }
  };
  if (kind == "routes" || kind == "stream_routes") {
    add("upstream_id", "upstreams");
    add("service_id", "services");
    add("plugin_config_id", "plugin_configs");
  } else if (kind == "services") {
    add("upstream_id", "upstreams");
  } else if (kind == "consumers") {
    add("group_id", "consumer_groups");
  }
  return out;
}

void ConfigIndex::set_refs(const std::string& key, std::vector<std::string> targets) {
  auto it = refs_.find(key);
  if (it != refs_.end()) {
    for (const auto& t : it->second) {
      auto r = referrers_.find(t);
      if (r != referrers_.end()) {
        r->second.erase(key);
        if (r->second.empty()) {
          referrers_.erase(r);
        }
      }
    }
    refs_.erase(it);
  }
  for (const auto& t : targets) {
    referrers_[t].insert(key);
  }
  if (!targets.empty()) {
    refs_[key] = std::move(targets);
  }
}

void ConfigIndex::erase(const std::string& key, std::string_view kind) {
  if (kind == "routes") {
    erase_key(set_.routes, routes_, key);
  } else if (kind == "services") {
    erase_key(set_.services, services_, key);
  } else if (kind == "upstreams") {
    erase_key(set_.upstreams, upstreams_, key);
  } else if (kind == "global_rules") {
    erase_key(set_.global_rules, global_rules_, key);
  } else if (kind == "plugin_configs") {
    erase_key(set_.plugin_configs, plugin_configs_, key);
  } else if (kind == "ssls") {
    erase_key(set_.ssls, ssls_, key);
  } else if (kind == "consumers") {
    erase_key(set_.consumers, consumers_, key);
    erase_key(set_.credentials, credentials_, key);
  } else if (kind == "consumer_groups") {
    erase_key(set_.consumer_groups, consumer_groups_, key);
  } else if (kind == "plugin_metadata") {
    erase_key(set_.plugin_metadata, plugin_metadata_, key);
  }
  set_refs(key, {});
}

Status ConfigIndex::apply(const Change& c) {
  const std::string& key = c.entry.key;
  KeyParts parts;
  if (!split_key(prefix_, key, &parts)) {
    return Status::error(fmt::format("{}: not a resource key under {}", key, prefix_));
  }
  if (c.deleted) {
    erase(key, parts.kind);
    return Status::ok();
  }
  Json v = Json::parse(c.entry.value, nullptr, false);
  if (v.is_discarded() || !v.is_object()) {
    return Status::error(fmt::format("{}: the value is not a JSON object", key));
  }
  Status st;
  if (parts.kind == "routes") {
    st = absorb(compiled_route(v), key, set_.routes, routes_);
  } else if (parts.kind == "services") {
    st = absorb(config::decode_service(v), key, set_.services, services_);
  } else if (parts.kind == "upstreams") {
    st = absorb(config::decode_upstream(v), key, set_.upstreams, upstreams_);
  } else if (parts.kind == "global_rules") {
    st = absorb(config::decode_global_rule(v), key, set_.global_rules, global_rules_);
  } else if (parts.kind == "plugin_configs") {
    st = absorb(config::decode_plugin_config(v), key, set_.plugin_configs, plugin_configs_);
  } else if (parts.kind == "ssls") {
    st = absorb(config::decode_ssl(v), key, set_.ssls, ssls_);
  } else if (std::string_view user, id;
             parts.kind == "consumers" && config::split_credential_id(parts.id, &user, &id)) {
    st = absorb(keyed_credential(v, user, id), key, set_.credentials, credentials_);
  } else if (parts.kind == "consumers") {
    st = absorb(config::decode_consumer(revealed("consumers", v)), key, set_.consumers, consumers_);
  } else if (parts.kind == "consumer_groups") {
    st = absorb(config::decode_consumer_group(v), key, set_.consumer_groups, consumer_groups_);
  } else if (parts.kind == "plugin_metadata") {
    // The key names the plugin (/apisix/plugin_metadata/cors); cors reads its own.
    st = absorb(config::decode_plugin_metadata(std::string(parts.id), v), key, set_.plugin_metadata,
                plugin_metadata_);
  }
  if (st) {
    set_refs(key, refs_of(parts.kind, v));
  }
  return st;
}

std::string ConfigIndex::first_referrer(const std::string& key) const {
  auto it = referrers_.find(key);
  return it == referrers_.end() || it->second.empty() ? std::string() : *it->second.begin();
}

}  // namespace sluice::store
