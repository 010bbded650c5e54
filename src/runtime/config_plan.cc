// `sluice config diff`, `plan` and `apply`: what a file would change in the embedded store or
// etcd, and what the configuration would then hold that APISIX accepts without a word: routes
// another route shadows, references to nothing, upstream nodes that do not resolve, hosts
// without a certificate, plugin confs naming consumers or secrets that do not exist.

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netdb.h>

#include <cstdio>
#include <map>

#include "config/secret_fields.h"
#include "runtime/config_checks.h"
#include "runtime/config_cli.h"

namespace sluice::runtime::config_cli {

namespace {

// A stored or prepared object as it is compared: without its times, secrets opened (sealing
// draws a fresh nonce each time, so sealed text never compares equal).
Json normalized(const std::string& kind, Json v) {
  if (v.is_object()) {
    v.erase("create_time");
    v.erase("update_time");
    (void)config::reveal_secrets(kind, &v);
  }
  return v;
}

// What changes, one line each: "+ routes/1", "~ routes/2: uri, plugins", "- upstreams/3".
struct Changes {
  std::vector<std::string> lines;
  std::set<std::string> keys;  // added and changed
  size_t add = 0, change = 0, remove = 0;
  size_t total() const { return add + change + remove; }
};

Changes compare(const std::string& prefix, const std::vector<store::Entry>& current,
                const Prepared& p) {
  std::map<std::string, const store::Entry*> stored;
  for (const store::Entry& e : current) {
    stored.emplace(e.key, &e);
  }
  auto name = [&](const std::string& key) { return key.substr(prefix.size() + 1); };
  Changes c;
  for (const auto& [key, value] : p.writes) {
    const std::string kind = kind_of_key(prefix, key);
    auto it = stored.find(key);
    if (it == stored.end()) {
      c.lines.push_back("+ " + name(key));
      c.keys.insert(key);
      ++c.add;
      continue;
    }
    const Json before = normalized(kind, Json::parse(it->second->value, nullptr, false));
    const Json after = normalized(kind, value);
    if (before == after) {
      continue;
    }
    std::vector<std::string> fields;
    if (before.is_object() && after.is_object()) {
      for (const auto& [k, v] : after.items()) {
        if (!before.contains(k) || before[k] != v) {
          fields.push_back(k);
        }
      }
      for (const auto& [k, v] : before.items()) {
        if (!after.contains(k)) {
          fields.push_back(k);
        }
      }
    }
    c.lines.push_back(
        fmt::format("~ {}{}{}", name(key), fields.empty() ? "" : ": ", fmt::join(fields, ", ")));
    c.keys.insert(key);
    ++c.change;
  }
  for (const std::string& key : p.stale) {
    c.lines.push_back("- " + name(key));
    ++c.remove;
  }
  return c;
}

// The configuration once the file is written: kind -> id -> object.
State state_after(const std::string& prefix, const std::vector<store::Entry>& current,
                  const Prepared& p) {
  State s;
  auto id_of = [&](const std::string& key, const std::string& kind) {
    const std::string listed = kind == "credentials" ? "consumers" : kind;
    return key.substr(prefix.size() + 1 + listed.size() + 1);
  };
  for (const store::Entry& e : current) {
    const std::string kind = kind_of_key(prefix, e.key);
    Json v = Json::parse(e.value, nullptr, false);
    if (!kind.empty() && v.is_object()) {
      s[kind][id_of(e.key, kind)] = normalized(kind, std::move(v));
    }
  }
  for (const auto& [key, value] : p.writes) {
    const std::string kind = kind_of_key(prefix, key);
    s[kind][id_of(key, kind)] = normalized(kind, value);
  }
  for (const std::string& key : p.stale) {
    const std::string kind = kind_of_key(prefix, key);
    s[kind].erase(id_of(key, kind));
  }
  return s;
}

// Prints the changes and, for plan and apply, the findings; returns the findings' errors.
int report(const Options& o, const std::string& place, int64_t revision, const Changes& c,
           const std::vector<Finding>* findings) {
  const std::string at = revision >= 0 ? fmt::format(" at revision {}", revision) : "";
  printf("%s against %s%s\n", o.file.c_str(), place.c_str(), at.c_str());
  for (const std::string& l : c.lines) {
    printf("%s\n", l.c_str());
  }
  printf("%zu change(s): %zu to add, %zu to change, %zu to delete\n", c.total(), c.add, c.change,
         c.remove);
  if (findings == nullptr) {
    return 0;
  }
  int errors = 0, warnings = 0;
  for (const Finding& f : *findings) {
    printf("%s: %s\n", f.error ? "error" : "warning", f.text.c_str());
    (f.error ? errors : warnings) += 1;
  }
  printf("%d error(s), %d warning(s)\n", errors, warnings);
  fflush(stdout);
  return errors;
}

}  // namespace

int diff(const Options& o, const config::GatewayConfig& conf) {
  const std::string who = "sluice config " + o.sub;
  const std::string place = o.place.empty() ? provider_name(conf) : o.place;
  if (place != "embedded" && place != "etcd") {
    fprintf(stderr, "%s: --against must be embedded or etcd\n", who.c_str());
    return 2;
  }
  const std::string prefix = prefix_of(conf, place);
  Prepared p = prepare(o, prefix, who.c_str());
  if (p.errors > 0) {
    fprintf(stderr, "%s: %d error(s) in %s\n", who.c_str(), p.errors, o.file.c_str());
    return 1;
  }
  // Read without the embedded store's lock: a running gateway is compared with as it runs.
  int64_t revision = -1;
  auto current = read_entries(conf, place, &revision, true);
  if (!current) {
    fprintf(stderr, "%s: %s\n", who.c_str(), current.status().message().c_str());
    return 1;
  }
  resolve(o, *current, &p, who.c_str());
  if (p.errors > 0) {
    fprintf(stderr, "%s: %d error(s) in %s\n", who.c_str(), p.errors, o.file.c_str());
    return 1;
  }
  const Changes c = compare(prefix, *current, p);
  if (o.sub == "diff") {
    return report(o, place, revision, c, nullptr);
  }
  const std::vector<Finding> findings = check_state(state_after(prefix, *current, p), conf);
  return report(o, place, revision, c, &findings) > 0 ? 1 : 0;
}

int apply(const Options& o, const config::GatewayConfig& conf) {
  const char* who = "sluice config apply";
  Opened w;
  if (int rc = open_for_write(o, conf, who, &w); rc != 0) {
    return rc;
  }
  const std::string& place = w.place;
  const std::string& prefix = w.prefix;
  const Prepared& p = w.p;
  const std::vector<store::Entry>* current = &w.current;
  // The plan is made and shown under the store's lock (etcd: a moment before the write).
  const Changes c = compare(prefix, *current, p);
  const std::vector<Finding> findings = check_state(state_after(prefix, *current, p), conf);
  const int errors = report(o, place, -1, c, &findings);
  if (errors > 0 && !o.force) {
    fprintf(stderr, "%s: the plan has %d error(s): nothing was written (--force writes anyway)\n",
            who, errors);
    return 1;
  }
  if (c.total() == 0) {
    fprintf(stderr, "%s: nothing to change\n", who);
    return 0;
  }
  // Only what changes is written; a changed object keeps its create_time unless the file
  // gives one.
  std::map<std::string, const store::Entry*> stored;
  for (const store::Entry& e : *current) {
    stored.emplace(e.key, &e);
  }
  Prepared out = p;
  out.writes.clear();
  for (const auto& [key, value] : p.writes) {
    if (!c.keys.contains(key)) {
      continue;
    }
    Json v = value;
    auto it = stored.find(key);
    if (it != stored.end() && p.stamped.contains(key)) {
      Json before = Json::parse(it->second->value, nullptr, false);
      if (before.is_object() && before.contains("create_time")) {
        v["create_time"] = before["create_time"];
      }
    }
    out.writes.emplace_back(key, std::move(v));
  }
  return write_prepared(o, place, prefix, *w.store, out, who);
}

}  // namespace sluice::runtime::config_cli
