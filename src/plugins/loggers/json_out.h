#pragma once
// JSON text for the loggers' entries, written straight into the entry's buffer: the entry is
// made once per request on the worker, so nothing here builds a DOM (nlohmann::json building
// and dumping the default entry was a fifth of a logging gateway's CPU).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::plugins::loggers {

// JSON string of `s`, appended with its quotes, byte for byte what nlohmann::json's
// dump(error_handler_t::replace) writes: `"` `\` \b \f \n \r \t escaped, other bytes below 0x20
// as \u00xx, UTF-8 kept, each invalid or cut-short sequence replaced by U+FFFD.
void append_json_string(std::string* out, std::string_view s);

// `ns` as milliseconds, the shortest decimal that reads back as ns / 1e6 does ("1.5", "0.000123",
// "2"): APISIX's latency fields.
void append_ms(std::string* out, uint64_t ns);

// Key/value pairs made into a JSON object as ngx.req's tables are: a key given twice holds an
// array of its values in order. Keys come out sorted (bytewise), as the loggers' entries always
// had them. Reused across requests (the capacity stays).
// Thread: one (the worker's own)
class PairObject {
 public:
  void clear();
  // `key` ASCII lower-cased when `lower` (header names); `value` a string.
  void add(std::string_view key, std::string_view value, bool lower);
  // A query argument as ngx.decode_args gives it: %XX and '+' decoded; no '=': true.
  void add_arg(std::string_view raw_key, std::string_view raw_value, bool has_value);
  void render(std::string* out);

 private:
  struct Item {
    uint32_t key, key_len, value, value_len, order;
    bool is_true;
  };
  std::string_view key_of(const Item& i) const { return {bytes_.data() + i.key, i.key_len}; }
  std::string bytes_;
  std::vector<Item> items_;
};

}  // namespace sluice::plugins::loggers
