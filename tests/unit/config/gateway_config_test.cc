#include "config/gateway_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace sluice::config {
namespace gateway_config_test {

using ::testing::ElementsAre;
using ::testing::StartsWith;

GatewayConfig parse_ok(const std::string& text) {
  auto r = parse_gateway_config(text, "/etc/sluice");
  EXPECT_TRUE(r.is_ok()) << r.status().message();
  if (!r.is_ok()) {
    return GatewayConfig{};
  }
  return *r;
}

TEST(GatewayConfig, EmptyFileIsAllDefaults) {
  for (const char* text : {"", "# comment only\n", "apisix:\nnginx_config:\n"}) {
    GatewayConfig c = parse_ok(text);
    ASSERT_EQ(c.node_listen.size(), 1u);
    EXPECT_EQ(c.node_listen[0].ip, "0.0.0.0");
    EXPECT_EQ(c.node_listen[0].port, 9080);
    EXPECT_EQ(c.worker_processes, 0);
    EXPECT_EQ(c.error_log_level, common::LogLevel::kWarn);
    EXPECT_EQ(c.role, "traditional");
    EXPECT_EQ(c.config_provider, ConfigProvider::kEmbedded);
    EXPECT_EQ(c.data_dir, "/etc/sluice/data");
    EXPECT_TRUE(c.admin.enabled);
    EXPECT_EQ(c.admin.listen.ip, "127.0.0.1");
    EXPECT_EQ(c.admin.listen.port, 9180);
    ASSERT_EQ(c.admin.keys.size(), 1u);
    EXPECT_EQ(c.admin.keys[0].key, kWellKnownAdminKey);
    EXPECT_EQ(c.admin.allow, (std::vector<std::string>{"127.0.0.0/24", "::1/128"}));
    EXPECT_TRUE(c.server_tokens);
    EXPECT_EQ(c.client_max_body_size, 0u);
    EXPECT_EQ(c.standalone_path, "/etc/sluice/apisix.yaml");
    EXPECT_TRUE(c.warnings.empty());
  }
}

TEST(GatewayConfig, StandalonePathFollowsTheDirectory) {
  EXPECT_EQ(parse_gateway_config("", "conf").value().standalone_path, "conf/apisix.yaml");
  EXPECT_EQ(parse_gateway_config("", "conf/").value().standalone_path, "conf/apisix.yaml");
  EXPECT_EQ(parse_gateway_config("", "").value().standalone_path, "./apisix.yaml");
  EXPECT_EQ(parse_gateway_config("", "/").value().standalone_path, "/apisix.yaml");
}

struct ListenCase {
  const char* yaml;
  std::vector<std::pair<std::string, uint16_t>> want;
};

TEST(GatewayConfig, NodeListenForms) {
  const ListenCase cases[] = {
      {"apisix:\n  node_listen: 9081\n", {{"0.0.0.0", 9081}}},
      {"apisix:\n  node_listen: [9081, 9082]\n", {{"0.0.0.0", 9081}, {"0.0.0.0", 9082}}},
      {"apisix:\n  node_listen:\n    - ip: 127.0.0.2\n      port: 9083\n    - port: 9084\n",
       {{"127.0.0.2", 9083}, {"0.0.0.0", 9084}}},
      {"apisix:\n  node_listen:\n    - ip: \"[::1]\"\n      port: 9085\n", {{"::1", 9085}}},
      {"apisix:\n  node_listen:\n    - ip: \"::\"\n      port: 9086\n", {{"::", 9086}}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.yaml);
    GatewayConfig cfg = parse_ok(c.yaml);
    std::vector<std::pair<std::string, uint16_t>> got;
    for (const auto& l : cfg.node_listen) {
      got.emplace_back(l.ip, l.port);
    }
    EXPECT_EQ(got, c.want);
  }
}

TEST(GatewayConfig, ReadsSupportedKeys) {
  GatewayConfig c = parse_ok(R"(
apisix:
  enable_server_tokens: false
  dns_resolver_valid: 5
  graceful_shutdown_timeout: 3s
nginx_config:
  worker_processes: 4
  error_log_level: info
  http:
    client_header_timeout: 10
    client_body_timeout: "500ms"
    send_timeout: 1m
    keepalive_timeout: 1m30s
    client_max_body_size: 10m
deployment:
  role: traditional
  role_traditional:
    config_provider: etcd
  role_data_plane:
    config_provider: yaml
)");
  EXPECT_FALSE(c.server_tokens);
  EXPECT_EQ(c.dns_resolver_valid, 5);
  EXPECT_EQ(c.graceful_shutdown_timeout, 3);
  EXPECT_EQ(c.worker_processes, 4);
  EXPECT_EQ(c.error_log_level, common::LogLevel::kInfo);
  EXPECT_EQ(c.client_header_timeout, 10);
  EXPECT_DOUBLE_EQ(c.client_body_timeout, 0.5);
  EXPECT_EQ(c.send_timeout, 60);
  EXPECT_EQ(c.keepalive_timeout, 90);
  EXPECT_EQ(c.client_max_body_size, 10u << 20);
  EXPECT_EQ(c.role, "traditional");
  EXPECT_EQ(c.config_provider, ConfigProvider::kEtcd);
  EXPECT_TRUE(c.warnings.empty());
}

TEST(GatewayConfig, ProviderFollowsTheRole) {
  const char* text = R"(
deployment:
  role: data_plane
  role_traditional:
    config_provider: etcd
  role_data_plane:
    config_provider: etcd
)";
  GatewayConfig dp = parse_ok(text);
  EXPECT_EQ(dp.config_provider, ConfigProvider::kEtcd);
  EXPECT_FALSE(dp.admin.enabled);  // a data plane has no Admin API, as in APISIX
  EXPECT_TRUE(
      parse_ok("deployment:\n  role_traditional:\n    config_provider: etcd\n").admin.enabled);
  EXPECT_EQ(parse_ok("deployment:\n  role: control_plane\n").config_provider,
            ConfigProvider::kYaml);
  EXPECT_EQ(parse_ok("nginx_config:\n  worker_processes: auto\n").worker_processes, 0);
}

