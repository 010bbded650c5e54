// `sluice config load` and `sluice config apply`: a file checked whole, then written in one
// transaction.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <ctime>

#include "common/file.h"
#include "config/secret_fields.h"
#include "config/validate.h"
#include "config/yaml_json.h"
#include "runtime/config_cli.h"
#include "store/config_index.h"

namespace sluice::runtime::config_cli {

using common::Status;
using common::StatusOr;

namespace {

// The order `load` writes in: what others reference before what references it.
// Credentials (stored under /consumers/, listed among apisix.yaml's consumers) follow their
// consumers.
constexpr std::array<const char*, 13> kWriteOrder = {
    "upstreams",   "services",      "plugin_configs", "consumer_groups", "consumers",
    "credentials", "ssls",          "global_rules",   "plugin_metadata", "protos",
    "secrets",     "stream_routes", "routes"};

size_t rank(std::string_view kind) {
  for (size_t i = 0; i < kWriteOrder.size(); ++i) {
    if (kind == kWriteOrder[i]) {
      return i;
    }
  }
  return kWriteOrder.size();
}

// The id an item is stored under: `username` for consumers, `id` otherwise (a credential's
// `<username>/credentials/<id>`).
StatusOr<std::string> item_id(std::string_view kind, const Json& item) {
  std::string_view user, cred;
  const char* field =
      kind == "consumers" && !is_credential_item(kind, item, &user, &cred) ? "username" : "id";
  auto it = item.find(field);
  if (it != item.end() && it->is_string() && !it->get<std::string>().empty()) {
    return it->get<std::string>();
  }
  if (it != item.end() && it->is_number_integer() && it->get<int64_t>() > 0) {
    return std::to_string(it->get<int64_t>());
  }
  return Status::error(fmt::format("missing or bad \"{}\"", field));
}

// One item of the file, checked and made as the Admin API stores it; nullopt (printed) when
// it is refused.
std::optional<std::pair<std::string, Json>> prepare_item(const std::string& prefix,
                                                         const std::string& kind, const Json& item,
                                                         const std::string& where,
                                                         std::string* credential_user,
                                                         const char* who) {
  if (!item.is_object()) {
    fprintf(stderr, "%s: %s: expected an object\n", who, where.c_str());
    return std::nullopt;
  }
  auto id = item_id(kind, item);
  if (!id) {
    fprintf(stderr, "%s: %s: %s\n", who, where.c_str(), id.status().message().c_str());
    return std::nullopt;
  }
  if (auto red = config::redacted_secrets(kind, item); !red.empty()) {
    fprintf(stderr,
            "%s: %s (id %s): %s: redacted by `sluice config dump`; dump with --show-secrets to "
            "carry private keys\n",
            who, where.c_str(), id->c_str(), red.front().c_str());
    return std::nullopt;
  }
  Json obj = item;
  std::string_view user, cred;
  const bool credential = is_credential_item(kind, item, &user, &cred);
  if (kind == "consumers") {
    // A dump holds plugin secrets as stored, sealed: opened here, they are sealed once
    // below, not sealed again (a field's shape cannot tell sealed from clear).
    (void)config::reveal_secrets(credential ? "credentials" : "consumers", &obj);
  }
  Status st;
  if (credential) {
    obj["id"] = std::string(cred);  // stored as the Admin API stores it
    st = config::decode_credential(obj).status();
    if (st) {
      st = config::seal_secrets("credentials", &obj);
    }
    *credential_user = std::string(user);
  } else {
    st = config::check_resource(kind, *id, obj);
    if (st) {
      st = config::seal_secrets(kind, &obj);  // as the Admin API stores it
    }
  }
  if (!st) {
    fprintf(stderr, "%s: %s (id %s): %s\n", who, where.c_str(), id->c_str(), st.message().c_str());
    return std::nullopt;
  }
  if (kind != "consumers") {
    obj["id"] = *id;  // stored as a string, as the Admin API stores it
  }
  const auto now = static_cast<int64_t>(time(nullptr));
  if (!obj.contains("create_time")) {
    obj["create_time"] = now;
  }
  if (!obj.contains("update_time")) {
    obj["update_time"] = now;
  }
  return std::make_pair(fmt::format("{}/{}/{}", prefix, kind, *id), std::move(obj));
}

}  // namespace

Prepared prepare(const Options& o, const std::string& prefix, const char* who) {
  Prepared p;
  p.prefix = prefix;
  std::string text;
  if (!common::read_file(o.file, &text)) {
    fprintf(stderr, "%s: cannot read %s\n", who, o.file.c_str());
    ++p.errors;
    return p;
  }
  auto parsed = config::yaml_to_json(text, o.file);
  if (!parsed) {
    fprintf(stderr, "%s: %s\n", who, parsed.status().message().c_str());
    ++p.errors;
    return p;
  }
  p.doc = parsed->is_null() ? Json::object() : std::move(parsed).value();
  if (!p.doc.is_object()) {
    fprintf(stderr, "%s: %s: expected a mapping of kinds to lists\n", who, o.file.c_str());
    ++p.errors;
    return p;
  }
  for (const auto& [kind, items] : p.doc.items()) {
    if (!config::is_resource_kind(kind)) {
      fprintf(stderr, "%s: %s: unknown kind \"%s\"\n", who, o.file.c_str(), kind.c_str());
      ++p.errors;
      continue;
    }
    if (!items.is_array()) {
      fprintf(stderr, "%s: %s: %s: expected a list\n", who, o.file.c_str(), kind.c_str());
      ++p.errors;
      continue;
    }
    for (size_t i = 0; i < items.size(); ++i) {
      const std::string where = fmt::format("{}[{}]", kind, i);
      std::string user;
      auto w = prepare_item(prefix, kind, items[i], where, &user, who);
      if (!w) {
        ++p.errors;
        continue;
      }
      if (!p.keys.insert(w->first).second) {
        fprintf(stderr, "%s: %s: duplicate id %s\n", who, where.c_str(),
                w->second.value("id", w->second.value("username", "")).c_str());
        ++p.errors;
        continue;
      }
      if (!user.empty()) {
        p.credential_owners.emplace_back(user, where);
      }
      if (!items[i].contains("create_time")) {
        p.stamped.insert(w->first);
      }
      p.writes.push_back(std::move(*w));
    }
  }
  // Referenced kinds first and routes last, so that a node watching etcd never serves a
  // route whose upstream or service is not there yet.
  std::stable_sort(p.writes.begin(), p.writes.end(), [&](const auto& a, const auto& b) {
    return rank(kind_of_key(prefix, a.first)) < rank(kind_of_key(prefix, b.first));
  });
  return p;
}

void resolve(const Options& o, const std::vector<store::Entry>& current, Prepared* pp,
             const char* who) {
  Prepared& p = *pp;
  const std::string& prefix = p.prefix;
  std::set<std::string> stored;
  for (const store::Entry& e : current) {
    stored.insert(e.key);
  }
  // A credential needs its consumer, in the file or already stored (the Admin API's
  // `consumer not found`).
  for (const auto& [user, where] : p.credential_owners) {
    const std::string consumer_key = fmt::format("{}/consumers/{}", prefix, user);
    if (!p.keys.contains(consumer_key) && !stored.contains(consumer_key)) {
      fprintf(stderr, "%s: %s: consumer not found\n", who, where.c_str());
      ++p.errors;
    }
  }
  // Stale objects go after the new ones are in, referrers first.
  if (o.replace) {
    for (const store::Entry& e : current) {
      const std::string kind = kind_of_key(prefix, e.key);
      const std::string listed_as = kind == "credentials" ? "consumers" : kind;
      if (!kind.empty() && p.doc.contains(listed_as) && !p.keys.contains(e.key)) {
        p.stale.push_back(e.key);
      }
    }
    std::stable_sort(p.stale.begin(), p.stale.end(), [&](const auto& a, const auto& b) {
      return rank(kind_of_key(prefix, a)) > rank(kind_of_key(prefix, b));
    });
  }
}

int write_prepared(const Options& o, const std::string& place, const std::string& prefix,
                   store::ConfigStore& s, const Prepared& p, const char* who) {
  // One transaction: every write and delete lands, or (on any failure) none does.
  std::vector<store::BatchOp> ops;
  ops.reserve(p.writes.size() + p.stale.size());
  for (const auto& [key, value] : p.writes) {
    ops.push_back({key, value.dump(), false});
  }
  for (const auto& key : p.stale) {
    ops.push_back({key, std::string(), true});
  }
  if (Status r = s.apply_batch(ops); !r) {
    fprintf(stderr, "%s: %s: nothing was written\n", who, r.message().c_str());
    return 1;
  }
  fprintf(stderr, "%s: %zu resource(s) written to %s under %s, %zu deleted\n", who, p.writes.size(),
          place.c_str(), prefix.c_str(), p.stale.size());
  return 0;
}

int open_for_write(const Options& o, const config::GatewayConfig& conf, const char* who,
                   Opened* out) {
  out->place = o.place.empty() ? provider_name(conf) : o.place;
  if (out->place != "embedded" && out->place != "etcd") {
    fprintf(stderr, "%s: --to must be embedded or etcd\n", who);
    return 2;
  }
  out->prefix = prefix_of(conf, out->place);
  // Everything is checked before anything is written; the store is opened only then.
  out->p = prepare(o, out->prefix, who);
  if (out->p.errors > 0) {
    fprintf(stderr, "%s: %d error(s) in %s: nothing was written\n", who, out->p.errors,
            o.file.c_str());
    return 1;
  }
  auto s = open_place(conf, out->place);
  if (!s) {
    fprintf(stderr, "%s: %s\n", who, s.status().message().c_str());
    return 1;
  }
  out->store = std::move(s).value();
  auto current = out->store->list(out->prefix + "/");
  if (!current) {
    fprintf(stderr, "%s: %s\n", who, current.status().message().c_str());
    return 1;
  }
  out->current = std::move(current).value();
  resolve(o, out->current, &out->p, who);  // credentials' consumers, --replace's stale keys
  if (out->p.errors > 0) {
    fprintf(stderr, "%s: %d error(s) in %s: nothing was written\n", who, out->p.errors,
            o.file.c_str());
    return 1;
  }
  return 0;
}

int load(const Options& o, const config::GatewayConfig& conf) {
  const char* who = "sluice config load";
  Opened w;
  if (int rc = open_for_write(o, conf, who, &w); rc != 0) {
    return rc;
  }
  return write_prepared(o, w.place, w.prefix, *w.store, w.p, who);
}

int rollback(const Options& o, const config::GatewayConfig& conf) {
  const char* who = "sluice config rollback";
  if (conf.config_provider != config::ConfigProvider::kEmbedded) {
    fprintf(stderr,
            "%s: works on the embedded store; etcd keeps its own history (read a past revision "
            "with `etcdctl get --rev`, then `sluice config load --replace` it)\n",
            who);
    return 2;
  }
  int64_t revision = -1;
  const auto r = std::from_chars(o.file.data(), o.file.data() + o.file.size(), revision);
  if (r.ec != std::errc() || r.ptr != o.file.data() + o.file.size() || revision < 0) {
    fprintf(stderr, "%s: %s: expected a revision (a number)\n", who, o.file.c_str());
    return 2;
  }
  auto s = open_place(conf, "embedded");
  if (!s) {
    fprintf(stderr, "%s: %s\n", who, s.status().message().c_str());
    return 1;
  }
  auto then = (*s)->state_at(revision);
  if (!then) {
    fprintf(stderr, "%s: %s\n", who, then.status().message().c_str());
    return 1;
  }
  // Each key changed since, back to its value then (bit for bit: the stored text, times and
  // all); a key that did not exist then is deleted. What is already so is left alone.
  std::vector<store::BatchOp> ops;
  for (const auto& [key, value] : *then) {
    auto now = (*s)->get(key);
    if (!now) {
      fprintf(stderr, "%s: %s\n", who, now.status().message().c_str());
      return 1;
    }
    const bool same = value ? (*now && (*now)->value == *value) : !*now;
    if (same) {
      continue;
    }
    printf("%s %s\n", !value ? "-" : (*now ? "~" : "+"), key.c_str());
    ops.push_back({key, value.value_or(""), !value});
  }
  const int64_t from = (*s)->revision();
  printf("%zu change(s) to go back from revision %lld to revision %lld\n", ops.size(),
         static_cast<long long>(from), static_cast<long long>(revision));
  fflush(stdout);
  if (o.dry_run || ops.empty()) {
    return 0;
  }
  if (Status st = (*s)->apply_batch(ops); !st) {
    fprintf(stderr, "%s: %s: nothing was written\n", who, st.message().c_str());
    return 1;
  }
  fprintf(stderr,
          "%s: the store holds what it held at revision %lld, as revision %lld (itself a change "
          "a later rollback can undo)\n",
          who, static_cast<long long>(revision), static_cast<long long>((*s)->revision()));
  return 0;
}

}  // namespace sluice::runtime::config_cli
