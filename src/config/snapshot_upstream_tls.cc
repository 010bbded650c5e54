// The TLS side of https upstreams: which client certificate each presents (tls.client_cert and
// client_key, or the `ssls` object tls.client_cert_id names) and how it verifies (tls.verify
// against tls.ca_certs or apisix.ssl.ssl_trusted_certificate), made into tls::ClientContexts.
// Contexts are shared by upstreams with equal settings and outlive a rebuild while one is in
// use, so the sessions they keep for resumption survive route edits.

#include <fmt/format.h>

#include <cstdint>
#include <map>
#include <mutex>

#include "config/snapshot_builder.h"
#include "tls/cert_index.h"
#include "tls/context.h"

namespace sluice::config {

namespace {

std::mutex contexts_mu;
std::map<std::string, std::weak_ptr<const tls::ClientContext>>& contexts() {
  static auto* m = new std::map<std::string, std::weak_ptr<const tls::ClientContext>>();
  return *m;
}

// A context for `o`: the live one with the same settings, or a new one.
common::StatusOr<std::shared_ptr<const tls::ClientContext>> shared_context(
    const tls::ClientContext::Options& o) {
  // The client certificate by identity: an `ssls` object or an inline pair is parsed once
  // (tls::cached_cert_entry) and its entry is kept alive by the contexts using it.
  std::string key = fmt::format("{}\n{:x}\n{}\n", o.verify ? 1 : 0,
                                reinterpret_cast<uintptr_t>(o.client.get()), o.ca_file);
  for (const std::string& pem : o.ca_pem) {
    key.append(pem).push_back('\n');
  }
  std::lock_guard lock(contexts_mu);
  auto& all = contexts();
  if (auto it = all.find(key); it != all.end()) {
    if (auto live = it->second.lock()) {
      return live;
    }
  }
  static size_t made_since_sweep = 0;
  if (++made_since_sweep >= 64) {  // forget the contexts no upstream uses any more
    made_since_sweep = 0;
    for (auto it = all.begin(); it != all.end();) {
      it = it->second.expired() ? all.erase(it) : std::next(it);
    }
  }
  auto made = tls::ClientContext::create(o);
  if (!made.is_ok()) {
    return made.status();
  }
  std::shared_ptr<const tls::ClientContext> ctx = std::move(made).value();
  all[key] = ctx;
  return ctx;
}

// The client certificate of `t`, or null with `why` set (`why` empty: the upstream has none).
tls::CertEntryPtr client_cert(const UpstreamTlsConf& t, const UpstreamTlsInputs& in,
                              const std::string& upstream_id, std::string* why) {
  if (!t.client_cert_id.empty()) {
    const SslConf* ssl = nullptr;
    for (const SslConf& s : *in.ssls) {
      ssl = s.id == t.client_cert_id ? &s : ssl;
    }
    const tls::CertEntryPtr* e = in.certs ? in.certs->find_id(t.client_cert_id) : nullptr;
    if (ssl == nullptr) {
      *why = fmt::format("failed to get ssl cert: ssl id [{}] not exits", t.client_cert_id);
    } else if (ssl->type != SslType::kClient) {
      *why = "failed to get ssl cert: ssl type should be 'client'";
    } else if (e == nullptr) {
      *why = fmt::format(
          "failed to get ssl cert: ssl [{}] is not served (status 0, or its certificate does "
          "not load)",
          t.client_cert_id);
    }
    return why->empty() ? *e : nullptr;
  }
  if (t.client_cert.empty()) {
    return nullptr;
  }
  tls::CertSource src;
  src.id = "tls-of-upstream/" + upstream_id;  // no `ssls` id has a '/'
  std::string cert, key;
  if (!resolve_pem(t.client_cert, &cert, why) || !resolve_pem(t.client_key, &key, why)) {
    *why = "tls.client_cert: " + *why;
    return nullptr;
  }
  src.pairs.emplace_back(std::move(cert), std::move(key));
  common::Status err;
  tls::CertEntryPtr e = tls::cached_cert_entry(src, &err);
  if (!e) {
    *why = "tls.client_cert: " + err.message();
  }
  return e;
}

}  // namespace

void set_upstream_tls(const UpstreamConf& c, const UpstreamTlsInputs& in, upstream::Upstream* up,
                      std::vector<std::string>* warnings) {
  tls::ClientContext::Options o;
  std::string why;
  if (c.tls) {
    o.client = client_cert(*c.tls, in, up->id, &why);
    // APISIX leaves an upstream certificate unverified unless tls.verify says otherwise.
    o.verify = c.tls->verify.value_or(false);
    o.ca_pem = c.tls->ca_certs;
  }
  if (o.verify && o.ca_pem.empty()) {
    o.ca_file = std::string(in.trusted_ca);
  }
  if (why.empty()) {
    auto ctx = shared_context(o);
    if (ctx.is_ok()) {
      up->tls = std::move(ctx).value();
      return;
    }
    why = ctx.status().message();
  }
  up->tls_error = std::move(why);
  warnings->push_back(fmt::format("upstream {}: {}; its requests get 502", up->id, up->tls_error));
}

}  // namespace sluice::config
