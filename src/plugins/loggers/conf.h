#pragma once
// The logger plugins' confs, typed and checked with the texts of APISIX 3.x's schemas
// (apisix/plugins/{http,tcp,udp,file}-logger.lua, syslog.lua), the batch processor's fields
// each of them but file-logger takes (apisix/utils/batch-processor.lua, merged in by
// batch-processor-manager's wrap_schema), and their plugin_metadata (log_format,
// max_pending_entries).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "batch/processor.h"
#include "common/status.h"
#include "plugin/info.h"
#include "plugins/loggers/format.h"
#include "router/expr.h"

namespace sluice::plugins::loggers {

enum class Kind : uint8_t { kHttp, kTcp, kUdp, kFile, kSyslog };

// What the entry holds besides the request line and headers (log-util.lua's get_full_log).
// Thread: any (immutable)
struct BodyConf {
  bool include_req_body = false;
  router::Expr req_body_expr;  // include_req_body_expr; empty: always
  bool include_resp_body = false;
  router::Expr resp_body_expr;         // include_resp_body_expr; empty: always
  size_t max_req_body_bytes = 524288;  // longer bodies are logged cut to this
  size_t max_resp_body_bytes = 524288;
};

// http-logger's uri, split.
// Thread: any (immutable)
struct Uri {
  bool https = false;
  std::string host;         // without brackets for an IPv6 literal
  uint16_t port = 0;        // 80 / 443 when the uri names none
  std::string host_header;  // host[:port] as the uri has it
  std::string path = "/";   // with the query, as sent in the request line
};

// One logger's conf: the union of the five plugins' fields (each parses its own).
// Thread: any (immutable)
struct Conf {
  Kind kind = Kind::kHttp;
  batch::Settings batch;
  BodyConf body;
  LogFormat log_format;  // the conf's own; empty: plugin_metadata's or the full log
  // http-logger
  Uri uri;
  std::string auth_header;
  std::string concat_method = "json";
  bool ssl_verify = false;
  // tcp-logger, udp-logger, syslog
  std::string host;
  uint16_t port = 0;
  bool tls = false;
  std::string tls_server_name;  // tcp-logger's tls_options (APISIX passes it as the SNI)
  bool udp = false;             // syslog's sock_type
  uint64_t timeout_ms = 3000;
  // file-logger
  std::string path;
};

// plugin_metadata of a logger: log_format (the default entry's replacement) and the cap.
// Thread: any (immutable)
struct Metadata {
  LogFormat log_format;
  size_t max_pending = batch::kDefaultMaxPending;
};

// Errors are the text after APISIX's `... plugin http-logger err: `, e.g.
// `property "uri" is required`, `property "batch_max_size" validation failed: expected 0 to be
// at least 1`.
common::StatusOr<Conf> parse(Kind kind, const plugin::Json& conf);
common::StatusOr<Metadata> parse_metadata(const plugin::Json& meta);
common::Status check(Kind kind, const plugin::Json& conf, plugin::PluginUse use);

// The plugin's name, and the batch processor's default name (APISIX's manager names).
std::string_view plugin_name(Kind kind);
std::string_view default_batch_name(Kind kind);
std::string_view schema(Kind kind);

}  // namespace sluice::plugins::loggers
