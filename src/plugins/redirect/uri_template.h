#pragma once
// UriTemplate: redirect's `uri`, read with the pattern APISIX's redirect plugin has for it
// (not core.utils.resolve_var, which proxy-rewrite uses): `$name` and `${name}` with names of
// [0-9a-zA-Z_] only (no '.', no `?? default`), parsed once when the conf is built.

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "plugins/proxy_rewrite/request_var.h"

namespace sluice::plugins::redirect {

// Thread: any (immutable)
class UriTemplate {
 public:
  // APISIX reads the text with ngx.re.gmatch over four alternatives, in this order:
  // `\$name` (text, the backslash kept), `${name}`, `$name` (the longest name), and a lone `$`
  // or a run of bytes other than `$` and `\` (text). What none of them matches, a backslash
  // not followed by `$name`, is skipped: `/a\b` reads `/ab`. Errors name a variable Sluice
  // cannot read (proxy_rewrite::RequestVar).
  static common::StatusOr<UriTemplate> parse(std::string_view text);

  // Whether APISIX's schema pattern (the same alternatives, searched) finds a match in
  // `text`: everything but a text made only of backslashes.
  static bool matches_schema_pattern(std::string_view text);

  // Appends the value; a nil or empty variable adds nothing.
  void render(proxy_rewrite::VarSource& src, std::string* out) const;

 private:
  struct Part {
    bool is_var = false;
    std::string text;
    proxy_rewrite::RequestVar var;
  };
  void add_text(std::string_view t);

  std::vector<Part> parts_;
};

}  // namespace sluice::plugins::redirect
