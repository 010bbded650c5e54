#include "runtime/config_tool.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <array>
#include <cerrno>
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
#include "runtime/config_cli.h"
#include "store/config_index.h"
#include "store/live_read.h"
#include "store/store.h"

namespace sluice::runtime {

namespace config_cli {

using common::Status;
using common::StatusOr;

namespace {

constexpr const char* kUsage =
    "usage: sluice config dump [-c conf/config.yaml] [--from embedded|etcd|yaml] [-o FILE]\n"
    "                          [--show-secrets]\n"
    "       sluice config load [-c conf/config.yaml] [--to embedded|etcd] [--replace] FILE\n"
    "       sluice config diff [-c conf/config.yaml] [--against embedded|etcd] [--replace] FILE\n"
    "       sluice config plan [-c conf/config.yaml] [--against embedded|etcd] [--replace] FILE\n"
    "       sluice config apply [-c conf/config.yaml] [--to embedded|etcd] [--replace] [--force]\n"
    "                           FILE\n"
    "       sluice config rollback [-c conf/config.yaml] [--dry-run] REVISION\n";

StatusOr<config::GatewayConfig> load_config(const std::string& path) {
  std::string text;
  if (!common::read_file(path, &text)) {
    return Status::error(fmt::format("cannot read {}", path));
  }
  size_t slash = path.rfind('/');
  return config::parse_gateway_config(text,
                                      slash == std::string::npos ? "." : path.substr(0, slash));
}

}  // namespace

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

StatusOr<std::vector<store::Entry>> read_entries(const config::GatewayConfig& c,
                                                 const std::string& place, int64_t* revision,
                                                 bool missing_is_empty) {
  *revision = -1;
  if (place == "etcd") {
    auto s = open_place(c, place);
    if (!s) {
      return s.status();
    }
    return (*s)->list(prefix_of(c, place) + "/");
  }
  struct stat st {};
  if (missing_is_empty && stat((c.data_dir + "/sluice.db").c_str(), &st) != 0 && errno == ENOENT) {
    *revision = 0;  // no store yet: nothing is written before the first write
    return std::vector<store::Entry>{};
  }
  auto copy = store::read_live_copy(c.data_dir, time(nullptr));
  if (!copy) {
    return copy.status();
  }
  *revision = copy->revision;
  return std::move(copy->entries);
}

bool is_credential_item(std::string_view kind, const Json& item, std::string_view* user,
                        std::string_view* id) {
  auto it = item.find("id");
  return kind == "consumers" && it != item.end() && it->is_string() &&
         config::split_credential_id(it->get_ref<const std::string&>(), user, id);
}

std::string kind_of_key(const std::string& prefix, const std::string& key) {
  store::KeyParts parts;
  if (store::is_credential_key(prefix, key)) {
    return "credentials";
  }
  return store::split_key(prefix, key, &parts) ? std::string(parts.kind) : std::string();
}

namespace {

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
    auto entries = read_entries(conf, place, &revision, false);
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

}  // namespace
}  // namespace config_cli

int config_main(const std::vector<std::string>& args) {
  using namespace config_cli;
  Options o;
  static const std::set<std::string> kSubs = {"dump", "load", "diff", "plan", "apply", "rollback"};
  if (args.empty() || !kSubs.contains(args[0])) {
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
    } else if (a == "--to" && (o.sub == "load" || o.sub == "apply") && has_value) {
      o.place = args[++i];
    } else if (a == "--against" && (o.sub == "diff" || o.sub == "plan") && has_value) {
      o.place = args[++i];
    } else if (a == "-o" && o.sub == "dump" && has_value) {
      o.out = args[++i];
    } else if (a == "--replace" && o.sub != "dump" && o.sub != "rollback") {
      o.replace = true;
    } else if (a == "--force" && o.sub == "apply") {
      o.force = true;
    } else if (a == "--dry-run" && o.sub == "rollback") {
      o.dry_run = true;
    } else if (a == "--show-secrets" && o.sub == "dump") {
      o.show_secrets = true;
    } else if (a == "-h" || a == "--help") {
      fputs(kUsage, stdout);
      return 0;
    } else if (o.sub != "dump" && o.file.empty() && !a.starts_with("-")) {
      o.file = a;
    } else {
      fprintf(stderr, "sluice config %s: unexpected argument %s\n%s", o.sub.c_str(), a.c_str(),
              kUsage);
      return 2;
    }
  }
  if (o.sub != "dump" && o.file.empty()) {
    fprintf(stderr, "sluice config %s: which %s?\n%s", o.sub.c_str(),
            o.sub == "rollback" ? "revision" : "file", kUsage);
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
  if (o.sub == "dump") {
    return dump(o, *conf);
  }
  if (o.sub == "load") {
    return load(o, *conf);
  }
  if (o.sub == "rollback") {
    return rollback(o, *conf);
  }
  return o.sub == "apply" ? apply(o, *conf) : diff(o, *conf);
}

}  // namespace sluice::runtime
