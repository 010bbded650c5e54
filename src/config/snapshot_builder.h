#pragma once
// Turns a decoded ConfigSet into an immutable Snapshot: links routes to services and
// upstreams, compiles vars and CIDRs, resolves node host names, and builds the route table.
// Any error rejects the whole set; the caller keeps serving its previous snapshot.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "config/resources.h"
#include "health/registry.h"
#include "plugin/info.h"
#include "snapshot/snapshot.h"
#include "upstream/resolver.h"

namespace sluice::config {

// Thread: control
struct BuildResult {
  snapshot::SnapshotPtr snapshot;
  std::vector<std::string> warnings;  // dangling references, unresolvable hosts
};

// One kind of resource a ConfigSet holds, by its APISIX name (apisix.yaml's top-level key).
// `served` is true when build_snapshot turns it into something the workers serve; the list is
// made from the builder's own steps, so a reader naming "kept but not served" kinds (the
// standalone file) cannot drift from what is served.
// Thread: any (immutable)
struct ConfigKind {
  std::string_view name;
  bool served;
  size_t (*count)(const ConfigSet&);  // how many items of this kind a set holds
};

// Every kind of a ConfigSet, served ones first, in the order the builder links them.
const std::vector<ConfigKind>& config_kinds();

// Compiles what only the builder compiles (remote_addrs CIDRs, vars expressions), so the
// Admin API can refuse a route that would make every later build fail.
common::Status check_route_compiles(const RouteConf& r);

// `shared` keeps plugin state (limit-count's counters) across builds; null uses a
// process-wide default. `health` keeps the nodes' health across builds (committed only when
// the build succeeds); null gives every checked upstream fresh state.
// The `ssls` objects as the HTTPS listeners serve them (snapshot_ssls.cc). An object that
// cannot be served (a PEM OpenSSL refuses, an unresolvable reference) is left out with a
// warning naming it.
std::shared_ptr<const tls::CertIndex> build_cert_index(const std::vector<SslConf>& ssls,
                                                       std::vector<std::string>* warnings);

// The consumers, credentials and consumer groups as the request path sees them
// (snapshot_consumers.cc): every consumer, each auth plugin's index, and each consumer's
// non-auth plugins (over its group's) as a chain to merge into a route's. Credentials whose
// secrets cannot be resolved, or that name a missing consumer, are left out with a warning.
common::StatusOr<std::shared_ptr<const plugin::Consumers>> build_consumers(
    const ConfigSet& set, plugin::Shared& shared, std::vector<std::string>* warnings);

// A `$env://NAME` reference read now; `$secret://` ones need a secret manager Sluice does not
// serve yet; anything else is the PEM itself. False (with `why`) when the PEM cannot be had.
bool resolve_pem(const std::string& v, std::string* out, std::string* why);

// What an https upstream's TLS settings are read against.
// Thread: control (stack-local)
struct UpstreamTlsInputs {
  const std::vector<SslConf>* ssls = nullptr;  // for tls.client_cert_id's type
  const tls::CertIndex* certs = nullptr;       // the loaded ssls, by id
  std::string_view trusted_ca;                 // apisix.ssl.ssl_trusted_certificate; empty: system
};

// The TLS side of an https upstream (snapshot_upstream_tls.cc): up->tls, a ClientContext
// shared by every upstream with the same settings and kept across builds while one uses it
// (its kept sessions with it), or up->tls_error when the upstream cannot connect (a warning
// says so too).
void set_upstream_tls(const UpstreamConf& c, const UpstreamTlsInputs& in, upstream::Upstream* up,
                      std::vector<std::string>* warnings);

// `trusted_ca`: the CA bundle file https upstreams with tls.verify are checked against
// (apisix.ssl.ssl_trusted_certificate); empty: the system's.
common::StatusOr<BuildResult> build_snapshot(const ConfigSet& set, upstream::DnsCache& dns,
                                             uint64_t version, plugin::Shared* shared = nullptr,
                                             health::Registry* health = nullptr,
                                             std::string_view trusted_ca = {});

}  // namespace sluice::config
