// deployment.etcd and apisix.ssl.ssl_trusted_certificate, read through parse_gateway_config
// so that every error is asserted with the key path a user sees.

#include "config/etcd_values.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "config/gateway_config.h"

namespace sluice::config {
namespace etcd_values_test {

using ::testing::ElementsAre;

GatewayConfig parse_ok(const std::string& text, const std::string& dir = "/etc/sluice") {
  auto r = parse_gateway_config(text, dir);
  if (!r.is_ok()) {
    ADD_FAILURE() << r.status().message();
    return {};
  }
  return std::move(r).value();
}

std::string error_of(const std::string& text) {
  auto r = parse_gateway_config(text, "/etc/sluice");
  return r.is_ok() ? "(accepted)" : r.status().message();
}

TEST(GatewayEtcd, DefaultsWhenAbsent) {
  for (const char* text : {"", "deployment:\n  role: traditional\n", "deployment:\n  etcd:\n"}) {
    SCOPED_TRACE(text);
    GatewayConfig c = parse_ok(text);
    EXPECT_EQ(c.etcd.hosts, std::vector<std::string>{"http://127.0.0.1:2379"});
    EXPECT_EQ(c.etcd.prefix, "/apisix");
    EXPECT_EQ(c.etcd.timeout, 30);
    EXPECT_EQ(c.etcd.user, "");
    EXPECT_EQ(c.etcd.password, "");
    EXPECT_EQ(c.etcd.tls.cert, "");
    EXPECT_EQ(c.etcd.tls.key, "");
    EXPECT_TRUE(c.etcd.tls.verify);
    EXPECT_EQ(c.etcd.tls.sni, "");
    EXPECT_EQ(c.etcd.tls.trusted_ca, "");
    EXPECT_TRUE(c.warnings.empty());
  }
}

TEST(GatewayEtcd, FullSection) {
  GatewayConfig c = parse_ok(R"(
apisix:
  ssl:
    ssl_trusted_certificate: certs/ca.pem
deployment:
  role: traditional
  role_traditional:
    config_provider: etcd
  etcd:
    host:
      - "https://etcd-1.example.com:2379"
      - "https://10.0.0.2:12379/"
      - "https://[::1]:2379"
      - "http://etcd_4"
    prefix: /sluice/prod/
    timeout: 2.5
    user: root
    password: secret
    tls:
      cert: certs/client.pem
      key: /etc/ssl/private/client.key
      verify: false
      sni: etcd.example.com
)");
  EXPECT_TRUE(c.warnings.empty()) << c.warnings.front();
  EXPECT_EQ(c.config_provider, ConfigProvider::kEtcd);
  EXPECT_THAT(c.etcd.hosts, ElementsAre("https://etcd-1.example.com:2379", "https://10.0.0.2:12379",
                                        "https://[::1]:2379", "http://etcd_4:2379"));
  EXPECT_EQ(c.etcd.prefix, "/sluice/prod");
  EXPECT_DOUBLE_EQ(c.etcd.timeout, 2.5);
  EXPECT_EQ(c.etcd.user, "root");
  EXPECT_EQ(c.etcd.password, "secret");
  EXPECT_EQ(c.etcd.tls.cert, "/etc/sluice/certs/client.pem");
  EXPECT_EQ(c.etcd.tls.key, "/etc/ssl/private/client.key");
  EXPECT_FALSE(c.etcd.tls.verify);
  EXPECT_EQ(c.etcd.tls.sni, "etcd.example.com");
  EXPECT_EQ(c.etcd.tls.trusted_ca, "/etc/sluice/certs/ca.pem");
}

TEST(GatewayEtcd, HostForms) {
  struct Case {
    const char* url;
    const char* want;
  } cases[] = {
      {"http://127.0.0.1:2379", "http://127.0.0.1:2379"},
      {"http://127.0.0.1", "http://127.0.0.1:2379"},
      {"http://127.0.0.1/", "http://127.0.0.1:2379"},
      {"https://localhost:1", "https://localhost:1"},
      {"http://etcd.svc.cluster.local:65535/", "http://etcd.svc.cluster.local:65535"},
      {"https://[::1]", "https://[::1]:2379"},
      {"http://[2001:db8::1]:12379/", "http://[2001:db8::1]:12379"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.url);
    GatewayConfig cfg =
        parse_ok(std::string("deployment:\n  etcd:\n    host: [\"") + c.url + "\"]\n");
    EXPECT_EQ(cfg.etcd.hosts, std::vector<std::string>{c.want});
  }
}

TEST(GatewayEtcd, PrefixLosesItsTrailingSlashes) {
  struct Case {
    const char* prefix;
    const char* want;
  } cases[] = {{"/apisix", "/apisix"},
               {"/apisix/", "/apisix"},
               {"/a/b//", "/a/b"},
               {"/x", "/x"},
               {"\"/apisix-2.x_prod\"", "/apisix-2.x_prod"}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.prefix);
    GatewayConfig cfg =
        parse_ok(std::string("deployment:\n  etcd:\n    prefix: ") + c.prefix + "\n");
    EXPECT_EQ(cfg.etcd.prefix, c.want);
  }
  std::string longest = "/" + std::string(255, 'p');
  EXPECT_EQ(parse_ok("deployment: {etcd: {prefix: " + longest + "}}").etcd.prefix, longest);
}

TEST(GatewayEtcd, TimeoutBounds) {
  EXPECT_EQ(parse_ok("deployment: {etcd: {timeout: 3600}}").etcd.timeout, 3600);
  EXPECT_DOUBLE_EQ(parse_ok("deployment: {etcd: {timeout: 0.001}}").etcd.timeout, 0.001);
  EXPECT_EQ(parse_ok("deployment: {etcd: {timeout: 5}}").etcd.timeout, 5);
}

TEST(GatewayEtcd, RelativeFilesAreTakenFromTheConfigDirectory) {
  const char* text = R"(
apisix: {ssl: {ssl_trusted_certificate: ca.pem}}
deployment: {etcd: {tls: {cert: certs/c.pem, key: ../k.pem}}}
)";
  struct Case {
    const char* dir;
    const char* ca;
    const char* cert;
    const char* key;
  } cases[] = {
      {"/etc/sluice", "/etc/sluice/ca.pem", "/etc/sluice/certs/c.pem", "/etc/sluice/../k.pem"},
      {"conf/", "conf/ca.pem", "conf/certs/c.pem", "conf/../k.pem"},
      {"", "./ca.pem", "./certs/c.pem", "./../k.pem"},
      {"/", "/ca.pem", "/certs/c.pem", "/../k.pem"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.dir);
    GatewayConfig cfg = parse_ok(text, c.dir);
    EXPECT_EQ(cfg.etcd.tls.trusted_ca, c.ca);
    EXPECT_EQ(cfg.etcd.tls.cert, c.cert);
    EXPECT_EQ(cfg.etcd.tls.key, c.key);
  }
}

