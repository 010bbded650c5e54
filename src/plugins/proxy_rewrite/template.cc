#include "plugins/proxy_rewrite/template.h"

#include <cstdint>
#include <limits>

#include "common/strings.h"

namespace sluice::plugins::proxy_rewrite {

using common::StatusOr;

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool is_name_char(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '.';
}

// `${1}` / `$1` at text[i] == '$' (a trailing `}` is taken even without its `{`, as APISIX's
// pattern does): the group and the length taken, or 0.
size_t capture_at(std::string_view text, size_t i, uint32_t* group) {
  size_t k = i + 1;
  if (k < text.size() && text[k] == '{') {
    ++k;
  }
  size_t d = k;
  uint64_t n = 0;
  while (d < text.size() && is_digit(text[d])) {
    n = n * 10 + static_cast<uint64_t>(text[d] - '0');
    n = n > UINT32_MAX ? UINT32_MAX : n;
    ++d;
  }
  if (d == k) {
    return 0;
  }
  if (d < text.size() && text[d] == '}') {
    ++d;
  }
  *group = static_cast<uint32_t>(n);
  return d - i;
}

void append_value(std::string_view v, bool escape_question, std::string* out) {
  if (!escape_question) {
    out->append(v);
    return;
  }
  for (char c : v) {
    if (c == '?') {
      out->append("%3F");
    } else {
      out->push_back(c);
    }
  }
}

}  // namespace

std::string_view Captures::group(uint32_t n) const {
  if (n >= count) {
    return {};
  }
  size_t a = ovector[2 * n], b = ovector[2 * n + 1];
  if (a == std::numeric_limits<size_t>::max() || b < a || b > subject.size()) {
    return {};
  }
  return subject.substr(a, b - a);
}

void Template::add_text(std::string_view t) {
  if (t.empty()) {
    return;
  }
  if (!parts_.empty() && parts_.back().kind == Kind::kText) {
    parts_.back().text.append(t);
    return;
  }
  Part p;
  p.text.assign(t);
  parts_.push_back(std::move(p));
}

StatusOr<size_t> Template::var_at(std::string_view text, size_t i, Part* p) {
  std::string_view name;
  size_t len = 0;
  if (i + 1 < text.size() && text[i + 1] == '{') {
    size_t close = text.find('}', i + 2);
    if (close == std::string_view::npos || close == i + 2) {
      return size_t{0};  // `${` with no name and `}`: not a variable
    }
    std::string_view inner = common::trim_ascii_space(text.substr(i + 2, close - i - 2));
    size_t q = inner.find("??");
    name = common::trim_ascii_space(inner.substr(0, q));
    if (q != std::string_view::npos) {  // APISIX splits on `??`: the second piece is the default
      std::string_view rest = inner.substr(q + 2);
      p->text.assign(common::trim_ascii_space(rest.substr(0, rest.find("??"))));
      p->has_default = true;
    }
    len = close + 1 - i;
  } else {
    size_t j = i + 1;
    while (j < text.size() && is_name_char(text[j])) {
      ++j;
    }
    name = text.substr(i + 1, j - i - 1);
    len = j - i;
    if (name.empty()) {
      return size_t{0};
    }
  }
  auto var = RequestVar::parse(name);
  if (!var.is_ok()) {
    return var.status();
  }
  p->var = *var;
  p->kind = Kind::kVar;
  return len;
}

StatusOr<Template> Template::parse(std::string_view text, bool captures) {
  Template t;
  size_t lit = 0;  // start of the text not yet added
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '$' || (i > 0 && text[i - 1] == '\\')) {
      continue;
    }
    Part p;
    size_t len = captures ? capture_at(text, i, &p.group) : 0;
    if (len > 0) {
      p.kind = Kind::kCapture;
    } else {
      auto v = var_at(text, i, &p);
      if (!v.is_ok()) {
        return v.status();
      }
      len = *v;
    }
    if (len == 0) {
      continue;  // a `$` that starts nothing stays as text
    }
    t.add_text(text.substr(lit, i - lit));
    t.parts_.push_back(std::move(p));
    lit = i + len;
    i = lit - 1;
  }
  t.add_text(text.substr(lit));
  if (t.parts_.empty()) {
    t.parts_.emplace_back();  // the empty text
  }
  return t;
}

void Template::render(VarSource& src, const Captures& caps, bool escape_question,
                      std::string* out) const {
  for (const Part& p : parts_) {
    switch (p.kind) {
      case Kind::kText:
        out->append(p.text);
        break;
      case Kind::kCapture:
        out->append(caps.group(p.group));
        break;
      case Kind::kVar: {
        std::string_view v;
        if (p.var.get(src, &v)) {
          append_value(v, escape_question, out);
        } else if (p.has_default) {
          append_value(p.text, escape_question, out);
        }
        break;
      }
    }
  }
}

}  // namespace sluice::plugins::proxy_rewrite
