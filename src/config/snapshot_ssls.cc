// The `ssls` objects of a ConfigSet as the HTTPS listeners serve them: a tls::CertIndex by
// SNI (server certificates) and by id (client certificates, for upstreams' tls.client_cert_id).

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "config/snapshot_builder.h"
#include "tls/cert_index.h"

namespace sluice::config {

bool resolve_pem(const std::string& v, std::string* out, std::string* why) {
  if (v.starts_with("$env://")) {
    const char* val = std::getenv(v.substr(7).c_str());
    if (val == nullptr || *val == '\0') {
      *why = fmt::format("environment variable {} is not set", v.substr(7));
      return false;
    }
    *out = val;
    return true;
  }
  if (v.starts_with("$secret://")) {
    *why = "$secret:// references are not resolved yet (no secret manager is served)";
    return false;
  }
  *out = v;
  return true;
}

namespace {

bool to_source(const SslConf& s, tls::CertSource* src, std::string* why) {
  src->id = s.id;
  auto add_pair = [&](const std::string& c, const std::string& k) {
    std::string cert, key;
    if (!resolve_pem(c, &cert, why) || !resolve_pem(k, &key, why)) {
      return false;
    }
    src->pairs.emplace_back(std::move(cert), std::move(key));
    return true;
  };
  if (!add_pair(s.cert, s.key)) {
    return false;
  }
  for (size_t i = 0; i < s.certs.size() && i < s.keys.size(); ++i) {
    if (!add_pair(s.certs[i], s.keys[i])) {
      return false;
    }
  }
  if (s.client) {
    if (!resolve_pem(s.client->ca, &src->client_ca, why)) {
      return false;
    }
    src->client_depth = s.client->depth;
    src->skip_mtls_uri_regex = s.client->skip_mtls_uri_regex;
  }
  src->protocols = s.ssl_protocols;
  return true;
}

}  // namespace

std::shared_ptr<const tls::CertIndex> build_cert_index(const std::vector<SslConf>& ssls,
                                                       std::vector<std::string>* warnings) {
  std::vector<const SslConf*> order;
  for (const SslConf& s : ssls) {
    if (s.status == 1) {
      order.push_back(&s);
    }
  }
  // The oldest object claims a name first.
  std::stable_sort(order.begin(), order.end(), [](const SslConf* a, const SslConf* b) {
    return a->create_time < b->create_time;
  });
  auto index = std::make_shared<tls::CertIndex>();
  for (const SslConf* s : order) {
    tls::CertSource src;
    std::string why;
    tls::CertEntryPtr e;
    if (!to_source(*s, &src, &why)) {
      warnings->push_back(fmt::format("ssl {}: {}; its certificate is not served", s->id, why));
      e = tls::CertEntry::broken(s->id, why);
    } else {
      common::Status err;
      e = tls::cached_cert_entry(src, &err);
      if (!e) {
        warnings->push_back(fmt::format("{}; its certificate is not served", err.message()));
        e = tls::CertEntry::broken(s->id, err.message());
      }
    }
    if (s->type == SslType::kClient) {
      index->add_by_id(s->id, e);
      continue;
    }
    index->add_by_id(s->id, e);
    for (const std::string& sni : s->snis) {
      index->add(sni, e);
    }
  }
  tls::sweep_cert_cache();
  return index;
}

}  // namespace sluice::config