// APISIX's default provider is etcd: a config.yaml that sets deployment.etcd and names no
// provider (the usual APISIX 3.x file) means etcd, not the embedded store.
TEST(GatewayConfig, EtcdSettingsWithoutAProviderMeanEtcd) {
  GatewayConfig t = parse_ok(R"(
deployment:
  role: traditional
  etcd:
    host: ["http://10.0.0.1:2379"]
    prefix: /apisix
)");
  EXPECT_EQ(t.config_provider, ConfigProvider::kEtcd);
  EXPECT_TRUE(t.admin.enabled);
  EXPECT_EQ(t.etcd.hosts, std::vector<std::string>{"http://10.0.0.1:2379"});
  // No role given: traditional, as in APISIX.
  EXPECT_EQ(
      parse_ok("deployment:\n  etcd:\n    host: [\"http://10.0.0.1:2379\"]\n").config_provider,
      ConfigProvider::kEtcd);
  EXPECT_EQ(parse_ok("deployment:\n  role: data_plane\n  etcd:\n    prefix: /x\n").config_provider,
            ConfigProvider::kEtcd);
  // A provider named explicitly still wins.
  EXPECT_EQ(parse_ok("deployment:\n  role_traditional:\n    config_provider: embedded\n"
                     "  etcd:\n    prefix: /x\n")
                .config_provider,
            ConfigProvider::kEmbedded);
  EXPECT_EQ(parse_ok("deployment:\n  role: data_plane\n  role_data_plane:\n"
                     "    config_provider: yaml\n  etcd:\n    prefix: /x\n")
                .config_provider,
            ConfigProvider::kYaml);
  // Without deployment.etcd a traditional node keeps the embedded store.
  EXPECT_EQ(parse_ok("deployment:\n  role: traditional\n").config_provider,
            ConfigProvider::kEmbedded);
}

struct SizeCase {
  const char* value;
  uint64_t bytes;
};

TEST(GatewayConfig, Sizes) {
  const SizeCase cases[] = {{"0", 0},
                            {"\"0\"", 0},
                            {"1024", 1024},
                            {"512k", 512 << 10},
                            {"512K", 512 << 10},
                            {"10m", 10u << 20},
                            {"1g", 1ull << 30},
                            {"1G", 1ull << 30}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.value);
    auto cfg = parse_ok(std::string("nginx_config:\n  http:\n    client_max_body_size: ") +
                        c.value + "\n");
    EXPECT_EQ(cfg.client_max_body_size, c.bytes);
  }
}

struct DurationCase {
  const char* value;
  double seconds;
};

