#include "admin/json_patch.h"

#include <fmt/format.h>

namespace sluice::admin {

using common::Status;
using config::Json;

void merge_patch(Json& target, const Json& patch) {
  if (!patch.is_object() || !target.is_object()) {
    target = patch;
    return;
  }
  for (const auto& [k, v] : patch.items()) {
    if (v.is_null()) {
      target.erase(k);
    } else if (v.is_object() && target.contains(k) && target[k].is_object()) {
      merge_patch(target[k], v);
    } else {
      target[k] = v;
    }
  }
}

Status patch_at(Json& target, std::string_view sub_path, Json value) {
  Json* at = &target;
  std::string_view rest = sub_path;
  while (true) {
    size_t slash = rest.find('/');
    std::string step(rest.substr(0, slash));
    if (step.empty()) {
      return Status::error(fmt::format("invalid sub path [{}]", sub_path));
    }
    if (!at->is_object()) {
      return Status::error(
          fmt::format("invalid sub path [{}]: [{}] is not an object", sub_path, step));
    }
    if (slash == std::string_view::npos) {
      if (value.is_null()) {
        at->erase(step);
      } else {
        (*at)[step] = std::move(value);
      }
      return Status::ok();
    }
    at = &(*at)[step];  // a missing step becomes an empty object, as APISIX does
    if (at->is_null()) {
      *at = Json::object();
    }
    rest.remove_prefix(slash + 1);
  }
}

namespace {

// Where a byte of JSON text stands, for the scans below: inside a string (escapes followed) or
// not.
struct JsonScan {
  bool in_string = false;
  bool escaped = false;

  // Feeds `c`: true when it stands outside every string and is not a quote.
  bool outside(char c) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      return false;
    }
    in_string = c == '"';
    return !in_string;
  }
};

}  // namespace

bool nesting_within(std::string_view text, int max_depth) {
  int depth = 0;
  JsonScan scan;
  for (char c : text) {
    if (!scan.outside(c)) {
      continue;
    }
    if (c == '{' || c == '[') {
      if (++depth > max_depth) {
        return false;
      }
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return true;
}

std::optional<std::string> escape_raw_controls(std::string_view text) {
  std::optional<std::string> out;
  JsonScan scan;
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (scan.in_string && !scan.escaped && c >= 0x01 && c < 0x20) {
      if (!out) {
        out.emplace(text.substr(0, i));
      }
      *out += fmt::format("\\u{:04x}", c);
      continue;
    }
    scan.outside(static_cast<char>(c));
    if (out) {
      out->push_back(static_cast<char>(c));
    }
  }
  return out;
}

}  // namespace sluice::admin
