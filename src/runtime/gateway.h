#pragma once
// The control thread: loads config.yaml and apisix.yaml, starts the workers, publishes new
// snapshots when the file changes or names re-resolve, and handles signals.

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "config/gateway_config.h"
#include "config/resources.h"
#include "server/worker.h"
#include "upstream/resolver.h"

namespace sluice::runtime {

// Thread: control
class Gateway {
 public:
  explicit Gateway(std::string config_path);
  ~Gateway();
  // Runs until SIGTERM/SIGINT; returns the process exit code.
  int run();

 private:
  common::Status load_gateway_config();
  common::Status start_workers();
  // Re-reads apisix.yaml; on success publishes a new snapshot, else logs and keeps the old.
  bool reload_routes(bool at_start);
  bool routes_file_changed();
  void on_sighup();
  void shutdown();

  std::string config_path_;
  std::string config_dir_;
  config::GatewayConfig conf_;
  upstream::DnsCache dns_{30};
  std::vector<std::unique_ptr<server::Worker>> workers_;
  std::vector<std::thread> threads_;
  uint64_t version_ = 0;
  config::ConfigSet last_set_;
  std::string last_text_;
  struct FileStamp {
    int64_t mtime_ns = -1;
    int64_t size = -1;
    uint64_t inode = 0;
    bool operator==(const FileStamp&) const = default;
  } stamp_;
};

}  // namespace sluice::runtime
