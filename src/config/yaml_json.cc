#include "config/yaml_json.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string_view>

namespace sluice::config {

namespace {

using common::Status;
using common::StatusOr;

// Aliases share nodes, so a small file can expand exponentially ("billion laughs"); a
// configuration never needs more than this many values or this much nesting.
constexpr size_t kMaxValues = 1'000'000;
constexpr int kMaxDepth = 128;

constexpr std::string_view kTagStr = "tag:yaml.org,2002:str";
constexpr std::string_view kTagPrefix = "tag:yaml.org,2002:";

std::string where(const std::string& source, const YAML::Mark& mark) {
  if (mark.is_null()) {
    return source + ": ";
  }
  return fmt::format("{}: line {}, column {}: ", source, mark.line + 1, mark.column + 1);
}

std::optional<Json> parse_integer(std::string_view s) {
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o')) {
    base = s[1] == 'x' ? 16 : 8;
    s.remove_prefix(2);
  }
  if (s.empty()) {
    return std::nullopt;
  }
  uint64_t u = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), u, base);
  if (end != s.data() + s.size()) {
    return std::nullopt;
  }
  if (ec == std::errc::result_out_of_range) {
    return std::nullopt;  // the caller falls back to a float
  }
  if (!negative) {
    return u <= static_cast<uint64_t>(INT64_MAX) ? Json(static_cast<int64_t>(u)) : Json(u);
  }
  if (u > static_cast<uint64_t>(INT64_MAX) + 1) {
    return std::nullopt;
  }
  return Json(static_cast<int64_t>(0 - u));
}

bool is_float_syntax(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) {
    ++i;
  }
  size_t digits = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
    ++i, ++digits;
  }
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      ++i, ++digits;
    }
  }
  if (digits == 0) {
    return false;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) {
      ++i;
    }
    size_t exp_digits = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      ++i, ++exp_digits;
    }
    if (exp_digits == 0) {
      return false;
    }
  }
  return i == s.size();
}

// YAML 1.2 core-schema resolution of a plain scalar. `.inf` and `.nan` stay strings: JSON
// cannot carry them and no configuration value wants them.
Json resolve_plain(const std::string& s) {
  if (s == "true" || s == "True" || s == "TRUE") {
    return true;
  }
  if (s == "false" || s == "False" || s == "FALSE") {
    return false;
  }
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") {
    return nullptr;
  }
  if (auto i = parse_integer(s)) {
    return *i;
  }
  if (is_float_syntax(s)) {
    double d = std::strtod(s.c_str(), nullptr);
    if (std::isfinite(d)) {
      return d;
    }
  }
  return s;
}

Json resolve_scalar(const YAML::Node& node) {
  const std::string& tag = node.Tag();
  if (tag == "?") {
    return resolve_plain(node.Scalar());
  }
  if (tag == "!" || tag == kTagStr || tag.rfind(kTagPrefix, 0) != 0) {
    return node.Scalar();
  }
  return resolve_plain(node.Scalar());  // an explicit !!int, !!bool, ... tag
}

class Converter {
 public:
  explicit Converter(const std::string& source) : source_(source) {}

  StatusOr<Json> convert(const YAML::Node& node, int depth) {
    if (++values_ > kMaxValues) {
      return Status::error(where(source_, node.Mark()) +
                           "too many values (aliases expand to more than 1000000)");
    }
    if (depth > kMaxDepth) {
      return Status::error(where(source_, node.Mark()) + "nesting deeper than 128 levels");
    }
    switch (node.Type()) {
      case YAML::NodeType::Scalar:
        return resolve_scalar(node);
      case YAML::NodeType::Sequence:
        return convert_sequence(node, depth);
      case YAML::NodeType::Map:
        return convert_map(node, depth);
      default:
        return Json(nullptr);
    }
  }

 private:
  StatusOr<Json> convert_sequence(const YAML::Node& node, int depth) {
    Json out = Json::array();
    for (const auto& item : node) {
      auto v = convert(item, depth + 1);
      if (!v.is_ok()) {
        return v;
      }
      out.push_back(std::move(v).value());
    }
    return out;
  }

  StatusOr<Json> convert_map(const YAML::Node& node, int depth) {
    Json out = Json::object();
    for (const auto& kv : node) {
      if (!kv.first.IsScalar() && !kv.first.IsNull()) {
        return Status::error(where(source_, kv.first.Mark()) + "a mapping key must be a scalar");
      }
      std::string key = kv.first.IsNull() ? "" : kv.first.Scalar();
      if (out.contains(key)) {
        return Status::error(where(source_, kv.first.Mark()) +
                             fmt::format("duplicate key \"{}\"", key));
      }
      auto v = convert(kv.second, depth + 1);
      if (!v.is_ok()) {
        return v;
      }
      out[key] = std::move(v).value();
    }
    return out;
  }

  const std::string& source_;
  size_t values_ = 0;
};

}  // namespace

StatusOr<Json> yaml_to_json(const std::string& text, const std::string& source_name) {
  try {
    YAML::Node root = YAML::Load(text);
    return Converter(source_name).convert(root, 0);
  } catch (const YAML::Exception& e) {
    return Status::error(where(source_name, e.mark) + e.msg);
  } catch (const std::exception& e) {
    return Status::error(source_name + ": " + e.what());
  }
}

}  // namespace sluice::config
