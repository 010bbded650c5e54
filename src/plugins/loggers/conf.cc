#include "plugins/loggers/conf.h"

#include <fmt/format.h>

#include <regex>

#include "schema/checks.h"

namespace sluice::plugins::loggers {

using common::Status;
using common::StatusOr;
using plugin::Json;
using schema::FieldDecoder;

std::string_view plugin_name(Kind kind) {
  switch (kind) {
    case Kind::kHttp:
      return "http-logger";
    case Kind::kTcp:
      return "tcp-logger";
    case Kind::kUdp:
      return "udp-logger";
    case Kind::kFile:
      return "file-logger";
    case Kind::kSyslog:
      return "syslog";
  }
  return "";
}

std::string_view default_batch_name(Kind kind) {
  switch (kind) {
    case Kind::kHttp:
      return "http logger";
    case Kind::kTcp:
      return "tcp logger";
    case Kind::kUdp:
      return "udp logger";
    case Kind::kFile:
      return "file logger";
    case Kind::kSyslog:
      return "sys logger";
  }
  return "";
}

namespace {

auto integer(int64_t min, int64_t max = INT32_MAX) {
  return [min, max](const Json& v) { return schema::as_integer(v, min, max); };
}

// core.schema.uri_def's pattern, as APISIX's jsonschema prints it in its error.
constexpr const char* kUriPattern = R"(^[^\/]+:\/\/([\da-zA-Z.-]+|\[[\da-fA-F:]+\])(:\d+)?)";

StatusOr<Uri> uri(const Json& v) {
  auto s = schema::as_string(v);
  if (!s.is_ok()) {
    return s.status();
  }
  static const std::regex kRe(R"(^([^/]+)://([\da-zA-Z.-]+|\[[\da-fA-F:]+\])(:(\d+))?(.*)$)");
  std::smatch m;
  if (!std::regex_match(*s, m, kRe)) {
    return Status::error(
        fmt::format("failed to match pattern \"{}\" with \"{}\"", kUriPattern, *s));
  }
  Uri u;
  const std::string scheme = m[1].str();
  if (scheme != "http" && scheme != "https") {
    return Status::error(
        fmt::format("scheme \"{}\" is not supported: http-logger sends to http or https", scheme));
  }
  u.https = scheme == "https";
  u.host = m[2].str();
  u.host_header = u.host;
  if (u.host.size() > 1 && u.host.front() == '[') {
    u.host = u.host.substr(1, u.host.size() - 2);
  }
  u.port = u.https ? 443 : 80;
  if (m[4].matched) {
    const long p = std::stol(m[4].str().substr(0, 6));
    if (p < 1 || p > 65535) {
      return Status::error(fmt::format("port {} is out of range", m[4].str()));
    }
    u.port = static_cast<uint16_t>(p);
    u.host_header += ":" + m[4].str();
  }
  std::string rest = m[5].str();
  if (!rest.empty() && rest[0] != '/' && rest[0] != '?') {
    return Status::error(fmt::format("\"{}\" is not a path", rest));
  }
  if (auto hash = rest.find('#'); hash != std::string::npos) {
    rest.resize(hash);
  }
  u.path = rest.empty() ? "/" : (rest[0] == '?' ? "/" + rest : rest);
  return u;
}

StatusOr<router::Expr> body_expr(const Json& v, const char* name, bool response) {
  if (!v.is_array()) {
    return schema::wrong_type("array", v);
  }
  if (v.empty()) {
    return Status::error("expect array to have at least 1 items");
  }
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_array()) {
      return Status::error(fmt::format("failed to validate item {}: {}", i + 1,
                                       schema::wrong_type("array", v[i]).message()));
    }
  }
  auto e = router::Expr::compile(v);
  if (!e.is_ok()) {
    std::string msg = e.status().message();
    const std::string_view prefix = "failed to validate the 'vars' expression: ";
    if (msg.starts_with(prefix)) {
      msg = msg.substr(prefix.size());
    }
    return Status::error(fmt::format("failed to validate the '{}' expression: {}", name, msg));
  }
  if (std::string_view h = e->request_head_var(); response && !h.empty()) {
    return Status::error(fmt::format(
        "include_resp_body_expr: variable \"{}\" reads the request, which Sluice does not keep "
        "for the response phases",
        h));
  }
  return e;
}

