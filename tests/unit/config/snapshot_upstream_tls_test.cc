// https upstreams in a built snapshot: their ClientContext (shared by equal settings, kept
// across builds), the client certificate tls.client_cert_id names, and the reasons an upstream
// cannot connect.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "config/resources.h"
#include "config/snapshot_builder.h"

namespace sluice::config {
namespace snapshot_upstream_tls_test {

std::string tls_fixture(const char* name) {
  auto path = std::filesystem::path(__FILE__).parent_path() / "testdata" / name;
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  if (ss.str().empty()) {
    ADD_FAILURE() << "missing fixture " << path;
  }
  return ss.str();
}

UpstreamConf upstream_of(const std::string& id, const std::string& json) {
  Json j = Json::parse(json);
  j["id"] = id;
  auto u = decode_upstream(j);
  EXPECT_TRUE(u.is_ok()) << u.status().message();
  return u.is_ok() ? std::move(u).value() : UpstreamConf{};
}

SslConf ssl_of(const std::string& id, const std::string& type) {
  Json j = {{"id", id}, {"cert", tls_fixture("cert.pem")}, {"key", tls_fixture("key.pem")}};
  if (type == "client") {
    j["type"] = "client";
  } else {
    j["sni"] = "test.example";
  }
  auto s = decode_ssl(j);
  EXPECT_TRUE(s.is_ok()) << s.status().message();
  return s.is_ok() ? std::move(s).value() : SslConf{};
}

BuildResult build(const ConfigSet& set) {
  upstream::DnsCache dns(30);
  auto built = build_snapshot(set, dns, 1);
  EXPECT_TRUE(built.is_ok()) << built.status().message();
  return std::move(built).value();
}

const upstream::Upstream& find(const BuildResult& b, const std::string& id) {
  for (const auto& u : b.snapshot->upstreams) {
    if (u->id == id) {
      return *u;
    }
  }
  ADD_FAILURE() << "no upstream " << id;
  return *b.snapshot->upstreams.front();
}

TEST(SnapshotUpstreamTls, HttpsUpstreamsShareOneContextPerSettings) {
  ConfigSet set;
  set.upstreams.push_back(upstream_of("plain", R"({"nodes": {"127.0.0.1:80": 1}})"));
  set.upstreams.push_back(
      upstream_of("a", R"({"scheme": "https", "nodes": {"127.0.0.1:8443": 1}})"));
  set.upstreams.push_back(
      upstream_of("b", R"({"scheme": "https", "nodes": {"127.0.0.1:9443": 1}})"));
  set.upstreams.push_back(upstream_of(
      "v", R"({"scheme": "https", "nodes": {"127.0.0.1:8443": 1}, "tls": {"verify": true}})"));
  BuildResult first = build(set);
  EXPECT_EQ(find(first, "plain").tls, nullptr);
  const auto& a = find(first, "a").tls;
  ASSERT_NE(a, nullptr);
  EXPECT_FALSE(a->verify());  // APISIX verifies no upstream certificate unless told to
  EXPECT_EQ(find(first, "b").tls, a);
  ASSERT_NE(find(first, "v").tls, nullptr);
  EXPECT_TRUE(find(first, "v").tls->verify());
  EXPECT_NE(find(first, "v").tls, a);
  EXPECT_TRUE(find(first, "a").tls_error.empty());
  // A rebuild while the first snapshot serves keeps the context, and the sessions in it.
  BuildResult second = build(set);
  EXPECT_EQ(find(second, "a").tls, a);
}

TEST(SnapshotUpstreamTls, ClientCertIdNamesAClientSsl) {
  ConfigSet set;
  set.ssls.push_back(ssl_of("c", "client"));
  set.ssls.push_back(ssl_of("s", "server"));
  for (const char* id : {"c", "s", "gone"}) {
    set.upstreams.push_back(upstream_of(
        std::string("to-") + id,
        std::string(
            R"({"scheme": "https", "nodes": {"127.0.0.1:8443": 1}, "tls": {"client_cert_id": ")") +
            id + "\"}}"));
  }
  BuildResult b = build(set);
  const upstream::Upstream& ok = find(b, "to-c");
  ASSERT_NE(ok.tls, nullptr) << ok.tls_error;
  const tls::CertEntryPtr* entry = b.snapshot->certs->find_id("c");
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(ok.tls->options().client, *entry);
  // APISIX's texts (apisix/init.lua), its typo kept; such an upstream answers 502.
  EXPECT_EQ(find(b, "to-s").tls, nullptr);
  EXPECT_EQ(find(b, "to-s").tls_error, "failed to get ssl cert: ssl type should be 'client'");
  EXPECT_EQ(find(b, "to-gone").tls_error, "failed to get ssl cert: ssl id [gone] not exits");
  EXPECT_THAT(b.warnings,
              ::testing::Contains("upstream to-gone: failed to get ssl cert: ssl id [gone] not "
                                  "exits; its requests get 502"));
}

TEST(SnapshotUpstreamTls, InlineClientCertificate) {
  ConfigSet set;
  Json tls = {{"client_cert", tls_fixture("cert.pem")}, {"client_key", tls_fixture("key.pem")}};
  Json up = {{"scheme", "https"}, {"nodes", {{"127.0.0.1:8443", 1}}}, {"tls", tls}};
  set.upstreams.push_back(upstream_of("m", up.dump()));
  up["tls"] = {{"client_cert", "$env://SLUICE_TEST_UNSET_CERT"},
               {"client_key", "$env://SLUICE_TEST_UNSET_KEY"}};
  set.upstreams.push_back(upstream_of("env", up.dump()));
  BuildResult b = build(set);
  const upstream::Upstream& m = find(b, "m");
  ASSERT_NE(m.tls, nullptr) << m.tls_error;
  ASSERT_NE(m.tls->options().client, nullptr);
  EXPECT_EQ(m.tls->options().client->pairs().size(), 1u);
  EXPECT_EQ(find(b, "env").tls_error,
            "tls.client_cert: environment variable SLUICE_TEST_UNSET_CERT is not set");
}

// pass_host: node sends the node's host without the scheme's own port: 443 for https.
TEST(SnapshotUpstreamTls, NodeHostLeavesOutTheSchemesPort) {
  ConfigSet set;
  set.upstreams.push_back(
      upstream_of("s", R"({"scheme": "https", "nodes": {"127.0.0.1:443": 1, "127.0.0.1:80": 1}})"));
  set.upstreams.push_back(
      upstream_of("p", R"({"nodes": {"127.0.0.1:443": 1, "127.0.0.1:80": 1}})"));
  BuildResult b = build(set);
  std::map<uint16_t, std::string> https, http;
  for (const auto& n : find(b, "s").nodes) {
    https[n.port] = n.host_header;
  }
  for (const auto& n : find(b, "p").nodes) {
    http[n.port] = n.host_header;
  }
  EXPECT_EQ(https[443], "127.0.0.1");
  EXPECT_EQ(https[80], "127.0.0.1:80");
  EXPECT_EQ(http[443], "127.0.0.1:443");
  EXPECT_EQ(http[80], "127.0.0.1");
}

// Active checks send the Host proxied requests would: upstream_host under pass_host: rewrite.
TEST(SnapshotUpstreamTls, ProbesOfARewriteUpstreamSendItsHost) {
  ConfigSet set;
  set.upstreams.push_back(upstream_of("r", R"({"scheme": "https", "pass_host": "rewrite",
      "upstream_host": "api.example", "nodes": {"127.0.0.1:8443": 1, "127.0.0.2:8443": 1},
      "checks": {"active": {"type": "https"}}})"));
  BuildResult b = build(set);
  const upstream::Upstream& r = find(b, "r");
  ASSERT_NE(r.health, nullptr);
  for (const auto& t : r.health->targets()) {
    EXPECT_EQ(t.host_header, "api.example");
  }
}

}  // namespace snapshot_upstream_tls_test
}  // namespace sluice::config
