#include "plugins/response_rewrite/value_template.h"

#include <fmt/format.h>

#include <array>
#include <charconv>

#include "common/strings.h"

namespace sluice::plugins::response_rewrite {

using common::Status;
using common::StatusOr;

namespace {

// PCRE's [\w.] without UTF: ASCII letters, digits, '_' and '.'.
bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.';
}

}  // namespace

ValueTemplate ValueTemplate::literal(std::string text) {
  ValueTemplate t;
  t.text_ = std::move(text);
  return t;
}

StatusOr<ValueTemplate::Part> ValueTemplate::variable(std::string_view name,
                                                      std::string_view fallback, bool has_default) {
  struct Named {
    std::string_view name;
    Source source;
  };
  static constexpr std::array<Named, 8> kContext = {{
      {"route_id", Source::kRouteId},
      {"route_name", Source::kRouteName},
      {"service_id", Source::kServiceId},
      {"service_name", Source::kServiceName},
      {"consumer_name", Source::kConsumerName},
      {"consumer_group_id", Source::kConsumerGroupId},
      {"balancer_ip", Source::kBalancerIp},
      {"balancer_port", Source::kBalancerPort},
  }};
  Part p;
  p.text = std::string(fallback);
  p.has_default = has_default;
  for (const Named& n : kContext) {
    if (n.name == name) {
      p.source = n.source;
      return p;
    }
  }
  p.var = router::Var::parse(name);
  if (p.var.nil()) {
    return Status::error(fmt::format("variable ${} is not supported by Sluice", name));
  }
  if (p.var.reads_request_head()) {
    // The server drops the request head once the request has gone upstream; a value read
    // from it would be empty on every proxied response.
    return Status::error(fmt::format(
        "variable ${} reads the request, which Sluice does not keep for the response phases",
        name));
  }
  p.source = Source::kRouter;
  return p;
}

StatusOr<ValueTemplate> ValueTemplate::parse(std::string_view s) {
  ValueTemplate t;
  t.text_ = std::string(s);
  std::string text;
  std::vector<Part> parts;
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] != '$' || (i > 0 && s[i - 1] == '\\')) {
      text.push_back(s[i++]);
      continue;
    }
    std::string_view name, fallback;
    bool has_default = false;
    size_t end = i + 1;
    if (end < s.size() && s[end] == '{') {
      size_t close = s.find('}', end + 1);
      if (close == std::string_view::npos || close == end + 1) {
        text.push_back(s[i++]);  // "${" without a name and a closing brace is text
        continue;
      }
      std::string_view inner = s.substr(end + 1, close - end - 1);
      size_t q = inner.find("??");
      name = common::trim_ascii_space(inner.substr(0, q));
      if (q != std::string_view::npos) {
        has_default = true;
        fallback = inner.substr(q + 2);
        fallback = common::trim_ascii_space(fallback.substr(0, fallback.find("??")));
      }
      end = close + 1;
    } else {
      while (end < s.size() && is_name_char(s[end])) {
        ++end;
      }
      if (end == i + 1) {
        text.push_back(s[i++]);  // a `$` not followed by a name
        continue;
      }
      name = s.substr(i + 1, end - i - 1);
    }
    auto part = variable(name, fallback, has_default);
    if (!part.is_ok()) {
      return part.status();
    }
    if (!text.empty()) {
      parts.push_back(Part{Source::kText, std::move(text), false, {}});
      text.clear();
    }
    parts.push_back(std::move(part).value());
    i = end;
  }
  if (!parts.empty() && !text.empty()) {
    parts.push_back(Part{Source::kText, std::move(text), false, {}});
  }
  t.parts_ = std::move(parts);
  return t;
}

bool ValueTemplate::lookup(const Part& p, const plugin::Context& ctx, const router::MatchContext& m,
                           router::VarScratch* scratch, std::string_view* out) {
  switch (p.source) {
    case Source::kText:
      return false;
    case Source::kRouter:
      return p.var.find(m, scratch, out);
    case Source::kRouteId:
      *out = ctx.route_id;
      break;
    case Source::kRouteName:
      *out = ctx.route_name;
      break;
    case Source::kServiceId:
      *out = ctx.service_id;
      break;
    case Source::kServiceName:
      *out = ctx.service_name;
      break;
    case Source::kConsumerName:
      *out = ctx.consumer;
      break;
    case Source::kConsumerGroupId:
      *out = ctx.consumer_group_id;
      break;
    case Source::kBalancerIp:
      *out = ctx.upstream_ip;
      break;
    case Source::kBalancerPort:
      if (ctx.upstream_port == 0) {
        return false;
      }
      *out = {scratch->port, static_cast<size_t>(
                                 std::to_chars(scratch->port, scratch->port + sizeof(scratch->port),
                                               ctx.upstream_port)
                                     .ptr -
                                 scratch->port)};
      break;
  }
  return !out->empty();  // APISIX's ctx.var gives nil for these when unset
}

void ValueTemplate::render(const plugin::Context& ctx, const router::MatchContext& m,
                           std::string* out) const {
  if (parts_.empty()) {
    out->assign(text_);
    return;
  }
  out->clear();
  router::VarScratch scratch;
  for (const Part& p : parts_) {
    std::string_view v;
    if (p.source == Source::kText) {
      out->append(p.text);
    } else if (lookup(p, ctx, m, &scratch, &v)) {
      out->append(v);
    } else if (p.has_default) {
      out->append(p.text);
    }
  }
}

}  // namespace sluice::plugins::response_rewrite
