#pragma once
// Typed APISIX resources as decoded from JSON (admin bodies, etcd values) or YAML (apisix.yaml).
// Decoding checks shape, types and ranges; cross-resource links and vars/CIDR compilation
// happen in the SnapshotBuilder.

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/status.h"
#include "health/checks.h"

namespace sluice::plugin {
struct PluginInfo;
}

namespace sluice::config {

using Json = nlohmann::json;

// Thread: any (value type)
struct TimeoutConf {
  double connect = 60;  // seconds, > 0
  double send = 60;
  double read = 60;
};

// Thread: any (value type)
struct UpstreamNodeConf {
  std::string host;  // IPv4/IPv6 literal (no brackets) or a DNS name
  uint16_t port = 80;
  int weight = 1;  // >= 0
  int priority = 0;
};

// Thread: any (value type)
struct KeepalivePoolConf {
  int size = 320;            // >= 1
  double idle_timeout = 60;  // seconds, >= 0
  int requests = 1000;       // >= 1
};

enum class BalancerType { kRoundRobin, kChash, kLeastConn, kEwma };
enum class PassHost { kPass, kNode, kRewrite };

// An upstream's `tls`: how https connections to it are made.
// Thread: any (value type)
struct UpstreamTlsConf {
  std::string client_cert, client_key;  // PEM (or $env:// reference); both or neither
  // Why a client_key sealed with apisix.data_encryption's keyring did not open; empty: it
  // did, or it was PEM text (decode_upstream_tls reveals it).
  std::string client_key_error;
  std::string client_cert_id;         // an `ssls` object of type client, instead of the two
  std::optional<bool> verify;         // check the node's certificate; absent: off (APISIX)
  std::vector<std::string> ca_certs;  // PEM CAs verify trusts; empty: ssl_trusted_certificate
};

// Thread: any (value type)
struct UpstreamConf {
  std::string id;  // empty for an inline upstream
  std::string name, desc;
  std::map<std::string, std::string> labels;
  BalancerType type = BalancerType::kRoundRobin;
  std::vector<UpstreamNodeConf> nodes;
  std::optional<int> retries;  // >= 0; default: number of nodes - 1
  double retry_timeout = 0;    // seconds, 0 = unlimited
  std::optional<TimeoutConf> timeout;
  KeepalivePoolConf keepalive_pool;
  PassHost pass_host = PassHost::kPass;
  std::string upstream_host;    // required when pass_host == rewrite
  std::string scheme = "http";  // http | https | grpc | grpcs
  std::optional<UpstreamTlsConf> tls;
  std::string hash_on = "vars";
  std::string key;
  Json checks;  // as sent (GET returns it unchanged); null when absent
  std::shared_ptr<const health::Checks> health_checks;  // its typed form; null when absent
  int64_t create_time = 0, update_time = 0;
};

// Thread: any (value type)
struct RouteConf {
  std::string id;
  std::string name, desc;
  std::map<std::string, std::string> labels;
  std::vector<std::string> uris;          // `uri` folds into this (non-empty after decode)
  std::vector<std::string> hosts;         // `host` folds into this
  std::vector<std::string> remote_addrs;  // `remote_addr` folds into this
  std::vector<std::string> methods;       // upper-case, each one of the APISIX methods
  int priority = 0;
  Json vars;     // null when absent; compiled by the builder
  Json plugins;  // object; null when absent
  std::optional<UpstreamConf> upstream;
  std::string upstream_id, service_id, plugin_config_id;
  std::optional<TimeoutConf> timeout;
  // Unset: the service's value applies (APISIX's init.lua reads the service's only when the
  // route's is nil).
  std::optional<bool> enable_websocket;
  int status = 1;  // 1 enabled, 0 disabled
  int64_t create_time = 0, update_time = 0;
};

// Thread: any (value type)
struct ServiceConf {
  std::string id;
  std::string name, desc;
  std::map<std::string, std::string> labels;
  Json plugins;
  std::optional<UpstreamConf> upstream;
  std::string upstream_id;
  std::vector<std::string> hosts;
  bool enable_websocket = false;
  int64_t create_time = 0, update_time = 0;
};

// A consumer: an identity that auth plugins map requests to. Its id is its username.
// Thread: any (value type)
struct ConsumerConf {
  std::string id;  // == username
  std::string username;
  std::string desc;
  std::map<std::string, std::string> labels;
  Json plugins;  // object; null when absent
  std::string group_id;
  int64_t create_time = 0, update_time = 0;
};

// A credential of a consumer (APISIX 3.7+, `/consumers/{username}/credentials/{id}`): one
// auth plugin's consumer-side conf, authenticating as that consumer.
// Thread: any (value type)
struct CredentialConf {
  std::string id;        // the credential's own id
  std::string consumer;  // the username of the consumer it belongs to
  std::string name, desc;
  std::map<std::string, std::string> labels;
  Json plugins;  // object: auth plugins' consumer-side confs, secrets revealed
  int64_t create_time = 0, update_time = 0;
};

// Plugins that run on every request, before the route's own.
// Thread: any (value type)
struct GlobalRuleConf {
  std::string id;
  Json plugins;  // object, required
  int64_t create_time = 0, update_time = 0;
};

// A reusable set of plugins that routes name by plugin_config_id.
// Thread: any (value type)
struct PluginConfigConf {
  std::string id;
  std::string name, desc;
  std::map<std::string, std::string> labels;
  Json plugins;  // object, required
  int64_t create_time = 0, update_time = 0;
};

// Plugins shared by the consumers whose group_id names it.
// Thread: any (value type)
struct ConsumerGroupConf {
  std::string id;
  std::string name, desc;
  std::map<std::string, std::string> labels;
  Json plugins;  // object, required
  int64_t create_time = 0, update_time = 0;
};

// Node-wide settings of one plugin; the id is the plugin's name.
// Thread: any (value type)
struct PluginMetadataConf {
  std::string id;  // the plugin name
  Json value;      // the object as given, without `id`
};

// server: presented to clients for its SNIs; client: presented to upstreams (mTLS).
enum class SslType { kServer, kClient };

// Client-certificate verification for the SNIs of a server certificate.
// Thread: any (value type)
struct SslClientConf {
  std::string ca;  // PEM
  int depth = 1;   // >= 0
  std::vector<std::string> skip_mtls_uri_regex;
};

// A certificate and key (plus extra pairs) and the SNIs they serve. Stored only: parsing the
// PEM and serving TLS come later.
// Thread: any (value type)
struct SslConf {
  std::string id;
  SslType type = SslType::kServer;
  // PEM, or a $secret:// / $env:// reference. Keys sealed at rest (apisix.data_encryption) are
  // decrypted by decode_ssl: `key` and `keys` hold PEM text, never the stored ciphertext.
  std::string cert, key;
  std::vector<std::string> certs, keys;  // further pairs, same length
  std::vector<std::string> snis;         // `sni` folds into this; empty for a client cert
  std::map<std::string, std::string> labels;
  int status = 1;                          // 1 enabled, 0 disabled
  std::vector<std::string> ssl_protocols;  // TLSv1.1 | TLSv1.2 | TLSv1.3; empty = default
  std::optional<SslClientConf> client;     // mTLS: the CA that client certs must chain to
  int64_t validity_start = 0, validity_end = 0;
  int64_t create_time = 0, update_time = 0;
};

// An L4 (TCP/UDP) route. Stored only: Sluice does not proxy streams yet.
// Thread: any (value type)
struct StreamRouteConf {
  std::string id;
  std::string name, desc;
  std::map<std::string, std::string> labels;
  std::string remote_addr, server_addr;  // IP or CIDR; empty = any
  int server_port = 0;                   // 1-65535; 0 = any
  std::string sni;
  std::optional<UpstreamConf> upstream;
  std::string upstream_id, service_id;
  Json plugins;   // object; null when absent
  Json protocol;  // {name, superior_id, conf, logger} kept verbatim; null when absent
  int64_t create_time = 0, update_time = 0;
};

// A protobuf definition that gRPC transcoding refers to.
// Thread: any (value type)
struct ProtoConf {
  std::string id;
  std::string name, desc;
  std::map<std::string, std::string> labels;
  std::string content;
  int64_t create_time = 0, update_time = 0;
};

// A HashiCorp Vault KV store.
// Thread: any (value type)
struct VaultSecretConf {
  std::string uri, prefix, token, namespace_;
};

// AWS Secrets Manager.
// Thread: any (value type)
struct AwsSecretConf {
  std::string access_key_id, secret_access_key, session_token;
  std::string region = "us-east-1";
  std::string endpoint_url;
};

// Where `$secret://<manager>/<id>/...` references are looked up. The id is `<manager>/<id>`.
// Thread: any (value type)
struct SecretConf {
  std::string id;       // "vault/1"; empty when the object carried none
  std::string manager;  // "vault" | "aws"
  std::variant<VaultSecretConf, AwsSecretConf> conf;
  int64_t create_time = 0, update_time = 0;
};

// Every resource of one configuration, as decoded. Ids are unique per kind.
// Thread: any (value type)
struct ConfigSet {
  std::vector<RouteConf> routes;
  std::vector<ServiceConf> services;
  std::vector<UpstreamConf> upstreams;
  // Which kinds are served: config_kinds() in snapshot_builder.h.
  std::vector<ConsumerConf> consumers;
  std::vector<CredentialConf> credentials;  // of the consumers above; ids unique per consumer
  std::vector<GlobalRuleConf> global_rules;
  std::vector<PluginConfigConf> plugin_configs;
  std::vector<ConsumerGroupConf> consumer_groups;
  std::vector<SslConf> ssls;
  std::vector<StreamRouteConf> stream_routes;
  std::vector<ProtoConf> protos;
  std::vector<PluginMetadataConf> plugin_metadata;
  std::vector<SecretConf> secrets;
  // Things a reader should tell the operator (kinds present but not served yet).
  std::vector<std::string> warnings;
};

// Each decoder takes one resource object and returns an error whose text follows APISIX:
// `invalid configuration: property "methods" validation failed: ...`, or for unknown
// fields `invalid configuration: additional properties forbidden, found <name>`.
// `id` in the object is accepted as a string (1-64 of [a-zA-Z0-9-_.]) or an integer >= 1.
common::StatusOr<RouteConf> decode_route(const Json& obj);
common::StatusOr<ServiceConf> decode_service(const Json& obj);
common::StatusOr<UpstreamConf> decode_upstream(const Json& obj);

// The other kinds follow the same rules. A `plugins` object is checked with check_plugins
// (plugin_registry.h): `unknown plugin [name]` and plugin errors come without the
// `invalid configuration: ` prefix, as in APISIX; a consumer's are prefixed
// `invalid plugins configuration: `.
common::StatusOr<ConsumerConf> decode_consumer(const Json& obj);
// A credential body (APISIX's `credential` schema: id, name, desc, labels, times, and `plugins`
// with at most one entry). Plugin errors are prefixed `invalid plugins configuration: `; a
// plugin that is not an auth plugin: `only supports auth type plugins in consumer credential`.
// `id` and `consumer` are left as the body gives them (the caller takes them from the key).
// The registry overload is for tests.
common::StatusOr<CredentialConf> decode_credential(const Json& obj);
common::StatusOr<CredentialConf> decode_credential(const Json& obj,
                                                   std::span<const plugin::PluginInfo> registry);
// A credential is stored under its consumer: `<username>/credentials/<id>` is the id part of
// its key (`/apisix/consumers/jack/credentials/a`), and of an apisix.yaml consumers item.
// False when `id` is not of that shape (one segment each side).
bool split_credential_id(std::string_view id, std::string_view* consumer,
                         std::string_view* credential);
std::string credential_id(std::string_view consumer, std::string_view credential);
common::StatusOr<GlobalRuleConf> decode_global_rule(const Json& obj);
common::StatusOr<PluginConfigConf> decode_plugin_config(const Json& obj);
common::StatusOr<ConsumerGroupConf> decode_consumer_group(const Json& obj);
// `plugin_name` (the id) must be a known plugin: `unknown plugin [name]`. An `id` in the
// object must equal it.
common::StatusOr<PluginMetadataConf> decode_plugin_metadata(const std::string& plugin_name,
                                                            const Json& obj);
// PEMs are checked for shape only (`-----BEGIN`); errors past the schema follow APISIX's
// unprefixed texts (`mismatched number of certs and keys`, `failed to parse cert: ...`).
common::StatusOr<SslConf> decode_ssl(const Json& obj);
common::StatusOr<StreamRouteConf> decode_stream_route(const Json& obj);
common::StatusOr<ProtoConf> decode_proto(const Json& obj);
// `manager` is `vault` or `aws`, else `invalid secret manager: <manager>`. An `id` in the
// object must be `<manager>/<id>`.
common::StatusOr<SecretConf> decode_secret(std::string_view manager, const Json& obj);
// An apisix.yaml secrets item: its `id` (`<manager>/<id>`) names the manager.
common::StatusOr<SecretConf> decode_secret_item(const Json& obj);

// True when `id` is a valid APISIX id string (1-64 of [a-zA-Z0-9-_.]).
bool valid_id(const std::string& id);

}  // namespace sluice::config
