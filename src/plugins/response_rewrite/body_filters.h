#pragma once
// One item of response-rewrite's `filters`: a PCRE2 regex compiled once with ngx.re's option
// letters, and its replacement template ($0..$N, ${N}, $$), applied to the whole response
// body as ngx.re.sub (scope "once") or ngx.re.gsub (scope "global") would.

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace sluice::plugins::response_rewrite {

// Thread: any (immutable; apply() keeps its match state on the stack)
class BodyFilter {
 public:
  // Errors read `regex "<regex>" validation failed: <why>` (APISIX's wording for the option
  // letters: `unknown flag "h" (flags "h")`), or `replace "<replace>" validation failed: ...`.
  static common::StatusOr<BodyFilter> compile(const std::string& regex, const std::string& replace,
                                              const std::string& options, bool global);

  // Writes `body` with the substitutions made into *out. False when PCRE2 failed on it (a
  // match limit, invalid UTF-8 under "u"): *out is then `body` unchanged.
  bool apply(std::string_view body, std::string* out) const;

 private:
  // A piece of the replacement: text, or capture group `group` (when text is empty).
  struct Piece {
    std::string text;
    uint32_t group = 0;
  };
  struct CodeFree {
    void operator()(pcre2_code* c) const { pcre2_code_free(c); }
  };

  static common::StatusOr<std::vector<Piece>> parse_replace(const std::string& replace);
  void append_replacement(std::string_view body, const PCRE2_SIZE* ovector, uint32_t pairs,
                          std::string* out) const;

  std::shared_ptr<pcre2_code> code_;
  std::vector<Piece> replace_;
  bool global_ = false;
  bool utf_ = false;
};

}  // namespace sluice::plugins::response_rewrite
