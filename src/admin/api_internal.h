#pragma once
// Pieces shared by the Admin API's read and write halves.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "admin/api.h"

namespace sluice::admin {

// Thread: control (stack-local)
struct Api::Call {
  const server::AdminRequest& req;
  const Kind* kind = nullptr;
  std::string id{};        // from the URL; empty when absent
  std::string sub_path{};  // after the id ("upstream/nodes"); empty when absent
  // For a consumer's credentials: the store prefix GET lists ("/apisix/consumers/jack/
  // credentials/"); empty for every other list.
  std::string list_prefix{};
};

// A stored entry as answered: `secret_kind` names the rows of secret_fields() that apply
// ("credentials" for a credential, else the kind's name).
config::Json entry_json(std::string_view secret_kind, const store::Entry& e);

// The body of a write, parsed: `invalid request body: ...`; with `object_only`, anything but
// an object is `invalid configuration: ...`.
common::StatusOr<config::Json> parse_body(const std::string& body, bool object_only);
// APISIX's check_forbidden_properties: `the property is forbidden:  create_time`.
common::Status server_set_fields(const config::Json& obj);
// `?ttl=N`: 0 when absent.
common::StatusOr<int64_t> ttl_arg(std::string_view query);
// An id in a body as text (see api_write.cc); nullopt when absent, "" when not a valid id.
std::optional<std::string> body_id(const config::Json& obj, const char* field);

server::AdminResponse json_reply(int status, const config::Json& body);
server::AdminResponse error_reply(int status, std::string_view message);
server::AdminResponse key_not_found();
// The store failed: 503 with its message.
server::AdminResponse store_error(const common::Status& st);
// A query parameter, percent-decoded.
std::optional<std::string> query_value(std::string_view query, std::string_view name);
// Compact JSON for a response or the store; invalid UTF-8 is replaced, never thrown on.
std::string dump(const config::Json& j);

}  // namespace sluice::admin
