#pragma once
// `sluice config dump` and `sluice config load`: move a whole configuration between the
// embedded store, etcd and an apisix.yaml file.
//
//   sluice config dump [-c conf/config.yaml] [--from embedded|etcd|yaml] [-o FILE]
//                      [--show-secrets]
//   sluice config load [-c conf/config.yaml] [--to embedded|etcd] [--replace] FILE
//   sluice config diff|plan [-c conf/config.yaml] [--against embedded|etcd] [--replace] FILE
//   sluice config apply [-c conf/config.yaml] [--to embedded|etcd] [--replace] [--force] FILE
//
// dump writes an apisix.yaml document (one top-level list per kind, each item with its id,
// ending with `#END`). Private keys are printed as stored when sealed with
// apisix.data_encryption's keyring, and redacted when held in clear; --show-secrets prints them
// all decrypted. load checks every item of FILE with the Admin API's validation first
// and writes nothing unless all pass; --replace also deletes stored resources of the kinds
// FILE lists (`services: []` counts) that it does not hold. It seals private keys as the
// Admin API does, and refuses a dump's redacted ones. diff, plan and apply: config_cli.h and
// docs/etcd.md.

#include <string>
#include <vector>

namespace sluice::runtime {

// Returns the process exit code (0 done, 1 failed, 2 usage).
int config_main(const std::vector<std::string>& args);

}  // namespace sluice::runtime
