#pragma once
// HashKey: what a chash upstream hashes a request by (`hash_on` + `key`), compiled once when
// the snapshot is built and evaluated per request without allocating.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "router/expr.h"

namespace sluice::upstream {

enum class HashOn : uint8_t { kVars, kHeader, kCookie, kConsumer, kVarsCombinations };

// APISIX's rules: vars -> the variable named `key`; header -> http_<key>; cookie ->
// cookie_<key>; consumer -> the consumer's name; vars_combinations -> `key` as a template of
// literal text and $var / ${var} references. An empty (or, for vars_combinations, an
// all-empty) value falls back to remote_addr.
// Thread: any (immutable)
class HashKey {
 public:
  HashKey() = default;  // hashes remote_addr
  static HashKey compile(HashOn on, std::string_view key);

  // The 64-bit hash of this request's key. `consumer` is the consumer's name, empty if none.
  uint64_t hash(const router::MatchContext& m, std::string_view consumer) const;
  // The key text itself (for tests and logs); allocates.
  std::string text(const router::MatchContext& m, std::string_view consumer) const;
  // The first variable of the key Sluice cannot read (it would hash as ""), or empty.
  std::string_view unreadable_var() const;

 private:
  // One piece of the key: literal text, or a variable.
  struct Part {
    std::string text;
    router::Var var;
    bool is_var = false;
  };
  // Calls emit(piece) for each piece of the key's value, falling back to remote_addr.
  template <typename Emit>
  void visit(const router::MatchContext& m, std::string_view consumer, Emit&& emit) const;

  HashOn on_ = HashOn::kVars;
  std::vector<Part> parts_;
};

}  // namespace sluice::upstream
