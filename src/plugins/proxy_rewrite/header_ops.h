#pragma once
// HeaderOps: proxy-rewrite's `headers`, in either of APISIX's forms, checked and parsed once:
// the 2.x flat form {"X-Api": "v"} (each field set) and the 3.x form {"add": {...},
// "set": {...}, "remove": [...]}.

#include <string>
#include <vector>

#include "common/status.h"
#include "plugin/info.h"
#include "plugins/proxy_rewrite/template.h"

namespace sluice::plugins::proxy_rewrite {

// One header an add or set writes; the value may read variables and captures.
struct HeaderValue {
  std::string name;
  Template value;
};

// Applied in APISIX's order: add, then set, then remove.
// Thread: any (immutable after parse)
struct HeaderOps {
  std::vector<HeaderValue> add;
  std::vector<HeaderValue> set;
  std::vector<std::string> remove;
  bool empty() const { return add.empty() && set.empty() && remove.empty(); }
};

// The schema's oneOf, with APISIX's texts: `property "headers" validation failed: value should
// match only one schema, but matches none`.
common::Status check_headers_schema(const plugin::Json& headers);

// After the schema passed: APISIX's checks of the flat form ('invalid type as header value',
// 'invalid field length in header', 'invalid field character in header', 'invalid value
// character in header'), then what Sluice refuses in either form: a name or value that cannot
// be sent, a header the gateway writes itself (Host, Content-Length, hop-by-hop fields), an
// unsupported variable.
common::StatusOr<HeaderOps> parse_headers(const plugin::Json& headers);

}  // namespace sluice::plugins::proxy_rewrite