TEST(GatewayConfig, Durations) {
  const DurationCase cases[] = {{"60", 60},     {"60s", 60},  {"\"10\"", 10}, {"1m", 60},
                                {"500ms", 0.5}, {"2h", 7200}, {"1d", 86400},  {"1m 30s", 90},
                                {"1.5", 1.5},   {"0", 0}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.value);
    auto cfg = parse_ok(std::string("nginx_config:\n  http:\n    send_timeout: ") + c.value + "\n");
    EXPECT_DOUBLE_EQ(cfg.send_timeout, c.seconds);
  }
}

TEST(GatewayConfig, UnsupportedKeysAreWarnings) {
  GatewayConfig c = parse_ok(R"(
apisix:
  node_listen:
    - port: 9080
      enable_http2: true
  enable_admin: true
  ssl:
    enable: true
    listen:
      - port: 9443
nginx_config:
  error_log: logs/error.log
  http:
    enable_access_log: false
    access_log_buffer: 32768
deployment:
  role: traditional
  role_traditional:
    config_provider: etcd
  admin:
    admin_key:
      - name: admin
        key: abc
        role: admin
  etcd:
    host: ["http://127.0.0.1:2379"]
plugins:
  - limit-count
plugin_attr:
  prometheus:
    export_addr: {ip: 127.0.0.1, port: 9091}
    refresh_interval: 15
  log-rotate:
    interval: 3600
)");
  // Keys are visited in name order, so the list is stable whatever the file's order.
  EXPECT_THAT(
      c.warnings,
      ElementsAre(
          "config.yaml: apisix.enable_admin is not supported yet and is ignored",
          "config.yaml: nginx_config.error_log is not supported yet and is ignored",
          "config.yaml: plugin_attr.log-rotate is not supported yet and is ignored",
          "config.yaml: plugin_attr.prometheus.refresh_interval is not supported yet and is "
          "ignored"));
  // `plugins` and the built-in plugins' plugin_attr sections are read, not warned about.
  EXPECT_TRUE(c.plugins_listed);
  EXPECT_EQ(c.plugins, std::vector<std::string>{"limit-count"});
}

TEST(GatewayConfig, Http2PerListenerAndGlobal) {
  GatewayConfig c = parse_ok(R"(
apisix:
  node_listen:
    - port: 9080
    - port: 9081
      enable_http2: true
  ssl:
    listen:
      - port: 9443
        enable_http2: true
      - port: 9444
)");
  EXPECT_FALSE(c.node_listen[0].http2);
  EXPECT_TRUE(c.node_listen[1].http2);
  EXPECT_TRUE(c.ssl.listen[0].http2);
  EXPECT_FALSE(c.ssl.listen[1].http2);
  // apisix.enable_http2 turns it on where an entry does not say otherwise.
  c = parse_ok(R"(
apisix:
  enable_http2: true
  node_listen:
    - 9080
    - port: 9081
      enable_http2: false
  ssl:
    listen: [9443]
)");
  EXPECT_TRUE(c.node_listen[0].http2);
  EXPECT_FALSE(c.node_listen[1].http2);
  EXPECT_TRUE(c.ssl.listen[0].http2);
  EXPECT_FALSE(parse_ok("").node_listen[0].http2);
}

TEST(GatewayConfig, Http2Settings) {
  GatewayConfig c = parse_ok(R"(
sluice:
  http2:
    max_concurrent_streams: 10
    initial_window_size: 1048576
    max_header_list_size: 4096
    reset_burst: 5
)");
  EXPECT_EQ(c.http2.max_concurrent_streams, 10u);
  EXPECT_EQ(c.http2.initial_window_size, 1048576u);
  EXPECT_EQ(c.http2.max_header_list_size, 4096u);
  EXPECT_EQ(c.http2.reset_burst, 5u);
  EXPECT_EQ(c.http2.max_frame_size, 16384u);  // the default stays
  auto bad = [](const char* text) {
    auto r = parse_gateway_config(text, "/etc/sluice");
    return r.is_ok() ? std::string() : r.status().message();
  };
  EXPECT_EQ(bad("sluice:\n  http2:\n    max_frame_size: 1000\n"),
            "config.yaml: sluice.http2.max_frame_size: expected an integer 16384-16777215, got "
            "1000");
  EXPECT_EQ(bad("sluice:\n  http2:\n    max_streams: 10\n"),
            "config.yaml: sluice.http2.max_streams: unknown key");
  EXPECT_EQ(bad("sluice:\n  http2:\n    initial_window_size: 2147483648\n"),
            "config.yaml: sluice.http2.initial_window_size: expected an integer "
            "1024-2147483647, got 2147483648");
  // HTTP/3 is still refused rather than silently served as HTTP/1.1.
  EXPECT_NE(bad("apisix:\n  ssl:\n    listen:\n      - port: 9443\n        enable_http3: true\n"),
            "");
}

