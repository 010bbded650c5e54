#pragma once
// `sluice config dump` and `sluice config load`: move a whole configuration between the
// embedded store, etcd and an apisix.yaml file.
//
//   sluice config dump [-c conf/config.yaml] [--from embedded|etcd|yaml] [-o FILE]
//   sluice config load [-c conf/config.yaml] [--to embedded|etcd] [--replace] FILE
//
// dump writes an apisix.yaml document (one top-level list per kind, each item with its id,
// ending with `#END`). load checks every item of FILE with the Admin API's validation first
// and writes nothing unless all pass; --replace also deletes stored resources of the kinds
// FILE lists (`services: []` counts) that it does not hold.

#include <string>
#include <vector>

namespace sluice::runtime {

// Returns the process exit code (0 done, 1 failed, 2 usage).
int config_main(const std::vector<std::string>& args);

}  // namespace sluice::runtime
