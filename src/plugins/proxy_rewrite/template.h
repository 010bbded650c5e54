#pragma once
// Template: a proxy-rewrite value with `$var` / `${var}` / `${var ?? default}` variables and,
// in header values, `$1` / `${1}` regex_uri captures, parsed once when the conf is built.

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "plugins/proxy_rewrite/request_var.h"

namespace sluice::plugins::proxy_rewrite {

// The groups of the regex_uri pattern that matched, as offsets into the subject; none when no
// pattern matched. Thread: worker (stack-local; points into the matcher's match data).
struct Captures {
  std::string_view subject;
  const size_t* ovector = nullptr;  // pairs of (start, end); an unset group is SIZE_MAX
  uint32_t count = 0;               // pairs in ovector, group 0 included
  // Group n's text; empty when it did not take part or does not exist.
  std::string_view group(uint32_t n) const;
};

// Thread: any (immutable)
class Template {
 public:
  // APISIX's syntax (core.utils.resolve_var and resolve_var_with_captures): a `$` preceded by
  // a backslash is literal (the backslash stays); `$name` takes [A-Za-z0-9_.]; `${ name }`
  // takes anything up to the next `}` and may give a default after `??`; an unknown or empty
  // variable reads as its default or "". With `captures`, `$N` and `${N}` are read first as
  // capture N. Errors name an unsupported variable.
  static common::StatusOr<Template> parse(std::string_view text, bool captures);

  bool has_vars() const { return parts_.size() != 1 || parts_[0].kind != Kind::kText; }

  // Appends the value. With `escape_question`, each '?' inside a variable's value (or default)
  // is written as %3F: APISIX's escape_separator for `uri`.
  void render(VarSource& src, const Captures& caps, bool escape_question, std::string* out) const;

 private:
  enum class Kind : uint8_t { kText, kCapture, kVar };
  struct Part {
    Kind kind = Kind::kText;
    std::string text;  // kText: the text; kVar: the default
    bool has_default = false;
    uint32_t group = 0;
    RequestVar var;
  };
  // The variable at text[i] == '$' into `p`: the length it takes, 0 when none starts there.
  static common::StatusOr<size_t> var_at(std::string_view text, size_t i, Part* p);
  void add_text(std::string_view t);

  std::vector<Part> parts_;
};

}  // namespace sluice::plugins::proxy_rewrite