// The expr fields are checked after the schema, as log-util's check_log_schema does.
Status body_fields(FieldDecoder& d, const Json& conf, BodyConf* b) {
  d.field("include_req_body", &b->include_req_body, schema::as_bool);
  d.field("include_resp_body", &b->include_resp_body, schema::as_bool);
  d.field("max_req_body_bytes", &b->max_req_body_bytes, integer(1));
  d.field("max_resp_body_bytes", &b->max_resp_body_bytes, integer(1));
  if (!d.ok()) {
    return d.status();
  }
  for (auto [name, out, resp] : {std::tuple{"include_req_body_expr", &b->req_body_expr, false},
                                 std::tuple{"include_resp_body_expr", &b->resp_body_expr, true}}) {
    if (auto it = conf.find(name); it != conf.end()) {
      auto e = body_expr(*it, name, resp);
      if (!e.is_ok()) {
        return e.status().message().starts_with("failed to validate the '") ||
                       e.status().message().starts_with("include_resp_body_expr:")
                   ? e.status()
                   : schema::property_error(name, e.status());
      }
      *out = std::move(e).value();
    }
  }
  return Status::ok();
}

void batch_fields(FieldDecoder& d, Kind kind, batch::Settings* s) {
  s->name = std::string(default_batch_name(kind));
  d.field("name", &s->name, [](const Json& v) { return schema::as_string(v); });
  d.field("max_retry_count", &s->max_retry_count, integer(0));
  uint64_t secs = 1;
  d.field("retry_delay", &secs, integer(0));
  s->retry_delay_ms = secs * 1000;
  secs = 60;
  d.field("buffer_duration", &secs, integer(1));
  s->buffer_duration_ms = secs * 1000;
  secs = 5;
  d.field("inactive_timeout", &secs, integer(1));
  s->inactive_timeout_ms = secs * 1000;
  d.field("batch_max_size", &s->batch_max_size, integer(1));
}

StatusOr<uint16_t> port(const Json& v) {
  auto n = schema::as_integer(v, 0, INT32_MAX);
  if (!n.is_ok()) {
    return n.status();
  }
  if (*n < 1 || *n > 65535) {
    return Status::error(fmt::format("{} is not a port Sluice can send to (1-65535)", *n));
  }
  return static_cast<uint16_t>(*n);
}

void host_port(FieldDecoder& d, Conf* c) {
  d.require({"host", "port"});
  d.field("host", &c->host, [](const Json& v) { return schema::as_string(v, 1); });
  d.field("port", &c->port, port);
}

