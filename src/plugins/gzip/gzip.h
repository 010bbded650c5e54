#pragma once
// APISIX's gzip plugin (priority 995): compresses response bodies with zlib as nginx's gzip
// filter does when APISIX's header_filter turns it on. The compression itself runs after every
// other plugin's filters (plugin::BodyCoder), streaming, one deflate stream per response lent
// by a per-worker pool.

#include <memory>

#include "plugin/info.h"
#include "plugin/plugin.h"
#include "plugins/gzip/config.h"

namespace sluice::plugins::gzip {

const plugin::PluginInfo& info();

// Thread: any (immutable)
class Gzip final : public plugin::Plugin, public plugin::BodyCoder {
 public:
  explicit Gzip(Conf conf) : conf_(std::move(conf)) {}
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

  const Conf& conf() const { return conf_; }

 private:
  // Lends ctx a stream at this conf's level; false when none can be had.
  bool open(plugin::Context& ctx) const;
  // A gateway-made answer: its type and length are known with its body, whole.
  void code_reply(plugin::Context& ctx, plugin::BodyPiece& piece) const;

  Conf conf_;
};

// The per-worker stream pool's hook (PluginInfo::worker_init).
void worker_init(plugin::Shared& shared, plugin::WorkerLocal& local);
// The worker's streams lent to responses now, and all it holds (lent and idle).
size_t streams_lent(const plugin::WorkerLocal& local);
size_t streams_held(const plugin::WorkerLocal& local);

}  // namespace sluice::plugins::gzip
