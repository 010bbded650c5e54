#include "accesslog/format.h"

#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <climits>

namespace sluice::accesslog {

namespace {

using common::Status;

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c | 0x20);
    }
  }
  return out;
}

struct Named {
  std::string_view name;
  Var var;
};

// Variables the gateway knows at the end of a request. route_id .. consumer_name are APISIX's
// ctx variables (apisix/core/ctx.lua), which its logger plugins print; nginx's own access log
// does not know them.
constexpr std::array<Named, 26> kEnd = {{
    {"status", Var::kStatus},
    {"body_bytes_sent", Var::kBodyBytesSent},
    {"bytes_sent", Var::kBytesSent},
    {"request_length", Var::kRequestLength},
    {"request_time", Var::kRequestTime},
    {"msec", Var::kMsec},
    {"time_local", Var::kTimeLocal},
    {"time_iso8601", Var::kTimeIso8601},
    {"upstream_addr", Var::kUpstreamAddr},
    {"upstream_status", Var::kUpstreamStatus},
    {"upstream_response_time", Var::kUpstreamResponseTime},
    {"upstream_connect_time", Var::kUpstreamConnectTime},
    {"upstream_header_time", Var::kUpstreamHeaderTime},
    {"upstream_scheme", Var::kUpstreamScheme},
    {"upstream_host", Var::kUpstreamHost},
    {"upstream_uri", Var::kUpstreamUri},
    {"server_addr", Var::kServerAddr},
    {"remote_port", Var::kRemotePort},
    {"request_id", Var::kRequestId},
    {"route_id", Var::kRouteId},
    {"route_name", Var::kRouteName},
    {"service_id", Var::kServiceId},
    {"service_name", Var::kServiceName},
    {"consumer_name", Var::kConsumerName},
    {"hostname", Var::kHostname},
    {"pid", Var::kPid},
}};

// nginx's names for what the router knows by another.
constexpr std::array<std::pair<std::string_view, std::string_view>, 3> kAliases = {{
    {"content_length", "http_content_length"},
    {"content_type", "http_content_type"},
    {"document_uri", "uri"},
}};

}  // namespace

bool parse_escape(std::string_view text, Escape* out) {
  if (text == "default") {
    *out = Escape::kDefault;
  } else if (text == "json") {
    *out = Escape::kJson;
  } else if (text == "none") {
    *out = Escape::kNone;
  } else {
    return false;
  }
  return true;
}

uint32_t Format::add_head(HeadVar::Kind kind, std::string_view name, router::Var var) {
  for (size_t i = 0; i < head_names_.size(); ++i) {
    if (head_names_[i] == name) {
      return static_cast<uint32_t>(i);
    }
  }
  head_vars_.push_back({kind, std::move(var)});
  head_names_.emplace_back(name);
  return static_cast<uint32_t>(head_vars_.size() - 1);
}

Status Format::add_var(std::string_view raw) {
  std::string name = lower(raw);
  for (const auto& [alias, real] : kAliases) {
    if (name == alias) {
      name = real;
    }
  }
  for (const Named& n : kEnd) {
    if (n.name == name) {
      parts_.push_back({n.var, 0, 0});
      used_ |= uint64_t{1} << static_cast<unsigned>(n.var);
      if (n.var == Var::kUpstreamHost && host_slot_ < 0) {
        host_slot_ = static_cast<int>(
            add_head(HeadVar::Kind::kRouter, "http_host", router::Var::parse("http_host")));
      }
      if (n.var == Var::kHostname && hostname_.empty()) {
        char host[HOST_NAME_MAX + 1] = {0};
        gethostname(host, sizeof(host) - 1);
        hostname_ = host;
      }
      return Status::ok();
    }
  }
  HeadVar::Kind kind = HeadVar::Kind::kRouter;
  if (name == "request") {
    kind = HeadVar::Kind::kRequest;
  } else if (name == "server_protocol") {
    kind = HeadVar::Kind::kServerProtocol;
  } else if (name == "remote_user") {
    kind = HeadVar::Kind::kRemoteUser;
  } else if (name == "is_args") {
    kind = HeadVar::Kind::kIsArgs;
  }
  if (kind != HeadVar::Kind::kRouter) {
    parts_.push_back({Var::kHead, add_head(kind, name), 0});
    return Status::ok();
  }
  if (name.starts_with("sent_http_") || name.starts_with("upstream_http_")) {
    return Status::error(fmt::format(
        "\"{}\": response header variables are not available in the access log (the response "
        "head is not kept until the line is written)",
        raw));
  }
  router::Var var = router::Var::parse(name);
  if (var.nil()) {
    return Status::error(fmt::format("unknown \"{}\" variable", raw));
  }
  if (var.reads_request_head()) {
    parts_.push_back({Var::kHead, add_head(HeadVar::Kind::kRouter, name, std::move(var)), 0});
  } else {
    conn_vars_.push_back(std::move(var));
    parts_.push_back({Var::kConn, static_cast<uint32_t>(conn_vars_.size() - 1), 0});
  }
  return Status::ok();
}

common::StatusOr<Format> Format::compile(std::string_view text, Escape escape) {
  Format f;
  f.escape_ = escape;
  size_t i = 0;
  while (i < text.size()) {
    size_t dollar = text.find('$', i);
    size_t end = dollar == std::string_view::npos ? text.size() : dollar;
    if (end > i) {
      f.parts_.push_back({Var::kLiteral, static_cast<uint32_t>(f.literals_.size()),
                          static_cast<uint32_t>(end - i)});
      f.literals_.append(text.substr(i, end - i));
    }
    if (dollar == std::string_view::npos) {
      break;
    }
    size_t at = dollar + 1;
    bool braced = at < text.size() && text[at] == '{';
    at += braced ? 1 : 0;
    size_t name_end = at;
    while (name_end < text.size() && name_char(text[name_end])) {
      ++name_end;
    }
    if (name_end == at) {
      return Status::error(fmt::format("invalid variable name at offset {}", dollar));
    }
    if (braced && (name_end == text.size() || text[name_end] != '}')) {
      return Status::error(fmt::format("the closing bracket in \"{}\" variable is missing",
                                       text.substr(at, name_end - at)));
    }
    if (Status s = f.add_var(text.substr(at, name_end - at)); !s.is_ok()) {
      return s;
    }
    i = name_end + (braced ? 1 : 0);
  }
  return f;
}

}  // namespace sluice::accesslog
