#include "plugins/prometheus/attr.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace sluice::plugins::prometheus {

using common::Status;
using common::StatusOr;

namespace {

// Each family's own labels (and le, the histogram's): an extra label may not repeat one.
constexpr std::array<std::array<std::string_view, 8>, 3> kOwnLabels = {{
    {"code", "route", "matched_uri", "matched_host", "service", "consumer", "node", ""},
    {"type", "route", "service", "consumer", "node", "le", "", ""},
    {"type", "route", "service", "consumer", "node", "", "", ""},
}};

// Prometheus's label name syntax; names starting with __ are reserved.
bool valid_label_name(std::string_view n) {
  if (n.empty() || n.starts_with("__") || (n[0] >= '0' && n[0] <= '9')) {
    return false;
  }
  for (char c : n) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) {
      return false;
    }
  }
  return true;
}

bool own_label(Family f, std::string_view n) {
  for (std::string_view own : kOwnLabels[static_cast<size_t>(f)]) {
    if (!own.empty() && own == n) {
      return true;
    }
  }
  return false;
}

}  // namespace

StatusOr<LabelVar> LabelVar::parse(std::string_view ref) {
  if (ref.size() < 2 || ref[0] != '$') {
    return Status::error(fmt::format("\"{}\" is not a variable: write it as \"$name\"", ref));
  }
  const std::string_view name = ref.substr(1);
  struct Named {
    std::string_view name;
    Kind kind;
  };
  static constexpr std::array<Named, 8> kOwn = {{
      {"status", Kind::kStatus},
      {"route_id", Kind::kRouteId},
      {"route_name", Kind::kRouteName},
      {"service_id", Kind::kServiceId},
      {"service_name", Kind::kServiceName},
      {"consumer_name", Kind::kConsumerName},
      {"consumer_group_id", Kind::kConsumerGroupId},
      {"upstream_addr", Kind::kUpstreamAddr},
  }};
  LabelVar v;
  for (const Named& n : kOwn) {
    if (n.name == name) {
      v.kind_ = n.kind;
      return v;
    }
  }
  // The other response variables need the upstream's head, which is gone by the log phase.
  const bool response = name == "upstream_status" || name.starts_with("sent_http_") ||
                        name.starts_with("upstream_http_");
  v.var_ = router::Var::parse(name);
  if (response || v.var_.nil()) {
    return Status::error(fmt::format("variable \"{}\" is not supported by Sluice", ref));
  }
  return v;
}

std::string_view LabelVar::get(const plugin::Context& ctx, router::VarScratch* scratch,
                               Buf& buf) const {
  std::string_view out;
  switch (kind_) {
    case Kind::kRequest:
      return var_.get(ctx.match, scratch, &out) ? out : std::string_view();
    case Kind::kStatus: {
      auto r = fmt::format_to_n(buf, sizeof(buf), "{}", ctx.status);
      return std::string_view(buf, r.out - buf);
    }
    case Kind::kUpstreamAddr: {
      if (ctx.upstream_port == 0) {
        return {};  // no upstream was tried (nginx: nil)
      }
      const bool v6 = ctx.upstream_ip.find(':') != std::string_view::npos;
      auto r =
          v6 ? fmt::format_to_n(buf, sizeof(buf), "[{}]:{}", ctx.upstream_ip, ctx.upstream_port)
             : fmt::format_to_n(buf, sizeof(buf), "{}:{}", ctx.upstream_ip, ctx.upstream_port);
      return std::string_view(buf, std::min<size_t>(r.size, sizeof(buf)));
    }
    case Kind::kRouteId:
      return ctx.route_id;
    case Kind::kRouteName:
      return ctx.route_name;
    case Kind::kServiceId:
      return ctx.service_id;
    case Kind::kServiceName:
      return ctx.service_name;
    case Kind::kConsumerName:
      return ctx.consumer;
    case Kind::kConsumerGroupId:
      return ctx.consumer_group_id;
  }
  return out;
}

Status check_default_buckets(const plugin::Json& v) {
  if (!v.is_array() || v.empty()) {
    return Status::error("expected a non-empty list of numbers (milliseconds)");
  }
  if (v.size() > 64) {
    return Status::error("at most 64 buckets");
  }
  double prev = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_number() || !std::isfinite(v[i].get<double>()) || v[i].get<double>() <= 0) {
      return Status::error(fmt::format("[{}]: expected a positive number", i));
    }
    if (i > 0 && v[i].get<double>() <= prev) {
      return Status::error(fmt::format("[{}]: the buckets must be strictly increasing", i));
    }
    prev = v[i].get<double>();
  }
  return Status::ok();
}

