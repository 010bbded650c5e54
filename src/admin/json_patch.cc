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

bool nesting_within(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
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
  bool in_string = false;
  bool escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (in_string && !escaped && c >= 0x01 && c < 0x20) {
      if (!out) {
        out.emplace(text.substr(0, i));
      }
      *out += fmt::format("\\u{:04x}", c);
      continue;
    }
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    }
    if (out) {
      out->push_back(static_cast<char>(c));
    }
  }
  return out;
}

}  // namespace sluice::admin
