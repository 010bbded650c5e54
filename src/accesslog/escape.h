#pragma once
// The escapes of nginx's log_format, for variable values (a format's literal text is written
// as it is).

#include <string_view>

#include "accesslog/format.h"
#include "accesslog/line_buffer.h"

namespace sluice::accesslog {

// escape=default: `"`, `\`, bytes below 0x20 and from 0x7f become \xHH (upper-case hex).
void append_default_escaped(std::string_view value, LineBuffer* out);
// escape=json: `"` and `\` get a backslash; \n \r \t \b \f; other bytes below 0x20 become
// \u00XX (upper-case hex, as nginx's ngx_escape_json); everything else is kept.
void append_json_escaped(std::string_view value, LineBuffer* out);

inline void append_escaped(Escape e, std::string_view value, LineBuffer* out) {
  switch (e) {
    case Escape::kDefault:
      append_default_escaped(value, out);
      return;
    case Escape::kJson:
      append_json_escaped(value, out);
      return;
    case Escape::kNone:
      out->append(value);
      return;
  }
}

}  // namespace sluice::accesslog
