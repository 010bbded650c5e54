#include "plugins/limit_count/key.h"

#include <cctype>

namespace sluice::plugins::limit_count {

namespace {

// "$a-$b ${c}" -> [var a, "-", var b, " ", var c]; text without `$` stays text.
std::vector<std::string> split_combination(std::string_view k) {
  std::vector<std::string> out;  // even: text, odd: var name
  std::string text;
  for (size_t i = 0; i < k.size();) {
    if (k[i] != '$') {
      text.push_back(k[i++]);
      continue;
    }
    size_t start = i + 1, end = start;
    bool braced = start < k.size() && k[start] == '{';
    if (braced) {
      end = k.find('}', start);
      if (end == std::string_view::npos) {
        text.append(k.substr(i));
        break;
      }
      out.push_back(std::move(text));
      text.clear();
      out.emplace_back(k.substr(start + 1, end - start - 1));
      i = end + 1;
      continue;
    }
    while (end < k.size() && (std::isalnum(static_cast<unsigned char>(k[end])) || k[end] == '_')) {
      ++end;
    }
    if (end == start) {
      text.push_back(k[i++]);
      continue;
    }
    out.push_back(std::move(text));
    text.clear();
    out.emplace_back(k.substr(start, end - start));
    i = end;
  }
  out.push_back(std::move(text));
  return out;
}

}  // namespace

KeyBuilder::KeyBuilder(KeyType type, std::string key) : type_(type), key_(std::move(key)) {
  if (type_ == KeyType::kVar) {
    parts_.push_back({key_, router::Var::parse(key_), true});
  } else if (type_ == KeyType::kVarCombination) {
    std::vector<std::string> pieces = split_combination(key_);
    for (size_t i = 0; i < pieces.size(); ++i) {
      bool is_var = i % 2 == 1;
      if (!is_var && pieces[i].empty()) {
        continue;
      }
      router::Var v = is_var ? router::Var::parse(pieces[i]) : router::Var();
      parts_.push_back({std::move(pieces[i]), std::move(v), is_var});
    }
  }
}

std::string_view KeyBuilder::var_value(const Part& p, plugin::Context& ctx, router::VarScratch* s) {
  // The variables only the plugin layer knows; the rest read the request as `vars` does.
  if (p.text == "consumer_name") {
    return ctx.consumer;
  }
  if (p.text == "consumer_group_id") {
    return ctx.consumer_group_id;
  }
  if (p.text == "route_id") {
    return ctx.route_id;
  }
  if (p.text == "service_id") {
    return ctx.service_id;
  }
  std::string_view v;
  return p.var.get(ctx.match, s, &v) ? v : std::string_view();
}

std::string_view KeyBuilder::build(plugin::Context& ctx, std::string& out, bool per_route) const {
  if (type_ == KeyType::kConstant && !per_route) {
    return key_;
  }
  router::VarScratch s;
  out.clear();
  if (per_route) {
    out.append(ctx.route_id);
    out.push_back('&');
    if (type_ == KeyType::kConstant) {
      out.append(key_);
      return out;
    }
  }
  const size_t start = out.size();
  bool any = false;
  for (const Part& p : parts_) {
    if (!p.is_var) {
      out.append(p.text);
      continue;
    }
    std::string_view v = var_value(p, ctx, &s);
    any = any || !v.empty();
    out.append(v);
  }
  if (!any) {
    // APISIX: an empty key falls back to the client address.
    out.resize(start);
    out.append(ctx.match.remote_addr);
  }
  return out;
}

}  // namespace sluice::plugins::limit_count
