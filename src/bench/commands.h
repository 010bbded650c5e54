#pragma once
// The `sluice bench` subcommands, each taking the arguments after its name and returning the
// process exit status.

#include <string>
#include <vector>

namespace sluice::bench {

// `sluice bench load ...`: the load generator; one JSON object on stdout.
int load_main(const std::vector<std::string>& args);

// `sluice bench upstream ...`: the built-in upstream; runs until SIGTERM/SIGINT.
int upstream_main(const std::vector<std::string>& args);

// Any other `sluice bench ...`: execs the Python kit with `args`; returns only on failure.
int kit_main(const std::vector<std::string>& args);

}  // namespace sluice::bench
