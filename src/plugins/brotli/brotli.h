#pragma once
// APISIX's brotli plugin (priority 996): compresses response bodies with libbrotlienc, after
// every other plugin's filters (plugin::BodyCoder), streaming, one encoder per response.

#include <memory>

#include "plugin/info.h"
#include "plugin/plugin.h"
#include "plugins/brotli/config.h"

namespace sluice::plugins::brotli {

const plugin::PluginInfo& info();

// Thread: any (immutable)
class Brotli final : public plugin::Plugin, public plugin::BodyCoder {
 public:
  explicit Brotli(Conf conf) : conf_(std::move(conf)) {}
  // head() reads Accept-Encoding before any phase; rewrite() again (a no-op once read) for an
  // instance a consumer brings, merged into the chain after head() ran.
  uint32_t phases() const override {
    return plugin::phase_bit(plugin::Phase::kRewrite) |
           plugin::phase_bit(plugin::Phase::kHeaderFilter);
  }
  bool reads_head() const override { return true; }
  void head(plugin::Context& ctx) const override;
  plugin::Action rewrite(plugin::Context& ctx) const override {
    head(ctx);
    return plugin::Action::kContinue;
  }
  void header_filter(plugin::Context& ctx) const override;
  void start(plugin::Context& ctx) const override;
  void code(plugin::Context& ctx, plugin::BodyPiece& piece) const override;

 private:
  bool open(plugin::Context& ctx) const;
  void code_reply(plugin::Context& ctx, plugin::BodyPiece& piece) const;

  Conf conf_;
};

void worker_init(plugin::Shared& shared, plugin::WorkerLocal& local);

}  // namespace sluice::plugins::brotli
