#pragma once
// proxy-mirror (priority 1010): a copy of each request that is proxied (method, target,
// headers and the whole body) goes to the mirror `host` fire-and-forget, for `sample_ratio` of
// the requests; the copy never delays or fails the client's request, and its answer is read
// and dropped. See README.md beside this file.

#include <memory>

#include "plugin/info.h"
#include "plugins/proxy_mirror/config.h"
#include "plugins/proxy_mirror/mirror_client.h"

namespace sluice::plugins::proxy_mirror {

const plugin::PluginInfo& info();

// Thread: any (immutable)
class ProxyMirror final : public plugin::Plugin {
 public:
  ProxyMirror(Conf conf, std::shared_ptr<const MirrorPeer> peer);
  uint32_t phases() const override { return plugin::phase_bit(plugin::Phase::kBeforeProxy); }
  // As APISIX (nginx's mirror_request_body on): the body is read whole and mirrored too.
  bool needs_body() const override { return true; }
  plugin::Action before_proxy(plugin::Context& ctx) const override;

  // The copy of the request the mirror gets.
  MirrorCopy copy_of(const plugin::Context& ctx) const;

 private:
  Conf conf_;
  std::shared_ptr<const MirrorPeer> peer_;
};

// The peer `c` names: its address resolved now (a name through the system resolver).
std::shared_ptr<MirrorPeer> resolve_peer(const Conf& c);

}  // namespace sluice::plugins::proxy_mirror
