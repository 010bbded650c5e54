#include "plugins/traffic_split/config.h"

#include <fmt/format.h>

#include "router/expr.h"
#include "schema/checks.h"

namespace sluice::plugins::traffic_split {

using common::Status;
using common::StatusOr;
using plugin::Json;
using schema::FieldDecoder;

namespace {

Status item_error(size_t i, const Status& inner) {
  return Status::error(fmt::format("failed to validate item {}: {}", i + 1, inner.message()));
}

// APISIX's schema_def.id_schema: a string of 1..64 of [a-zA-Z0-9-_.], or an integer >= 1.
StatusOr<std::string> id_value(const Json& v) {
  if (v.is_number()) {
    if (auto i = schema::as_integer(v, 1, INT64_MAX); i.is_ok()) {
      return std::to_string(*i);
    }
  } else if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    bool ok = !s.empty() && s.size() <= 64;
    for (char c : s) {
      ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.');
    }
    if (ok) {
      return s;
    }
  }
  return Status::error("object matches none of the required");
}

StatusOr<Json> upstream_value(const Json& v) {
  if (!v.is_object()) {
    return schema::wrong_type("object", v);
  }
  if (Status s = plugin::check_upstream(v); !s.is_ok()) {
    return s;
  }
  return v;
}

StatusOr<WeightedUpstream> weighted_value(const Json& v) {
  if (!v.is_object()) {
    return schema::wrong_type("object", v);
  }
  WeightedUpstream w;
  FieldDecoder d(v);
  d.field("upstream_id", &w.upstream_id, id_value);
  d.field("upstream", &w.upstream, upstream_value);
  d.field("weight", &w.weight, [](const Json& x) { return schema::as_integer(x, 0, INT64_MAX); });
  if (!d.ok()) {
    return d.status();
  }
  return w;
}

StatusOr<std::vector<WeightedUpstream>> weighted_list(const Json& v) {
  if (!v.is_array()) {
    return schema::wrong_type("array", v);
  }
  if (v.empty()) {
    return Status::error("expect array to have at least 1 items");
  }
  if (v.size() > 20) {
    return Status::error("expect array to have at most 20 items");
  }
  std::vector<WeightedUpstream> out;
  for (size_t i = 0; i < v.size(); ++i) {
    auto w = weighted_value(v[i]);
    if (!w.is_ok()) {
      return item_error(i, w.status());
    }
    out.push_back(std::move(w).value());
  }
  return out;
}

StatusOr<std::vector<Json>> match_list(const Json& v) {
  if (!v.is_array()) {
    return schema::wrong_type("array", v);
  }
  std::vector<Json> out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_object()) {
      return item_error(i, schema::wrong_type("object", v[i]));
    }
    Json vars;
    FieldDecoder d(v[i]);
    d.field("vars", &vars, [](const Json& x) -> StatusOr<Json> {
      if (!x.is_array()) {
        return schema::wrong_type("array", x);
      }
      return x;
    });
    if (!d.ok()) {
      return item_error(i, d.status());
    }
    out.push_back(std::move(vars));
  }
  return out;
}

StatusOr<Rule> rule_value(const Json& v) {
  if (!v.is_object()) {
    return schema::wrong_type("object", v);
  }
  Rule r;
  FieldDecoder d(v);
  d.only({"match", "weighted_upstreams"});
  d.field("match", &r.match, match_list);
  d.field("weighted_upstreams", &r.weighted_upstreams, weighted_list);
  if (!d.ok()) {
    return d.status();
  }
  r.has_match = v.contains("match");
  return r;
}

StatusOr<std::vector<Rule>> rule_list(const Json& v) {
  if (!v.is_array()) {
    return schema::wrong_type("array", v);
  }
  std::vector<Rule> out;
  for (size_t i = 0; i < v.size(); ++i) {
    auto r = rule_value(v[i]);
    if (!r.is_ok()) {
      return item_error(i, r.status());
    }
    out.push_back(std::move(r).value());
  }
  return out;
}

}  // namespace

StatusOr<Conf> parse(const Json& conf) {
  if (!conf.is_object()) {
    return schema::wrong_type("object", conf);
  }
  Conf c;
  FieldDecoder d(conf);
  d.only({"rules"});
  d.field("rules", &c.rules, rule_list);
  if (!d.ok()) {
    return d.status();
  }
  // After the schema, APISIX's check_schema compiles each match's vars.
  for (const Rule& r : c.rules) {
    for (const Json& vars : r.match) {
      if (vars.is_null()) {
        continue;
      }
      if (auto e = router::Expr::compile(vars); !e.is_ok()) {
        return e.status();
      }
    }
  }
  return c;
}

Status check(const Json& conf, plugin::PluginUse /*use*/) {
  auto c = parse(conf);
  return c.is_ok() ? Status::ok() : c.status();
}

}  // namespace sluice::plugins::traffic_split
