#include "plugins/proxy_rewrite/config.h"

#include "plugins/proxy_rewrite/lua_text.h"
#include "schema/checks.h"

namespace sluice::plugins::proxy_rewrite {

using common::Status;
using common::StatusOr;
using plugin::Json;
using schema::FieldDecoder;

namespace {

// jsonschema counts a string's length in UTF-8 characters.
size_t utf8_length(std::string_view s) {
  size_t n = 0;
  for (char c : s) {
    n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }
  return n;
}

StatusOr<std::string> uri_value(const Json& v) {
  if (!v.is_string()) {
    return schema::wrong_type("string", v);
  }
  const auto& s = v.get_ref<const std::string&>();
  size_t n = utf8_length(s);
  if (n < 1) {
    return Status::error("string too short, expected at least 1, got 0");
  }
  if (n > 4096) {
    return Status::error("string too long, expected at most 4096, got " + std::to_string(n));
  }
  if (s[0] != '/') {
    return Status::error(R"(failed to match pattern "^\\/.*" with )" + lua_quoted(s));
  }
  return s;
}

StatusOr<std::string> method_value(const Json& v) {
  if (!v.is_string()) {
    return schema::wrong_type("string", v);
  }
  return schema::as_enum(v, {"GET", "POST", "PUT", "HEAD", "DELETE", "OPTIONS", "MKCOL", "COPY",
                             "MOVE", "PROPFIND", "LOCK", "UNLOCK", "PATCH", "TRACE"});
}

// `^[0-9a-zA-Z-.]+(:\d{1,5})?$`
bool host_matches(std::string_view s) {
  size_t colon = s.find(':');
  std::string_view name = s.substr(0, colon);
  if (name.empty()) {
    return false;
  }
  for (char c : name) {
    bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              c == '-' || c == '.';
    if (!ok) {
      return false;
    }
  }
  if (colon == std::string_view::npos) {
    return true;
  }
  std::string_view port = s.substr(colon + 1);
  if (port.empty() || port.size() > 5) {
    return false;
  }
  for (char c : port) {
    if (c < '0' || c > '9') {
      return false;
    }
  }
  return true;
}

StatusOr<std::string> host_value(const Json& v) {
  if (!v.is_string()) {
    return schema::wrong_type("string", v);
  }
  const auto& s = v.get_ref<const std::string&>();
  if (!host_matches(s)) {
    return Status::error(R"(failed to match pattern "^[0-9a-zA-Z-.]+(:\\d{1,5})?$" with )" +
                         lua_quoted(s));
  }
  return s;
}

StatusOr<std::vector<std::string>> regex_uri_value(const Json& v) {
  if (!v.is_array()) {
    return schema::wrong_type("array", v);
  }
  if (v.size() < 2) {
    return Status::error("expect array to have at least 2 items");
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string()) {
      return Status::error("failed to validate item " + std::to_string(i + 1) + ": " +
                           schema::wrong_type("string", v[i]).message());
    }
    out.push_back(v[i].get<std::string>());
  }
  return out;
}

Status compile_regex_uri(const std::vector<std::string>& pairs, Conf* c) {
  if (pairs.size() % 2 != 0) {
    return Status::error("The length of regex_uri should be an even number");
  }
  for (size_t i = 0; i < pairs.size(); i += 2) {
    auto rule = RegexRule::compile(pairs[i], pairs[i + 1]);
    if (!rule.is_ok()) {
      return Status::error("invalid regex_uri(" + pairs[i] + ", " + pairs[i + 1] +
                           "): " + rule.status().message());
    }
    c->regex_uri.push_back(std::move(rule).value());
  }
  return Status::ok();
}

// APISIX's schema allows any other property and ignores it, except these two: its rewrite
// copies them into nginx's $upstream_upgrade / $upstream_connection.
Status refuse_upstream_vars(const Json& conf) {
  for (const char* name : {"upgrade", "connection"}) {
    if (conf.contains(name)) {
      return Status::error(std::string("property \"") + name +
                           "\" is not supported by Sluice: the gateway writes Upgrade and "
                           "Connection itself");
    }
  }
  return Status::ok();
}

// After the schema: check_schema's own checks in its order (regexes, then headers), then
// Sluice's (refused fields, the `uri` template's variables).
Status finish(const Json& conf, const std::vector<std::string>& regex_pairs, Conf* c) {
  if (Status s = compile_regex_uri(regex_pairs, c); !s.is_ok()) {
    return s;
  }
  if (conf.contains("headers")) {
    auto h = parse_headers(conf["headers"]);
    if (!h.is_ok()) {
      return h.status();
    }
    c->headers = std::move(h).value();
  }
  if (Status s = refuse_upstream_vars(conf); !s.is_ok()) {
    return s;
  }
  if (c->has_uri) {
    auto t = Template::parse(c->uri_text, false);
    if (!t.is_ok()) {
      return Status::error("uri: " + t.status().message());
    }
    c->uri = std::move(t).value();
  }
  return Status::ok();
}

}  // namespace

