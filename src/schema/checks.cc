#include "schema/checks.h"

#include <fmt/format.h>

#include <cmath>

namespace sluice::schema {

using common::Status;
using common::StatusOr;

namespace {

// `%g` keeps 0 as "0" and 0.5 as "0.5", as Lua prints numbers.
std::string number_text(double d) { return fmt::format("{:g}", d); }

// Characters, not bytes, as APISIX's jsonschema counts minLength/maxLength (utf8_len): every
// byte that does not continue a UTF-8 sequence starts a character.
size_t utf8_length(std::string_view s) {
  size_t n = 0;
  for (char c : s) {
    n += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
  }
  return n;
}

}  // namespace

std::string json_type_name(const Json& v) {
  switch (v.type()) {
    case Json::value_t::string:
      return "string";
    case Json::value_t::boolean:
      return "boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float:
      return "number";
    case Json::value_t::object:
      return "object";
    case Json::value_t::array:
      return "array";
    default:
      return "null";
  }
}

std::string lua_type_name(const Json& v) {
  if (v.is_object() || v.is_array()) {
    return "table";
  }
  return v.is_null() ? "userdata" : json_type_name(v);
}

Status wrong_type(std::string_view expected, const Json& v) {
  return Status::error(fmt::format("wrong type: expected {}, got {}", expected, lua_type_name(v)));
}

std::string json_text(const Json& v) {
  return v.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Status property_error(std::string_view name, const Status& inner) {
  return Status::error(fmt::format("property \"{}\" validation failed: {}", name, inner.message()));
}

StatusOr<std::string> as_string(const Json& v, size_t min_len, size_t max_len) {
  if (!v.is_string()) {
    return wrong_type("string", v);
  }
  const auto& s = v.get_ref<const std::string&>();
  const size_t len = utf8_length(s);
  if (len < min_len) {
    return Status::error(
        fmt::format("string too short, expected at least {}, got {}", min_len, len));
  }
  if (len > max_len) {
    return Status::error(fmt::format("string too long, expected at most {}, got {}", max_len, len));
  }
  return s;
}

StatusOr<int64_t> as_integer(const Json& v, int64_t min, int64_t max) {
  if (!v.is_number()) {
    return wrong_type("integer", v);
  }
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (std::floor(d) != d) {
      return wrong_type("integer", v);
    }
    if (d < static_cast<double>(min)) {
      return Status::error(fmt::format("expected {} to be at least {}", number_text(d), min));
    }
    // static_cast<double>(INT64_MAX) rounds up to 2^63, which does not fit: compare with >=.
    if (d > static_cast<double>(max) || d >= 9223372036854775808.0) {
      return Status::error(fmt::format("expected {} to be at most {}", number_text(d), max));
    }
    return static_cast<int64_t>(d);
  }
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) {
    return Status::error(fmt::format("expected {} to be at most {}", v.get<uint64_t>(), max));
  }
  int64_t i = v.get<int64_t>();
  if (i < min) {
    return Status::error(fmt::format("expected {} to be at least {}", i, min));
  }
  if (i > max) {
    return Status::error(fmt::format("expected {} to be at most {}", i, max));
  }
  return i;
}

StatusOr<double> as_number(const Json& v, double min, bool exclusive) {
  if (!v.is_number()) {
    return wrong_type("number", v);
  }
  double d = v.get<double>();
  if (exclusive && !(d > min)) {
    return Status::error(
        fmt::format("expected {} to be greater than {}", number_text(d), number_text(min)));
  }
  if (!exclusive && !(d >= min)) {
    return Status::error(
        fmt::format("expected {} to be at least {}", number_text(d), number_text(min)));
  }
  return d;
}

StatusOr<bool> as_bool(const Json& v) {
  if (!v.is_boolean()) {
    return wrong_type("boolean", v);
  }
  return v.get<bool>();
}

StatusOr<std::string> as_enum(const Json& v, std::initializer_list<std::string_view> allowed) {
  if (!v.is_string()) {
    return wrong_type("string", v);
  }
  const auto& s = v.get_ref<const std::string&>();
  for (auto a : allowed) {
    if (a == s) {
      return s;
    }
  }
  return Status::error("matches none of the enum values");
}

StatusOr<Json> as_object(const Json& v) {
  if (!v.is_object()) {
    return wrong_type("object", v);
  }
  return v;
}

StatusOr<Json> as_array(const Json& v) {
  if (!v.is_array()) {
    return wrong_type("array", v);
  }
  return v;
}

FieldDecoder::FieldDecoder(const Json& obj) : obj_(obj) {
  if (!obj_.is_object()) {
    status_ = wrong_type("object", obj_);
  }
}

void FieldDecoder::only(std::initializer_list<std::string_view> known) {
  if (!ok()) {
    return;
  }
  for (const auto& [key, value] : obj_.items()) {
    bool found = false;
    for (auto k : known) {
      found = found || k == key;
    }
    if (!found) {
      status_ = Status::error("additional properties forbidden, found " + key);
      return;
    }
  }
}

void FieldDecoder::unsupported(std::string_view name, std::string message) {
  if (ok() && obj_.contains(std::string(name))) {
    status_ = Status::error(std::move(message));
  }
}

void FieldDecoder::require(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (ok() && !has(name)) {
      status_ = Status::error(fmt::format("property \"{}\" is required", name));
    }
  }
}

void FieldDecoder::fail(std::string fragment) {
  if (ok()) {
    status_ = Status::error(std::move(fragment));
  }
}

}  // namespace sluice::schema