TEST(GatewayConfig, PluginsAndPluginAttrDefaults) {
  GatewayConfig c = parse_ok("");
  EXPECT_FALSE(c.plugins_listed);
  EXPECT_TRUE(c.plugins.empty());
  EXPECT_TRUE(c.prometheus.enabled);
  EXPECT_EQ(c.prometheus.addr.ip, "127.0.0.1");
  EXPECT_EQ(c.prometheus.addr.port, 9091);
  EXPECT_EQ(c.prometheus.uri, "/apisix/prometheus/metrics");
  EXPECT_FALSE(c.plugin_attr.contains("prometheus"));  // the plugin's default applies
  EXPECT_EQ(c.plugin_attr, nlohmann::json::object());
  // An empty list is a list: nothing is enabled.
  GatewayConfig none = parse_ok("plugins: []\n");
  EXPECT_TRUE(none.plugins_listed);
  EXPECT_TRUE(none.plugins.empty());
}

TEST(GatewayConfig, PluginsAndPluginAttr) {
  GatewayConfig c = parse_ok(R"(
plugins:
  - prometheus
  - limit-count
  - key-auth
plugin_attr:
  prometheus:
    enable_export_server: false
    export_uri: /metrics
    export_addr:
      ip: 0.0.0.0
      port: 9100
    max_label_sets: 5
    metric_prefix: apisix_
  limit-count:
    local_keys: 4096
  redirect:
    https_port: 8443
)");
  EXPECT_TRUE(c.warnings.empty()) << c.warnings.front();
  EXPECT_TRUE(c.plugins_listed);
  // Names are kept as written; which are built in is decided when they are enabled.
  EXPECT_EQ(c.plugins, (std::vector<std::string>{"prometheus", "limit-count", "key-auth"}));
  EXPECT_FALSE(c.prometheus.enabled);
  EXPECT_EQ(c.prometheus.uri, "/metrics");
  EXPECT_EQ(c.prometheus.addr.ip, "0.0.0.0");
  EXPECT_EQ(c.prometheus.addr.port, 9100);
  EXPECT_EQ(c.plugin_attr["prometheus"]["max_label_sets"], 5);
  EXPECT_EQ(c.plugin_attr,
            nlohmann::json::parse(
                R"({"limit-count": {"local_keys": 4096}, "prometheus": {"max_label_sets": 5},
                    "redirect": {"https_port": 8443}})"));
}

TEST(GatewayConfig, PrometheusBucketsAndExtraLabelsGoToPluginAttr) {
  auto r = parse_gateway_config(R"(
plugin_attr:
  prometheus:
    default_buckets: [5, 50.5, 500]
    metrics:
      http_status:
        extra_labels:
          - tenant: $http_x_tenant
          - upstream_addr: $remote_addr
      bandwidth:
        extra_labels: [{v: $arg_v}]
)",
                                "/etc/sluice");
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_TRUE(r->warnings.empty()) << r->warnings.front();
  EXPECT_EQ(r->plugin_attr, nlohmann::json::parse(R"({"prometheus": {
      "default_buckets": [5, 50.5, 500],
      "metrics": {"http_status": {"extra_labels": [{"tenant": "$http_x_tenant"},
                                                   {"upstream_addr": "$remote_addr"}]},
                  "bandwidth": {"extra_labels": [{"v": "$arg_v"}]}}}})"));
}

TEST(GatewayConfig, PrometheusExpireAndAccountingGoToPluginAttr) {
  auto r = parse_gateway_config(R"(
plugin_attr:
  prometheus:
    route_accounting: false
    metrics:
      http_status: {expire: 60}
      http_latency: {expire: 60}
)",
                                "/etc/sluice");
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_EQ(r->plugin_attr, nlohmann::json::parse(R"({"prometheus": {"route_accounting": false,
      "metrics": {"http_status": {"expire": 60}, "http_latency": {"expire": 60}}}})"));
}

