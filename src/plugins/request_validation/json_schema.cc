// valijson reports errors by exception only with this set; without it, it aborts.
#define VALIJSON_USE_EXCEPTIONS 1

#include "plugins/request_validation/json_schema.h"

#include <fmt/format.h>

#include <exception>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

#include "schema/checks.h"

namespace sluice::plugins::request_validation {

using plugin::Json;

struct JsonSchema::Impl {
  valijson::Schema schema;
};

JsonSchema::JsonSchema() : impl_(std::make_unique<Impl>()) {}
JsonSchema::~JsonSchema() = default;

common::StatusOr<std::shared_ptr<const JsonSchema>> JsonSchema::compile(const Json& schema,
                                                                        std::string_view what) {
  std::string why;
  for (auto version : {valijson::SchemaParser::kDraft7, valijson::SchemaParser::kDraft4}) {
    std::shared_ptr<JsonSchema> out(new JsonSchema());
    out->source_ = schema;
    try {
      valijson::SchemaParser parser(version);
      valijson::adapters::NlohmannJsonAdapter adapter(out->source_);
      parser.populateSchema(adapter, out->impl_->schema);
      return std::shared_ptr<const JsonSchema>(std::move(out));
    } catch (const std::exception& e) {
      if (why.empty()) {
        why = e.what();
      }
    }
  }
  return common::Status::error(fmt::format("invalid {}: {}", what, why));
}

std::string JsonSchema::validate(const Json& value) const {
  // One validator per thread: it caches the compiled `pattern` regexes by their text, which a
  // new validator per request would compile again each time.
  thread_local valijson::Validator validator(valijson::Validator::kStrongTypes);
  valijson::adapters::NlohmannJsonAdapter target(value);
  // Without a results object valijson stops at the first failure and words nothing: the
  // common, valid case pays for no messages. Only a failure is validated again, for its reason.
  if (validator.validate(impl_->schema, target, nullptr)) {
    return {};
  }
  valijson::ValidationResults results;
  validator.validate(impl_->schema, target, &results);
  valijson::ValidationResults::Error e;
  if (!results.popError(e)) {
    return "validation failed";
  }
  return explain(e.context, e.description, value, source_);
}

namespace {

// Lua's type() of the value cjson would decode, as jsonschema names it.
std::string lua_type(const Json& v) { return schema::lua_type_name(v); }

// The number in `description` after `prefix`, as text.
bool starts(const std::string& s, std::string_view prefix) { return s.rfind(prefix, 0) == 0; }

std::string num(const Json& v) { return schema::json_text(v); }

// Jsonschema's text for the leaf error, given the value and the (sub)schema there.
std::string leaf(const std::string& d, const Json& v, const Json& s) {
  auto at = [&s](const char* k) -> std::string {
    return s.is_object() && s.contains(k) ? num(s.at(k)) : std::string("?");
  };
  if (starts(d, "Missing required property '")) {
    std::string name = d.substr(27, d.size() - 27 - 2);
    return fmt::format("property \"{}\" is required", name);
  }
  if (starts(d, "Value type not permitted")) {
    std::string expected = "?";
    if (s.is_object() && s.contains("type")) {
      const Json& t = s.at("type");
      expected = t.is_string() ? t.get<std::string>() : num(t);
    }
    return fmt::format("wrong type: expected {}, got {}", expected, lua_type(v));
  }
  if (starts(d, "Failed to match against any enum")) {
    return "matches none of the enum values";
  }
  if (starts(d, "Failed to match regex")) {
    return fmt::format("failed to match pattern {} with {}", at("pattern"),
                       v.is_string() ? num(v) : lua_type(v));
  }
  if (starts(d, "Expected number greater than or equal to")) {
    return fmt::format("expected {} to be at least {}", num(v), at("minimum"));
  }
  if (starts(d, "Expected number greater than")) {
    const char* k = s.contains("exclusiveMinimum") && s.at("exclusiveMinimum").is_number()
                        ? "exclusiveMinimum"
                        : "minimum";
    return fmt::format("expected {} to be greater than {}", num(v), at(k));
  }
  if (starts(d, "Expected number less than or equal to")) {
    return fmt::format("expected {} to be at most {}", num(v), at("maximum"));
  }
  if (starts(d, "Expected number less than")) {
    const char* k = s.contains("exclusiveMaximum") && s.at("exclusiveMaximum").is_number()
                        ? "exclusiveMaximum"
                        : "maximum";
    return fmt::format("expected {} to be smaller than {}", num(v), at(k));
  }
  if (starts(d, "String should be no fewer than") && v.is_string()) {
    return fmt::format("string too short, expected at least {}, got {}", at("minLength"),
                       valijson::utils::u8_strlen(v.get_ref<const std::string&>().c_str()));
  }
  if (starts(d, "String should be no more than") && v.is_string()) {
    return fmt::format("string too long, expected at most {}, got {}", at("maxLength"),
                       valijson::utils::u8_strlen(v.get_ref<const std::string&>().c_str()));
  }
  if (starts(d, "Array should contain no fewer than")) {
    return fmt::format("expect array to have at least {} items", at("minItems"));
  }
  if (starts(d, "Array should contain no more than")) {
    return fmt::format("expect array to have at most {} items", at("maxItems"));
  }
  if (starts(d, "Object should have no fewer than")) {
    return fmt::format("expect object to have at least {} properties", at("minProperties"));
  }
  if (starts(d, "Object should have no more than")) {
    return fmt::format("expect object to have at most {} properties", at("maxProperties"));
  }
  unsigned a = 0, b = 0;
  if (std::sscanf(d.c_str(), "Elements at indexes #%u and #%u", &a, &b) == 2) {
    return fmt::format("expected unique items but items {} and {} are equal", a + 1, b + 1);
  }
  if (starts(d, "Object contains a property that could not be validated")) {
    size_t q = d.rfind('\'');
    size_t p = q == std::string::npos ? q : d.rfind('\'', q - 1);
    if (p != std::string::npos) {
      return fmt::format("additional properties forbidden, found {}", d.substr(p + 1, q - p - 1));
    }
  }
  return d;  // valijson's own words
}

}  // namespace

std::string explain(const std::vector<std::string>& context, const std::string& description,
                    const Json& value, const Json& schema) {
  const Json* v = &value;
  const Json* s = &schema;
  static const Json kNull;
  std::string prefix;
  for (size_t i = 1; i < context.size(); ++i) {
    const std::string& c = context[i];
    if (c.size() < 2 || c.front() != '[' || c.back() != ']') {
      break;
    }
    std::string name = c.substr(1, c.size() - 2);
    if (v->is_array()) {
      size_t idx = std::strtoul(name.c_str(), nullptr, 10);
      v = idx < v->size() ? &(*v)[idx] : &kNull;
      s = s->is_object() && s->contains("items") ? &s->at("items") : &kNull;
      prefix += fmt::format("failed to validate item {}: ", idx + 1);
      continue;
    }
    v = v->is_object() && v->contains(name) ? &v->at(name) : &kNull;
    const Json* props =
        s->is_object() && s->contains("properties") ? &s->at("properties") : nullptr;
    s = props != nullptr && props->is_object() && props->contains(name) ? &props->at(name) : &kNull;
    prefix += fmt::format("property \"{}\" validation failed: ", name);
  }
  return prefix + leaf(description, *v, *s);
}

}  // namespace sluice::plugins::request_validation
