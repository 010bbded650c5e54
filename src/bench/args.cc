#include "bench/args.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

namespace sluice::bench {

using common::Status;

bool ArgReader::next() {
  if (pos_ >= args_.size()) {
    return false;
  }
  std::string_view a = args_[pos_++];
  size_t eq = a.starts_with("--") ? a.find('=') : std::string_view::npos;
  has_inline_ = eq != std::string_view::npos;
  name_ = has_inline_ ? a.substr(0, eq) : a;
  inline_value_ = has_inline_ ? a.substr(eq + 1) : std::string_view();
  return true;
}

bool ArgReader::is(std::initializer_list<std::string_view> names) const {
  for (std::string_view n : names) {
    if (n == name_) {
      return true;
    }
  }
  return false;
}

common::StatusOr<std::string> ArgReader::value() {
  if (has_inline_) {
    return std::string(inline_value_);
  }
  if (pos_ >= args_.size()) {
    return Status::error(fmt::format("{} needs a value", name_));
  }
  return args_[pos_++];
}

common::StatusOr<int64_t> parse_int_flag(std::string_view flag, std::string_view text, int64_t min,
                                         int64_t max) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || text.empty()) {
    return Status::error(fmt::format("{}: '{}' is not an integer", flag, text));
  }
  if (v < min || v > max) {
    return Status::error(fmt::format("{}: {} is out of range [{}, {}]", flag, v, min, max));
  }
  return v;
}

common::StatusOr<double> parse_positive_flag(std::string_view flag, std::string_view text,
                                             std::string_view suffix) {
  if (!suffix.empty() && text.ends_with(suffix)) {
    text.remove_suffix(suffix.size());
  }
  double v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || text.empty()) {
    return Status::error(fmt::format("{}: '{}' is not a number", flag, text));
  }
  if (!std::isfinite(v) || v <= 0) {
    return Status::error(fmt::format("{}: must be a positive number, got '{}'", flag, text));
  }
  return v;
}

}  // namespace sluice::bench
