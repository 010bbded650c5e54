// decode_checks: APISIX's health_checker schema (core/schema.lua), field by field, with its
// defaults. `passive` without `active` is refused with the anyOf error APISIX gives.

#include "config/upstream_checks.h"

#include <fmt/format.h>

#include "config/field_decoder.h"

namespace sluice::config {

using common::Status;
using common::StatusOr;
using health::ProbeType;
using health::StatusSet;

namespace {

StatusOr<ProbeType> as_probe_type(const Json& v) {
  auto s = as_enum(v, {"http", "https", "tcp"});
  if (!s) {
    return s.status();
  }
  return *s == "tcp" ? ProbeType::kTcp : *s == "https" ? ProbeType::kHttps : ProbeType::kHttp;
}

// An array of at least one unique integer in [200, 599].
StatusOr<StatusSet> as_statuses(const Json& v) {
  if (!v.is_array()) {
    return wrong_type("array", v);
  }
  if (v.empty()) {
    return Status::error("expect array to have at least 1 items");
  }
  StatusSet out;
  for (size_t i = 0; i < v.size(); ++i) {
    auto s = as_integer(v[i], 200, 599);
    if (!s) {
      return Status::error(
          fmt::format("failed to validate item {}: {}", i + 1, s.status().message()));
    }
    for (size_t j = 0; j < i; ++j) {
      if (v[j] == v[i]) {
        return Status::error(
            fmt::format("expected unique items but items {} and {} are equal", j + 1, i + 1));
      }
    }
    out.add(static_cast<int>(*s));
  }
  return out;
}

StatusOr<std::vector<std::string>> as_header_lines(const Json& v) {
  if (!v.is_array()) {
    return wrong_type("array", v);
  }
  if (v.empty()) {
    return Status::error("expect array to have at least 1 items");
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < v.size(); ++i) {
    auto s = as_string(v[i]);
    if (!s) {
      return Status::error(
          fmt::format("failed to validate item {}: {}", i + 1, s.status().message()));
    }
    if (s->find_first_of("\r\n") != std::string::npos) {  // would split the probe's request
      return Status::error(
          fmt::format("failed to validate item {}: line breaks are not allowed", i + 1));
    }
    out.push_back(std::move(s).value());
  }
  return out;
}

auto threshold(int64_t min) {
  return [min](const Json& v) -> StatusOr<int> {
    auto n = as_integer(v, min, 254);
    if (!n) {
      return n.status();
    }
    return static_cast<int>(*n);
  };
}

StatusOr<int> as_interval(const Json& v) {
  auto n = as_integer(v, 1);
  if (!n) {
    return n.status();
  }
  return static_cast<int>(*n);
}

StatusOr<health::ActiveChecks::Healthy> as_active_healthy(const Json& v) {
  if (!v.is_object()) {
    return wrong_type("object", v);
  }
  health::ActiveChecks::Healthy h;
  FieldDecoder d(v);
  d.field("interval", &h.interval, as_interval);
  d.field("http_statuses", &h.http_statuses, as_statuses);
  d.field("successes", &h.successes, threshold(1));
  return d.ok() ? StatusOr<health::ActiveChecks::Healthy>(h) : d.status();
}

StatusOr<health::ActiveChecks::Unhealthy> as_active_unhealthy(const Json& v) {
  if (!v.is_object()) {
    return wrong_type("object", v);
  }
  health::ActiveChecks::Unhealthy u;
  FieldDecoder d(v);
  d.field("interval", &u.interval, as_interval);
  d.field("http_statuses", &u.http_statuses, as_statuses);
  d.field("http_failures", &u.http_failures, threshold(1));
  d.field("tcp_failures", &u.tcp_failures, threshold(1));
  d.field("timeouts", &u.timeouts, threshold(1));
  return d.ok() ? StatusOr<health::ActiveChecks::Unhealthy>(u) : d.status();
}

StatusOr<health::ActiveChecks> as_active(const Json& v) {
  if (!v.is_object()) {
    return wrong_type("object", v);
  }
  health::ActiveChecks a;
  FieldDecoder d(v);
  d.field("type", &a.type, as_probe_type);
  d.field("timeout", &a.timeout, [](const Json& x) { return as_number(x, -1e308, false); });
  d.field("concurrency", &a.concurrency, [](const Json& x) -> StatusOr<int> {
    auto n = as_integer(x);
    return n ? StatusOr<int>(static_cast<int>(*n)) : n.status();
  });
  d.field("host", &a.host, as_host);
  d.field("port", &a.port, [](const Json& x) -> StatusOr<int> {
    auto n = as_integer(x, 1, 65535);
    return n ? StatusOr<int>(static_cast<int>(*n)) : n.status();
  });
  d.field("http_path", &a.http_path, [](const Json& x) { return as_string(x); });
  d.field("https_verify_certificate", &a.https_verify_certificate, as_bool);
  d.field("healthy", &a.healthy, as_active_healthy);
  d.field("unhealthy", &a.unhealthy, as_active_unhealthy);
  d.field("req_headers", &a.req_headers, as_header_lines);
  if (d.ok() && (a.http_path.empty() || a.http_path[0] != '/' ||
                 a.http_path.find_first_of("\r\n ") != std::string::npos)) {
    d.fail(R"(property "http_path" validation failed: must be a path starting with "/")");
  }
  return d.ok() ? StatusOr<health::ActiveChecks>(a) : d.status();
}

StatusOr<health::PassiveChecks::Healthy> as_passive_healthy(const Json& v) {
  if (!v.is_object()) {
    return wrong_type("object", v);
  }
  health::PassiveChecks::Healthy h;
  FieldDecoder d(v);
  d.field("http_statuses", &h.http_statuses, as_statuses);
  d.field("successes", &h.successes, threshold(0));
  return d.ok() ? StatusOr<health::PassiveChecks::Healthy>(h) : d.status();
}

StatusOr<health::PassiveChecks::Unhealthy> as_passive_unhealthy(const Json& v) {
  if (!v.is_object()) {
    return wrong_type("object", v);
  }
  health::PassiveChecks::Unhealthy u;
  FieldDecoder d(v);
  d.field("http_statuses", &u.http_statuses, as_statuses);
  d.field("tcp_failures", &u.tcp_failures, threshold(0));
  d.field("timeouts", &u.timeouts, threshold(0));
  d.field("http_failures", &u.http_failures, threshold(0));
  return d.ok() ? StatusOr<health::PassiveChecks::Unhealthy>(u) : d.status();
}

StatusOr<health::PassiveChecks> as_passive(const Json& v) {
  if (!v.is_object()) {
    return wrong_type("object", v);
  }
  health::PassiveChecks p;
  FieldDecoder d(v);
  d.field("type", &p.type, as_probe_type);
  d.field("healthy", &p.healthy, as_passive_healthy);
  d.field("unhealthy", &p.unhealthy, as_passive_unhealthy);
  return d.ok() ? StatusOr<health::PassiveChecks>(p) : d.status();
}

}  // namespace

StatusOr<health::Checks> decode_checks(const Json& v) {
  if (!v.is_object()) {
    return wrong_type("object", v);
  }
  health::Checks c;
  FieldDecoder d(v);
  d.only({"active", "passive"});
  d.field("active", &c.active, as_active);
  d.field("passive", &c.passive,
          [](const Json& x) -> StatusOr<std::optional<health::PassiveChecks>> {
            auto p = as_passive(x);
            if (!p) {
              return p.status();
            }
            return std::optional<health::PassiveChecks>(std::move(p).value());
          });
  if (d.ok() && !d.has("active")) {
    d.fail(R"(object matches none of the required: ["active"] or ["active","passive"])");
  }
  if (!d.ok()) {
    return d.status();
  }
  return c;
}

}  // namespace sluice::config
