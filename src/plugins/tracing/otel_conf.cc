#include "plugins/tracing/otel_conf.h"

#include <fmt/format.h>

#include <cmath>

#include "schema/checks.h"

namespace sluice::plugins::tracing {

using common::Status;
using common::StatusOr;
using plugin::Json;
using schema::FieldDecoder;

namespace {

StatusOr<SamplerKind> sampler_name(const Json& v, bool with_parent) {
  auto s = with_parent
               ? schema::as_enum(v, {"always_on", "always_off", "trace_id_ratio", "parent_base"})
               : schema::as_enum(v, {"always_on", "always_off", "trace_id_ratio"});
  if (!s.is_ok()) {
    return s.status();
  }
  if (*s == "always_on") {
    return SamplerKind::kAlwaysOn;
  }
  if (*s == "trace_id_ratio") {
    return SamplerKind::kTraceIdRatio;
  }
  return *s == "parent_base" ? SamplerKind::kParentBase : SamplerKind::kAlwaysOff;
}

StatusOr<double> number(const Json& v) {
  if (!v.is_number()) {
    return schema::wrong_type("number", v);
  }
  return v.get<double>();
}

// options.root: {name, options: {fraction}}.
StatusOr<std::pair<SamplerKind, double>> root_sampler(const Json& v) {
  if (!v.is_object()) {
    return schema::wrong_type("object", v);
  }
  std::pair<SamplerKind, double> r{SamplerKind::kAlwaysOff, 0};
  FieldDecoder d(v);
  d.field("name", &r.first, [](const Json& n) { return sampler_name(n, false); });
  d.field("options", &r.second, [](const Json& o) -> StatusOr<double> {
    if (!o.is_object()) {
      return schema::wrong_type("object", o);
    }
    double f = 0;
    FieldDecoder od(o);
    od.field("fraction", &f, number);
    return od.ok() ? StatusOr<double>(f) : od.status();
  });
  return d.ok() ? StatusOr<std::pair<SamplerKind, double>>(r) : d.status();
}

StatusOr<Sampler> sampler(const Json& v) {
  if (!v.is_object()) {
    return schema::wrong_type("object", v);
  }
  Sampler s;
  FieldDecoder d(v);
  d.field("name", &s.kind, [](const Json& n) { return sampler_name(n, true); });
  d.field("options", &s, [&s](const Json& o) -> StatusOr<Sampler> {
    if (!o.is_object()) {
      return schema::wrong_type("object", o);
    }
    Sampler out = s;
    FieldDecoder od(o);
    od.field("fraction", &out.fraction, number);
    std::pair<SamplerKind, double> root{SamplerKind::kAlwaysOff, 0};
    od.field("root", &root, root_sampler);
    out.root = root.first;
    out.root_fraction = root.second;
    return od.ok() ? StatusOr<Sampler>(out) : od.status();
  });
  return d.ok() ? StatusOr<Sampler>(s) : d.status();
}

// An array of non-empty strings (APISIX's schema: no minItems, no uniqueItems).
StatusOr<std::vector<std::string>> names(const Json& v) {
  if (!v.is_array()) {
    return schema::wrong_type("array", v);
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < v.size(); ++i) {
    auto s = schema::as_string(v[i], 1);
    if (!s.is_ok()) {
      return Status::error(
          fmt::format("failed to validate item {}: {}", i + 1, s.status().message()));
    }
    out.push_back(std::move(s).value());
  }
  return out;
}

std::string lower(std::string s) {
  for (char& c : s) {
    c = static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
  }
  return s;
}

// A resource or header value: APISIX takes booleans, numbers and strings.
bool scalar(const Json& v) { return v.is_boolean() || v.is_number() || v.is_string(); }

std::string scalar_text(const Json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

Status collector(const Json& c, OtelAttr* a) {
  if (!c.is_object()) {
    return schema::property_error("collector", schema::wrong_type("object", c));
  }
  std::string address = "127.0.0.1:4318";
  int64_t timeout = 3;
  FieldDecoder d(c);
  d.field("address", &address, [](const Json& v) { return schema::as_string(v); });
  d.field("request_timeout", &timeout, [](const Json& v) { return schema::as_integer(v, 1); });
  if (!d.ok()) {
    return schema::property_error("collector", d.status());
  }
  auto e = parse_endpoint(address, true);
  if (!e.is_ok()) {
    return Status::error("collector.address: " + e.status().message());
  }
  a->collector = std::move(e).value();
  if (a->collector.path == "/") {
    a->collector.path = "/v1/traces";  // OTLP/HTTP's path, as opentelemetry-lua appends it
  }
  a->timeout_ms = static_cast<uint64_t>(timeout) * 1000;
  if (auto h = c.find("request_headers"); h != c.end()) {
    if (!h->is_object()) {
      return Status::error("collector.request_headers: expected an object");
    }
    for (const auto& [k, v] : h->items()) {
      if (!scalar(v) || k.find_first_of("\r\n:") != std::string::npos ||
          scalar_text(v).find_first_of("\r\n") != std::string::npos) {
        return Status::error(fmt::format("collector.request_headers: bad header \"{}\"", k));
      }
      a->request_headers.emplace_back(k, scalar_text(v));
    }
  }
  return Status::ok();
}

Status batch_span_processor(const Json& b, batch::Settings* s) {
  if (!b.is_object()) {
    return schema::property_error("batch_span_processor", schema::wrong_type("object", b));
  }
  // opentelemetry-lua's defaults: 2048 queued, batches of 256, 5 s, 2 s idle.
  bool drop = true;
  int64_t queue = 2048, size = 256;
  double batch_timeout = 5, inactive = 2;
  FieldDecoder d(b);
  d.field("drop_on_queue_full", &drop, schema::as_bool);
  d.field("max_queue_size", &queue, [](const Json& v) { return schema::as_integer(v, 1); });
  d.field("batch_timeout", &batch_timeout,
          [](const Json& v) { return schema::as_number(v, 0, true); });
  d.field("inactive_timeout", &inactive,
          [](const Json& v) { return schema::as_number(v, 0, true); });
  d.field("max_export_batch_size", &size, [](const Json& v) { return schema::as_integer(v, 1); });
  if (!d.ok()) {
    return schema::property_error("batch_span_processor", d.status());
  }
  if (!drop) {
    return Status::error(
        "batch_span_processor.drop_on_queue_full: false is not supported: Sluice never exports "
        "on a worker, a full queue drops (and counts) the span");
  }
  s->max_pending = static_cast<size_t>(queue);
  s->batch_max_size = static_cast<uint32_t>(size);
  s->buffer_duration_ms = static_cast<uint64_t>(std::ceil(batch_timeout * 1000));
  s->inactive_timeout_ms = static_cast<uint64_t>(std::ceil(inactive * 1000));
  return Status::ok();
}

}  // namespace

StatusOr<OtelConf> parse_otel(const Json& conf) {
  if (!conf.is_object()) {
    return schema::wrong_type("object", conf);
  }
  OtelConf c;
  std::vector<std::string> attrs, headers;
  FieldDecoder d(conf);
  d.field("sampler", &c.sampler, sampler);
  d.field("additional_attributes", &attrs, names);
  d.field("additional_header_prefix_attributes", &headers, names);
  if (!d.ok()) {
    return d.status();
  }
  for (std::string& a : attrs) {
    c.vars.push_back({a, router::Var::parse(a)});
  }
  for (const std::string& h : headers) {
    if (h.size() >= 2 && h.back() == '*') {
      c.header_pfxs.push_back(lower(h.substr(0, h.size() - 1)));
    } else {
      c.headers.push_back(lower(h));
    }
  }
  return c;
}

StatusOr<OtelAttr> parse_otel_attr(const Json& attr, const std::string& hostname) {
  OtelAttr a;
  a.batch.name = "opentelemetry";
  a.batch.max_pending = 2048;
  a.batch.batch_max_size = 256;
  a.batch.buffer_duration_ms = 5000;
  a.batch.inactive_timeout_ms = 2000;
  a.collector = parse_endpoint("127.0.0.1:4318/v1/traces", true).value();
  a.resource.push_back({ResourceAttr::Type::kString, "hostname", hostname});
  if (!attr.is_object()) {
    return a;
  }
  if (auto t = attr.find("trace_id_source"); t != attr.end()) {
    auto s = schema::as_enum(*t, {"x-request-id", "random"});
    if (!s.is_ok()) {
      return schema::property_error("trace_id_source", s.status());
    }
    a.trace_id_from_request_id = *s == "x-request-id";
  }
  if (auto r = attr.find("resource"); r != attr.end()) {
    if (!r->is_object()) {
      return schema::property_error("resource", schema::wrong_type("object", *r));
    }
    if (!r->contains("service.name")) {
      a.resource.push_back({ResourceAttr::Type::kString, "service.name", "APISIX"});
    }
    for (const auto& [k, v] : r->items()) {
      if (!scalar(v)) {
        return Status::error(fmt::format("resource.{}: expected a boolean, number or string", k));
      }
      ResourceAttr ra;
      ra.key = k;
      if (v.is_string()) {
        ra.s = v.get<std::string>();
      } else if (v.is_boolean()) {
        ra.type = ResourceAttr::Type::kBool;
        ra.b = v.get<bool>();
      } else {
        ra.type = ResourceAttr::Type::kDouble;
        ra.d = v.get<double>();
      }
      a.resource.push_back(std::move(ra));
    }
  }
  if (auto c = attr.find("collector"); c != attr.end()) {
    if (Status s = collector(*c, &a); !s) {
      return s;
    }
  }
  if (auto b = attr.find("batch_span_processor"); b != attr.end()) {
    if (Status s = batch_span_processor(*b, &a.batch); !s) {
      return s;
    }
  }
  return a;
}

bool sample(const Sampler& s, const uint8_t trace_id[16], int parent_sampled) {
  SamplerKind k = s.kind;
  double fraction = s.fraction;
  if (k == SamplerKind::kParentBase) {
    if (parent_sampled >= 0) {
      return parent_sampled == 1;
    }
    k = s.root;
    fraction = s.root_fraction;
  }
  switch (k) {
    case SamplerKind::kAlwaysOn:
      return true;
    case SamplerKind::kTraceIdRatio: {
      if (fraction >= 1) {
        return true;
      }
      if (!(fraction > 0)) {
        return false;
      }
      // The trace id's lower eight bytes against the fraction of 2^64: one trace, one
      // decision, wherever it is taken.
      uint64_t low = 0;
      for (int i = 8; i < 16; ++i) {
        low = low << 8 | trace_id[i];
      }
      return static_cast<double>(low) < fraction * 18446744073709551616.0;
    }
    default:
      return false;
  }
}

}  // namespace sluice::plugins::tracing
