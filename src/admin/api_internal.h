#pragma once
// Pieces shared by the Admin API's read and write halves.

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
};

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
