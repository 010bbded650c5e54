#include "plugins/request_id/config.h"

#include <fmt/format.h>

#include "schema/checks.h"

namespace sluice::plugins::request_id {

using common::Status;
using common::StatusOr;
using plugin::Json;
using schema::FieldDecoder;

namespace {

bool token_char(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
    return true;
  }
  for (char t : std::string_view("!#$%&'*+-.^_`|~")) {
    if (c == t) {
      return true;
    }
  }
  return false;
}

// APISIX takes any string and fails when it sets the header; Sluice refuses a name that is
// not an HTTP field name (RFC 9110 token) up front.
StatusOr<std::string> header_name(const Json& v) {
  auto s = schema::as_string(v);
  if (!s.is_ok()) {
    return s.status();
  }
  if (s->empty()) {
    return Status::error("the header name is empty");
  }
  for (char c : *s) {
    if (!token_char(c)) {
      return Status::error(fmt::format("\"{}\" is not an HTTP header name", *s));
    }
  }
  return s;
}

StatusOr<Algorithm> algorithm(const Json& v) {
  auto s = schema::as_enum(v, {"uuid", "nanoid", "range_id", "ksuid"});
  if (!s.is_ok()) {
    return s.status();
  }
  if (*s == "uuid") {
    return Algorithm::kUuid;
  }
  if (*s == "nanoid") {
    return Algorithm::kNanoid;
  }
  return *s == "range_id" ? Algorithm::kRangeId : Algorithm::kKsuid;
}

Status range_id(const Json& v, Conf* c) {
  if (!v.is_object()) {
    return schema::wrong_type("object", v);
  }
  FieldDecoder d(v);
  d.field("length", &c->length, [](const Json& x) -> StatusOr<size_t> {
    auto n = schema::as_integer(x, 6, kMaxLength);
    if (!n.is_ok()) {
      return n.status();
    }
    return static_cast<size_t>(*n);
  });
  d.field("char_set", &c->char_set, [](const Json& x) { return schema::as_string(x, 6); });
  return d.status();
}

}  // namespace

StatusOr<Conf> parse(const Json& conf) {
  if (!conf.is_object()) {
    return schema::wrong_type("object", conf);
  }
  Conf c;
  FieldDecoder d(conf);
  d.field("header_name", &c.header_name, header_name);
  d.field("include_in_response", &c.include_in_response, schema::as_bool);
  d.field("algorithm", &c.algorithm, algorithm);
  if (!d.ok()) {
    return d.status();
  }
  if (auto it = conf.find("range_id"); it != conf.end()) {
    if (Status s = range_id(*it, &c); !s.is_ok()) {
      return schema::property_error("range_id", s);
    }
  }
  return c;
}

Status check(const Json& conf, plugin::PluginUse use) {
  if (use == plugin::PluginUse::kMetadata) {
    return conf.empty() ? Status::ok() : Status::error("request-id has no plugin metadata");
  }
  auto c = parse(conf);
  return c.is_ok() ? Status::ok() : c.status();
}

const char kSchema[] = R"JSON({
  "type": "object",
  "properties": {
    "header_name": {"type": "string", "default": "X-Request-Id"},
    "include_in_response": {"type": "boolean", "default": true},
    "algorithm": {"type": "string", "enum": ["uuid", "nanoid", "range_id", "ksuid"],
                  "default": "uuid"},
    "range_id": {
      "type": "object",
      "properties": {
        "length": {"type": "integer", "minimum": 6, "maximum": 4096, "default": 16},
        "char_set": {"type": "string", "minLength": 6,
                     "default": "abcdefghijklmnopqrstuvwxyzABCDEFGHIGKLMNOPQRSTUVWXYZ0123456789"}
      },
      "default": {"length": 16,
                  "char_set": "abcdefghijklmnopqrstuvwxyzABCDEFGHIGKLMNOPQRSTUVWXYZ0123456789"}
    }
  }
})JSON";

}  // namespace sluice::plugins::request_id