TEST(GatewayEtcd, TrustedCertificate) {
  EXPECT_EQ(parse_ok("apisix: {ssl: {ssl_trusted_certificate: /etc/ssl/ca.pem}}", "conf")
                .etcd.tls.trusted_ca,
            "/etc/ssl/ca.pem");
  // APISIX 3.x's "system": the system's CAs, which an empty trusted_ca means.
  EXPECT_EQ(parse_ok("apisix: {ssl: {ssl_trusted_certificate: system}}").etcd.tls.trusted_ca, "");
  GatewayConfig c = parse_ok(R"(
apisix:
  ssl:
    enable: true
    listen: [9443]
    ssl_trusted_certificate: ca.pem
deployment:
  etcd:
    host: ["http://127.0.0.1:2379"]
    startup_retry: 2
    watch_timeout: 50
    tls: {verify: true, ciphers: x}
)");
  EXPECT_EQ(c.etcd.tls.trusted_ca, "/etc/sluice/ca.pem");
  EXPECT_THAT(
      c.warnings,
      ElementsAre(
          "config.yaml: deployment.etcd.startup_retry is not supported yet and is ignored",
          "config.yaml: deployment.etcd.tls.ciphers is not supported yet and is ignored",
          "config.yaml: deployment.etcd.watch_timeout is not supported yet and is ignored"));
}

struct ErrorCase {
  std::string yaml;
  const char* error;  // the whole message
};

std::string host_yaml(const std::string& url) {
  return "deployment: {etcd: {host: [\"" + url + "\"]}}";
}

