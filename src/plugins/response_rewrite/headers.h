#pragma once
// response-rewrite's `headers`: the 2.x flat form `{"X-A": "v", "X-B": 1}` (set each; an
// empty value removes) and the 3.x form `{"add": ["X-A: v"], "set": {"X-B": "v"},
// "remove": ["X-C"]}`, checked with APISIX's schema and texts, built into the operations the
// header_filter hook plays (add, then set, then remove, as APISIX does).

#include <string>
#include <vector>

#include "common/status.h"
#include "plugin/info.h"
#include "plugins/response_rewrite/value_template.h"

namespace sluice::plugins::response_rewrite {

// Thread: any (immutable once built)
struct HeaderField {
  std::string name;
  ValueTemplate value;
};

// Thread: any (immutable once built)
struct HeaderOps {
  std::vector<HeaderField> add;  // appended; a value that renders empty adds nothing
  std::vector<HeaderField> set;  // replaces; a value that renders empty removes the field
  std::vector<std::string> remove;
};

// The schema's anyOf over the two forms, as a property check: the fragment after
// `property "headers" validation failed: ` (`object matches none of the required`).
common::Status check_headers_schema(const plugin::Json& v);

// After the whole schema passed: APISIX's check of the flat form (`invalid type as header
// value`, `invalid field length in header`), then what Sluice refuses because it could not
// send it (a name that is not an HTTP token, a framing or hop-by-hop field, a control
// character in a value, an unknown variable).
common::StatusOr<HeaderOps> build_headers(const plugin::Json& v);

}  // namespace sluice::plugins::response_rewrite
