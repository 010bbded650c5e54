#pragma once
// JSON-schema-style value checks shared by the resource decoders and the plugins' conf
// checks. Each check returns the error fragment APISIX's jsonschema would print (`wrong type:
// expected string, got number`); the caller wraps it in `property "x" validation failed: `.

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace sluice::schema {

using Json = nlohmann::json;

// The JSON type of `v` in words (for config.yaml's own messages); integers and floats are
// both "number".
std::string json_type_name(const Json& v);
// The type of `v` as APISIX's jsonschema names it: Lua's type() of the value cjson decoded, so
// objects and arrays are both "table" and null is "userdata".
std::string lua_type_name(const Json& v);
// "wrong type: expected <expected>, got <lua_type_name>", APISIX's jsonschema text.
common::Status wrong_type(std::string_view expected, const Json& v);
// `v` as compact JSON for an error message; invalid UTF-8 is replaced, never thrown on.
std::string json_text(const Json& v);
// `property "name" validation failed: <inner>`.
common::Status property_error(std::string_view name, const common::Status& inner);

common::StatusOr<std::string> as_string(const Json& v, size_t min_len = 0,
                                        size_t max_len = std::numeric_limits<size_t>::max());
// An integer in [min, max]; a float with an integral value counts, as in APISIX.
common::StatusOr<int64_t> as_integer(const Json& v, int64_t min = INT32_MIN,
                                     int64_t max = INT32_MAX);
// A number >= min, or > min when `exclusive`.
common::StatusOr<double> as_number(const Json& v, double min, bool exclusive);
common::StatusOr<bool> as_bool(const Json& v);
common::StatusOr<std::string> as_enum(const Json& v,
                                      std::initializer_list<std::string_view> allowed);
common::StatusOr<Json> as_object(const Json& v);
common::StatusOr<Json> as_array(const Json& v);

// An array of at least `min_items` unique strings, each checked by `item`.
template <typename F>
common::StatusOr<std::vector<std::string>> as_string_array(const Json& v, F&& item,
                                                           size_t min_items = 1);

// Decodes the properties of one object in a fixed order and keeps the first error.
// Thread: any (stack-local)
class FieldDecoder {
 public:
  explicit FieldDecoder(const Json& obj);

  // Rejects a property outside `known`: `additional properties forbidden, found <name>`.
  void only(std::initializer_list<std::string_view> known);
  // Rejects a present property with `message` (a known APISIX field Sluice does not serve).
  void unsupported(std::string_view name, std::string message);
  // When `name` is present, decodes it with `decode` into `*out`.
  template <typename T, typename F>
  void field(const char* name, T* out, F&& decode);
  void fail(std::string fragment);
  // Fails with `property "<name>" is required` for the first of `names` that is absent.
  void require(std::initializer_list<const char*> names);

  bool has(const char* name) const { return obj_.is_object() && obj_.contains(name); }
  bool ok() const { return status_.is_ok(); }
  const common::Status& status() const { return status_; }

 private:
  const Json& obj_;
  common::Status status_;
};

template <typename T, typename F>
void FieldDecoder::field(const char* name, T* out, F&& decode) {
  if (!ok() || !has(name)) {
    return;
  }
  auto r = decode(obj_.at(name));
  if (!r.is_ok()) {
    status_ = property_error(name, r.status());
    return;
  }
  *out = std::move(r).value();
}

template <typename F>
common::StatusOr<std::vector<std::string>> as_string_array(const Json& v, F&& item,
                                                           size_t min_items) {
  if (!v.is_array()) {
    return wrong_type("array", v);
  }
  if (v.size() < min_items) {
    return common::Status::error("expect array to have at least " + std::to_string(min_items) +
                                 " items");
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < v.size(); ++i) {
    auto s = item(v[i]);
    if (!s.is_ok()) {
      return common::Status::error("failed to validate item " + std::to_string(i + 1) + ": " +
                                   s.status().message());
    }
    for (size_t j = 0; j < out.size(); ++j) {
      if (out[j] == *s) {
        return common::Status::error("expected unique items but items " + std::to_string(j + 1) +
                                     " and " + std::to_string(i + 1) + " are equal");
      }
    }
    out.push_back(std::move(s).value());
  }
  return out;
}

}  // namespace sluice::schema
