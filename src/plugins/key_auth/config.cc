#include "plugins/key_auth/config.h"

#include "schema/checks.h"

namespace sluice::plugins::key_auth {

using common::Status;
using common::StatusOr;
using plugin::Json;
using schema::FieldDecoder;

namespace {

StatusOr<std::string> any_string(const Json& v) { return schema::as_string(v); }

StatusOr<std::string> nonempty_string(const Json& v) { return schema::as_string(v, 1); }

}  // namespace

StatusOr<Conf> parse(const Json& json) {
  if (!json.is_object()) {
    return schema::wrong_type("object", json);
  }
  Conf c;
  FieldDecoder d(json);
  // APISIX's schema leaves additionalProperties open; `realm` (3.15+) names a
  // WWW-Authenticate challenge Sluice does not send, so it is refused rather than ignored.
  d.unsupported("realm",
                "the realm of a WWW-Authenticate challenge (APISIX 3.15) is not "
                "supported yet");
  d.field("header", &c.header, any_string);
  d.field("query", &c.query, any_string);
  d.field("hide_credentials", &c.hide_credentials, schema::as_bool);
  d.field("anonymous_consumer", &c.anonymous_consumer, nonempty_string);
  if (!d.ok()) {
    return d.status();
  }
  return c;
}

StatusOr<std::string> parse_consumer(const Json& json) {
  if (!json.is_object()) {
    return schema::wrong_type("object", json);
  }
  std::string key;
  FieldDecoder d(json);
  d.require({"key"});
  d.field("key", &key, any_string);
  if (!d.ok()) {
    return d.status();
  }
  return key;
}

Status check(const Json& conf, plugin::PluginUse use) {
  if (use == plugin::PluginUse::kConsumer) {
    return parse_consumer(conf).status();
  }
  return parse(conf).status();
}

const char kSchema[] =
    R"({"type":"object","properties":{"header":{"type":"string","default":"apikey"},"query":{"type":"string","default":"apikey"},"hide_credentials":{"type":"boolean","default":false},"anonymous_consumer":{"type":"string","minLength":1}}})";

}  // namespace sluice::plugins::key_auth