TEST(GatewayEtcd, HostErrors) {
  const std::string url_hint =
      "config.yaml: deployment.etcd.host[0]: expected a URL http(s)://host[:port], got ";
  const ErrorCase cases[] = {
      {"deployment: {etcd: {host: \"http://127.0.0.1:2379\"}}",
       "config.yaml: deployment.etcd.host: expected a list of URLs such as "
       "[\"http://127.0.0.1:2379\"], got \"http://127.0.0.1:2379\""},
      {"deployment: {etcd: {host: []}}",
       "config.yaml: deployment.etcd.host: expected a list of URLs such as "
       "[\"http://127.0.0.1:2379\"], got []"},
      {"deployment: {etcd: {host: {a: 1}}}",
       "config.yaml: deployment.etcd.host: expected a list of URLs such as "
       "[\"http://127.0.0.1:2379\"], got {\"a\":1}"},
      {"deployment: {etcd: {host: [\"http://a:1\", 5]}}",
       "config.yaml: deployment.etcd.host[1]: expected a URL http(s)://host[:port], got 5"},
      {"deployment: {etcd: {host: [\"http://a:1\", \"ftp://b:2379\"]}}",
       "config.yaml: deployment.etcd.host[1]: expected a URL http(s)://host[:port], got "
       "\"ftp://b:2379\": the scheme must be http or https"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.yaml);
    EXPECT_EQ(error_of(c.yaml), c.error);
  }
  struct UrlCase {
    const char* url;
    const char* why;
  } urls[] = {
      {"127.0.0.1:2379", "the scheme must be http or https"},
      {"", "the scheme must be http or https"},
      {"HTTP://a:1", "the scheme must be http or https"},
      {"unix:///run/etcd.sock", "the scheme must be http or https"},
      {"http://", "the host is missing"},
      {"http://:2379", "the host is missing"},
      {"http://a/v3", "a path is not allowed"},
      {"http://a:2379//", "a path is not allowed"},
      {"http://a:2379?x=1", "a path is not allowed"},
      {"http://a#f", "a path is not allowed"},
      {"http://root:pw@a:2379", "user info is not allowed (use user and password)"},
      {"http://a:0", "the port must be 1-65535"},
      {"http://a:65536", "the port must be 1-65535"},
      {"http://a:", "the port must be 1-65535"},
      {"http://a:x", "the port must be 1-65535"},
      {"http://a:+1", "the port must be 1-65535"},
      {"http://a:-1", "the port must be 1-65535"},
      {"http://::1:2379", "an IPv6 address must be in brackets"},
      {"http://[::1", "invalid IPv6 address"},
      {"http://[1.2.3.4]:1", "invalid IPv6 address"},
      {"http://[]:1", "invalid IPv6 address"},
      {"http://[::1]2379", "invalid host"},
      {"http://a b:1", "invalid host name"},
      {"http://*.example.com", "invalid host name"},
      {"http://999.1.1.1:2379", "invalid host name"},
  };
  for (const auto& u : urls) {
    SCOPED_TRACE(u.url);
    EXPECT_EQ(error_of(host_yaml(u.url)), url_hint + "\"" + u.url + "\": " + u.why);
  }
  auto hosts = [](int n) {
    std::string yaml = "deployment: {etcd: {host: [";
    for (int i = 0; i < n; ++i) {
      yaml += fmt::format("{}\"http://10.0.0.{}:2379\"", i == 0 ? "" : ", ", i);
    }
    return yaml + "]}}";
  };
  EXPECT_EQ(parse_ok(hosts(16)).etcd.hosts.size(), 16u);
  EXPECT_EQ(error_of(hosts(17)),
            "config.yaml: deployment.etcd.host: expected at most 16 URLs, got 17");
}