TEST(GatewayConfig, PluginsAndPluginAttrErrors) {
  struct Case {
    const char* text;
    const char* error;
  } cases[] = {
      {"plugins: limit-count\n", "config.yaml: plugins: wrong type: expected array, got string"},
      {"plugins: [limit-count, 5]\n",
       "config.yaml: plugins: failed to validate item 2: wrong type: expected string, got number"},
      {"plugins: [limit-count, limit-count]\n",
       "config.yaml: plugins: expected unique items but items 1 and 2 are equal"},
      {"plugin_attr: [1]\n", "config.yaml: plugin_attr: expected a mapping, got array"},
      {"plugin_attr: {prometheus: 5}\n",
       "config.yaml: plugin_attr.prometheus: expected a mapping, got number"},
      {"plugin_attr: {prometheus: {metric_prefix: sluice_}}\n",
       "config.yaml: plugin_attr.prometheus.metric_prefix: only apisix_ is supported"},
      {"plugin_attr: {prometheus: {enable_export_server: maybe}}\n",
       "config.yaml: plugin_attr.prometheus.enable_export_server: expected true or false, got "
       "string"},
      {"plugin_attr: {prometheus: {export_uri: 5}}\n",
       "config.yaml: plugin_attr.prometheus.export_uri: wrong type: expected string, got number"},
      {"plugin_attr: {prometheus: {export_addr: {port: 0}}}\n",
       "config.yaml: plugin_attr.prometheus.export_addr.port: expected an integer 1-65535, got 0"},
      {"plugin_attr: {prometheus: {export_addr: {ip: localhost}}}\n",
       "config.yaml: plugin_attr.prometheus.export_addr.ip: expected an IP address, got "
       "\"localhost\""},
      {"plugin_attr: {prometheus: {max_label_sets: -1}}\n",
       "config.yaml: plugin_attr.prometheus.max_label_sets: expected -1 to be at least 0"},
      {"plugin_attr: {prometheus: {default_buckets: []}}\n",
       "config.yaml: plugin_attr.prometheus.default_buckets: expected a non-empty list of numbers "
       "(milliseconds)"},
      {"plugin_attr: {prometheus: {default_buckets: [5, 0.5]}}\n",
       "config.yaml: plugin_attr.prometheus.default_buckets: [1]: the buckets must be strictly "
       "increasing"},
      {"plugin_attr: {prometheus: {default_buckets: [0, 5]}}\n",
       "config.yaml: plugin_attr.prometheus.default_buckets: [0]: expected a positive number"},
      {"plugin_attr: {prometheus: {metrics: {http_status: {extra_labels: [{proto: "
       "$server_addr}]}}}}\n",
       "config.yaml: plugin_attr.prometheus.metrics.http_status.extra_labels: [0].proto: variable "
       "\"$server_addr\" is not supported by Sluice"},
      {"plugin_attr: {prometheus: {metrics: {bandwidth: {extra_labels: [{up: "
       "$upstream_status}]}}}}\n",
       "config.yaml: plugin_attr.prometheus.metrics.bandwidth.extra_labels: [0].up: variable "
       "\"$upstream_status\" is not supported by Sluice"},
      {"plugin_attr: {prometheus: {metrics: {http_latency: {extra_labels: [{route: $uri}]}}}}\n",
       "config.yaml: plugin_attr.prometheus.metrics.http_latency.extra_labels: [0]: label "
       "\"route\" is already in http_latency"},
      {"plugin_attr: {prometheus: {metrics: {http_latency: {extra_labels: [{u: uri}]}}}}\n",
       "config.yaml: plugin_attr.prometheus.metrics.http_latency.extra_labels: [0].u: \"uri\" is "
       "not a variable: write it as \"$name\""},
      {"plugin_attr: {prometheus: {metrics: {http_status: {expire: -5}}}}\n",
       "config.yaml: plugin_attr.prometheus.metrics.http_status.expire: expected a number of "
       "seconds from 0 (never) to 31536000"},
      {"plugin_attr: {prometheus: {metrics: {http_status: {expire: 5}, bandwidth: {expire: "
       "6}}}}\n",
       "config.yaml: plugin_attr.prometheus.metrics: http_status.expire and bandwidth.expire "
       "differ: Sluice expires a route's status, latency and bandwidth label sets together, so "
       "they must be equal"},
      {"plugin_attr: {prometheus: {route_accounting: 1}}\n",
       "config.yaml: plugin_attr.prometheus.route_accounting: expected true or false, got "
       "number"},
      {"plugin_attr: {limit-count: {local_keys: 10}}\n",
       "config.yaml: plugin_attr.limit-count.local_keys: expected 10 to be at least 1024"},
      {"plugin_attr: {limit-count: {local_keys: many}}\n",
       "config.yaml: plugin_attr.limit-count.local_keys: wrong type: expected integer, got "
       "string"},
      {"plugin_attr: {redirect: {https_port: 0}}\n",
       "config.yaml: plugin_attr.redirect.https_port: expected an integer 1-65535, got 0"},
      {"plugin_attr: {redirect: {https_port: \"8443\"}}\n",
       "config.yaml: plugin_attr.redirect.https_port: expected an integer 1-65535, got \"8443\""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.text);
    auto r = parse_gateway_config(c.text, "/etc/sluice");
    ASSERT_FALSE(r.is_ok());
    EXPECT_EQ(r.status().message(), c.error);
  }
}

