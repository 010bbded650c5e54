#include "plugins/proxy_rewrite/header_ops.h"

#include "http/message.h"
#include "plugins/proxy_rewrite/lua_text.h"

namespace sluice::plugins::proxy_rewrite {

using common::Status;
using common::StatusOr;
using plugin::Json;

namespace {

// The schema's patternProperties `^[^:]+$`: only such names have their values checked.
bool plain_name(const std::string& k) { return !k.empty() && k.find(':') == std::string::npos; }

bool scalar(const Json& v) { return v.is_string() || v.is_number(); }

// An object of at least one field whose plain names hold strings or numbers.
bool value_map(const Json& v) {
  if (!v.is_object() || v.empty()) {
    return false;
  }
  for (const auto& [k, x] : v.items()) {
    if (plain_name(k) && !scalar(x)) {
      return false;
    }
  }
  return true;
}

bool matches_verbs(const Json& h) {
  if (!h.is_object() || h.empty()) {
    return false;
  }
  for (const auto& [k, v] : h.items()) {
    if (k == "add" || k == "set") {
      if (!value_map(v)) {
        return false;
      }
    } else if (k == "remove") {
      if (!v.is_array() || v.empty()) {
        return false;
      }
      for (const Json& n : v) {
        if (!n.is_string() || !plain_name(n.get_ref<const std::string&>())) {
          return false;
        }
      }
    } else {
      return false;  // additionalProperties: false
    }
  }
  return true;
}

// core.utils.validate_header_field: '!' .. '~' except ':'.
bool valid_field(std::string_view name) {
  for (char ch : name) {
    auto c = static_cast<unsigned char>(ch);
    if (c <= 32 || c >= 127 || c == ':') {
      return false;
    }
  }
  return true;
}

// core.utils.validate_header_value: no control byte, nothing from DEL up.
bool apisix_valid_value(std::string_view v) {
  for (char ch : v) {
    auto c = static_cast<unsigned char>(ch);
    if (c < 32 || c >= 127) {
      return false;
    }
  }
  return true;
}

// What can go on the wire (RFC 9110 field-value): no control byte but HTAB, no DEL.
bool sendable_value(std::string_view v) {
  for (char ch : v) {
    auto c = static_cast<unsigned char>(ch);
    if ((c < 32 && c != '\t') || c == 127) {
      return false;
    }
  }
  return true;
}

// The checks APISIX makes on the flat form, in its order.
Status check_flat(const Json& h) {
  for (const auto& [k, v] : h.items()) {
    if (!scalar(v)) {
      return Status::error("invalid type as header value");
    }
    if (k.empty()) {
      return Status::error("invalid field length in header");
    }
    if (!valid_field(k)) {
      return Status::error("invalid field character in header");
    }
    if (v.is_string() && !apisix_valid_value(v.get_ref<const std::string&>())) {
      return Status::error("invalid value character in header");
    }
  }
  return Status::ok();
}

// Sluice's own refusals, for a name in `where` ("headers", "headers.set", ...).
Status check_name(std::string_view where, const std::string& name) {
  if (name.empty() || !valid_field(name)) {
    return Status::error(std::string(where) + ": invalid field character in header " +
                         lua_quoted(name));
  }
  if (http::iequals(name, "host")) {
    return Status::error(std::string(where) +
                         ": \"Host\" cannot be rewritten through headers; use the \"host\" "
                         "field of proxy-rewrite");
  }
  if (http::is_hop_by_hop(name) || http::iequals(name, "content-length") ||
      http::iequals(name, "expect")) {
    return Status::error(std::string(where) + ": " + lua_quoted(name) +
                         " is written by the gateway itself (framing or hop-by-hop); Sluice "
                         "does not let a plugin rewrite it");
  }
  return Status::ok();
}

Status add_values(std::string_view where, const Json& map, std::vector<HeaderValue>* out) {
  for (const auto& [k, v] : map.items()) {
    if (Status s = check_name(where, k); !s.is_ok()) {
      return s;
    }
    if (!scalar(v)) {
      return Status::error(std::string(where) + ": invalid type as header value for " +
                           lua_quoted(k));
    }
    std::string text = v.is_string() ? v.get<std::string>() : lua_number_text(v);
    if (!sendable_value(text)) {
      return Status::error(std::string(where) + ": invalid value character in header " +
                           lua_quoted(k));
    }
    auto t = Template::parse(text, true);
    if (!t.is_ok()) {
      return Status::error(std::string(where) + "[" + lua_quoted(k) + "]: " + t.status().message());
    }
    out->push_back({k, std::move(t).value()});
  }
  return Status::ok();
}

}  // namespace

Status check_headers_schema(const Json& headers) {
  if (matches_verbs(headers) || value_map(headers)) {
    return Status::ok();  // the two can never both match: a verb's value is never a scalar
  }
  return Status::error(
      "property \"headers\" validation failed: value should match only one schema, but "
      "matches none");
}

StatusOr<HeaderOps> parse_headers(const Json& headers) {
  HeaderOps ops;
  if (!matches_verbs(headers)) {
    if (Status s = check_flat(headers); !s.is_ok()) {
      return s;
    }
    if (Status s = add_values("headers", headers, &ops.set); !s.is_ok()) {
      return s;
    }
    return ops;
  }
  if (headers.contains("add")) {
    if (Status s = add_values("headers.add", headers["add"], &ops.add); !s.is_ok()) {
      return s;
    }
  }
  if (headers.contains("set")) {
    if (Status s = add_values("headers.set", headers["set"], &ops.set); !s.is_ok()) {
      return s;
    }
  }
  if (headers.contains("remove")) {
    for (const Json& n : headers["remove"]) {
      const auto& name = n.get_ref<const std::string&>();
      if (Status s = check_name("headers.remove", name); !s.is_ok()) {
        return s;
      }
      ops.remove.push_back(name);
    }
  }
  return ops;
}

}  // namespace sluice::plugins::proxy_rewrite
