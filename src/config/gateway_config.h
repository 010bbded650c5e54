#pragma once
// config.yaml: the process-level settings, with APISIX's key names.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "accesslog/format.h"
#include "accesslog/rotation.h"
#include "common/log.h"
#include "common/status.h"
#include "config/data_encryption.h"

namespace sluice::config {

// Thread: any (value type)
struct ListenAddr {
  std::string ip = "0.0.0.0";  // "0.0.0.0", "127.0.0.1", "::", "[::1]" given as "::1"
  uint16_t port = 0;
  uint32_t max_connections = 0;  // cap on this listener's open client connections; 0 = none
  // enable_http2: h2c by prior knowledge beside HTTP/1.1 (node_listen), ALPN h2 (ssl.listen).
  bool http2 = false;
  bool http2_given = false;  // the entry says so itself (else apisix.enable_http2 decides)
  bool operator==(const ListenAddr&) const = default;
};

// sluice.http2: what HTTP/2 connections announce and enforce (docs/http2.md).
// Thread: any (value type)
struct Http2Config {
  uint32_t max_concurrent_streams = 128;
  uint32_t initial_window_size = 65535;
  uint32_t connection_window_size = 1 << 20;
  uint32_t max_frame_size = 16384;
  uint32_t max_header_list_size = 32768;
  uint32_t max_requests = 10000;
  uint32_t max_continuations = 8;
  uint32_t reset_burst = 200;
  uint32_t reset_rate = 50;
  uint32_t control_burst = 100;
  uint32_t control_rate = 20;
  bool operator==(const Http2Config&) const = default;
};

// Reads sluice.http2 into `out` (gateway_http2.cc). Errors name the key.
common::Status parse_http2_config(const nlohmann::json& v, const std::string& path,
                                  Http2Config* out);

enum class ConfigProvider { kYaml, kEtcd, kEmbedded };

// The APISIX 2.x default admin key (CVE-2020-13945): accepted from loopback clients only.
inline constexpr std::string_view kWellKnownAdminKey = "edd1c9f034335f136f87ad84b625c8f1";

enum class AdminRole { kAdmin, kViewer };

// Thread: any (value type)
struct AdminKey {
  std::string name;
  std::string key;
  AdminRole role = AdminRole::kAdmin;
};

// deployment.admin: where the Admin API listens and who may use it.
// Thread: any (value type)
struct AdminConfig {
  bool enabled = true;                   // deployment.admin.enable_admin
  ListenAddr listen{"127.0.0.1", 9180};  // deployment.admin.admin_listen
  bool key_required = true;              // deployment.admin.admin_key_required
  std::vector<AdminKey> keys = {{"admin", std::string(kWellKnownAdminKey), AdminRole::kAdmin}};
  std::vector<std::string> allow = {"127.0.0.0/24", "::1/128"};  // deployment.admin.allow_admin
  // deployment.admin.https_admin: the Admin API listener speaks TLS, with the certificate of
  // admin_api_mtls.admin_ssl_cert / admin_ssl_cert_key; admin_ssl_ca_cert, when given, makes
  // it require client certificates signed by that CA.
  bool https = false;
  std::string cert, key, client_ca;  // PEM files
};

// plugin_attr.prometheus: the metrics export server.
// Thread: any (value type)
struct PrometheusExport {
  bool enabled = true;                             // enable_export_server
  ListenAddr addr{"127.0.0.1", 9091};              // export_addr
  std::string uri = "/apisix/prometheus/metrics";  // export_uri
  // max_label_sets (Sluice's own: label sets each worker keeps) goes to plugin_attr, where the
  // prometheus plugin reads it.
};

// apisix.status: the status API's listener (/status, /status/ready), for load balancers and
// Kubernetes probes. Off unless the section is there, as in APISIX.
// Thread: any (value type)
struct StatusServer {
  bool enabled = false;
  ListenAddr addr{"127.0.0.1", 7085};
};

// deployment.etcd.tls: how Sluice talks TLS to etcd (hosts given as https://).
// Thread: any (value type)
struct EtcdTls {
  std::string cert;    // client certificate file (PEM), for mutual TLS; with `key`
  std::string key;     // its private key file (PEM)
  bool verify = true;  // verify the server's certificate against `trusted_ca` (or system CAs)
  std::string sni;     // server name sent and verified; default: the host's name
  // CA bundle file: apisix.ssl.ssl_trusted_certificate (APISIX's place for it); empty = system
  std::string trusted_ca;
  bool operator==(const EtcdTls&) const = default;
};

// deployment.etcd: the etcd cluster a fleet of gateways shares (config_provider: etcd).
// Thread: any (value type)
struct EtcdConfig {
  std::vector<std::string> hosts = {"http://127.0.0.1:2379"};  // host: URLs, http or https
  std::string prefix = "/apisix";  // prefix: keys are <prefix>/<kind>/<id>; no trailing '/'
  double timeout = 30;             // timeout: seconds for one etcd request
  std::string user;                // user/password: etcd authentication (both or neither)
  std::string password;
  EtcdTls tls;
  bool operator==(const EtcdConfig&) const = default;
};

// APISIX's apisix.ssl.ssl_ciphers default (Mozilla's "intermediate" TLS 1.2 list; TLS 1.3
// suites are OpenSSL's own).
inline constexpr std::string_view kDefaultSslCiphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
    "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:"
    "DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384";

// apisix.ssl: the HTTPS listener. Certificates come from `ssls` objects, chosen by SNI.
// Thread: any (value type)
struct SslListenerConfig {
  bool enabled = true;                                   // enable
  std::vector<ListenAddr> listen = {{"0.0.0.0", 9443}};  // listen: [{ip, port}]
  // ssl_protocols: the versions offered, from TLSv1.1, TLSv1.2, TLSv1.3.
  std::vector<std::string> protocols = {"TLSv1.2", "TLSv1.3"};
  std::string ciphers = std::string(kDefaultSslCiphers);  // ssl_ciphers (TLS 1.2 and older)
  bool session_tickets = false;  // ssl_session_tickets (APISIX's default: off)
  // fallback_sni: the certificate served to a client that names no server, or one no `ssls`
  // object covers.
  std::string fallback_sni;
  // ssl_trusted_certificate: the CA bundle upstream (and etcd) certificates are verified
  // against; empty = the system's.
  std::string trusted_ca;
  bool operator==(const SslListenerConfig&) const = default;
};

// nginx_config.http's access log keys (APISIX's) and sluice.access_log_rotate (Sluice's own).
// Thread: any (value type)
struct AccessLogConfig {
  bool enabled = true;  // enable_access_log, and access_log not "off" (or false)
  // access_log; relative paths are taken from the config file's directory.
  std::string path = "logs/access.log";
  std::string format = std::string(accesslog::kApisixFormat);  // access_log_format
  accesslog::Escape escape = accesslog::Escape::kDefault;      // access_log_format_escape
  uint64_t buffer = 16384;         // access_log_buffer: the bytes a worker gathers before a write
  accesslog::RotateConfig rotate;  // sluice.access_log_rotate: the built-in rotation
  bool operator==(const AccessLogConfig&) const = default;
};

// Thread: any (value type)
struct GatewayConfig {
  std::vector<ListenAddr> node_listen = {{"0.0.0.0", 9080}};  // apisix.node_listen
  SslListenerConfig ssl;                                      // apisix.ssl
  DataEncryptionConfig data_encryption;                       // apisix.data_encryption
  int worker_processes = 0;  // nginx_config.worker_processes; 0 = auto (one per CPU)
  common::LogLevel error_log_level = common::LogLevel::kWarn;  // nginx_config.error_log_level
  std::string role = "traditional";                            // deployment.role
  // deployment.role_data_plane.config_provider / role_traditional.config_provider. When the
  // role names none: etcd if deployment.etcd is set (APISIX's default provider), else the
  // embedded store for a traditional node and the yaml file for a data plane.
  ConfigProvider config_provider = ConfigProvider::kEmbedded;
  AdminConfig admin;
  EtcdConfig etcd;  // deployment.etcd
  // sluice.data_dir: where the embedded store keeps its database; relative paths are taken
  // from the config file's directory. Default: "data" beside config.yaml.
  std::string data_dir;
  // sluice.io_uring: auto (true) batches the workers' socket calls through io_uring where the
  // kernel allows it, else plain system calls; off (false) always plain system calls.
  bool io_uring = true;
  Http2Config http2;  // sluice.http2
  // apisix.enable_http2: HTTP/2 on every listener whose entry does not say otherwise.
  bool enable_http2 = false;
  std::string server_tokens_name = "sluice";  // apisix.server_tokens_name... see .cc
  bool server_tokens = true;                  // apisix.enable_server_tokens
  // apisix.show_upstream_status_in_response_header: X-APISIX-Upstream-Status on every proxied
  // response, not only on 5xx ones.
  bool show_upstream_status = false;
  double dns_resolver_valid = 30;         // apisix.dns_resolver_valid: seconds a DNS answer is kept
  double graceful_shutdown_timeout = 10;  // seconds in-flight requests get on SIGTERM
  // Client connection caps. At a cap the oldest idle keep-alive connection is closed to make
  // room; with none idle, the new connection gets a 503 and is closed.
  uint32_t worker_connections = 10620;  // nginx_config.event.worker_connections (per worker)
  uint32_t max_connections = 0;         // apisix.max_connections (whole process); 0 = none
  // nginx_config.http: client-facing limits and timeouts.
  double client_header_timeout = 60;
  double client_body_timeout = 60;
  double send_timeout = 10;
  double keepalive_timeout = 60;
  uint64_t client_max_body_size = 0;  // 0 = unlimited
  // nginx_config.http.underscores_in_headers: off (nginx's default) drops request fields named
  // with `_`. APISIX's config-default.yaml turns it on; Sluice keeps nginx's safer default.
  bool underscores_in_headers = false;
  // nginx_config.http.real_ip_*: proxies trusted to name the client. Unlike APISIX (which
  // trusts 127.0.0.1 by default) nothing is trusted unless listed.
  std::vector<std::string> real_ip_from;  // IPs or CIDRs; "unix:" is accepted and ignored
  std::string real_ip_header = "X-Real-IP";
  bool real_ip_recursive = false;
  AccessLogConfig access_log;
  // sluice.admin_audit_log: the Admin API's audit log (admin/audit.h); relative to the config
  // file's directory; "off" or false: none.
  std::string admin_audit_log = "logs/admin_audit.log";
  // apisix.standalone file, resolved relative to the config file's directory.
  std::string standalone_path;  // directory of config.yaml + "/apisix.yaml"

  // plugins: the enabled plugin names; when not listed, every built-in plugin is enabled.
  bool plugins_listed = false;
  std::vector<std::string> plugins;
  PrometheusExport prometheus;
  StatusServer status;
  // plugin_attr as the plugins read it (plugin::Shared::attr): limit-count.local_keys,
  // checked; the plugin's default applies when absent.
  nlohmann::json plugin_attr = nlohmann::json::object();
  std::vector<std::string> warnings;  // one per unsupported key, naming its full path
};

// Parses config.yaml text. `dir` is the config file's directory (for apisix.yaml).
// Errors name the key: `config.yaml: apisix.node_listen[1].port: expected an integer 1-65535`.
common::StatusOr<GatewayConfig> parse_gateway_config(const std::string& yaml_text,
                                                     const std::string& dir);

}  // namespace sluice::config
