#include "runtime/config_tool.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <array>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "common/file.h"
#include "config/gateway_config.h"
#include "config/secret_fields.h"
#include "config/validate.h"
#include "config/yaml_json.h"
#include "etcd/etcd_store.h"
#include "store/config_index.h"
#include "store/live_read.h"
#include "store/store.h"

namespace sluice::runtime {

using common::Status;
using common::StatusOr;
using Json = nlohmann::json;

namespace {

constexpr const char* kUsage =
    "usage: sluice config dump [-c conf/config.yaml] [--from embedded|etcd|yaml] [-o FILE]\n"
    "                          [--show-secrets]\n"
    "       sluice config load [-c conf/config.yaml] [--to embedded|etcd] [--replace] FILE\n";

// The order `load` writes in: what others reference before what references it.
// Credentials (stored under /consumers/, listed among apisix.yaml's consumers) follow their
// consumers.
constexpr std::array<const char*, 13> kWriteOrder = {
    "upstreams",   "services",      "plugin_configs", "consumer_groups", "consumers",
    "credentials", "ssls",          "global_rules",   "plugin_metadata", "protos",
    "secrets",     "stream_routes", "routes"};

struct Options {
  std::string sub;
  std::string config = "conf/config.yaml";
  std::string place;  // --from / --to; empty = the config's provider
  std::string out;    // -o
  std::string file;   // load's FILE
  bool replace = false;
  bool show_secrets = false;  // dump: private keys decrypted, in clear
};

StatusOr<config::GatewayConfig> load_config(const std::string& path) {
  std::string text;
  if (!common::read_file(path, &text)) {
    return Status::error(fmt::format("cannot read {}", path));
  }
  size_t slash = path.rfind('/');
  return config::parse_gateway_config(text,
                                      slash == std::string::npos ? "." : path.substr(0, slash));
}

std::string provider_name(const config::GatewayConfig& c) {
  switch (c.config_provider) {
    case config::ConfigProvider::kEtcd:
      return "etcd";
    case config::ConfigProvider::kYaml:
      return "yaml";
    case config::ConfigProvider::kEmbedded:
      break;
  }
  return "embedded";
}

std::string prefix_of(const config::GatewayConfig& c, const std::string& place) {
  return place == "etcd" ? c.etcd.prefix : std::string("/apisix");
}

StatusOr<std::unique_ptr<store::ConfigStore>> open_place(const config::GatewayConfig& c,
                                                         const std::string& place) {
  if (place == "etcd") {
    auto opts = etcd::client_options(c.etcd);
    if (!opts) {
      return opts.status();
    }
    return std::unique_ptr<store::ConfigStore>(
        std::make_unique<etcd::EtcdStore>(std::move(opts).value(), c.etcd.prefix));
  }
  auto st = store::open_embedded(c.data_dir);
  if (!st) {
    return Status::error(st.status().message() +
                         " (a running gateway holds the embedded store: stop it first)");
  }
  return std::move(st).value();
}

// Every resource among `entries`, as {kind: [values]} with the kinds in dump order.
StatusOr<Json> read_store(StatusOr<std::vector<store::Entry>> entries, const std::string& prefix) {
  if (!entries) {
    return entries.status();
  }
  std::sort(entries->begin(), entries->end(), [](const store::Entry& a, const store::Entry& b) {
    return a.create_revision < b.create_revision;
  });
  Json doc = Json::object();
  for (const auto& e : *entries) {
    store::KeyParts parts;
    if (!store::split_key(prefix, e.key, &parts) || !config::is_resource_kind(parts.kind)) {
      continue;
    }
    Json v = Json::parse(e.value, nullptr, false);
    if (!v.is_object()) {
      fprintf(stderr, "sluice config: %s: not a JSON object; left out\n", e.key.c_str());
      continue;
    }
    if (store::is_credential_key(prefix, e.key)) {
      v["id"] = std::string(parts.id);  // apisix.yaml's form: `<username>/credentials/<id>`
    }
    doc[std::string(parts.kind)].push_back(std::move(v));
  }
  return doc;
}

void emit(YAML::Emitter& out, const Json& j) {
  switch (j.type()) {
    case Json::value_t::object:
      out << YAML::BeginMap;
      for (auto it = j.begin(); it != j.end(); ++it) {
        out << YAML::Key << it.key() << YAML::Value;
        emit(out, it.value());
      }
      out << YAML::EndMap;
      break;
    case Json::value_t::array:
      out << YAML::BeginSeq;
      for (const auto& e : j) {
        emit(out, e);
      }
      out << YAML::EndSeq;
      break;
    case Json::value_t::string:
      out << YAML::DoubleQuoted << j.get<std::string>();
      break;
    case Json::value_t::boolean:
      out << (j.get<bool>() ? "true" : "false");
      break;
    case Json::value_t::number_integer:
      out << j.get<int64_t>();
      break;
    case Json::value_t::number_unsigned:
      out << j.get<uint64_t>();
      break;
    case Json::value_t::number_float:
      out << fmt::format("{}", j.get<double>());
      break;
    default:
      out << YAML::Null;
      break;
  }
}

std::string to_yaml(const Json& doc) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  for (std::string_view kind : config::kResourceKinds) {
    auto it = doc.find(kind);
    if (it != doc.end() && !it->empty()) {
      out << YAML::Key << std::string(kind) << YAML::Value;
      emit(out, *it);
    }
  }
  out << YAML::EndMap;
  std::string text = doc.empty() ? std::string("{}") : std::string(out.c_str());
  return text + "\n#END\n";
}

// A consumers item that is a credential: its `id` is `<username>/credentials/<id>`, as in
// apisix.yaml (APISIX's config_yaml.lua).
bool is_credential_item(std::string_view kind, const Json& item, std::string_view* user,
                        std::string_view* id) {
  auto it = item.find("id");
  return kind == "consumers" && it != item.end() && it->is_string() &&
         config::split_credential_id(it->get_ref<const std::string&>(), user, id);
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

int dump(const Options& o, const config::GatewayConfig& conf) {
  std::string place = o.place.empty() ? provider_name(conf) : o.place;
  Json doc;
  int64_t revision = -1;  // the embedded store's, when read from it
  if (place == "yaml") {
    std::string text;
    if (!common::read_file(conf.standalone_path, &text)) {
      fprintf(stderr, "sluice config dump: cannot read %s\n", conf.standalone_path.c_str());
      return 1;
    }
    auto j = config::yaml_to_json(text, conf.standalone_path);
    if (!j || !j->is_object()) {
      fprintf(stderr, "sluice config dump: %s\n",
              j ? "apisix.yaml: not a mapping" : j.status().message().c_str());
      return 1;
    }
    doc = std::move(j).value();
  } else {
    // The embedded store is read without its lock, in one read transaction: a running
    // gateway keeps serving and writing, and the dump is the store as of one revision.
    StatusOr<std::vector<store::Entry>> entries = std::vector<store::Entry>{};
    if (place == "etcd") {
      auto s = open_place(conf, place);
      entries = s ? (*s)->list(prefix_of(conf, place) + "/")
                  : StatusOr<std::vector<store::Entry>>(s.status());
    } else if (auto copy = store::read_live_copy(conf.data_dir, time(nullptr)); copy) {
      revision = copy->revision;
      entries = std::move(copy->entries);
    } else {
      entries = copy.status();
    }
    auto d = read_store(std::move(entries), prefix_of(conf, place));
    if (!d) {
      fprintf(stderr, "sluice config dump: %s\n", d.status().message().c_str());
      return 1;
    }
    doc = std::move(d).value();
  }
  // Private keys: as stored when sealed (the keyring's ciphertext), redacted when held in
  // clear; --show-secrets decrypts them all.
  size_t redacted = 0;
  if (o.show_secrets) {
    if (Status st = config::reveal_document_secrets(&doc); !st) {
      fprintf(stderr, "sluice config dump: %s\n", st.message().c_str());
      return 1;
    }
  } else if ((redacted = config::redact_document_secrets(&doc)) > 0) {
    fprintf(stderr,
            "sluice config dump: %zu private key(s) held in clear redacted; --show-secrets "
            "prints them\n",
            redacted);
  }
  std::string text = to_yaml(doc);
  const bool to_stdout = o.out.empty() || o.out == "-";
  if (to_stdout) {
    fwrite(text.data(), 1, text.size(), stdout);
    fflush(stdout);
  } else {
    std::ofstream f(o.out, std::ios::binary | std::ios::trunc);
    f << text;
    f.close();
    if (!f) {
      fprintf(stderr, "sluice config dump: cannot write %s\n", o.out.c_str());
      return 1;
    }
  }
  size_t n = 0;
  for (const auto& [k, v] : doc.items()) {
    n += v.is_array() ? v.size() : 0;
  }
  std::string at = revision >= 0 ? fmt::format(" at revision {}", revision) : "";
  fprintf(stderr, "sluice config dump: %zu resource(s) from %s%s written to %s\n", n, place.c_str(),
          at.c_str(), to_stdout ? "stdout" : o.out.c_str());
  return 0;
}

int load(const Options& o, const config::GatewayConfig& conf) {
  std::string place = o.place.empty() ? provider_name(conf) : o.place;
  if (place != "embedded" && place != "etcd") {
    fprintf(stderr, "sluice config load: --to must be embedded or etcd\n");
    return 2;
  }
  std::string text;
  if (!common::read_file(o.file, &text)) {
    fprintf(stderr, "sluice config load: cannot read %s\n", o.file.c_str());
    return 1;
  }
  auto parsed = config::yaml_to_json(text, o.file);
  if (!parsed) {
    fprintf(stderr, "sluice config load: %s\n", parsed.status().message().c_str());
    return 1;
  }
  Json doc = parsed->is_null() ? Json::object() : std::move(parsed).value();
  if (!doc.is_object()) {
    fprintf(stderr, "sluice config load: %s: expected a mapping of kinds to lists\n",
            o.file.c_str());
    return 1;
  }
  // Everything is checked before anything is written.
  const std::string prefix = prefix_of(conf, place);
  std::vector<std::pair<std::string, Json>> writes;  // key -> value
  std::set<std::string> keys;
  std::set<std::string> errors_seen;
  std::vector<std::pair<std::string, std::string>> credential_owners;  // username, item
  int errors = 0;
  for (const auto& [kind, items] : doc.items()) {
    if (!config::is_resource_kind(kind)) {
      fprintf(stderr, "sluice config load: %s: unknown kind \"%s\"\n", o.file.c_str(),
              kind.c_str());
      ++errors;
      continue;
    }
    if (!items.is_array()) {
      fprintf(stderr, "sluice config load: %s: %s: expected a list\n", o.file.c_str(),
              kind.c_str());
      ++errors;
      continue;
    }
    for (size_t i = 0; i < items.size(); ++i) {
      const Json& item = items[i];
      std::string where = fmt::format("{}[{}]", kind, i);
      if (!item.is_object()) {
        fprintf(stderr, "sluice config load: %s: expected an object\n", where.c_str());
        ++errors;
        continue;
      }
      auto id = item_id(kind, item);
      if (!id) {
        fprintf(stderr, "sluice config load: %s: %s\n", where.c_str(),
                id.status().message().c_str());
        ++errors;
        continue;
      }
      if (auto red = config::redacted_secrets(kind, item); !red.empty()) {
        fprintf(stderr,
                "sluice config load: %s (id %s): %s: redacted by `sluice config dump`; dump with "
                "--show-secrets to carry private keys\n",
                where.c_str(), id->c_str(), red.front().c_str());
        ++errors;
        continue;
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
        if (st) {
          credential_owners.emplace_back(std::string(user), where);
        }
      } else {
        st = config::check_resource(kind, *id, obj);
        if (st) {
          st = config::seal_secrets(kind, &obj);  // as the Admin API stores it
        }
      }
      if (!st) {
        fprintf(stderr, "sluice config load: %s (id %s): %s\n", where.c_str(), id->c_str(),
                st.message().c_str());
        ++errors;
        continue;
      }
      std::string key = fmt::format("{}/{}/{}", prefix, kind, *id);
      if (!keys.insert(key).second) {
        fprintf(stderr, "sluice config load: %s: duplicate id %s\n", where.c_str(), id->c_str());
        ++errors;
        continue;
      }
      if (kind != "consumers") {
        obj["id"] = *id;  // stored as a string, as the Admin API stores it
      }
      int64_t now = static_cast<int64_t>(time(nullptr));
      if (!obj.contains("create_time")) {
        obj["create_time"] = now;
      }
      if (!obj.contains("update_time")) {
        obj["update_time"] = now;
      }
      writes.emplace_back(key, std::move(obj));
    }
  }
  if (errors > 0) {
    fprintf(stderr, "sluice config load: %d error(s) in %s: nothing was written\n", errors,
            o.file.c_str());
    return 1;
  }
  auto s = open_place(conf, place);
  if (!s) {
    fprintf(stderr, "sluice config load: %s\n", s.status().message().c_str());
    return 1;
  }
  // A credential needs its consumer, in the file or already stored (the Admin API's
  // `consumer not found`).
  for (const auto& [user, where] : credential_owners) {
    std::string consumer_key = fmt::format("{}/consumers/{}", prefix, user);
    auto e = keys.contains(consumer_key) ? StatusOr<std::optional<store::Entry>>(store::Entry{})
                                         : (*s)->get(consumer_key);
    if (!e || !*e) {
      fprintf(stderr, "sluice config load: %s: %s\n", where.c_str(),
              e ? "consumer not found" : e.status().message().c_str());
      ++errors;
    }
  }
  if (errors > 0) {
    fprintf(stderr, "sluice config load: %d error(s) in %s: nothing was written\n", errors,
            o.file.c_str());
    return 1;
  }
  // Referenced kinds first and routes last, so that a node watching etcd never serves a
  // route whose upstream or service is not there yet; stale objects go after the new ones
  // are in, referrers first.
  auto rank = [](std::string_view kind) {
    for (size_t i = 0; i < kWriteOrder.size(); ++i) {
      if (kind == kWriteOrder[i]) {
        return i;
      }
    }
    return kWriteOrder.size();
  };
  auto kind_of = [&](const std::string& key) {
    store::KeyParts parts;
    if (store::is_credential_key(prefix, key)) {
      return std::string("credentials");
    }
    return store::split_key(prefix, key, &parts) ? std::string(parts.kind) : std::string();
  };
  std::stable_sort(writes.begin(), writes.end(), [&](const auto& a, const auto& b) {
    return rank(kind_of(a.first)) < rank(kind_of(b.first));
  });
  std::vector<std::string> stale;
  if (o.replace) {
    auto existing = (*s)->list(prefix + "/");
    if (!existing) {
      fprintf(stderr, "sluice config load: %s\n", existing.status().message().c_str());
      return 1;
    }
    for (const auto& e : *existing) {
      std::string kind = kind_of(e.key);
      std::string listed_as = kind == "credentials" ? "consumers" : kind;
      if (!kind.empty() && doc.contains(listed_as) && !keys.contains(e.key)) {
        stale.push_back(e.key);
      }
    }
    std::stable_sort(stale.begin(), stale.end(), [&](const auto& a, const auto& b) {
      return rank(kind_of(a)) > rank(kind_of(b));
    });
  }
  // One transaction: every write and delete lands, or (on any failure) none does.
  std::vector<store::BatchOp> ops;
  ops.reserve(writes.size() + stale.size());
  for (const auto& [key, value] : writes) {
    ops.push_back({key, value.dump(), false});
  }
  for (const auto& key : stale) {
    ops.push_back({key, std::string(), true});
  }
  if (Status r = (*s)->apply_batch(ops); !r) {
    fprintf(stderr, "sluice config load: %s: nothing was written\n", r.message().c_str());
    return 1;
  }
  const size_t removed = stale.size();
  fprintf(stderr, "sluice config load: %zu resource(s) written to %s under %s, %zu deleted\n",
          writes.size(), place.c_str(), prefix.c_str(), removed);
  return 0;
}

}  // namespace

int config_main(const std::vector<std::string>& args) {
  Options o;
  if (args.empty() || (args[0] != "dump" && args[0] != "load")) {
    fputs(kUsage, stderr);
    return 2;
  }
  o.sub = args[0];
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    bool has_value = i + 1 < args.size();
    if ((a == "-c" || a == "--config") && has_value) {
      o.config = args[++i];
    } else if (a == "--from" && o.sub == "dump" && has_value) {
      o.place = args[++i];
    } else if (a == "--to" && o.sub == "load" && has_value) {
      o.place = args[++i];
    } else if (a == "-o" && o.sub == "dump" && has_value) {
      o.out = args[++i];
    } else if (a == "--replace" && o.sub == "load") {
      o.replace = true;
    } else if (a == "--show-secrets" && o.sub == "dump") {
      o.show_secrets = true;
    } else if (a == "-h" || a == "--help") {
      fputs(kUsage, stdout);
      return 0;
    } else if (o.sub == "load" && o.file.empty() && !a.starts_with("-")) {
      o.file = a;
    } else {
      fprintf(stderr, "sluice config %s: unexpected argument %s\n%s", o.sub.c_str(), a.c_str(),
              kUsage);
      return 2;
    }
  }
  if (o.sub == "load" && o.file.empty()) {
    fprintf(stderr, "sluice config load: which file?\n%s", kUsage);
    return 2;
  }
  if (!o.place.empty() && o.place != "embedded" && o.place != "etcd" && o.place != "yaml") {
    fprintf(stderr, "sluice config %s: unknown place %s (embedded, etcd or yaml)\n", o.sub.c_str(),
            o.place.c_str());
    return 2;
  }
  auto conf = load_config(o.config);
  if (!conf) {
    fprintf(stderr, "sluice config %s: %s\n", o.sub.c_str(), conf.status().message().c_str());
    return 1;
  }
  config::set_data_encryption(conf->data_encryption);
  return o.sub == "dump" ? dump(o, *conf) : load(o, *conf);
}

}  // namespace sluice::runtime
