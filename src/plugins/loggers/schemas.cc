// The loggers' JSON schemas for GET /apisix/admin/plugins/{name}: APISIX 3.x's, with the batch
// processor's properties merged in as batch-processor-manager's wrap_schema does.

#include <string>

#include "plugins/loggers/conf.h"

namespace sluice::plugins::loggers {

namespace {

std::string batch_props(std::string_view name) {
  return std::string(R"("name": {"type": "string", "default": ")") + std::string(name) +
         R"("},
    "max_retry_count": {"type": "integer", "minimum": 0, "default": 0},
    "retry_delay": {"type": "integer", "minimum": 0, "default": 1},
    "buffer_duration": {"type": "integer", "minimum": 1, "default": 60},
    "inactive_timeout": {"type": "integer", "minimum": 1, "default": 5},
    "batch_max_size": {"type": "integer", "minimum": 1, "default": 1000},
    )";
}

constexpr const char* kBodyProps = R"("log_format": {"type": "object"},
    "include_req_body": {"type": "boolean", "default": false},
    "include_req_body_expr": {"type": "array", "minItems": 1, "items": {"type": "array"}},
    "include_resp_body": {"type": "boolean", "default": false},
    "include_resp_body_expr": {"type": "array", "minItems": 1, "items": {"type": "array"}},
    "max_req_body_bytes": {"type": "integer", "minimum": 1, "default": 524288},
    "max_resp_body_bytes": {"type": "integer", "minimum": 1, "default": 524288})";

constexpr const char* kHttp = R"({"type": "object", "properties": {
    "uri": {"type": "string", "pattern": "^[^\\/]+:\\/\\/([\\da-zA-Z.-]+|\\[[\\da-fA-F:]+\\])(:\\d+)?"},
    "auth_header": {"type": "string"},
    "timeout": {"type": "integer", "minimum": 1, "default": 3},
    "concat_method": {"type": "string", "default": "json", "enum": ["json", "new_line"]},
    "ssl_verify": {"type": "boolean", "default": false},
    )";

constexpr const char* kTcp = R"({"type": "object", "properties": {
    "host": {"type": "string"},
    "port": {"type": "integer", "minimum": 0},
    "tls": {"type": "boolean", "default": false},
    "tls_options": {"type": "string"},
    "timeout": {"type": "integer", "minimum": 1, "default": 1000},
    )";

constexpr const char* kUdp = R"({"type": "object", "properties": {
    "host": {"type": "string"},
    "port": {"type": "integer", "minimum": 0},
    "timeout": {"type": "integer", "minimum": 1, "default": 3},
    )";

constexpr const char* kSyslog = R"({"type": "object", "properties": {
    "host": {"type": "string"},
    "port": {"type": "integer"},
    "flush_limit": {"type": "integer", "minimum": 1, "default": 4096},
    "drop_limit": {"type": "integer", "default": 1048576},
    "timeout": {"type": "integer", "minimum": 1, "default": 3000},
    "sock_type": {"type": "string", "default": "tcp", "enum": ["tcp", "udp"]},
    "pool_size": {"type": "integer", "minimum": 5, "default": 5},
    "tls": {"type": "boolean", "default": false},
    )";

constexpr const char* kFile = R"({"type": "object", "properties": {
    "path": {"type": "string"},
    )";

std::string make(Kind kind) {
  std::string s;
  switch (kind) {
    case Kind::kHttp:
      s = kHttp;
      break;
    case Kind::kTcp:
      s = kTcp;
      break;
    case Kind::kUdp:
      s = kUdp;
      break;
    case Kind::kSyslog:
      s = kSyslog;
      break;
    case Kind::kFile:
      s = kFile;
      break;
  }
  if (kind != Kind::kFile) {
    s += batch_props(default_batch_name(kind));
  }
  s += kBodyProps;
  s += kind == Kind::kHttp   ? "},\n  \"required\": [\"uri\"]}"
       : kind == Kind::kFile ? "},\n  \"required\": [\"path\"]}"
                             : "},\n  \"required\": [\"host\", \"port\"]}";
  return s;
}

}  // namespace

std::string_view schema(Kind kind) {
  static const std::string kAll[] = {make(Kind::kHttp), make(Kind::kTcp), make(Kind::kUdp),
                                     make(Kind::kFile), make(Kind::kSyslog)};
  return kAll[static_cast<int>(kind)];
}

}  // namespace sluice::plugins::loggers
