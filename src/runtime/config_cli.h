#pragma once
// What the `sluice config` subcommands share (config_tool.cc: dump and the command line;
// config_load.cc: load and apply; config_plan.cc: diff, plan and their checks).

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "config/gateway_config.h"
#include "store/store.h"

namespace sluice::runtime::config_cli {

using Json = nlohmann::json;

struct Options {
  std::string sub;
  std::string config = "conf/config.yaml";
  std::string place;  // --from / --to / --against; empty = the config's provider
  std::string out;    // -o
  std::string file;   // load's, diff's, plan's and apply's FILE
  bool replace = false;
  bool show_secrets = false;  // dump: private keys decrypted, in clear
  bool force = false;         // apply: despite the plan's errors
  bool dry_run = false;       // rollback: show, write nothing
};

std::string provider_name(const config::GatewayConfig& c);
std::string prefix_of(const config::GatewayConfig& c, const std::string& place);
// Opens the embedded store (its lock: the gateway must be stopped) or etcd.
common::StatusOr<std::unique_ptr<store::ConfigStore>> open_place(const config::GatewayConfig& c,
                                                                 const std::string& place);
// The place's entries without taking the embedded store's lock (one read transaction), and the
// revision they are as of (-1 for etcd). `missing_is_empty`: an embedded store not made yet
// reads as empty (revision 0) rather than as an error.
common::StatusOr<std::vector<store::Entry>> read_entries(const config::GatewayConfig& c,
                                                         const std::string& place,
                                                         int64_t* revision, bool missing_is_empty);

// A consumers item that is a credential: its `id` is `<username>/credentials/<id>`, as in
// apisix.yaml (APISIX's config_yaml.lua).
bool is_credential_item(std::string_view kind, const Json& item, std::string_view* user,
                        std::string_view* id);
// The kind a key is stored under ("credentials" for a consumer's credential); empty when none.
std::string kind_of_key(const std::string& prefix, const std::string& key);

// A file checked as `load` checks it: every item validated, sealed as the Admin API stores it,
// and keyed. Errors are printed with `who` ("sluice config load") and counted.
struct Prepared {
  std::string prefix;
  Json doc;                                          // the file, parsed
  std::vector<std::pair<std::string, Json>> writes;  // key -> value, in write order
  std::set<std::string> keys;
  std::set<std::string> stamped;   // keys whose create_time the file did not give
  std::vector<std::string> stale;  // with --replace: stored keys of the file's kinds it lacks
  std::vector<std::pair<std::string, std::string>> credential_owners;  // username, where
  int errors = 0;
};
// Reads and checks `o.file` on its own.
Prepared prepare(const Options& o, const std::string& prefix, const char* who);
// Then against the place's entries: each credential's consumer must be in the file or
// stored, and --replace's stale keys are found.
void resolve(const Options& o, const std::vector<store::Entry>& current, Prepared* p,
             const char* who);
// Writes `p` in one transaction. Returns the exit code.
int write_prepared(const Options& o, const std::string& place, const std::string& prefix,
                   store::ConfigStore& s, const Prepared& p, const char* who);

// load's and apply's first steps: FILE checked whole, then the place opened (the embedded
// store's lock) and read, and FILE resolved against it.
struct Opened {
  std::string place, prefix;
  std::unique_ptr<store::ConfigStore> store;
  std::vector<store::Entry> current;
  Prepared p;
};
// 0, or the exit code when it cannot go on (said on stderr).
int open_for_write(const Options& o, const config::GatewayConfig& conf, const char* who,
                   Opened* out);

int load(const Options& o, const config::GatewayConfig& conf);
int diff(const Options& o, const config::GatewayConfig& conf);  // diff and plan
int apply(const Options& o, const config::GatewayConfig& conf);
// `rollback REVISION` (o.file holds it): the embedded store back to what it held at REVISION.
int rollback(const Options& o, const config::GatewayConfig& conf);

}  // namespace sluice::runtime::config_cli