struct ErrorCase {
  const char* yaml;
  const char* error;  // expected prefix
};

TEST(GatewayConfig, WrongValuesNameTheKey) {
  const ErrorCase cases[] = {
      {"apisix:\n  node_listen: [9080, 70000]\n",
       "config.yaml: apisix.node_listen[1]: expected an integer 1-65535, got 70000"},
      {"apisix:\n  node_listen:\n    - port: 9080\n    - ip: 1.2.3.4\n      port: x\n",
       "config.yaml: apisix.node_listen[1].port: expected an integer 1-65535, got \"x\""},
      {"apisix:\n  node_listen:\n    - ip: 1.2.3.4\n",
       "config.yaml: apisix.node_listen[0]: expected a port"},
      {"apisix:\n  node_listen:\n    - ip: localhost\n      port: 1\n",
       "config.yaml: apisix.node_listen[0].ip: expected an IP address, got \"localhost\""},
      {"apisix:\n  node_listen: []\n", "config.yaml: apisix.node_listen: expected a port"},
      {"apisix:\n  node_listen: [9080, 9081, 9080]\n",
       "config.yaml: apisix.node_listen[2]: duplicate of apisix.node_listen[0]"},
      {"apisix:\n  node_listen: \"9080\"\n", "config.yaml: apisix.node_listen: expected a port"},
      {"apisix:\n  enable_server_tokens: \"no\"\n",
       "config.yaml: apisix.enable_server_tokens: expected true or false, got string"},
      {"apisix:\n  dns_resolver_valid: soon\n", "config.yaml: apisix.dns_resolver_valid: "},
      {"apisix: 5\n", "config.yaml: apisix: expected a mapping, got number"},
      {"- 1\n", "config.yaml: expected a mapping, got array"},
      {"nginx_config:\n  worker_processes: 0\n",
       "config.yaml: nginx_config.worker_processes: expected \"auto\" or an integer 1-4096"},
      {"nginx_config:\n  worker_processes: many\n",
       "config.yaml: nginx_config.worker_processes: expected \"auto\" or an integer"},
      {"nginx_config:\n  error_log_level: loud\n",
       "config.yaml: nginx_config.error_log_level: expected one of debug, info"},
      {"nginx_config:\n  http:\n    send_timeout: 10x\n",
       "config.yaml: nginx_config.http.send_timeout: expected a duration"},
      {"nginx_config:\n  http:\n    send_timeout: -1\n",
       "config.yaml: nginx_config.http.send_timeout: expected a duration"},
      {"nginx_config:\n  http:\n    send_timeout: 1.5s\n",
       "config.yaml: nginx_config.http.send_timeout: expected a duration"},
      {"nginx_config:\n  http:\n    client_max_body_size: 10x\n",
       "config.yaml: nginx_config.http.client_max_body_size: expected a size"},
      {"nginx_config:\n  http:\n    client_max_body_size: -1\n",
       "config.yaml: nginx_config.http.client_max_body_size: expected a size"},
      {"nginx_config:\n  http: []\n",
       "config.yaml: nginx_config.http: expected a mapping, got array"},
      {"deployment:\n  role: edge\n",
       "config.yaml: deployment.role: expected one of traditional, data_plane, control_plane"},
      {"deployment:\n  role_data_plane:\n    config_provider: json\n",
       "config.yaml: deployment.role_data_plane.config_provider: expected one of yaml, etcd, "
       "embedded, got \"json\""},
      {"apisix: [\n", "config.yaml: line "},
      {"deployment:\n  role: data_plane\n  role_data_plane:\n    config_provider: embedded\n",
       "config.yaml: deployment.role_data_plane.config_provider: expected yaml or etcd (a data "
       "plane has no Admin API to fill an embedded store), got \"embedded\""},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.yaml);
    auto r = parse_gateway_config(c.yaml, "conf");
    ASSERT_FALSE(r.is_ok());
    EXPECT_THAT(r.status().message(), StartsWith(c.error));
  }
}

