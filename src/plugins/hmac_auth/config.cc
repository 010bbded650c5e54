#include "plugins/hmac_auth/config.h"

#include "schema/checks.h"

namespace sluice::plugins::hmac_auth {

using common::Status;
using common::StatusOr;
using plugin::Json;
using schema::FieldDecoder;

namespace {

StatusOr<uint8_t> algorithms_value(const Json& v) {
  auto names = schema::as_array(v);
  if (!names.is_ok()) {
    return names.status();
  }
  if (v.empty()) {
    return Status::error("expect array to have at least 1 items");
  }
  uint8_t bits = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    auto name = schema::as_enum(v[i], {"hmac-sha1", "hmac-sha256", "hmac-sha512"});
    Algorithm a{};
    if (!name.is_ok() || !parse_algorithm(*name, &a)) {
      return Status::error(
          "failed to validate item " + std::to_string(i + 1) + ": " +
          (name.is_ok() ? "matches none of the enum values" : name.status().message()));
    }
    bits |= algorithm_bit(a);
  }
  return bits;
}

StatusOr<std::vector<std::string>> signed_headers_value(const Json& v) {
  if (!v.is_array()) {
    return schema::wrong_type("array", v);
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < v.size(); ++i) {
    auto s = schema::as_string(v[i], 1, 50);
    if (!s.is_ok()) {
      return Status::error("failed to validate item " + std::to_string(i + 1) + ": " +
                           s.status().message());
    }
    out.push_back(std::move(s).value());
  }
  return out;
}

StatusOr<int64_t> clock_skew_value(const Json& v) { return schema::as_integer(v, 1, INT32_MAX); }
StatusOr<std::string> nonempty_string(const Json& v) { return schema::as_string(v, 1); }
StatusOr<std::string> key_string(const Json& v) { return schema::as_string(v, 1, 256); }

}  // namespace

StatusOr<Conf> parse(const Json& conf) {
  if (!conf.is_object()) {
    return schema::wrong_type("object", conf);
  }
  Conf c;
  FieldDecoder d(conf);
  // `realm` (APISIX 3.15's docs) names a WWW-Authenticate challenge whose hmac-auth wording
  // Sluice could not read in APISIX's source, so it is refused rather than guessed.
  d.unsupported("realm",
                "the realm of a WWW-Authenticate challenge (APISIX 3.15) is not "
                "supported yet");
  d.field("allowed_algorithms", &c.allowed, algorithms_value);
  d.field("clock_skew", &c.clock_skew, clock_skew_value);
  d.field("signed_headers", &c.signed_headers, signed_headers_value);
  d.field("validate_request_body", &c.validate_request_body, schema::as_bool);
  d.field("hide_credentials", &c.hide_credentials, schema::as_bool);
  d.field("anonymous_consumer", &c.anonymous_consumer, nonempty_string);
  if (!d.ok()) {
    return d.status();
  }
  return c;
}

StatusOr<ConsumerConf> parse_consumer(const Json& conf) {
  if (!conf.is_object()) {
    return schema::wrong_type("object", conf);
  }
  ConsumerConf c;
  FieldDecoder d(conf);
  d.require({"key_id", "secret_key"});
  d.field("key_id", &c.key_id, key_string);
  d.field("secret_key", &c.secret_key, key_string);
  if (!d.ok()) {
    return d.status();
  }
  return c;
}

Status check(const Json& conf, plugin::PluginUse use) {
  switch (use) {
    case plugin::PluginUse::kConsumer: {
      auto c = parse_consumer(conf);
      return c.is_ok() ? Status::ok() : c.status();
    }
    case plugin::PluginUse::kMetadata:
      return conf.empty() ? Status::ok() : Status::error("hmac-auth has no plugin metadata");
    default: {
      auto c = parse(conf);
      return c.is_ok() ? Status::ok() : c.status();
    }
  }
}

const char kSchema[] = R"JSON({
  "type": "object",
  "title": "work with route or service object",
  "properties": {
    "allowed_algorithms": {
      "type": "array", "minItems": 1,
      "items": {"type": "string", "enum": ["hmac-sha1", "hmac-sha256", "hmac-sha512"]},
      "default": ["hmac-sha1", "hmac-sha256", "hmac-sha512"]
    },
    "clock_skew": {"type": "integer", "default": 300, "minimum": 1},
    "signed_headers": {
      "type": "array",
      "items": {"type": "string", "minLength": 1, "maxLength": 50}
    },
    "validate_request_body": {
      "type": "boolean", "default": false,
      "title": "A boolean value telling the plugin to enable body validation"
    },
    "hide_credentials": {"type": "boolean", "default": false},
    "anonymous_consumer": {"type": "string", "minLength": 1}
  }
})JSON";

}  // namespace sluice::plugins::hmac_auth
