#include "plugins/basic_auth/config.h"

#include "schema/checks.h"

namespace sluice::plugins::basic_auth {

using common::Status;
using common::StatusOr;
using plugin::Json;
using schema::FieldDecoder;

namespace {

StatusOr<std::string> nonempty_string(const Json& v) { return schema::as_string(v, 1); }
StatusOr<std::string> any_string(const Json& v) { return schema::as_string(v); }

// The realm goes into a response header between single quotes: no control byte and no quote
// may reach it.
StatusOr<std::string> realm_value(const Json& v) {
  auto s = schema::as_string(v, 1);
  if (s.is_ok()) {
    for (char ch : *s) {
      auto c = static_cast<unsigned char>(ch);
      if (c < 0x20 || c == 0x7f || c == '\'') {
        return Status::error(
            "must not hold control characters or \"'\" (it is sent in WWW-Authenticate)");
      }
    }
  }
  return s;
}

}  // namespace

StatusOr<Conf> parse(const Json& conf) {
  if (!conf.is_object()) {
    return schema::wrong_type("object", conf);
  }
  Conf c;
  FieldDecoder d(conf);
  d.field("hide_credentials", &c.hide_credentials, schema::as_bool);
  d.field("anonymous_consumer", &c.anonymous_consumer, nonempty_string);
  d.field("realm", &c.realm, realm_value);
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
  d.require({"username", "password"});
  d.field("username", &c.username, any_string);
  d.field("password", &c.password, any_string);
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
      return conf.empty() ? Status::ok() : Status::error("basic-auth has no plugin metadata");
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
    "hide_credentials": {"type": "boolean", "default": false},
    "anonymous_consumer": {"type": "string", "minLength": 1},
    "realm": {"type": "string", "minLength": 1, "default": "basic"}
  }
})JSON";

}  // namespace sluice::plugins::basic_auth