void kind_fields(FieldDecoder& d, Kind kind, Conf* c) {
  switch (kind) {
    case Kind::kHttp:
      d.require({"uri"});
      d.field("uri", &c->uri, uri);
      d.field("auth_header", &c->auth_header, [](const Json& v) { return schema::as_string(v); });
      c->timeout_ms = 3000;
      d.field("timeout", &c->timeout_ms, [](const Json& v) -> StatusOr<uint64_t> {
        auto n = schema::as_integer(v, 1);
        return n.is_ok() ? StatusOr<uint64_t>(static_cast<uint64_t>(*n) * 1000) : n.status();
      });
      d.field("concat_method", &c->concat_method, [](const Json& v) {
        return schema::as_enum(v, {"json", "new_line"});
      });
      d.field("ssl_verify", &c->ssl_verify, schema::as_bool);
      return;
    case Kind::kTcp:
      host_port(d, c);
      d.field("tls", &c->tls, schema::as_bool);
      d.field("tls_options", &c->tls_server_name,
              [](const Json& v) { return schema::as_string(v); });
      c->timeout_ms = 1000;
      d.field("timeout", &c->timeout_ms, integer(1));  // milliseconds
      return;
    case Kind::kUdp:
      host_port(d, c);
      c->timeout_ms = 3000;
      d.field("timeout", &c->timeout_ms, [](const Json& v) -> StatusOr<uint64_t> {
        auto n = schema::as_integer(v, 1);
        return n.is_ok() ? StatusOr<uint64_t>(static_cast<uint64_t>(*n) * 1000) : n.status();
      });
      return;
    case Kind::kFile:
      d.require({"path"});
      d.field("path", &c->path, [](const Json& v) { return schema::as_string(v, 1); });
      for (const char* f : {"name", "batch_max_size", "inactive_timeout", "buffer_duration",
                            "max_retry_count", "retry_delay"}) {
        d.unsupported(f, fmt::format("{} is a batch processor field: file-logger has none "
                                     "(APISIX's writes each entry at once)",
                                     f));
      }
      d.unsupported("match",
                    "match is not supported by Sluice's file-logger: use the route's vars or "
                    "_meta.filter");
      return;
    case Kind::kSyslog: {
      host_port(d, c);
      // flush_limit and pool_size shape resty.logger.socket's buffer and pool: Sluice writes
      // each batch whole on one kept connection, which meets any flush_limit a batch reaches
      // and any pool_size. drop_limit is the bytes held before entries are dropped.
      int64_t ignored = 0;
      d.field("flush_limit", &ignored, integer(1));
      c->batch.max_pending_bytes = 1048576;
      d.field("drop_limit", &c->batch.max_pending_bytes, [](const Json& v) -> StatusOr<size_t> {
        auto n = schema::as_integer(v, INT32_MIN);
        if (n.is_ok() && *n < 1) {
          return Status::error(fmt::format("{} bytes can hold no entry", *n));
        }
        return n.is_ok() ? StatusOr<size_t>(static_cast<size_t>(*n)) : n.status();
      });
      d.field("pool_size", &ignored, integer(5));
      c->timeout_ms = 3000;
      d.field("timeout", &c->timeout_ms, integer(1));  // milliseconds
      std::string sock = "tcp";
      d.field("sock_type", &sock, [](const Json& v) { return schema::as_enum(v, {"tcp", "udp"}); });
      c->udp = sock == "udp";
      d.field("tls", &c->tls, schema::as_bool);
      if (d.ok() && c->udp && c->tls) {
        d.fail("tls needs sock_type \"tcp\": syslog over UDP has no TLS");
      }
      return;
    }
  }
}

}  // namespace

StatusOr<Conf> parse(Kind kind, const Json& conf) {
  if (!conf.is_object()) {
    return schema::wrong_type("object", conf);
  }
  Conf c;
  c.kind = kind;
  FieldDecoder d(conf);
  kind_fields(d, kind, &c);
  if (kind != Kind::kFile) {
    batch_fields(d, kind, &c.batch);
  } else {
    c.batch.name = std::string(default_batch_name(kind));
    c.batch.inactive_timeout_ms = 100;  // file-logger writes as it goes (APISIX: per request)
    c.batch.buffer_duration_ms = 500;
  }
  if (!d.ok()) {
    return d.status();
  }
  if (auto it = conf.find("log_format"); it != conf.end()) {
    if (!it->is_object()) {
      return schema::property_error("log_format", schema::wrong_type("object", *it));
    }
    auto f = LogFormat::compile(*it);
    if (!f.is_ok()) {
      return f.status();
    }
    c.log_format = std::move(f).value();
  }
  if (Status s = body_fields(d, conf, &c.body); !s) {
    return s;
  }
  return c;
}

StatusOr<Metadata> parse_metadata(const Json& meta) {
  if (!meta.is_object()) {
    return schema::wrong_type("object", meta);
  }
  Metadata m;
  FieldDecoder d(meta);
  // No additionalProperties: false, as APISIX 3.x's metadata_schema (the store adds
  // create_time and update_time too).
  d.field("max_pending_entries", &m.max_pending, integer(1));
  if (!d.ok()) {
    return d.status();
  }
  if (auto it = meta.find("log_format"); it != meta.end()) {
    if (!it->is_object()) {
      return schema::property_error("log_format", schema::wrong_type("object", *it));
    }
    auto f = LogFormat::compile(*it);
    if (!f.is_ok()) {
      return f.status();
    }
    m.log_format = std::move(f).value();
  }
  return m;
}

Status check(Kind kind, const Json& conf, plugin::PluginUse use) {
  if (use == plugin::PluginUse::kMetadata) {
    auto m = parse_metadata(conf);
    return m.is_ok() ? Status::ok() : m.status();
  }
  auto c = parse(kind, conf);
  return c.is_ok() ? Status::ok() : c.status();
}

}  // namespace sluice::plugins::loggers
