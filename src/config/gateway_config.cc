// parse_gateway_config: config.yaml with APISIX's key names. Keys Sluice does not support are
// named in GatewayConfig::warnings, never silently ignored; supported keys with a wrong value
// are errors naming the key's full path. GatewayConfig::server_tokens_name is not read from
// the file: APISIX has no such key.

#include "config/gateway_config.h"

#include <fmt/format.h>

#include <functional>
#include <map>

#include "config/env_subst.h"
#include "config/etcd_values.h"
#include "config/field_decoder.h"
#include "config/gateway_keys.h"
#include "config/gateway_values.h"
#include "config/yaml_json.h"
#include "plugins/prometheus/attr.h"
#include "plugins/proxy_cache/config.h"
#include "plugins/tracing/otel_conf.h"
#include "router/ip.h"

namespace sluice::config {

using common::Status;
using common::StatusOr;

namespace {

constexpr const char* kConfigSource = "config.yaml";
constexpr size_t kMaxEtcdHosts = 16;

Status error_at(const std::string& path, const std::string& message) {
  return Status::error(fmt::format("{}: {}: {}", kConfigSource, path, message));
}

std::string join(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

// One config.yaml key Sluice reads: its name and what to do with a non-null value.
struct Key {
  std::string_view name;
  std::function<Status(const Json& value, const std::string& path)> read;
};

// Walks config.yaml section by section.
// Thread: control (stack-local)
class Reader {
 public:
  Status read(const Json& doc) {
    Status s = walk(doc, "",
                    {{"apisix", [this](auto& v, auto& p) { return apisix(v, p); }},
                     {"nginx_config", [this](auto& v, auto& p) { return nginx(v, p); }},
                     {"deployment", [this](auto& v, auto& p) { return deployment(v, p); }},
                     {"sluice", [this](auto& v, auto& p) { return sluice(v, p); }},
                     {"plugins", [this](auto& v, auto& p) { return plugins(v, p); }},
                     {"plugin_attr", [this](auto& v, auto& p) { return plugin_attr(v, p); }}});
    auto it = providers_.find(cfg.role);
    if (it != providers_.end()) {
      cfg.config_provider = it->second;
    } else if (etcd_given_) {
      // APISIX's default provider is etcd (role_traditional.config_provider: etcd in its
      // config-default): a file that sets deployment.etcd and names no provider means etcd.
      cfg.config_provider = ConfigProvider::kEtcd;
    } else {
      cfg.config_provider =
          cfg.role == "traditional" ? ConfigProvider::kEmbedded : ConfigProvider::kYaml;
    }
    if (s) {
      s = finish_access_log();
    }
    if (s && cfg.role == "data_plane") {
      // A data plane serves what it is given (apisix.yaml or etcd); it has no Admin API,
      // as in APISIX.
      if (cfg.config_provider == ConfigProvider::kEmbedded) {
        return error_at("deployment.role_data_plane.config_provider",
                        "expected yaml or etcd (a data plane has no Admin API to fill an "
                        "embedded store), got \"embedded\"");
      }
      cfg.admin.enabled = false;
    }
    return s;
  }

  GatewayConfig cfg;

 private:
  template <typename T, typename U>
  static Status assign(const std::string& path, T* out, StatusOr<U> value) {
    if (!value.is_ok()) {
      return error_at(path, value.status().message());
    }
    *out = std::move(value).value();
    return Status::ok();
  }

  // Runs the reader of each known key of `section`; every other key becomes a warning.
  Status walk(const Json& section, const std::string& path, std::initializer_list<Key> keys) {
    if (section.is_null()) {
      return Status::ok();
    }
    if (!section.is_object()) {
      return Status::error(fmt::format("{}: {}expected a mapping, got {}", kConfigSource,
                                       path.empty() ? "" : path + ": ", json_type_name(section)));
    }
    for (const auto& [key, value] : section.items()) {
      const Key* known = nullptr;
      for (const auto& k : keys) {
        known = k.name == key ? &k : known;
      }
      if (known == nullptr) {
        cfg.warnings.push_back(fmt::format("{}: {} is not supported yet and is ignored",
                                           kConfigSource, join(path, key)));
        continue;
      }
      Status s = value.is_null() ? Status::ok() : known->read(value, join(path, key));
      if (!s.is_ok()) {
        return s;
      }
    }
    return Status::ok();
  }

  Status apisix(const Json& v, const std::string& path) {
    return walk(
        v, path,
        {{"node_listen", [this](auto& x, auto& p) { return node_listen(x, p); }},
         {"enable_http2",
          [this](auto& x, auto& p) { return assign(p, &cfg.enable_http2, yaml_bool(x)); }},
         {"enable_server_tokens",
          [this](auto& x, auto& p) { return assign(p, &cfg.server_tokens, yaml_bool(x)); }},
         {"show_upstream_status_in_response_header",
          [this](auto& x, auto& p) { return assign(p, &cfg.show_upstream_status, yaml_bool(x)); }},
         {"dns_resolver_valid",
          [this](auto& x, auto& p) { return assign(p, &cfg.dns_resolver_valid, yaml_seconds(x)); }},
         {"graceful_shutdown_timeout",
          [this](auto& x, auto& p) {
            return assign(p, &cfg.graceful_shutdown_timeout, yaml_seconds(x));
          }},
         {"max_connections",
          [this](auto& x, auto& p) { return assign(p, &cfg.max_connections, connection_cap(x)); }},
         {"data_encryption", [this](auto& x, auto& p) { return apisix_data_encryption(x, p); }},
         {"status", [this](auto& x, auto& p) { return apisix_status(x, p); }},
         {"ssl", [this](auto& x, auto& p) { return apisix_ssl(x, p); }},
         {"proxy_cache", [this](auto& x, auto& p) {
            // proxy-cache's zones and disk TTL, checked here, read by the plugin from
            // plugin_attr["proxy-cache"] (plugin::Shared::attr).
            auto section = plugins::proxy_cache::check_config_section(x);
            if (!section.is_ok()) {
              return error_at(p, section.status().message());
            }
            cfg.plugin_attr["proxy-cache"] = *section;
            return Status::ok();
          }}});
  }

  // apisix.status: {ip, port}; its presence turns the status API on.
  Status apisix_status(const Json& v, const std::string& path) {
    StatusServer& st = cfg.status;
    st.enabled = true;
    return walk(
        v, path,
        {{"ip", [&st](auto& x, auto& p) { return assign(p, &st.addr.ip, parse_ip(x)); }},
         {"port", [&st](auto& x, auto& p) { return assign(p, &st.addr.port, yaml_port(x)); }}});
  }

  // apisix.ssl: the HTTPS listener, and the CA bundle upstream and etcd certificates are
  // verified against.
  Status apisix_ssl(const Json& v, const std::string& path) {
    SslListenerConfig& s = cfg.ssl;
    return walk(
        v, path,
        {{"enable", [&s](auto& x, auto& p) { return assign(p, &s.enabled, yaml_bool(x)); }},
         {"listen", [this](auto& x, auto& p) { return ssl_listen(x, p); }},
         {"ssl_protocols",
          [&s](auto& x, auto& p) { return assign(p, &s.protocols, ssl_protocol_list(x)); }},
         {"ssl_ciphers",
          [&s](auto& x, auto& p) { return assign(p, &s.ciphers, as_string(x, 1, 4096)); }},
         {"ssl_session_tickets",
          [&s](auto& x, auto& p) { return assign(p, &s.session_tickets, yaml_bool(x)); }},
         {"fallback_sni", [&s](auto& x, auto& p) { return assign(p, &s.fallback_sni, as_sni(x)); }},
         {"ssl_trusted_certificate", [this](auto& x, auto& p) {
            // APISIX 3.x's name for the system CAs, an empty trusted_ca here.
            if (x == "system") {
              return Status::ok();
            }
            Status st = assign(p, &cfg.ssl.trusted_ca, file_path(x));
            cfg.etcd.tls.trusted_ca = cfg.ssl.trusted_ca;
            return st;
          }}});
  }

  // apisix.data_encryption: the keyring that seals secrets at rest. `keyring: ~` turns sealing
  // off (APISIX: "If not set, APISIX saves the original data into etcd"); a null
  // `data_encryption` keeps the defaults, like every other null section here.
  Status apisix_data_encryption(const Json& v, const std::string& path) {
    DataEncryptionConfig& d = cfg.data_encryption;
    if (v.is_object() && v.contains("keyring") && v["keyring"].is_null()) {
      d.keyring.clear();
    }
    return walk(
        v, path,
        {{"enable_encrypt_fields",
          [&d](auto& x, auto& p) { return assign(p, &d.enable_encrypt_fields, yaml_bool(x)); }},
         {"keyring", [&d](auto& x, auto& p) { return keyring_keys(x, p, &d.keyring); }}});
  }

  // One key or a list of at least one, each exactly 16 bytes: APISIX's cli/schema.lua refuses
  // anything else at start. A key's text is never echoed: it is a secret.
  static Status keyring_keys(const Json& v, const std::string& path,
                             std::vector<std::string>* out) {
    auto key = [](const Json& k, const std::string& at) -> Status {
      if (!k.is_string()) {
        return error_at(at, "expected a 16-character string (an AES-128 key), got " +
                                std::string(json_type_name(k)));
      }
      size_t n = k.get_ref<const std::string&>().size();
      return n == kKeyringKeySize
                 ? Status::ok()
                 : error_at(at, fmt::format("expected exactly 16 characters (an AES-128 key), got "
                                            "{}",
                                            n));
    };
    if (v.is_string()) {
      *out = {v.get<std::string>()};
      return key(v, path);
    }
    if (!v.is_array() || v.empty()) {
      return error_at(
          path,
          "expected a list of 16-character keys, the first one encrypting (`keyring: ~` "
          "stores secrets unencrypted), got " +
              std::string(v.is_array() ? "an empty list" : json_type_name(v)));
    }
    out->clear();
    for (size_t i = 0; i < v.size(); ++i) {
      Status s = key(v[i], fmt::format("{}[{}]", path, i));
      if (!s.is_ok()) {
        return s;
      }
      out->push_back(v[i].get<std::string>());
    }
    return Status::ok();
  }

  // "TLSv1.2 TLSv1.3": nginx's ssl_protocols, space-separated.
  static StatusOr<std::vector<std::string>> ssl_protocol_list(const Json& v) {
    auto text = as_string(v, 1, 64);
    if (!text.is_ok()) {
      return text.status();
    }
    std::vector<std::string> out;
    size_t at = 0;
    const std::string& t = *text;
    while (at < t.size()) {
      size_t end = t.find(' ', at);
      end = end == std::string::npos ? t.size() : end;
      std::string word = t.substr(at, end - at);
      at = end + 1;
      if (word.empty()) {
        continue;
      }
      if (word != "TLSv1.1" && word != "TLSv1.2" && word != "TLSv1.3") {
        return Status::error("expected TLSv1.1, TLSv1.2 or TLSv1.3 separated by spaces, got \"" +
                             word + "\"");
      }
      out.push_back(std::move(word));
    }
    if (out.empty()) {
      return Status::error("expected at least one of TLSv1.1, TLSv1.2, TLSv1.3");
    }
    return out;
  }

  // apisix.ssl.listen: [{ip, port, enable_http2, enable_http3}] or ports. HTTP/3 is not
  // served yet: asking for it is an error rather than a silent HTTP/1.1.
  Status ssl_listen(const Json& v, const std::string& path) {
    auto& out = cfg.ssl.listen;
    out.clear();
    if (v.is_number()) {
      out.push_back({});
      return assign(path, &out.back().port, yaml_port(v));
    }
    if (!v.is_array() || v.empty()) {
      return error_at(path, "expected a port or a list of {ip, port}, got " + json_text(v));
    }
    for (size_t i = 0; i < v.size(); ++i) {
      std::string at = fmt::format("{}[{}]", path, i);
      out.push_back({});
      ListenAddr* addr = &out.back();
      if (!v[i].is_object()) {
        Status s = assign(at, &addr->port, yaml_port(v[i]));
        if (!s.is_ok()) {
          return s;
        }
        continue;
      }
      auto refuse_on = [](const char* what) {
        return [what](auto& x, auto& p) -> Status {
          auto on = yaml_bool(x);
          if (on.is_ok() && *on) {
            return error_at(p, fmt::format("{} is not implemented yet", what));
          }
          return on.is_ok() ? Status::ok() : error_at(p, on.status().message());
        };
      };
      Status s =
          walk(v[i], at,
               {{"ip", [addr](auto& x, auto& p) { return assign(p, &addr->ip, parse_ip(x)); }},
                {"port", [addr](auto& x, auto& p) { return assign(p, &addr->port, yaml_port(x)); }},
                {"enable_http2", [addr](auto& x, auto& p) { return http2_flag(x, p, addr); }},
                {"enable_http3", refuse_on("HTTP/3")}});
      if (!s.is_ok()) {
        return s;
      }
      if (addr->port == 0) {
        return error_at(at, "expected a port");
      }
    }
    for (size_t i = 0; i < out.size(); ++i) {
      for (size_t j = 0; j < i; ++j) {
        if (out[i].ip == out[j].ip && out[i].port == out[j].port) {
          return error_at(fmt::format("{}[{}]", path, i),
                          fmt::format("duplicate of {}[{}]", path, j));
        }
      }
    }
    return Status::ok();
  }

  Status nginx(const Json& v, const std::string& path) {
    return walk(
        v, path,
        {{"worker_processes",
          [this](auto& x, auto& p) { return assign(p, &cfg.worker_processes, worker_count(x)); }},
         {"error_log_level",
          [this](auto& x, auto& p) { return assign(p, &cfg.error_log_level, yaml_log_level(x)); }},
         {"http", [this](auto& x, auto& p) { return nginx_http(x, p); }},
         {"event", [this](auto& x, auto& p) {
            return walk(x, p, {{"worker_connections", [this](auto& y, auto& q) {
                                  return assign(q, &cfg.worker_connections, connection_cap(y));
                                }}});
          }}});
  }

  Status nginx_http(const Json& v, const std::string& path) {
    auto duration = [](double* out) {
      return [out](auto& x, auto& p) { return assign(p, out, parse_duration(x)); };
    };
    return walk(
        v, path,
        {{"client_header_timeout", duration(&cfg.client_header_timeout)},
         {"client_body_timeout", duration(&cfg.client_body_timeout)},
         {"send_timeout", duration(&cfg.send_timeout)},
         {"keepalive_timeout", duration(&cfg.keepalive_timeout)},
         {"client_max_body_size",
          [this](auto& x, auto& p) { return assign(p, &cfg.client_max_body_size, parse_size(x)); }},
         {"real_ip_header",
          [this](auto& x, auto& p) { return assign(p, &cfg.real_ip_header, as_string(x, 1, 64)); }},
         {"underscores_in_headers",
          [this](auto& x, auto& p) {
            return assign(p, &cfg.underscores_in_headers, yaml_on_off(x));
          }},
         {"real_ip_recursive",
          [this](auto& x, auto& p) { return assign(p, &cfg.real_ip_recursive, yaml_on_off(x)); }},
         {"real_ip_from", [this](auto& x, auto& p) { return real_ip_from(x, p); }},
         {"enable_access_log",
          [this](auto& x, auto& p) { return assign(p, &log_enabled_, yaml_bool(x)); }},
         {"access_log",
          [this](auto& x, auto& p) { return assign(p, &log_path_, access_log_path(x)); }},
         {"access_log_format",
          [this](auto& x, auto& p) {
            return assign(p, &cfg.access_log.format, as_string(x, 1, 65536));
          }},
         {"access_log_format_escape",
          [this](auto& x, auto& p) {
            return assign(p, &cfg.access_log.escape, access_log_escape(x));
          }},
         {"access_log_buffer", [this](auto& x, auto& p) {
            return assign(p, &cfg.access_log.buffer, as_integer(x, 1, int64_t{64} << 20));
          }}});
  }

  // sluice.access_log_rotate (Sluice's own): rotate the access log at a size or an age.
  Status access_log_rotate(const Json& v, const std::string& path) {
    accesslog::RotateConfig& r = cfg.access_log.rotate;
    Status s = walk(
        v, path,
        {{"max_size", [&r](auto& x, auto& p) { return assign(p, &r.max_size, parse_size(x)); }},
         {"max_time",
          [&r](auto& x, auto& p) {
            auto seconds = parse_duration(x);
            return seconds.is_ok() && *seconds < 1 ? error_at(p, "expected at least 1 second")
                                                   : assign(p, &r.max_time_s, std::move(seconds));
          }},
         {"keep", [&r](auto& x, auto& p) { return assign(p, &r.keep, as_integer(x, 1, 1000)); }}});
    if (s.is_ok() && !r.enabled()) {
      return error_at(path, "expected max_size or max_time (or both)");
    }
    return s;
  }

  // The access log as the nginx_config.http keys left it, checked as a whole: on, its format
  // compiles (nginx refuses a format with an unknown variable at start); rotated, it is on.
  Status finish_access_log() {
    AccessLogConfig& a = cfg.access_log;
    a.enabled = log_enabled_ && !log_path_.empty();
    a.path = log_path_;
    if (a.enabled) {
      auto f = accesslog::Format::compile(a.format, a.escape);
      if (!f.is_ok()) {
        return error_at("nginx_config.http.access_log_format", f.status().message());
      }
    }
    if (a.rotate.enabled() && !a.enabled) {
      return error_at("sluice.access_log_rotate",
                      "the access log is off (nginx_config.http.enable_access_log, access_log)");
    }
    return Status::ok();
  }

  Status real_ip_from(const Json& v, const std::string& path) {
    if (!v.is_array()) {
      return error_at(path, "expected a list of addresses or CIDRs, got " + json_text(v));
    }
    cfg.real_ip_from.clear();
    for (size_t i = 0; i < v.size(); ++i) {
      std::string at = fmt::format("{}[{}]", path, i);
      if (!v[i].is_string()) {
        return error_at(at, "expected an address or CIDR, got " + json_text(v[i]));
      }
      const std::string& text = v[i].get_ref<const std::string&>();
      if (text != "unix:" && !router::parse_cidr(text).is_ok()) {
        return error_at(at, "expected an address or CIDR, got " + json_text(v[i]));
      }
      cfg.real_ip_from.push_back(text);
    }
    return Status::ok();
  }

  Status deployment(const Json& v, const std::string& path) {
    auto role_section = [this](std::string role) {
      return [this, role](auto& x, auto& p) {
        return walk(x, p, {{"config_provider", [this, role](auto& y, auto& q) {
                              return assign(q, &providers_[role], provider_kind(y));
                            }}});
      };
    };
    return walk(v, path,
                {{"role", [this](auto& x, auto& p) { return assign(p, &cfg.role, role_name(x)); }},
                 {"role_traditional", role_section("traditional")},
                 {"role_data_plane", role_section("data_plane")},
                 {"role_control_plane", role_section("control_plane")},
                 {"admin", [this](auto& x, auto& p) { return admin(x, p); }},
                 {"etcd", [this](auto& x, auto& p) { return etcd(x, p); }}});
  }

  Status etcd(const Json& v, const std::string& path) {
    etcd_given_ = true;
    EtcdConfig& e = cfg.etcd;
    Status s = walk(
        v, path,
        {{"host", [this](auto& x, auto& p) { return etcd_hosts(x, p); }},
         {"prefix", [&e](auto& x, auto& p) { return assign(p, &e.prefix, parse_etcd_prefix(x)); }},
         {"timeout",
          [&e](auto& x, auto& p) { return assign(p, &e.timeout, parse_etcd_timeout(x)); }},
         {"user", [&e](auto& x, auto& p) { return assign(p, &e.user, as_string(x, 1, 256)); }},
         {"password", [&e](auto& x, auto& p) { return assign(p, &e.password, as_string(x)); }},
         {"tls", [this](auto& x, auto& p) { return etcd_tls(x, p); }}});
    Status pair = both_or_neither(v, "user", "password");
    return s.is_ok() && !pair.is_ok() ? error_at(path, pair.message()) : s;
  }

  Status etcd_hosts(const Json& v, const std::string& path) {
    if (!v.is_array() || v.empty()) {
      return error_at(
          path, "expected a list of URLs such as [\"http://127.0.0.1:2379\"], got " + json_text(v));
    }
    if (v.size() > kMaxEtcdHosts) {
      return error_at(path,
                      fmt::format("expected at most {} URLs, got {}", kMaxEtcdHosts, v.size()));
    }
    cfg.etcd.hosts.clear();
    for (size_t i = 0; i < v.size(); ++i) {
      cfg.etcd.hosts.emplace_back();
      Status s =
          assign(fmt::format("{}[{}]", path, i), &cfg.etcd.hosts.back(), parse_etcd_url(v[i]));
      if (!s.is_ok()) {
        return s;
      }
    }
    return Status::ok();
  }

  Status etcd_tls(const Json& v, const std::string& path) {
    EtcdTls& t = cfg.etcd.tls;
    Status s =
        walk(v, path,
             {{"cert", [&t](auto& x, auto& p) { return assign(p, &t.cert, file_path(x)); }},
              {"key", [&t](auto& x, auto& p) { return assign(p, &t.key, file_path(x)); }},
              {"verify", [&t](auto& x, auto& p) { return assign(p, &t.verify, yaml_bool(x)); }},
              {"sni", [&t](auto& x, auto& p) { return assign(p, &t.sni, parse_host_name(x)); }}});
    Status pair = both_or_neither(v, "cert", "key");
    return s.is_ok() && !pair.is_ok() ? error_at(path, pair.message()) : s;
  }

  Status sluice(const Json& v, const std::string& path) {
    return walk(
        v, path,
        {{"data_dir",
          [this](auto& x, auto& p) { return assign(p, &cfg.data_dir, as_string(x, 1, 4096)); }},
         {"io_uring",
          [this](auto& x, auto& p) { return assign(p, &cfg.io_uring, io_uring_mode(x)); }},
         {"access_log_rotate", [this](auto& x, auto& p) { return access_log_rotate(x, p); }},
         {"admin_audit_log",
          [this](auto& x, auto& p) {
            return assign(p, &cfg.admin_audit_log, access_log_path(x));  // a path, or off
          }},
         {"http2", [this](auto& x, auto& p) { return parse_http2_config(x, p, &cfg.http2); }}});
  }

  Status plugins(const Json& v, const std::string& path) {
    cfg.plugins_listed = true;
    return assign(path, &cfg.plugins,
                  as_string_array(
                      v, [](const Json& e) { return as_string(e, 1, 64); }, 0));
  }

  // plugin_attr: the sections of the built-in plugins are read; the rest are warned about.
  Status plugin_attr(const Json& v, const std::string& path) {
    PrometheusExport& pe = cfg.prometheus;
    return walk(
        v, path,
        {{"prometheus",
          [&](auto& x, auto& p) {
            Status s = walk(
                x, p,
                {{"enable_export_server",
                  [&](auto& y, auto& q) { return assign(q, &pe.enabled, yaml_bool(y)); }},
                 {"export_uri",
                  [&](auto& y, auto& q) { return assign(q, &pe.uri, as_string(y, 1, 256)); }},
                 {"export_addr", [&](auto& y, auto& q) { return listen_addr(y, q, &pe.addr); }},
                 // Checked here, read by the plugin from plugin_attr (plugin::Shared::attr).
                 {"max_label_sets",
                  [&](auto& y, auto& q) {
                    Json& attr = cfg.plugin_attr["prometheus"];
                    return assign(q, &attr["max_label_sets"], as_integer(y, 0, 100000000));
                  }},
                 {"default_buckets",
                  [&](auto& y, auto& q) {
                    return keep(y, q, plugins::prometheus::check_default_buckets(y),
                                &cfg.plugin_attr["prometheus"]["default_buckets"]);
                  }},
                 {"metrics", [&](auto& y, auto& q) { return prometheus_metrics(y, q); }},
                 // Sluice's own: sluice_route_cpu_seconds_total (the workers time requests).
                 {"route_accounting",
                  [&](auto& y, auto& q) {
                    Json& attr = cfg.plugin_attr["prometheus"];
                    return assign(q, &attr["route_accounting"], yaml_bool(y));
                  }},
                 {"metric_prefix", [&](auto& y, auto& q) {
                    return y == "apisix_" ? Status::ok() : error_at(q, "only apisix_ is supported");
                  }}});
            if (!s.is_ok() || !cfg.plugin_attr.contains("prometheus")) {
              return s;
            }
            Status e = plugins::prometheus::check_expires(cfg.plugin_attr["prometheus"]);
            return e.is_ok() ? s : error_at(p + ".metrics", e.message());
          }},
         {"limit-count",
          [&](auto& x, auto& p) {
            // Checked here, read by the plugin from plugin_attr (plugin::Shared::attr).
            Json& attr = cfg.plugin_attr["limit-count"] = Json::object();
            return walk(x, p, {{"local_keys", [&](auto& y, auto& q) {
                                  auto n = as_integer(y, 1024, int64_t{1} << 32);
                                  return assign(q, &attr["local_keys"], n);
                                }}});
          }},
         {"opentelemetry",
          [&](auto& x, auto& p) {
            // Checked here, read by the plugin from plugin_attr (plugin::Shared::attr).
            auto a = plugins::tracing::parse_otel_attr(x, "");
            return keep(x, p, a.is_ok() ? Status::ok() : a.status(),
                        &cfg.plugin_attr["opentelemetry"]);
          }},
         {"limit-req", [&](auto& x, auto& p) { return local_keys("limit-req", x, p); }},
         {"limit-conn", [&](auto& x, auto& p) { return local_keys("limit-conn", x, p); }},
         {"redirect", [&](auto& x, auto& p) {
            // The port http_to_https names; checked here, read by the plugin from plugin_attr.
            Json& attr = cfg.plugin_attr["redirect"] = Json::object();
            return walk(x, p, {{"https_port", [&](auto& y, auto& q) {
                                  return assign(q, &attr["https_port"], yaml_port(y));
                                }}});
          }}});
  }

  // plugin_attr.<limit-req|limit-conn>.local_keys: the slots of the plugin's node-wide table,
  // checked here and read by the plugin from plugin_attr.
  Status local_keys(const char* plugin, const Json& v, const std::string& path) {
    Json& attr = cfg.plugin_attr[plugin] = Json::object();
    return walk(v, path, {{"local_keys", [&](auto& y, auto& q) {
                             auto n = as_integer(y, 1024, int64_t{1} << 32);
                             return assign(q, &attr["local_keys"], n);
                           }}});
  }

  // metrics.<family>.extra_labels, checked here and read by the plugin from plugin_attr.
  Status prometheus_metrics(const Json& v, const std::string& path) {
    namespace prom = plugins::prometheus;
    auto family = [this](size_t f) {
      return [this, f](auto& x, auto& p) {
        return walk(x, p,
                    {{"extra_labels",
                      [this, f](auto& y, auto& q) {
                        Json& slot =
                            cfg.plugin_attr["prometheus"]["metrics"]
                                           [std::string(prom::kFamilyKeys[f])]["extra_labels"];
                        return keep(y, q, prom::check_extra_labels(y, prom::Family(f)), &slot);
                      }},
                     {"expire", [this, f](auto& y, auto& q) {
                        Json& slot = cfg.plugin_attr["prometheus"]["metrics"]
                                                    [std::string(prom::kFamilyKeys[f])]["expire"];
                        return keep(y, q, prom::check_expire(y), &slot);
                      }}});
      };
    };
    const auto& names = prom::kFamilyKeys;
    return walk(v, path, {{names[0], family(0)}, {names[1], family(1)}, {names[2], family(2)}});
  }

  // A value a plugin checked (`s`), kept where the plugin reads it (on error the read fails).
  static Status keep(const Json& v, const std::string& path, const Status& s, Json* slot) {
    *slot = v;
    return s.is_ok() ? s : error_at(path, s.message());
  }

  Status listen_addr(const Json& v, const std::string& path, ListenAddr* addr) {
    return walk(
        v, path,
        {{"ip", [addr](auto& x, auto& p) { return assign(p, &addr->ip, parse_ip(x)); }},
         {"port", [addr](auto& x, auto& p) { return assign(p, &addr->port, yaml_port(x)); }}});
  }

  Status admin(const Json& v, const std::string& path) {
    AdminConfig& a = cfg.admin;
    return walk(
        v, path,
        {{"enable_admin", [&a](auto& x, auto& p) { return assign(p, &a.enabled, yaml_bool(x)); }},
         {"admin_key_required",
          [&a](auto& x, auto& p) { return assign(p, &a.key_required, yaml_bool(x)); }},
         {"admin_listen", [this](auto& x, auto& p) { return admin_listen(x, p); }},
         {"https_admin", [&a](auto& x, auto& p) { return assign(p, &a.https, yaml_bool(x)); }},
         {"admin_api_mtls",
          [&a, this](auto& x, auto& p) {
            return walk(x, p,
                        {{"admin_ssl_cert",
                          [&a](auto& y, auto& q) { return assign(q, &a.cert, file_path(y)); }},
                         {"admin_ssl_cert_key",
                          [&a](auto& y, auto& q) { return assign(q, &a.key, file_path(y)); }},
                         {"admin_ssl_ca_cert", [&a](auto& y, auto& q) {
                            return assign(q, &a.client_ca, file_path(y));
                          }}});
          }},
         {"admin_key", [this](auto& x, auto& p) { return admin_keys(x, p); }},
         {"allow_admin", [&a](auto& x, auto& p) {
            return assign(p, &a.allow,
                          as_string_array(
                              x, [](const Json& e) { return as_string(e, 1, 64); }, 0));
          }}});
  }

  Status admin_listen(const Json& v, const std::string& path) {
    return listen_addr(v, path, &cfg.admin.listen);
  }

  Status admin_keys(const Json& v, const std::string& path) {
    if (!v.is_array()) {
      return error_at(path, "expected a list of {name, key, role}, got " + json_text(v));
    }
    cfg.admin.keys.clear();
    for (size_t i = 0; i < v.size(); ++i) {
      std::string at = fmt::format("{}[{}]", path, i);
      AdminKey k;
      std::string role = "admin";
      Status s =
          walk(v[i], at,
               {{"name", [&k](auto& x, auto& p) { return assign(p, &k.name, as_string(x)); }},
                {"key", [&k](auto& x, auto& p) { return assign(p, &k.key, as_string(x, 1, 256)); }},
                {"role", [&role](auto& x, auto& p) {
                   return assign(p, &role, as_enum(x, {"admin", "viewer"}));
                 }}});
      if (!s.is_ok()) {
        return s;
      }
      if (k.key.empty()) {
        return error_at(at + ".key", "expected a non-empty key");
      }
      k.role = role == "viewer" ? AdminRole::kViewer : AdminRole::kAdmin;
      cfg.admin.keys.push_back(std::move(k));
    }
    return Status::ok();
  }

  Status node_listen(const Json& v, const std::string& path) {
    cfg.node_listen.clear();
    if (v.is_number()) {
      cfg.node_listen.push_back({});
      return assign(path, &cfg.node_listen.back().port, yaml_port(v));
    }
    if (!v.is_array() || v.empty()) {
      return error_at(path,
                      "expected a port or a list of ports or {ip, port}, got " + json_text(v));
    }
    for (size_t i = 0; i < v.size(); ++i) {
      Status s = listen_entry(v[i], fmt::format("{}[{}]", path, i));
      if (!s.is_ok()) {
        return s;
      }
    }
    return check_duplicate_listeners(path);
  }

  Status check_duplicate_listeners(const std::string& path) const {
    const auto& l = cfg.node_listen;
    for (size_t i = 0; i < l.size(); ++i) {
      for (size_t j = 0; j < i; ++j) {
        if (l[i].ip == l[j].ip && l[i].port == l[j].port) {
          return error_at(fmt::format("{}[{}]", path, i),
                          fmt::format("duplicate of {}[{}]", path, j));
        }
      }
    }
    return Status::ok();
  }

  Status listen_entry(const Json& v, const std::string& path) {
    cfg.node_listen.push_back({});
    ListenAddr* addr = &cfg.node_listen.back();
    if (!v.is_object()) {
      return assign(path, &addr->port, yaml_port(v));
    }
    if (!v.contains("port")) {
      return error_at(path, "expected a port");
    }
    if (v["port"].is_null()) {
      return error_at(path, "expected a port");
    }
    return walk(
        v, path,
        {{"ip", [addr](auto& x, auto& p) { return assign(p, &addr->ip, parse_ip(x)); }},
         {"port", [addr](auto& x, auto& p) { return assign(p, &addr->port, yaml_port(x)); }},
         {"max_connections",
          [addr](auto& x, auto& p) {
            return assign(p, &addr->max_connections, connection_cap(x));
          }},
         {"enable_http2", [addr](auto& x, auto& p) { return http2_flag(x, p, addr); }}});
  }

  static Status http2_flag(const Json& v, const std::string& path, ListenAddr* addr) {
    addr->http2_given = true;
    return assign(path, &addr->http2, yaml_bool(v));
  }

  std::map<std::string, ConfigProvider> providers_;  // role name -> its config_provider
  bool etcd_given_ = false;                          // deployment.etcd is set
  bool log_enabled_ = true;                          // nginx_config.http.enable_access_log
  std::string log_path_ = "logs/access.log";         // nginx_config.http.access_log; "": off
};

// `path` as seen from the directory `base`: absolute and empty paths are kept.
std::string resolve(const std::string& base, const std::string& path) {
  if (path.empty() || path.front() == '/') {
    return path;
  }
  return base == "/" ? "/" + path : base + "/" + path;
}

std::string directory_prefix(const std::string& dir) {
  if (dir.empty()) {
    return ".";
  }
  return dir.back() == '/' && dir.size() > 1 ? dir.substr(0, dir.size() - 1) : dir;
}

}  // namespace

StatusOr<GatewayConfig> parse_gateway_config(const std::string& yaml_text, const std::string& dir) {
  auto doc = load_config_document(yaml_text, kConfigSource);
  if (!doc.is_ok()) {
    return doc.status();
  }
  Reader reader;
  Status s;
  try {
    s = reader.read(*doc);
  } catch (const std::exception& e) {
    s = Status::error(fmt::format("{}: {}", kConfigSource, e.what()));
  }
  if (!s.is_ok()) {
    return s;
  }
  std::string base = directory_prefix(dir);
  GatewayConfig& cfg = reader.cfg;
  cfg.standalone_path = resolve(base, "apisix.yaml");
  cfg.data_dir = resolve(base, cfg.data_dir.empty() ? "data" : cfg.data_dir);
  for (auto* list : {&cfg.node_listen, &cfg.ssl.listen}) {
    for (ListenAddr& l : *list) {
      l.http2 = l.http2_given ? l.http2 : cfg.enable_http2;
    }
  }
  if (cfg.admin.https && (cfg.admin.cert.empty() || cfg.admin.key.empty())) {
    return Status::error(
        "config.yaml: deployment.admin.https_admin: needs admin_api_mtls.admin_ssl_cert and "
        "admin_ssl_cert_key");
  }
  cfg.access_log.path = resolve(base, cfg.access_log.path);
  if (!cfg.admin_audit_log.empty()) {
    cfg.admin_audit_log = resolve(base, cfg.admin_audit_log);
  }
  for (std::string* file :
       {&cfg.etcd.tls.cert, &cfg.etcd.tls.key, &cfg.etcd.tls.trusted_ca, &cfg.ssl.trusted_ca,
        &cfg.admin.cert, &cfg.admin.key, &cfg.admin.client_ca}) {
    *file = resolve(base, *file);
  }
  return std::move(cfg);
}

}  // namespace sluice::config
