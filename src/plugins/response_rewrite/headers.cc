#include "plugins/response_rewrite/headers.h"

#include <fmt/format.h>

#include <cstdio>

#include "http/message.h"

namespace sluice::plugins::response_rewrite {

using common::Status;
using common::StatusOr;
using plugin::Json;

namespace {

constexpr const char* kNoneOf = "object matches none of the required";

// The schema's "^[^:]+$": one character or more, no colon.
bool plain_name(std::string_view s) { return !s.empty() && s.find(':') == std::string_view::npos; }

// The schema's "^[^:]+:[^:]+[^/]$" for an `add` item.
bool add_pattern(std::string_view s) {
  if (s.size() < 4 || s.back() == '/') {
    return false;
  }
  std::string_view rest = s.substr(0, s.size() - 1);
  size_t colon = rest.find(':');
  return colon != std::string_view::npos && colon > 0 && colon + 1 < rest.size() &&
         rest.find(':', colon + 1) == std::string_view::npos;
}

bool string_or_number(const Json& v) { return v.is_string() || v.is_number(); }

// The anyOf's first branch: the flat form.
bool flat_form(const Json& v) {
  if (!v.is_object() || v.empty()) {
    return false;
  }
  for (const auto& [k, val] : v.items()) {
    if (plain_name(k) && !string_or_number(val)) {
      return false;
    }
  }
  return true;
}

bool string_items(const Json& v, bool (*pattern)(std::string_view)) {
  if (!v.is_array() || v.empty()) {
    return false;
  }
  for (const Json& item : v) {
    if (!item.is_string() || !pattern(item.get_ref<const std::string&>())) {
      return false;
    }
  }
  return true;
}

// The anyOf's second branch: add / set / remove, each checked when present. (APISIX's branch
// has no type, so a non-object passes it and then breaks its check_schema; Sluice says no.)
bool operations_form(const Json& v) {
  if (!v.is_object()) {
    return false;
  }
  if (v.contains("add") && !string_items(v["add"], add_pattern)) {
    return false;
  }
  if (v.contains("set")) {
    const Json& set = v["set"];
    if (!set.is_object() || set.empty()) {
      return false;
    }
    for (const auto& [k, val] : set.items()) {
      if (plain_name(k) && !string_or_number(val)) {
        return false;
      }
    }
  }
  return !v.contains("remove") || string_items(v["remove"], plain_name);
}

// APISIX's is_new_headers_conf: add, set or remove holds a table (array or object).
bool is_operations(const Json& v) {
  for (const char* k : {"add", "set", "remove"}) {
    if (v.contains(k) && (v[k].is_array() || v[k].is_object())) {
      return true;
    }
  }
  return false;
}

// RFC 9110 5.6.2 tchar.
bool is_token(std::string_view s) {
  if (s.empty()) {
    return false;
  }
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    if (!ok) {
      return false;
    }
  }
  return true;
}

Status check_name(std::string_view name) {
  if (!is_token(name)) {
    return Status::error(fmt::format("invalid header name \"{}\"", name));
  }
  if (http::is_hop_by_hop(name) || http::iequals(name, "content-length")) {
    return Status::error(
        fmt::format("header \"{}\" cannot be changed: Sluice frames the response itself", name));
  }
  return Status::ok();
}

// Lua's tostring() of a JSON number ("%.14g"), as ngx.header gets it.
std::string number_text(const Json& v) {
  if (v.is_number_integer() && v.get<int64_t>() > -100000000000000 &&
      v.get<int64_t>() < 100000000000000) {
    return std::to_string(v.get<int64_t>());
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.14g", v.get<double>());
  return buf;
}

StatusOr<HeaderField> field(std::string_view name, std::string_view value) {
  if (Status s = check_name(name); !s.is_ok()) {
    return s;
  }
  for (char c : value) {
    if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f) {
      return Status::error(fmt::format("the value of header \"{}\" has a control character", name));
    }
  }
  auto t = ValueTemplate::parse(value);
  if (!t.is_ok()) {
    return Status::error(fmt::format("header \"{}\": {}", name, t.status().message()));
  }
  return HeaderField{std::string(name), std::move(t).value()};
}

StatusOr<HeaderField> set_field(const std::string& name, const Json& value) {
  if (value.is_number()) {
    if (Status s = check_name(name); !s.is_ok()) {
      return s;
    }
    return HeaderField{name, ValueTemplate::literal(number_text(value))};
  }
  return field(name, value.get_ref<const std::string&>());
}

// "X-A : v" -> {"X-A", "v"}, by APISIX's `^([^:\s]+)\s*:\s*([^:]+)$`; false where APISIX's
// match fails and it would apply none of the header operations.
bool split_add(std::string_view item, std::string_view* name, std::string_view* value) {
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f'; };
  size_t colon = item.find(':');
  size_t end = colon;
  while (end > 0 && space(item[end - 1])) {
    --end;
  }
  *name = item.substr(0, end);
  if (name->empty()) {
    return false;
  }
  for (char c : *name) {
    if (space(c)) {
      return false;
    }
  }
  size_t v = colon + 1;
  while (v < item.size() && space(item[v])) {
    ++v;
  }
  *value = item.substr(v);
  return !value->empty() && value->find(':') == std::string_view::npos;
}

StatusOr<HeaderOps> build_operations(const Json& v) {
  HeaderOps ops;
  if (v.contains("add") && v["add"].is_array()) {
    for (const Json& item : v["add"]) {
      std::string_view name, value;
      if (!split_add(item.get_ref<const std::string&>(), &name, &value)) {
        return Status::error(fmt::format("headers.add: \"{}\" is not \"name: value\"",
                                         item.get_ref<const std::string&>()));
      }
      auto f = field(name, value);
      if (!f.is_ok()) {
        return f.status();
      }
      ops.add.push_back(std::move(f).value());
    }
  }
  if (v.contains("set") && v["set"].is_object()) {
    for (const auto& [k, val] : v["set"].items()) {
      if (!string_or_number(val)) {
        return Status::error("invalid type as header value");
      }
      auto f = set_field(k, val);
      if (!f.is_ok()) {
        return f.status();
      }
      ops.set.push_back(std::move(f).value());
    }
  }
  if (v.contains("remove") && v["remove"].is_array()) {
    for (const Json& item : v["remove"]) {
      const std::string& name = item.get_ref<const std::string&>();
      if (Status s = check_name(name); !s.is_ok()) {
        return s;
      }
      ops.remove.push_back(name);
    }
  }
  return ops;
}

}  // namespace

Status check_headers_schema(const Json& v) {
  if (flat_form(v) || operations_form(v)) {
    return Status::ok();
  }
  return Status::error(kNoneOf);
}

StatusOr<HeaderOps> build_headers(const Json& v) {
  if (is_operations(v)) {
    return build_operations(v);
  }
  // APISIX's check_set_headers, then the fields in name order.
  for (const auto& [k, val] : v.items()) {
    if (!string_or_number(val)) {
      return Status::error("invalid type as header value");
    }
    if (k.empty()) {
      return Status::error("invalid field length in header");
    }
  }
  HeaderOps ops;
  for (const auto& [k, val] : v.items()) {
    auto f = set_field(k, val);
    if (!f.is_ok()) {
      return f.status();
    }
    ops.set.push_back(std::move(f).value());
  }
  return ops;
}

}  // namespace sluice::plugins::response_rewrite