TEST(GatewayConfig, SubstitutesEnvironmentValues) {
  setenv("SLUICE_T_LISTEN", "9999", 1);
  unsetenv("SLUICE_T_MISSING");
  GatewayConfig c = parse_ok(
      "apisix:\n  node_listen: ${{SLUICE_T_LISTEN}}\nnginx_config:\n  worker_processes: "
      "${{SLUICE_T_MISSING:=3}}\n");
  EXPECT_EQ(c.node_listen.at(0).port, 9999);
  EXPECT_EQ(c.worker_processes, 3);
  auto r = parse_gateway_config("apisix:\n  node_listen: ${{SLUICE_T_MISSING}}\n", "conf");
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().message(),
            "config.yaml: failed to handle configuration: can't find environment variable "
            "SLUICE_T_MISSING");
}

TEST(GatewayConfig, ShippedConfigYamlParses) {
  auto dir = std::filesystem::path(__FILE__).parent_path() / "../../../conf";
  std::ifstream in(dir / "config.yaml");
  std::stringstream ss;
  ss << in.rdbuf();
  ASSERT_FALSE(ss.str().empty()) << "conf/config.yaml not found next to " << __FILE__;
  auto r = parse_gateway_config(ss.str(), dir.string());
  ASSERT_TRUE(r.is_ok()) << r.status().message();
  EXPECT_TRUE(r->warnings.empty()) << r->warnings.front();
  ASSERT_EQ(r->node_listen.size(), 1u);
  EXPECT_EQ(r->node_listen[0].port, 9080);
  EXPECT_EQ(r->worker_processes, 0);
  EXPECT_EQ(r->error_log_level, common::LogLevel::kWarn);
  EXPECT_EQ(r->role, "traditional");
  EXPECT_EQ(r->config_provider, ConfigProvider::kEmbedded);
  EXPECT_EQ(r->data_dir, dir.string() + "/../data");
  EXPECT_TRUE(r->access_log.enabled);
  EXPECT_EQ(r->access_log.path, dir.string() + "/../logs/access.log");
  EXPECT_EQ(r->admin.listen.port, 9180);
  EXPECT_EQ(r->standalone_path, dir.string() + "/apisix.yaml");
}

TEST(GatewayConfig, AdminSection) {
  GatewayConfig c = parse_ok(R"(
deployment:
  role: traditional
  admin:
    enable_admin: true
    admin_key_required: true
    admin_listen: {ip: 0.0.0.0, port: 9999}
    admin_key:
      - {name: a, key: k1, role: admin}
      - {name: v, key: k2, role: viewer}
    allow_admin: [10.0.0.0/8]
sluice:
  data_dir: /var/lib/sluice
)");
  EXPECT_EQ(c.config_provider, ConfigProvider::kEmbedded);
  EXPECT_EQ(c.admin.listen.ip, "0.0.0.0");
  EXPECT_EQ(c.admin.listen.port, 9999);
  ASSERT_EQ(c.admin.keys.size(), 2u);
  EXPECT_EQ(c.admin.keys[1].key, "k2");
  EXPECT_EQ(c.admin.keys[1].role, AdminRole::kViewer);
  EXPECT_EQ(c.admin.allow, std::vector<std::string>{"10.0.0.0/8"});
  EXPECT_EQ(c.data_dir, "/var/lib/sluice");
  EXPECT_TRUE(c.warnings.empty());
  // A data plane without a provider keeps the yaml file.
  EXPECT_EQ(parse_ok("deployment: {role: data_plane}\n").config_provider, ConfigProvider::kYaml);
}