StatusOr<Conf> parse(const Json& conf) {
  if (!conf.is_object()) {
    return schema::wrong_type("object", conf);
  }
  Conf c;
  FieldDecoder d(conf);
  d.field("uri", &c.uri_text, uri_value);
  c.has_uri = d.has("uri");
  d.field("method", &c.method, method_value);
  std::vector<std::string> regex_pairs;
  d.field("regex_uri", &regex_pairs, regex_uri_value);
  d.field("host", &c.host, host_value);
  if (d.ok() && d.has("headers")) {
    if (Status s = check_headers_schema(conf["headers"]); !s.is_ok()) {
      d.fail(s.message());
    }
  }
  d.field("use_real_request_uri_unsafe", &c.use_real_request_uri_unsafe, schema::as_bool);
  if (!d.ok()) {
    return d.status();
  }
  if (Status s = finish(conf, regex_pairs, &c); !s.is_ok()) {
    return s;
  }
  return c;
}

Status check(const Json& conf, plugin::PluginUse use) {
  if (use == plugin::PluginUse::kMetadata) {
    return conf.empty() ? Status::ok() : Status::error("proxy-rewrite has no plugin metadata");
  }
  auto c = parse(conf);
  return c.is_ok() ? Status::ok() : c.status();
}

const char kSchema[] = R"JSON({
  "type": "object",
  "properties": {
    "uri": {"description": "new uri for upstream", "type": "string", "minLength": 1,
            "maxLength": 4096, "pattern": "^\\/.*"},
    "method": {"description": "proxy route method", "type": "string",
               "enum": ["GET", "POST", "PUT", "HEAD", "DELETE", "OPTIONS", "MKCOL", "COPY",
                        "MOVE", "PROPFIND", "LOCK", "UNLOCK", "PATCH", "TRACE"]},
    "regex_uri": {"description": "new uri that substitute from client uri for upstream, lower priority than uri property",
                  "type": "array", "minItems": 2,
                  "items": {"description": "regex uri", "type": "string"}},
    "host": {"description": "new host for upstream", "type": "string",
             "pattern": "^[0-9a-zA-Z-.]+(:\\d{1,5})?$"},
    "headers": {
      "description": "new headers for request",
      "oneOf": [
        {"type": "object", "minProperties": 1, "additionalProperties": false,
         "properties": {
           "add": {"type": "object", "minProperties": 1,
                   "patternProperties": {"^[^:]+$": {"oneOf": [{"type": "string"}, {"type": "number"}]}}},
           "set": {"type": "object", "minProperties": 1,
                   "patternProperties": {"^[^:]+$": {"oneOf": [{"type": "string"}, {"type": "number"}]}}},
           "remove": {"type": "array", "minItems": 1,
                      "items": {"type": "string", "pattern": "^[^:]+$"}}
         }},
        {"type": "object", "minProperties": 1,
         "patternProperties": {"^[^:]+$": {"oneOf": [{"type": "string"}, {"type": "number"}]}}}
      ]
    },
    "use_real_request_uri_unsafe": {"description": "use real_request_uri instead, THIS IS VERY UNSAFE.",
                                    "type": "boolean", "default": false}
  },
  "minProperties": 1
})JSON";

}  // namespace sluice::plugins::proxy_rewrite
