#pragma once
// RegexRule: one regex_uri pair: the pattern compiled (and JIT-compiled) once when the conf is
// built, and the replacement parsed once with ngx.re.sub's template syntax.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "plugins/proxy_rewrite/template.h"

namespace sluice::plugins::proxy_rewrite {

// Thread: any (immutable; matching uses match data kept per thread)
class RegexRule {
 public:
  // Errors are the text after APISIX's `invalid regex_uri(<pattern>, <replacement>): `:
  // `pcre2_compile() failed: <why> in "<pattern>"` or `failed to compile the replacement
  // template`.
  static common::StatusOr<RegexRule> compile(std::string_view pattern,
                                             std::string_view replacement);

  // Searches `subject` (PCRE2, no options: ngx.re.match's "jo"). 1: matched, `caps` points
  // into this thread's match data until the next match on this thread; 0: no match; -1: the
  // match failed (a resource limit), `why` says how.
  int match(std::string_view subject, Captures* caps, std::string* why) const;
  // Appends the subject with its first match replaced by the replacement (ngx.re.sub).
  void substitute(const Captures& caps, std::string* out) const;

  const std::string& pattern() const { return pattern_; }

 private:
  struct Piece {
    std::string text;
    int group = -1;  // >= 0: a capture reference
  };
  static bool parse_replacement(std::string_view r, std::vector<Piece>* out);

  std::string pattern_;
  std::shared_ptr<void> code_;  // pcre2_code, freed with pcre2_code_free
  uint32_t pairs_ = 1;          // ovector pairs a match fills: the groups plus the whole match
  std::vector<Piece> replacement_;
};

}  // namespace sluice::plugins::proxy_rewrite
