#include "plugins/redirect/uri_template.h"

namespace sluice::plugins::redirect {

using common::StatusOr;

namespace {

// [0-9a-zA-Z_]
bool is_name_char(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

size_t name_end(std::string_view s, size_t i) {
  while (i < s.size() && is_name_char(s[i])) {
    ++i;
  }
  return i;
}

}  // namespace

bool UriTemplate::matches_schema_pattern(std::string_view text) {
  return text.find_first_not_of('\\') != std::string_view::npos;
}

void UriTemplate::add_text(std::string_view t) {
  if (t.empty()) {
    return;
  }
  if (!parts_.empty() && !parts_.back().is_var) {
    parts_.back().text.append(t);
    return;
  }
  Part p;
  p.text.assign(t);
  parts_.push_back(std::move(p));
}

StatusOr<UriTemplate> UriTemplate::parse(std::string_view s) {
  UriTemplate t;
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] == '\\') {
      size_t end = i + 1 < s.size() && s[i + 1] == '$' ? name_end(s, i + 2) : i + 2;
      if (end > i + 2) {
        t.add_text(s.substr(i, end - i));  // `\$name`: text
        i = end;
      } else {
        ++i;  // matched by no alternative: gmatch moves past it
      }
      continue;
    }
    if (s[i] != '$') {
      size_t end = s.find_first_of("$\\", i);
      end = end == std::string_view::npos ? s.size() : end;
      t.add_text(s.substr(i, end - i));
      i = end;
      continue;
    }
    std::string_view name;
    size_t next = i + 1;
    if (i + 1 < s.size() && s[i + 1] == '{') {
      size_t end = name_end(s, i + 2);
      if (end > i + 2 && end < s.size() && s[end] == '}') {
        name = s.substr(i + 2, end - i - 2);
        next = end + 1;
      }
    } else {
      size_t end = name_end(s, i + 1);
      name = s.substr(i + 1, end - i - 1);
      next = end;
    }
    if (name.empty()) {
      t.add_text("$");  // a `$` that starts no name
      i = next;
      continue;
    }
    auto var = proxy_rewrite::RequestVar::parse(name);
    if (!var.is_ok()) {
      return var.status();
    }
    Part p;
    p.is_var = true;
    p.var = *var;
    t.parts_.push_back(std::move(p));
    i = next;
  }
  return t;
}

void UriTemplate::render(proxy_rewrite::VarSource& src, std::string* out) const {
  for (const Part& p : parts_) {
    std::string_view v;
    if (!p.is_var) {
      out->append(p.text);
    } else if (p.var.get(src, &v)) {
      out->append(v);
    }
  }
}

}  // namespace sluice::plugins::redirect
