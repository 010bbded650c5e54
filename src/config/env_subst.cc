#include "config/env_subst.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string_view>

#include "config/yaml_json.h"

namespace sluice::config {

namespace {

using common::Status;
using common::StatusOr;

constexpr std::string_view kOpen = "${{";
constexpr std::string_view kClose = "}}";

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) {
    s.remove_prefix(1);
  }
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) {
    s.remove_suffix(1);
  }
  return s;
}

bool valid_var_name(std::string_view name) {
  if (name.empty()) {
    return false;
  }
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') {
      return false;
    }
  }
  return true;
}

struct Reference {
  std::string name;
  std::optional<std::string> fallback;
};

// `inner` is the text between `${{` and `}}`; nullopt when it is not a reference.
std::optional<Reference> parse_reference(std::string_view inner) {
  Reference ref;
  size_t assign = inner.find(":=");
  std::string_view name = trim(inner.substr(0, assign));
  if (!valid_var_name(name)) {
    return std::nullopt;
  }
  ref.name = std::string(name);
  if (assign != std::string_view::npos) {
    ref.fallback = std::string(trim(inner.substr(assign + 2)));
  }
  return ref;
}

struct Substituted {
  std::string text;
  bool used = false;
};

StatusOr<Substituted> substitute(const std::string& text) {
  Substituted out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t open = text.find(kOpen, pos);
    size_t close = open == std::string::npos ? open : text.find(kClose, open + kOpen.size());
    if (close == std::string::npos) {
      out.text.append(text, pos, std::string::npos);
      break;
    }
    size_t inner_begin = open + kOpen.size();
    auto ref = parse_reference(std::string_view(text).substr(inner_begin, close - inner_begin));
    if (!ref) {
      out.text.append(text, pos, inner_begin - pos);
      pos = inner_begin;
      continue;
    }
    const char* value = std::getenv(ref->name.c_str());
    if (value == nullptr && !ref->fallback) {
      return Status::error("can't find environment variable " + ref->name);
    }
    out.text.append(text, pos, open - pos);
    out.text += value != nullptr ? std::string(value) : *ref->fallback;
    out.used = true;
    pos = close + kClose.size();
  }
  return out;
}

// APISIX re-types a substituted value with Lua's tonumber() and "true"/"false".
nlohmann::json retype(const std::string& s) {
  if (s == "true" || s == "false") {
    return s == "true";
  }
  std::string_view t = trim(s);
  if (!t.empty()) {
    auto typed = yaml_to_json(std::string(t), "env");
    if (typed.is_ok() && typed->is_number()) {
      return *typed;
    }
  }
  return s;
}

Status substitute_strings(nlohmann::json* node);

Status substitute_object(nlohmann::json* node) {
  nlohmann::json out = nlohmann::json::object();
  for (auto& [key, value] : node->items()) {
    auto new_key = substitute(key);
    if (!new_key.is_ok()) {
      return new_key.status();
    }
    Status s = substitute_strings(&value);
    if (!s.is_ok()) {
      return s;
    }
    out[new_key->text] = std::move(value);
  }
  *node = std::move(out);
  return Status::ok();
}

Status substitute_strings(nlohmann::json* node) {
  if (node->is_object()) {
    return substitute_object(node);
  }
  if (node->is_array()) {
    for (auto& item : *node) {
      Status s = substitute_strings(&item);
      if (!s.is_ok()) {
        return s;
      }
    }
    return Status::ok();
  }
  if (node->is_string()) {
    auto r = substitute(node->get_ref<const std::string&>());
    if (!r.is_ok()) {
      return r.status();
    }
    if (r->used) {
      *node = retype(r->text);
    }
  }
  return Status::ok();
}

}  // namespace

StatusOr<std::string> substitute_env(const std::string& text) {
  auto r = substitute(text);
  if (!r.is_ok()) {
    return r.status();
  }
  return std::move(r->text);
}

Status substitute_env_in_document(nlohmann::json* doc) {
  try {
    return substitute_strings(doc);
  } catch (const std::exception& e) {
    return Status::error(e.what());
  }
}

StatusOr<nlohmann::json> load_config_document(const std::string& text, const char* source) {
  auto doc = yaml_to_json(text, source);
  if (!doc.is_ok()) {
    return doc.status();
  }
  Status s = substitute_env_in_document(&doc.value());
  if (!s.is_ok()) {
    return Status::error(
        fmt::format("{}: failed to handle configuration: {}", source, s.message()));
  }
  return doc;
}

}  // namespace sluice::config
