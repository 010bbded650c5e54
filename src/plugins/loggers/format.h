#pragma once
// log_format (a logger's conf or plugin_metadata): JSON keys whose values are literal strings
// or `$variable`s (log-util.lua's gen_log_format / get_custom_format_log). Variables of the
// request head are read while the head is there (Plugin::head); the others when the entry is
// made. A variable Sluice cannot read is refused when the conf is checked, rather than logged
// as nothing.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "plugin/info.h"
#include "plugins/loggers/json_out.h"
#include "router/expr.h"

namespace sluice::plugins::loggers {

// Where one log_format value comes from.
enum class Source : uint8_t {
  kLiteral,
  kObject,  // a nested object of fields (APISIX 3.x: up to five levels)
  kHead,    // a router variable (request head, connection), read in head()
  kRemoteAddr,
  kStatus,
  kRouteId,
  kRouteName,
  kServiceId,
  kServiceName,
  kConsumerName,
  kUpstreamAddr,
  kRequestTime,
  kUpstreamResponseTime,
  kTimeIso8601,
  kTimeLocal,
  kMsec,
  kBytesSent,
  kRequestLength,
  kRequestId,
  kHostname,
};

// Thread: any (immutable)
struct FormatField {
  std::string key;
  Source source = Source::kLiteral;
  std::string literal;                // kLiteral
  router::Var var;                    // kHead
  std::vector<FormatField> children;  // kObject
};

// log_format's nesting Sluice takes (APISIX truncates deeper objects; Sluice refuses them).
inline constexpr int kMaxFormatDepth = 5;

// Thread: any (immutable once compiled)
class LogFormat {
 public:
  // `obj`: {"key": "$var" | "text" | {nested}, ...}. Errors: `log_format: unknown variable
  // "$foo"`, `log_format: the value of "k" is not a string or an object`.
  static common::StatusOr<LogFormat> compile(const plugin::Json& obj);
  bool empty() const { return fields_.empty(); }
  const std::vector<FormatField>& fields() const { return fields_; }
  size_t head_count() const { return head_count_; }

 private:
  std::vector<FormatField> fields_;
  size_t head_count_ = 0;
};

// The values a request's head gives a format's kHead fields, in order, appended to `out`.
void capture_head(const LogFormat& f, const router::MatchContext& m, std::string* out);

// What the entry is made from at the log phase.
// Thread: worker (stack-local)
struct LogInput {
  const plugin::Context* ctx = nullptr;
  std::string_view head;  // capture_head()'s bytes for this format
  std::string_view hostname;
  uint64_t now_ns = 0;  // CLOCK_MONOTONIC, as ctx's times
  int64_t wall_ms = 0;  // the wall clock at now_ns
};

// Appends the entry's JSON members for `f` ("key":"value", comma-separated, no braces); a
// variable that is not there is left out, as a nil is in APISIX's table. Values are strings,
// as ngx.var gives them.
void render_format(const LogFormat& f, const LogInput& in, std::string* out);

}  // namespace sluice::plugins::loggers