TEST(GatewayEtcd, OtherErrors) {
  const ErrorCase cases[] = {
      {"deployment: {etcd: 5}", "config.yaml: deployment.etcd: expected a mapping, got number"},
      {"deployment: {etcd: {prefix: apisix}}",
       "config.yaml: deployment.etcd.prefix: expected a prefix starting with '/', such as "
       "\"/apisix\", got \"apisix\""},
      {"deployment: {etcd: {prefix: \"\"}}",
       "config.yaml: deployment.etcd.prefix: expected a prefix starting with '/', such as "
       "\"/apisix\", got \"\""},
      {"deployment: {etcd: {prefix: 5}}",
       "config.yaml: deployment.etcd.prefix: expected a prefix such as \"/apisix\", got 5"},
      {"deployment: {etcd: {prefix: /}}",
       "config.yaml: deployment.etcd.prefix: expected a prefix below the root, such as "
       "\"/apisix\", got \"/\""},
      {"deployment: {etcd: {prefix: //}}",
       "config.yaml: deployment.etcd.prefix: expected a prefix below the root, such as "
       "\"/apisix\", got \"//\""},
      {"deployment: {etcd: {prefix: \"/a b\"}}",
       "config.yaml: deployment.etcd.prefix: expected no spaces or control characters, got "
       "\"/a b\""},
      {"deployment: {etcd: {prefix: \"/a\\tb\"}}",
       "config.yaml: deployment.etcd.prefix: expected no spaces or control characters, got "
       "\"/a\\tb\""},
      {"deployment: {etcd: {prefix: /" + std::string(256, 'p') + "}}",
       "config.yaml: deployment.etcd.prefix: expected at most 256 characters, got 257"},
      {"deployment: {etcd: {timeout: x}}",
       "config.yaml: deployment.etcd.timeout: expected a number > 0 and <= 3600, got \"x\""},
      {"deployment: {etcd: {timeout: \"30\"}}",
       "config.yaml: deployment.etcd.timeout: expected a number > 0 and <= 3600, got \"30\""},
      {"deployment: {etcd: {timeout: 0}}",
       "config.yaml: deployment.etcd.timeout: expected a number > 0 and <= 3600, got 0"},
      {"deployment: {etcd: {timeout: -1}}",
       "config.yaml: deployment.etcd.timeout: expected a number > 0 and <= 3600, got -1"},
      {"deployment: {etcd: {timeout: 3600.5}}",
       "config.yaml: deployment.etcd.timeout: expected a number > 0 and <= 3600, got 3600.5"},
      {"deployment: {etcd: {timeout: true}}",
       "config.yaml: deployment.etcd.timeout: expected a number > 0 and <= 3600, got true"},
      {"deployment: {etcd: {user: root}}",
       "config.yaml: deployment.etcd: user is set but password is not; set both or neither"},
      {"deployment: {etcd: {password: pw, user: ~}}",
       "config.yaml: deployment.etcd: password is set but user is not; set both or neither"},
      {"deployment: {etcd: {user: root, password: 123}}",
       "config.yaml: deployment.etcd.password: wrong type: expected string, got number"},
      {"deployment: {etcd: {user: \"\", password: pw}}",
       "config.yaml: deployment.etcd.user: string too short, expected at least 1, got 0"},
      {"deployment: {etcd: {tls: {cert: c.pem}}}",
       "config.yaml: deployment.etcd.tls: cert is set but key is not; set both or neither"},
      {"deployment: {etcd: {tls: {key: k.pem}}}",
       "config.yaml: deployment.etcd.tls: key is set but cert is not; set both or neither"},
      {"deployment: {etcd: {tls: {cert: \"\", key: k.pem}}}",
       "config.yaml: deployment.etcd.tls.cert: string too short, expected at least 1, got 0"},
      {"deployment: {etcd: {tls: {verify: \"no\"}}}",
       "config.yaml: deployment.etcd.tls.verify: expected true or false, got string"},
      {"deployment: {etcd: {tls: {sni: \"*.example.com\"}}}",
       "config.yaml: deployment.etcd.tls.sni: expected a host name, got \"*.example.com\""},
      {"deployment: {etcd: {tls: {sni: \"etcd:2379\"}}}",
       "config.yaml: deployment.etcd.tls.sni: expected a host name, got \"etcd:2379\""},
      {"deployment: {etcd: {tls: [cert]}}",
       "config.yaml: deployment.etcd.tls: expected a mapping, got array"},
      {"apisix: {ssl: {ssl_trusted_certificate: 5}}",
       "config.yaml: apisix.ssl.ssl_trusted_certificate: wrong type: expected string, got number"},
      {"apisix: {ssl: [9443]}", "config.yaml: apisix.ssl: expected a mapping, got array"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.yaml);
    EXPECT_EQ(error_of(c.yaml), c.error);
  }
}

}  // namespace etcd_values_test
}  // namespace sluice::config