TEST(GatewayConfig, AdminSectionErrors) {
  struct Case {
    const char* text;
    const char* error;
  } cases[] = {
      {"deployment: {admin: {admin_key: 5}}",
       "config.yaml: deployment.admin.admin_key: expected a list of {name, key, role}, got 5"},
      {"deployment: {admin: {admin_key: [{name: a, key: k, role: root}]}}",
       "config.yaml: deployment.admin.admin_key[0].role: matches none of the enum values"},
      {"deployment: {admin: {admin_key: [{name: a, role: admin}]}}",
       "config.yaml: deployment.admin.admin_key[0].key: expected a non-empty key"},
      {"deployment: {admin: {admin_listen: {port: 0}}}",
       "config.yaml: deployment.admin.admin_listen.port: expected an integer 1-65535, got 0"},
      {"sluice: {data_dir: 5}",
       "config.yaml: sluice.data_dir: wrong type: expected string, got number"},
  };
  for (const auto& c : cases) {
    auto r = parse_gateway_config(c.text, "/etc/sluice");
    ASSERT_FALSE(r.is_ok()) << c.text;
    EXPECT_EQ(r.status().message(), c.error);
  }
}

}  // namespace gateway_config_test
}  // namespace sluice::config

namespace sluice::config {
namespace gateway_config_test {

TEST(GatewayConfig, IoUringKey) {
  EXPECT_TRUE(parse_ok("").io_uring);
  EXPECT_TRUE(parse_ok("sluice: {io_uring: auto}\n").io_uring);
  EXPECT_TRUE(parse_ok("sluice: {io_uring: true}\n").io_uring);
  EXPECT_FALSE(parse_ok("sluice: {io_uring: \"off\"}\n").io_uring);
  EXPECT_FALSE(parse_ok("sluice:\n  io_uring: off\n").io_uring);  // YAML 1.1 may read a boolean
  EXPECT_FALSE(parse_ok("sluice: {io_uring: false}\n").io_uring);
  for (const char* text :
       {"sluice: {io_uring: sometimes}", "sluice: {io_uring: 1}", "sluice: {io_uring: [auto]}"}) {
    auto r = parse_gateway_config(text, "/etc/sluice");
    ASSERT_FALSE(r.is_ok()) << text;
    EXPECT_EQ(
        r.status().message().rfind("config.yaml: sluice.io_uring: expected auto or off, got ", 0),
        0u)
        << r.status().message();
  }
}

TEST(GatewayConfig, RealIpKeys) {
  GatewayConfig d = parse_ok("");
  EXPECT_TRUE(d.real_ip_from.empty());
  EXPECT_EQ(d.real_ip_header, "X-Real-IP");
  EXPECT_FALSE(d.real_ip_recursive);
  GatewayConfig c = parse_ok(R"(
nginx_config:
  http:
    real_ip_header: X-Forwarded-For
    real_ip_recursive: "on"
    real_ip_from: [127.0.0.1, 10.0.0.0/8, "unix:"]
)");
  EXPECT_EQ(c.real_ip_header, "X-Forwarded-For");
  EXPECT_TRUE(c.real_ip_recursive);
  EXPECT_EQ(c.real_ip_from, (std::vector<std::string>{"127.0.0.1", "10.0.0.0/8", "unix:"}));
  EXPECT_TRUE(c.warnings.empty());
  auto bad = parse_gateway_config("nginx_config: {http: {real_ip_from: [10.0.0.0/33]}}", "/x");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().message(),
            "config.yaml: nginx_config.http.real_ip_from[0]: expected an address or CIDR, got "
            "\"10.0.0.0/33\"");
  bad = parse_gateway_config("nginx_config: {http: {real_ip_recursive: maybe}}", "/x");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().message(),
            "config.yaml: nginx_config.http.real_ip_recursive: expected on, off, true or false, "
            "got \"maybe\"");
}

}  // namespace gateway_config_test
}  // namespace sluice::config

namespace sluice::config {
namespace gateway_config_test {

TEST(GatewayConfig, UnderscoresInHeaders) {
  EXPECT_FALSE(parse_ok("").underscores_in_headers);  // nginx's default, not APISIX's "on"
  GatewayConfig on = parse_ok("nginx_config: {http: {underscores_in_headers: \"on\"}}");
  EXPECT_TRUE(on.underscores_in_headers);
  EXPECT_TRUE(on.warnings.empty());
  EXPECT_FALSE(
      parse_ok("nginx_config: {http: {underscores_in_headers: false}}").underscores_in_headers);
  auto bad = parse_gateway_config("nginx_config: {http: {underscores_in_headers: 1}}", "/x");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().message(),
            "config.yaml: nginx_config.http.underscores_in_headers: expected on, off, true or "
            "false, got 1");
}

}  // namespace gateway_config_test
}  // namespace sluice::config
