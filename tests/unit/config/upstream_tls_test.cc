// An upstream's `tls` object: the schema (APISIX's texts for its dependencies), and the checks
// after it (scheme https, certificates that parse and belong together).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "config/resources.h"
#include "config/secret_fields.h"

namespace sluice::config {
namespace upstream_tls_test {

using ::testing::StartsWith;

std::string tls_pem(const char* name) {
  auto path = std::filesystem::path(__FILE__).parent_path() / "testdata" / name;
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  if (ss.str().empty()) {
    ADD_FAILURE() << "missing fixture " << path;
  }
  return ss.str();
}

// An https upstream whose tls is `tls` (JSON text).
Json https_upstream(const std::string& tls) {
  return Json::parse(R"({"scheme": "https", "nodes": {"127.0.0.1:8443": 1}, "tls": )" + tls + "}");
}

Json pair_tls(const char* cert, const char* key, const std::string& extra = "") {
  Json t = {{"client_cert", tls_pem(cert)}, {"client_key", tls_pem(key)}};
  if (!extra.empty()) {
    t.update(Json::parse(extra));
  }
  return t;
}

TEST(UpstreamTls, HttpsGrpcAndGrpcsAreAccepted) {
  auto u = decode_upstream(Json::parse(R"({"scheme": "https", "nodes": {"a.com": 1}})"));
  ASSERT_TRUE(u.is_ok()) << u.status().message();
  EXPECT_EQ(u->scheme, "https");
  EXPECT_FALSE(u->tls.has_value());
  EXPECT_EQ(u->nodes[0].port, 443);  // a port-less node gets https's
  auto grpc = decode_upstream(Json::parse(R"({"nodes": {"a.com": 1}, "scheme": "grpc"})"));
  ASSERT_TRUE(grpc.is_ok()) << grpc.status().message();
  EXPECT_EQ(grpc->scheme, "grpc");
  EXPECT_EQ(grpc->nodes[0].port, 80);
  auto gs = decode_upstream(
      Json::parse(R"({"nodes": {"a.com": 1}, "scheme": "grpcs", "tls": {"verify": true}})"));
  ASSERT_TRUE(gs.is_ok()) << gs.status().message();
  EXPECT_EQ(gs->nodes[0].port, 443);
  EXPECT_TRUE(gs->tls.has_value());
}

TEST(UpstreamTls, ReadsEveryField) {
  auto u = decode_upstream(https_upstream(R"({"verify": true, "client_cert_id": 7})"));
  ASSERT_TRUE(u.is_ok()) << u.status().message();
  ASSERT_TRUE(u->tls.has_value());
  EXPECT_EQ(u->tls->client_cert_id, "7");
  EXPECT_EQ(u->tls->verify, true);
  EXPECT_TRUE(u->tls->client_cert.empty());

  Json pair = pair_tls("cert.pem", "key.pem");
  pair["ca_certs"] = {tls_pem("other_cert.pem")};
  u = decode_upstream(https_upstream(pair.dump()));
  ASSERT_TRUE(u.is_ok()) << u.status().message();
  EXPECT_EQ(u->tls->client_cert, tls_pem("cert.pem"));
  EXPECT_EQ(u->tls->client_key, tls_pem("key.pem"));
  EXPECT_FALSE(u->tls->verify.has_value());  // absent: APISIX's default, no verification
  EXPECT_EQ(u->tls->ca_certs.size(), 1u);
}

TEST(UpstreamTls, SchemaErrors) {
  struct Case {
    std::string tls;
    const char* error;
  } cases[] = {
      {R"("x")", "wrong type: expected object, got string"},
      {R"({"sni": "a.com"})", "additional properties forbidden, found sni"},
      {R"({"verify": "yes"})",
       R"(property "verify" validation failed: wrong type: expected boolean, got string)"},
      {R"({"client_cert_id": "a b"})", R"(property "client_cert_id" validation failed)"},
      {R"({"client_cert": "short", "client_key": "short"})",
       R"(property "client_cert" validation failed: string too short)"},
      {Json{{"client_cert", tls_pem("cert.pem")}}.dump(),
       R"(failed to validate dependent schema for "client_cert": property "client_key" is required)"},
      {Json{{"client_key", tls_pem("key.pem")}}.dump(),
       R"(failed to validate dependent schema for "client_key": property "client_cert" is required)"},
      {pair_tls("cert.pem", "key.pem", R"({"client_cert_id": "1"})").dump(),
       R"(failed to validate dependent schema for "client_cert": value wasn't supposed to match schema)"},
      {R"({"ca_certs": []})",
       R"(property "ca_certs" validation failed: expect array to have at least 1 items)"},
      {R"({"ca_certs": ["x"]})",
       R"(property "ca_certs" validation failed: failed to validate item 1: string too short)"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.tls);
    auto u = decode_upstream(https_upstream(c.tls));
    ASSERT_FALSE(u.is_ok());
    EXPECT_THAT(u.status().message(),
                StartsWith(std::string("invalid configuration: property \"tls\" validation "
                                       "failed: ") +
                           c.error));
  }
}

// After the schema, as APISIX's check_upstream_conf: no "invalid configuration: " prefix, and
// the same for an upstream inline in a route or a service.
TEST(UpstreamTls, RulesAfterTheSchema) {
  struct Case {
    Json upstream;
    std::string error;
  } cases[] = {
      {Json::parse(R"({"nodes": {}, "tls": {"verify": true}})"),
       "tls needs scheme \"https\" or \"grpcs\" (the upstream's scheme is \"http\"): Sluice "
       "makes TLS connections to https and grpcs upstreams only, so its client certificate and "
       "verification would never apply"},
      {https_upstream(
           Json{{"client_cert", std::string(200, 'x')}, {"client_key", tls_pem("key.pem")}}.dump()),
       "failed to parse cert: not a PEM block (no \"-----BEGIN\" line)"},
      {https_upstream(
           Json{{"client_cert", tls_pem("cert.pem")}, {"client_key", std::string(200, 'x')}}
               .dump()),
       // Not PEM text: with a keyring (APISIX's default one here) it is taken as sealed.
       "failed to decrypt previous encrypted key: decrypt ssl key failed"},
      {https_upstream(pair_tls("cert.pem", "other_key.pem").dump()),
       "failed to handle cert-key pair: the key does not match the certificate"},
      {https_upstream(R"({"verify": true, "ca_certs": [")" + std::string(200, 'x') + R"("]})"),
       "tls.ca_certs[1]: failed to parse cert: not a PEM block (no \"-----BEGIN\" line)"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.error);
    auto u = decode_upstream(c.upstream);
    ASSERT_FALSE(u.is_ok());
    EXPECT_EQ(u.status().message(), c.error);
    Json route = {{"uri", "/a"}, {"upstream", c.upstream}};
    auto r = decode_route(route);
    ASSERT_FALSE(r.is_ok());
    EXPECT_EQ(r.status().message(), c.error);
    auto s = decode_service(Json{{"upstream", c.upstream}});
    ASSERT_FALSE(s.is_ok());
    EXPECT_EQ(s.status().message(), c.error);
  }
  // An $env:// reference is read when the snapshot is built, not here.
  EXPECT_TRUE(
      decode_upstream(https_upstream(R"({"client_cert": "$env://C", "client_key": "$env://K"})"))
          .is_ok());
}

// Sealed at rest as APISIX seals it (the Admin API writes it so; etcd may hold APISIX's); a
// decoded upstream holds the PEM again.
TEST(UpstreamTls, ASealedClientKeyIsReadBack) {
  for (const char* kind : {"upstreams", "routes", "services"}) {
    SCOPED_TRACE(kind);
    Json up = https_upstream(pair_tls("cert.pem", "key.pem").dump());
    Json obj = std::string_view(kind) == "upstreams" ? up : Json{{"upstream", up}};
    if (std::string_view(kind) == "routes") {
      obj["uri"] = "/a";
    }
    ASSERT_TRUE(seal_secrets(kind, &obj));
    const Json& tls = std::string_view(kind) == "upstreams" ? obj["tls"] : obj["upstream"]["tls"];
    EXPECT_EQ(tls["client_key"].get<std::string>().find("PRIVATE KEY"), std::string::npos);
    EXPECT_EQ(tls["client_cert"], tls_pem("cert.pem"));  // certificates are public
    std::optional<UpstreamConf> u;
    if (std::string_view(kind) == "upstreams") {
      auto d = decode_upstream(obj);
      ASSERT_TRUE(d.is_ok()) << d.status().message();
      u = *d;
    } else if (std::string_view(kind) == "routes") {
      auto d = decode_route(obj);
      ASSERT_TRUE(d.is_ok()) << d.status().message();
      u = d->upstream;
    } else {
      auto d = decode_service(obj);
      ASSERT_TRUE(d.is_ok()) << d.status().message();
      u = d->upstream;
    }
    ASSERT_TRUE(u && u->tls);
    EXPECT_EQ(u->tls->client_key, tls_pem("key.pem"));
  }
  // Sealed under a key this keyring does not have: APISIX's text.
  Json up = https_upstream(pair_tls("cert.pem", "key.pem").dump());
  up["tls"]["client_key"] = std::string(200, 'A');
  auto u = decode_upstream(up);
  ASSERT_FALSE(u.is_ok());
  EXPECT_THAT(u.status().message(), StartsWith("failed to decrypt previous encrypted key: "));
}

}  // namespace upstream_tls_test
}  // namespace sluice::config
