#include "plugins/tracing/zipkin_conf.h"

#include <fmt/format.h>

#include <regex>

#include "schema/checks.h"

namespace sluice::plugins::tracing {

using common::Status;
using common::StatusOr;
using plugin::Json;
using schema::FieldDecoder;

namespace {

constexpr const char* kAddrPattern = "^[0-9]{1,3}.[0-9]{1,3}.[0-9]{1,3}.[0-9]{1,3}$";

StatusOr<double> ratio(const Json& v) {
  auto d = schema::as_number(v, 0.00001, false);
  if (!d.is_ok()) {
    return d.status();
  }
  if (*d > 1) {
    return Status::error(fmt::format("expected {:g} to be at most 1", *d));
  }
  return d;
}

StatusOr<std::string> server_addr(const Json& v) {
  auto s = schema::as_string(v);
  if (!s.is_ok()) {
    return s.status();
  }
  static const std::regex kRe(kAddrPattern);
  if (!std::regex_search(*s, kRe)) {
    return Status::error(
        fmt::format("failed to match pattern \"{}\" with \"{}\"", kAddrPattern, *s));
  }
  return s;
}

StatusOr<int> span_version(const Json& v) {
  if (!v.is_number_integer() || (v.get<int64_t>() != 1 && v.get<int64_t>() != 2)) {
    return Status::error("matches none of the enum values");
  }
  return static_cast<int>(v.get<int64_t>());
}

}  // namespace

StatusOr<ZipkinConf> parse_zipkin(const Json& conf) {
  if (!conf.is_object()) {
    return schema::wrong_type("object", conf);
  }
  ZipkinConf c;
  std::string endpoint;
  int version = 2;
  FieldDecoder d(conf);
  d.require({"endpoint", "sample_ratio"});
  d.field("endpoint", &endpoint, [](const Json& v) { return schema::as_string(v); });
  d.field("sample_ratio", &c.sample_ratio, ratio);
  d.field("service_name", &c.service_name, [](const Json& v) { return schema::as_string(v); });
  d.field("server_addr", &c.server_addr, server_addr);
  d.field("span_version", &version, span_version);
  if (!d.ok()) {
    return d.status();
  }
  if (version == 1) {
    return Status::error(
        "span_version 1 (the rewrite, access, proxy and body_filter spans) is not supported by "
        "Sluice: use 2");
  }
  auto e = parse_endpoint(endpoint, false);
  if (!e.is_ok()) {
    return Status::error("endpoint: " + e.status().message());
  }
  c.endpoint = std::move(e).value();
  return c;
}

const char* const kZipkinSchema = R"({"type": "object", "properties": {
  "endpoint": {"type": "string"},
  "sample_ratio": {"type": "number", "minimum": 0.00001, "maximum": 1},
  "service_name": {"type": "string", "description": "service name for zipkin reporter",
                   "default": "APISIX"},
  "server_addr": {"type": "string",
                  "description": "default is $server_addr, you can specify your external ip address",
                  "pattern": "^[0-9]{1,3}.[0-9]{1,3}.[0-9]{1,3}.[0-9]{1,3}$"},
  "span_version": {"enum": [1, 2], "default": 2}},
  "required": ["endpoint", "sample_ratio"]})";

}  // namespace sluice::plugins::tracing
