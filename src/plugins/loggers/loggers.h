#pragma once
// The logger plugins: http-logger (410), tcp-logger (405), syslog (401), udp-logger (400) and
// file-logger (399), APISIX 3.x's names and priorities. Each configured instance renders one
// JSON entry per request in the log phase (the default entry of log-util.lua, or log_format
// from its conf or plugin_metadata) and hands it to its own batch processor (batch/), whose
// sender thread does the batching, retries and I/O. See README.md beside this file.

#include <memory>
#include <string>

#include "batch/registry.h"
#include "plugin/info.h"
#include "plugins/loggers/conf.h"

namespace sluice::plugins::loggers {

const plugin::PluginInfo& http_logger();
const plugin::PluginInfo& tcp_logger();
const plugin::PluginInfo& udp_logger();
const plugin::PluginInfo& file_logger();
const plugin::PluginInfo& syslog();

// The processors' metrics (batch::Registry::render), for the prometheus page.
void render_metrics(const plugin::Shared& shared, std::string& out);

// Thread: any (immutable)
class Logger final : public plugin::Plugin {
 public:
  Logger(std::shared_ptr<const Conf> conf, LogFormat format, std::shared_ptr<batch::Handle> out,
         std::string hostname);
  uint32_t phases() const override;
  bool needs_body() const override { return conf_->body.include_req_body; }
  bool reads_head() const override { return true; }
  void head(plugin::Context& ctx) const override;
  void header_filter(plugin::Context& ctx) const override;
  void body_filter(plugin::Context& ctx, plugin::BodyPiece& piece) const override;
  void log(plugin::Context& ctx) const override;

  // The entry for a request (a syslog line for syslog), as log() pushes it.
  std::string entry(const plugin::Context& ctx, uint64_t now_ns, int64_t wall_ms) const;

 private:
  std::shared_ptr<const Conf> conf_;
  LogFormat format_;  // the conf's, else plugin_metadata's; empty: the default entry
  std::shared_ptr<batch::Handle> out_;
  std::string hostname_;
};

}  // namespace sluice::plugins::loggers
