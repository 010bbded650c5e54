#include "plugins/loggers/format.h"

#include <fmt/format.h>

#include <cstring>
#include <ctime>
#include <utility>

namespace sluice::plugins::loggers {

using common::Status;
using common::StatusOr;

namespace {

// The variables known only once the request has ended, by name.
constexpr std::pair<std::string_view, Source> kLogVars[] = {
    {"remote_addr", Source::kRemoteAddr},
    {"status", Source::kStatus},
    {"route_id", Source::kRouteId},
    {"route_name", Source::kRouteName},
    {"service_id", Source::kServiceId},
    {"service_name", Source::kServiceName},
    {"consumer_name", Source::kConsumerName},
    {"upstream_addr", Source::kUpstreamAddr},
    {"request_time", Source::kRequestTime},
    {"upstream_response_time", Source::kUpstreamResponseTime},
    {"time_iso8601", Source::kTimeIso8601},
    {"time_local", Source::kTimeLocal},
    {"msec", Source::kMsec},
    {"bytes_sent", Source::kBytesSent},
    {"request_length", Source::kRequestLength},
    {"request_id", Source::kRequestId},
    {"hostname", Source::kHostname},
};

StatusOr<FormatField> field(const std::string& key, const plugin::Json& v, int depth,
                            size_t* head_count) {
  FormatField f;
  f.key = key;
  if (v.is_object()) {
    if (depth >= kMaxFormatDepth) {
      return Status::error(fmt::format("log_format: \"{}\" nests objects deeper than {} levels",
                                       key, kMaxFormatDepth));
    }
    f.source = Source::kObject;
    for (const auto& [k, child] : v.items()) {
      auto c = field(k, child, depth + 1, head_count);
      if (!c.is_ok()) {
        return c.status();
      }
      f.children.push_back(std::move(c).value());
    }
    return f;
  }
  if (!v.is_string()) {
    return Status::error(
        fmt::format("log_format: the value of \"{}\" is not a string or an object", key));
  }
  const auto& text = v.get_ref<const std::string&>();
  if (text.empty() || text[0] != '$') {
    f.literal = text;
    return f;
  }
  const std::string_view name = std::string_view(text).substr(1);
  for (const auto& [n, src] : kLogVars) {
    if (n == name) {
      f.source = src;
      return f;
    }
  }
  if (std::string_view why = router::body_var_reason(name); !why.empty()) {
    return Status::error(fmt::format("log_format: variable \"{}\": {}", text, why));
  }
  f.var = router::Var::parse(name);
  if (f.var.nil()) {
    return Status::error(fmt::format("log_format: unknown variable \"{}\"", text));
  }
  f.source = Source::kHead;
  ++*head_count;
  return f;
}

void append_u32(std::string* out, uint32_t n) { out->append(reinterpret_cast<char*>(&n), 4); }

// The next value capture_head() wrote at `*at`; false when it was not there.
bool next_head(std::string_view in, size_t* at, std::string_view* out) {
  if (*at + 5 > in.size()) {
    return false;
  }
  const bool found = in[*at] != 0;
  uint32_t n = 0;
  std::memcpy(&n, in.data() + *at + 1, 4);
  n = std::min<uint32_t>(n, static_cast<uint32_t>(in.size() - *at - 5));
  *out = in.substr(*at + 5, n);
  *at += 5 + n;
  return found;
}

std::string seconds3(uint64_t ns) { return fmt::format("{:.3f}", static_cast<double>(ns) / 1e9); }

std::string wall_text(int64_t wall_ms, bool iso) {
  const time_t t = static_cast<time_t>(wall_ms / 1000);
  struct tm tm {};
  localtime_r(&t, &tm);
  char buf[64];
  if (iso) {
    size_t n = strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S%z", &tm);
    std::string s(buf, n);
    if (s.size() >= 5) {
      s.insert(s.size() - 2, ":");  // +0200 -> +02:00, as nginx's $time_iso8601
    }
    return s;
  }
  size_t n = strftime(buf, sizeof(buf), "%d/%b/%Y:%H:%M:%S %z", &tm);
  return std::string(buf, n);
}

// The value of a log-time variable; false when it is not there (nil).
bool log_value(Source s, const LogInput& in, std::string* out) {
  const plugin::Context& c = *in.ctx;
  auto view = [&](std::string_view v) {
    out->assign(v);
    return !v.empty();
  };
  switch (s) {
    case Source::kRemoteAddr:
      return view(c.match.remote_addr);
    case Source::kStatus:
      *out = std::to_string(c.status);
      return true;
    case Source::kRouteId:
      return view(c.route_id);
    case Source::kRouteName:
      return view(c.route_name);
    case Source::kServiceId:
      return view(c.service_id);
    case Source::kServiceName:
      return view(c.service_name);
    case Source::kConsumerName:
      return view(c.consumer);
    case Source::kUpstreamAddr:
      if (c.upstream_ip.empty()) {
        return false;
      }
      *out = c.upstream_ip.find(':') != std::string_view::npos
                 ? fmt::format("[{}]:{}", c.upstream_ip, c.upstream_port)
                 : fmt::format("{}:{}", c.upstream_ip, c.upstream_port);
      return true;
    case Source::kRequestTime:
      *out = seconds3(in.now_ns > c.start_ns ? in.now_ns - c.start_ns : 0);
      return true;
    case Source::kUpstreamResponseTime:
      if (c.upstream_start_ns == 0) {
        return false;
      }
      *out =
          seconds3((c.upstream_end_ns != 0 ? c.upstream_end_ns : in.now_ns) - c.upstream_start_ns);
      return true;
    case Source::kTimeIso8601:
      *out = wall_text(in.wall_ms, true);
      return true;
    case Source::kTimeLocal:
      *out = wall_text(in.wall_ms, false);
      return true;
    case Source::kMsec:
      *out = fmt::format("{}.{:03}", in.wall_ms / 1000, in.wall_ms % 1000);
      return true;
    case Source::kBytesSent:
      *out = std::to_string(c.bytes_out);
      return true;
    case Source::kRequestLength:
      *out = std::to_string(c.bytes_in);
      return true;
    case Source::kRequestId:
      return view(c.request_id);
    case Source::kHostname:
      return view(in.hostname);
    case Source::kLiteral:
    case Source::kObject:
    case Source::kHead:
      break;
  }
  return false;
}

}  // namespace

StatusOr<LogFormat> LogFormat::compile(const plugin::Json& obj) {
  LogFormat f;
  if (!obj.is_object()) {
    return Status::error("log_format: expected an object");
  }
  for (const auto& [k, v] : obj.items()) {
    auto fld = field(k, v, 1, &f.head_count_);
    if (!fld.is_ok()) {
      return fld.status();
    }
    f.fields_.push_back(std::move(fld).value());
  }
  return f;
}

namespace {

void capture_fields(const std::vector<FormatField>& fields, const router::MatchContext& m,
                    std::string* out) {
  router::VarScratch scratch;
  for (const FormatField& fld : fields) {
    if (fld.source == Source::kObject) {
      capture_fields(fld.children, m, out);
      continue;
    }
    if (fld.source != Source::kHead) {
      continue;
    }
    std::string_view v;
    const bool found = fld.var.find(m, &scratch, &v);
    out->push_back(found ? 1 : 0);
    append_u32(out, static_cast<uint32_t>(v.size()));
    out->append(v);
  }
}

// Appends the members of `fields`; the head values are taken from `in.head` at `*at`.
void render_fields(const std::vector<FormatField>& fields, const LogInput& in, size_t* at,
                   std::string* out) {
  std::string value;
  bool first = true;
  for (const FormatField& fld : fields) {
    std::string_view v;
    bool found = true;
    if (fld.source == Source::kObject) {
      if (!first) {
        out->push_back(',');
      }
      first = false;
      append_json_string(out, fld.key);
      out->append(":{");
      render_fields(fld.children, in, at, out);
      out->push_back('}');
      continue;
    }
    if (fld.source == Source::kLiteral) {
      v = fld.literal;
    } else if (fld.source == Source::kHead) {
      found = next_head(in.head, at, &v);
    } else {
      found = log_value(fld.source, in, &value);
      v = value;
    }
    if (!found) {
      continue;
    }
    if (!first) {
      out->push_back(',');
    }
    first = false;
    append_json_string(out, fld.key);
    out->push_back(':');
    append_json_string(out, v);
  }
}

}  // namespace

void capture_head(const LogFormat& f, const router::MatchContext& m, std::string* out) {
  capture_fields(f.fields(), m, out);
}

void render_format(const LogFormat& f, const LogInput& in, std::string* out) {
  size_t at = 0;
  render_fields(f.fields(), in, &at, out);
}

}  // namespace sluice::plugins::loggers