Status check_extra_labels(const plugin::Json& v, Family f) {
  if (!v.is_array()) {
    return Status::error("expected a list of {label_name: \"$variable\"}");
  }
  if (v.size() > kMaxExtraLabels) {
    return Status::error(fmt::format("at most {} extra labels", kMaxExtraLabels));
  }
  std::vector<std::string> seen;
  for (size_t i = 0; i < v.size(); ++i) {
    const plugin::Json& kv = v[i];
    if (!kv.is_object() || kv.size() != 1 || !kv.begin().value().is_string()) {
      return Status::error(fmt::format("[{}]: expected one {{label_name: \"$variable\"}}", i));
    }
    const std::string& name = kv.begin().key();
    if (!valid_label_name(name)) {
      return Status::error(fmt::format("[{}]: \"{}\" is not a Prometheus label name", i, name));
    }
    if (own_label(f, name) || std::find(seen.begin(), seen.end(), name) != seen.end()) {
      return Status::error(fmt::format("[{}]: label \"{}\" is already in {}", i, name,
                                       kFamilyKeys[static_cast<size_t>(f)]));
    }
    seen.push_back(name);
    if (auto var = LabelVar::parse(kv.begin().value().get<std::string>()); !var.is_ok()) {
      return Status::error(fmt::format("[{}].{}: {}", i, name, var.status().message()));
    }
  }
  return Status::ok();
}

Status check_expire(const plugin::Json& v) {
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0 ||
      v.get<double>() > kMaxExpireSeconds) {
    return Status::error(
        fmt::format("expected a number of seconds from 0 (never) to {}", kMaxExpireSeconds));
  }
  return Status::ok();
}

namespace {

// metrics.<family>.expire in milliseconds, or -1 when unset.
int64_t expire_ms_of(const plugin::Json& attr, size_t f) {
  auto m = attr.find("metrics");
  if (m == attr.end() || !m->is_object()) {
    return -1;
  }
  auto fam = m->find(std::string(kFamilyKeys[f]));
  if (fam == m->end() || !fam->is_object()) {
    return -1;
  }
  auto e = fam->find("expire");
  if (e == fam->end() || !check_expire(*e)) {
    return -1;
  }
  return static_cast<int64_t>(std::llround(e->get<double>() * 1000));
}

}  // namespace

Status check_expires(const plugin::Json& attr) {
  int64_t agreed = -1;
  size_t first = 0;
  for (size_t f = 0; f < kFamilyKeys.size(); ++f) {
    const int64_t e = expire_ms_of(attr, f);
    if (e < 0) {
      continue;
    }
    if (agreed >= 0 && e != agreed) {
      return Status::error(fmt::format(
          "{}.expire and {}.expire differ: Sluice expires a route's status, latency and "
          "bandwidth label sets together, so they must be equal",
          kFamilyKeys[first], kFamilyKeys[f]));
    }
    agreed = e;
    first = f;
  }
  return Status::ok();
}

Attr read_attr(const plugin::Json& attr) {
  Attr a;
  auto layout = std::make_shared<metrics::HttpLayout>();
  for (size_t f = 0; f < kFamilyKeys.size(); ++f) {
    if (const int64_t e = expire_ms_of(attr, f); e > 0 && check_expires(attr)) {
      layout->expire_ms = static_cast<uint64_t>(e);
    }
  }
  if (auto c = attr.find("route_accounting"); c != attr.end() && c->is_boolean()) {
    a.cpu = c->get<bool>();
  }
  layout->cpu = a.cpu;
  if (auto b = attr.find("default_buckets"); b != attr.end() && check_default_buckets(*b)) {
    layout->bounds = b->get<std::vector<double>>();
  }
  std::array<std::vector<std::string>*, 3> names = {&layout->status_extra, &layout->latency_extra,
                                                    &layout->bandwidth_extra};
  auto m = attr.find("metrics");
  for (size_t f = 0; m != attr.end() && m->is_object() && f < kFamilyKeys.size(); ++f) {
    auto fam = m->find(std::string(kFamilyKeys[f]));
    if (fam == m->end() || !fam->is_object() || !fam->contains("extra_labels")) {
      continue;
    }
    const plugin::Json& list = (*fam)["extra_labels"];
    if (!check_extra_labels(list, static_cast<Family>(f))) {
      continue;
    }
    for (const plugin::Json& kv : list) {
      names[f]->push_back(kv.begin().key());
      a.vars[f].push_back(*LabelVar::parse(kv.begin().value().get<std::string>()));
      a.reads_head = a.reads_head || a.vars[f].back().reads_request_head();
    }
  }
  a.layout = std::move(layout);
  return a;
}

}  // namespace sluice::plugins::prometheus
