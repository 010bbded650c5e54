#include "plugins/cors/config.h"

#include <fmt/format.h>

#include "schema/checks.h"

namespace sluice::plugins::cors {

using common::Status;
using common::StatusOr;
using plugin::Json;
using schema::FieldDecoder;

namespace {

constexpr std::string_view kOriginsPattern = R"(^(\*|\*\*|null|\w+://[^,]+(,\w+://[^,]+)*)$)";
constexpr const char* kAllMethods = "GET,POST,PUT,DELETE,PATCH,HEAD,OPTIONS,CONNECT,TRACE";

bool word_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// One `\w+://[^,]+` item (the caller has split on ',').
bool origin_item(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && word_char(s[i])) {
    ++i;
  }
  return i > 0 && s.substr(i, 3) == "://" && s.size() > i + 3;
}

// allow_origins_by_regex, allow_origins_by_metadata: 1-4096 characters each.
StatusOr<std::vector<std::string>> string_items(const Json& v) {
  return schema::as_string_array(v, [](const Json& x) { return schema::as_string(x, 1, 4096); });
}

// check_schema compiles each rule and returns the compiler's message as it is.
Status compile_all(const std::vector<std::string>& rules,
                   std::vector<proxy_rewrite::RegexRule>* out) {
  for (const std::string& r : rules) {
    auto rule = proxy_rewrite::RegexRule::compile(r, "");
    if (!rule.is_ok()) {
      return rule.status();
    }
    out->push_back(std::move(rule).value());
  }
  return Status::ok();
}

void decode_fields(FieldDecoder& d, Conf* c, std::vector<std::string>* regexes,
                   std::vector<std::string>* timing_regexes) {
  d.field("allow_origins", &c->allow_origins, origin_list);
  d.field("allow_methods", &c->allow_methods, [](const Json& v) { return schema::as_string(v); });
  d.field("allow_headers", &c->allow_headers, [](const Json& v) { return schema::as_string(v); });
  d.field("expose_headers", &c->expose_headers, [](const Json& v) { return schema::as_string(v); });
  d.field("max_age", &c->max_age, [](const Json& v) -> StatusOr<std::string> {
    auto n = schema::as_integer(v, INT64_MIN, INT64_MAX);
    if (!n.is_ok()) {
      return n.status();
    }
    return std::to_string(*n);
  });
  d.field("allow_credential", &c->allow_credential, schema::as_bool);
  d.field("allow_origins_by_regex", regexes, string_items);
  d.field("allow_origins_by_metadata", &c->origins_by_metadata, string_items);
  d.field("timing_allow_origins", &c->timing_allow_origins, origin_list);
  d.field("timing_allow_origins_by_regex", timing_regexes, string_items);
}

}  // namespace

StatusOr<OriginList> origin_list(const Json& v) {
  auto s = schema::as_string(v);
  if (!s.is_ok()) {
    return s.status();
  }
  if (!origins_pattern(*s)) {
    return Status::error(
        fmt::format(R"(failed to match pattern "{}" with "{}")", kOriginsPattern, *s));
  }
  OriginList out{*s, {}};
  if (s->find(',') != std::string::npos) {
    std::string_view rest = *s;
    while (!rest.empty()) {
      size_t comma = rest.find(',');
      out.items.emplace_back(rest.substr(0, comma));
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
  }
  return out;
}

bool origins_pattern(std::string_view text) {
  if (text == "*" || text == "**" || text == "null") {
    return true;
  }
  if (text.empty()) {
    return false;
  }
  while (true) {
    size_t comma = text.find(',');
    if (!origin_item(text.substr(0, comma))) {
      return false;
    }
    if (comma == std::string_view::npos) {
      return true;
    }
    text.remove_prefix(comma + 1);
  }
}

StatusOr<Conf> parse(const Json& conf) {
  if (!conf.is_object()) {
    return schema::wrong_type("object", conf);
  }
  Conf c;
  std::vector<std::string> regexes, timing_regexes;
  FieldDecoder d(conf);
  decode_fields(d, &c, &regexes, &timing_regexes);
  if (!d.ok()) {
    return d.status();
  }
  c.has_timing = conf.contains("timing_allow_origins") || !timing_regexes.empty();
  if (c.allow_credential &&
      (c.allow_origins.any() || c.allow_methods == "*" || c.allow_headers == "*" ||
       c.expose_headers == "*" || c.timing_allow_origins.any())) {
    return Status::error("you can not set '*' for other option when 'allow_credential' is true");
  }
  if (Status s = compile_all(regexes, &c.origin_regexes); !s.is_ok()) {
    return s;
  }
  if (Status s = compile_all(timing_regexes, &c.timing_regexes); !s.is_ok()) {
    return s;
  }
  if (c.allow_methods == "**") {
    c.allow_methods = kAllMethods;
  }
  c.echo_request_headers = c.allow_headers == "**";
  return c;
}

// metadata_schema: {allow_origins: {<key>: <origins pattern>}}.
Status check_metadata(const Json& conf) {
  if (!conf.is_object()) {
    return schema::wrong_type("object", conf);
  }
  auto it = conf.find("allow_origins");
  if (it == conf.end()) {
    return Status::ok();
  }
  if (!it->is_object()) {
    return schema::property_error("allow_origins", schema::wrong_type("object", *it));
  }
  for (const auto& [key, value] : it->items()) {
    auto list = origin_list(value);
    if (!list.is_ok()) {
      return schema::property_error("allow_origins", schema::property_error(key, list.status()));
    }
  }
  return Status::ok();
}

Status check(const Json& conf, plugin::PluginUse use) {
  if (use == plugin::PluginUse::kMetadata) {
    return check_metadata(conf);
  }
  auto c = parse(conf);
  return c.is_ok() ? Status::ok() : c.status();
}

const char kSchema[] = R"JSON({
  "type": "object",
  "properties": {
    "allow_origins": {"type": "string", "default": "*",
      "pattern": "^(\\*|\\*\\*|null|\\w+://[^,]+(,\\w+://[^,]+)*)$"},
    "allow_methods": {"type": "string", "default": "*"},
    "allow_headers": {"type": "string", "default": "*"},
    "expose_headers": {"type": "string", "default": "*"},
    "max_age": {"type": "integer", "default": 5},
    "allow_credential": {"type": "boolean", "default": false},
    "allow_origins_by_regex": {"type": "array", "minItems": 1, "uniqueItems": true,
      "items": {"type": "string", "minLength": 1, "maxLength": 4096}},
    "allow_origins_by_metadata": {"type": "array", "minItems": 1, "uniqueItems": true,
      "items": {"type": "string", "minLength": 1, "maxLength": 4096}},
    "timing_allow_origins": {"type": "string",
      "pattern": "^(\\*|\\*\\*|null|\\w+://[^,]+(,\\w+://[^,]+)*)$"},
    "timing_allow_origins_by_regex": {"type": "array", "minItems": 1, "uniqueItems": true,
      "items": {"type": "string", "minLength": 1, "maxLength": 4096}}
  }
})JSON";

}  // namespace sluice::plugins::cors
