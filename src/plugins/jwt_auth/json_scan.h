#pragma once
// A strict, allocation-free scanner for the two small JSON objects of a token (its header and
// its payload). It accepts exactly the texts nlohmann::json::parse accepts as an object (the
// parser jwt-auth used before: RFC 8259 grammar, strict UTF-8, paired \u surrogates, no
// number that overflows a double, an optional leading UTF-8 BOM, nothing after the object
// but whitespace, or a NUL byte and anything: both nlohmann and APISIX's cjson stop at a NUL)
// and reads only the top-level members it is asked for, without building the document: per
// request jwt-auth needs `alg` of the header and three claims of the payload.
// tests/unit/plugins/jwt_auth/json_scan_test.cc checks it against nlohmann on every case.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace sluice::plugins::jwt_auth {

// One top-level member's value, as far as jwt-auth looks at it.
// Thread: worker (reused per request: `string` keeps its capacity)
struct JsonValue {
  enum class Type : uint8_t { kAbsent, kNull, kFalse, kTrue, kNumber, kString, kArray, kObject };
  Type type = Type::kAbsent;
  double number = 0;   // kNumber: the double nlohmann would give
  std::string string;  // kString: unescaped (UTF-8)
};

// A member to read: every value named `name` (after unescaping) goes to *value; the last
// occurrence wins, as in nlohmann's (and cjson's) objects.
struct JsonWanted {
  std::string_view name;
  JsonValue* value;
};

// Whether `text` is one JSON object. The wanted values are reset to kAbsent first, then
// filled; `scratch` holds an escaped member name while it is compared. Depth is limited to
// kMaxJsonDepth (deeper is refused; a token's size limit keeps its JSON far shallower).
inline constexpr size_t kMaxJsonDepth = 16 * 1024;
bool scan_json_object(std::string_view text, std::span<const JsonWanted> wanted,
                      std::string* scratch);

}  // namespace sluice::plugins::jwt_auth
