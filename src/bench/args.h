#pragma once
// A small reader for `--name value` / `--name=value` command lines, shared by the bench
// subcommands, with number parsing that rejects trailing junk.

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace sluice::bench {

// Thread: control
class ArgReader {
 public:
  explicit ArgReader(const std::vector<std::string>& args) : args_(args) {}

  // Moves to the next argument; false when none is left.
  bool next();
  // The current argument's flag name (before any '=').
  std::string_view name() const { return name_; }
  bool is(std::initializer_list<std::string_view> names) const;
  // The current flag's value: after '=' or the following argument (consumed).
  common::StatusOr<std::string> value();

 private:
  const std::vector<std::string>& args_;
  size_t pos_ = 0;
  std::string_view name_;
  std::string_view inline_value_;
  bool has_inline_ = false;
};

common::StatusOr<int64_t> parse_int_flag(std::string_view flag, std::string_view text, int64_t min,
                                         int64_t max);
// A positive finite number; `suffix` (e.g. "s") may follow it.
common::StatusOr<double> parse_positive_flag(std::string_view flag, std::string_view text,
                                             std::string_view suffix = {});

// parse_int_flag, then stores the value in *out.
template <typename T>
common::Status set_int_flag(std::string_view flag, std::string_view text, int64_t min, int64_t max,
                            T* out) {
  auto v = parse_int_flag(flag, text, min, max);
  if (!v) {
    return v.status();
  }
  *out = static_cast<T>(*v);
  return common::Status::ok();
}

// parse_positive_flag, then stores the value in *out (a double or an optional<double>).
template <typename T>
common::Status set_positive_flag(std::string_view flag, std::string_view text,
                                 std::string_view suffix, T* out) {
  auto v = parse_positive_flag(flag, text, suffix);
  if (!v) {
    return v.status();
  }
  *out = *v;
  return common::Status::ok();
}

}  // namespace sluice::bench
