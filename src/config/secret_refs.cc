#include "config/secret_refs.h"

#include <fmt/format.h>

#include <cstdlib>

#include "http/message.h"

namespace sluice::config {

namespace {

bool has_prefix_ci(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && http::iequals(s.substr(0, prefix.size()), prefix);
}

bool is_ref(std::string_view s) {
  return has_prefix_ci(s, "$env://") || has_prefix_ci(s, "$secret://");
}

bool resolve_one(const std::string& ref, std::string* out, std::string* why) {
  if (has_prefix_ci(ref, "$secret://")) {
    *why = fmt::format("cannot resolve {}: no secret manager is served", ref);
    return false;
  }
  std::string_view path = std::string_view(ref).substr(7);
  std::string_view name = path, field;
  if (size_t slash = path.find('/'); slash != std::string_view::npos) {
    name = path.substr(0, slash);
    field = path.substr(slash + 1);
  }
  const char* val = name.empty() ? nullptr : std::getenv(std::string(name).c_str());
  if (val == nullptr) {
    *why = fmt::format("cannot resolve {}: environment variable {} is not set", ref, name);
    return false;
  }
  if (field.empty()) {
    *out = val;
    return true;
  }
  Json obj = Json::parse(val, nullptr, false);
  auto it = obj.is_object() ? obj.find(field) : obj.end();
  if (it == obj.end() || !it->is_string()) {
    *why = fmt::format("cannot resolve {}: environment variable {} has no string field {}", ref,
                       name, field);
    return false;
  }
  *out = it->get<std::string>();
  return true;
}

}  // namespace

bool has_secret_refs(const Json& conf) {
  if (conf.is_string()) {
    return is_ref(conf.get_ref<const std::string&>());
  }
  if (conf.is_object() || conf.is_array()) {
    for (const Json& v : conf) {
      if (has_secret_refs(v)) {
        return true;
      }
    }
  }
  return false;
}

bool resolve_secret_refs(Json* conf, std::string* why) {
  if (conf->is_string()) {
    const std::string& s = conf->get_ref<const std::string&>();
    if (!is_ref(s)) {
      return true;
    }
    std::string value;
    if (!resolve_one(s, &value, why)) {
      return false;
    }
    *conf = std::move(value);
    return true;
  }
  if (conf->is_object() || conf->is_array()) {
    for (Json& v : *conf) {
      if (!resolve_secret_refs(&v, why)) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace sluice::config
