#include "redis/resp.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstring>

#include "common/strings.h"

namespace sluice::redis {

namespace {

constexpr size_t kDescribeMaxString = 120;
constexpr size_t kDescribeMaxElements = 16;
// Bulk strings grow as their bytes arrive, never up front by what the server declared.
constexpr size_t kBulkReserve = 4096;
constexpr size_t kArrayReserve = 16;

bool parse_int(std::string_view s, int64_t* out) {
  if (s.empty()) {
    return false;
  }
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

void describe_string(std::string_view s, std::string* out) {
  out->push_back('"');
  for (char c : s.substr(0, kDescribeMaxString)) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(c);
    } else if (u < 0x20 || u >= 0x7f) {
      out->append(fmt::format("\\x{:02x}", u));
    } else {
      out->push_back(c);
    }
  }
  if (s.size() > kDescribeMaxString) {
    out->append("...");
  }
  out->push_back('"');
}

void describe_into(const Reply& r, std::string* out) {
  switch (r.type) {
    case Reply::Type::kSimpleString:
      out->append(r.str);
      return;
    case Reply::Type::kError:
      out->append("(error) ").append(r.str);
      return;
    case Reply::Type::kInteger:
      out->append("(integer) ").append(std::to_string(r.integer));
      return;
    case Reply::Type::kBulkString:
      describe_string(r.str, out);
      return;
    case Reply::Type::kNil:
      out->append("(nil)");
      return;
    case Reply::Type::kNilArray:
      out->append("(nil array)");
      return;
    case Reply::Type::kArray:
      out->push_back('[');
      for (size_t i = 0; i < r.elements.size() && i < kDescribeMaxElements; ++i) {
        out->append(i > 0 ? ", " : "");
        describe_into(r.elements[i], out);
      }
      out->append(r.elements.size() > kDescribeMaxElements ? ", ...]" : "]");
      return;
  }
}

}  // namespace

std::string describe(const Reply& reply) {
  std::string out;
  describe_into(reply, &out);
  return out;
}

void append_array_header(std::string* out, size_t count) {
  out->push_back('*');
  common::append_uint(*out, count);
  out->append("\r\n");
}

void append_bulk(std::string* out, std::string_view bytes) {
  out->push_back('$');
  common::append_uint(*out, bytes.size());
  out->append("\r\n").append(bytes).append("\r\n");
}

void append_command(std::string* out, std::span<const std::string_view> args) {
  append_array_header(out, args.size());
  for (std::string_view a : args) {
    append_bulk(out, a);
  }
}

void Parser::reset() {
  state_ = State::kType;
  line_.clear();
  current_ = nullptr;
  bulk_remaining_ = 0;
  elements_ = 0;
  stack_.clear();
  root_ = Reply{};
  error_.clear();
}

Parser::Step Parser::feed(std::string_view in) {
  if (state_ == State::kError) {
    return {Status::kError, 0};
  }
  if (state_ == State::kDone) {
    reset();
  }
  size_t pos = 0;
  while (pos < in.size()) {
    const std::string_view rest = in.substr(pos);
    switch (state_) {
      case State::kType:
        pos += on_type(rest);
        break;
      case State::kLine:
        pos += on_line(rest);
        break;
      case State::kBulk:
        pos += on_bulk(rest);
        break;
      case State::kBulkCr:
      case State::kBulkLf:
        pos += on_bulk_end(rest);
        break;
      case State::kDone:
      case State::kError:
        break;
    }
    if (state_ == State::kDone) {
      return {Status::kReply, pos};
    }
    if (state_ == State::kError) {
      return {Status::kError, pos};
    }
  }
  return {Status::kNeedMore, pos};
}

bool Parser::fail(std::string why) {
  error_ = std::move(why);
  state_ = State::kError;
  return false;
}

size_t Parser::on_type(std::string_view in) {
  const char c = in[0];
  if (c == '+' || c == '-' || c == ':' || c == '$' || c == '*') {
    line_type_ = c;
    line_.clear();
    state_ = State::kLine;
  } else {
    fail(fmt::format("unknown reply type byte 0x{:02x}", static_cast<unsigned char>(c)));
  }
  return 1;
}

// A line ends at its LF; it may hold max_line_length bytes plus the CR, so the LF comes at the
// latest as byte max_line_length + 2. Every check of the line's text happens at the LF, so an
// error is reported at the same byte however the input was split.
size_t Parser::on_line(std::string_view in) {
  const size_t budget = limits_.max_line_length + 2 - line_.size();
  const size_t scan = std::min(in.size(), budget);
  const void* lf = std::memchr(in.data(), '\n', scan);
  if (lf == nullptr) {
    if (scan == budget) {
      fail(fmt::format("line longer than {} bytes", limits_.max_line_length));
    } else {
      line_.append(in.data(), scan);
    }
    return scan;
  }
  const size_t n = static_cast<size_t>(static_cast<const char*>(lf) - in.data());
  if (line_.empty()) {
    finish_line(in.substr(0, n));
  } else {
    line_.append(in.data(), n);
    finish_line(line_);
  }
  return n + 1;
}

bool Parser::finish_line(std::string_view line) {
  if (line.empty() || line.back() != '\r') {
    return fail("line not terminated by CRLF");
  }
  line.remove_suffix(1);
  if (line.find('\r') != std::string_view::npos) {
    return fail("CR inside a line");
  }
  if (line_type_ == '+' || line_type_ == '-') {
    Reply* r = begin_element();
    if (r == nullptr) {
      return false;
    }
    r->type = line_type_ == '+' ? Reply::Type::kSimpleString : Reply::Type::kError;
    r->str.assign(line);
    element_done();
    return true;
  }
  int64_t n = 0;
  const bool ok = parse_int(line, &n);
  if (line_type_ == ':') {
    if (!ok) {
      return fail("invalid integer");
    }
    Reply* r = begin_element();
    if (r == nullptr) {
      return false;
    }
    r->type = Reply::Type::kInteger;
    r->integer = n;
    element_done();
    return true;
  }
  if (line_type_ == '$') {
    return ok ? start_bulk(n) : fail("invalid bulk string length");
  }
  return ok ? start_array(n) : fail("invalid array length");
}

bool Parser::start_bulk(int64_t length) {
  if (length < -1) {
    return fail("invalid bulk string length");
  }
  if (length > 0 && static_cast<uint64_t>(length) > limits_.max_bulk_length) {
    return fail(fmt::format("bulk string of {} bytes exceeds the limit of {}", length,
                            limits_.max_bulk_length));
  }
  Reply* r = begin_element();
  if (r == nullptr) {
    return false;
  }
  if (length == -1) {
    r->type = Reply::Type::kNil;
    element_done();
    return true;
  }
  r->type = Reply::Type::kBulkString;
  r->str.reserve(std::min(static_cast<size_t>(length), kBulkReserve));
  current_ = r;
  bulk_remaining_ = static_cast<size_t>(length);
  state_ = length > 0 ? State::kBulk : State::kBulkCr;
  return true;
}

bool Parser::start_array(int64_t length) {
  if (length < -1) {
    return fail("invalid array length");
  }
  if (length > 0 && static_cast<uint64_t>(length) > limits_.max_array_length) {
    return fail(fmt::format("array of {} elements exceeds the limit of {}", length,
                            limits_.max_array_length));
  }
  if (length > 0 && stack_.size() >= limits_.max_depth) {
    return fail(fmt::format("arrays nested deeper than {}", limits_.max_depth));
  }
  Reply* r = begin_element();
  if (r == nullptr) {
    return false;
  }
  if (length <= 0) {
    r->type = length == 0 ? Reply::Type::kArray : Reply::Type::kNilArray;
    element_done();
    return true;
  }
  r->type = Reply::Type::kArray;
  r->elements.reserve(std::min(static_cast<size_t>(length), kArrayReserve));
  // `r` stays put while its elements are parsed: only the innermost array's vector grows.
  stack_.push_back({r, static_cast<size_t>(length)});
  state_ = State::kType;
  return true;
}

Reply* Parser::begin_element() {
  if (++elements_ > limits_.max_total_elements) {
    fail(fmt::format("reply holds more than {} elements", limits_.max_total_elements));
    return nullptr;
  }
  if (stack_.empty()) {
    return &root_;
  }
  return &stack_.back().array->elements.emplace_back();
}

void Parser::element_done() {
  current_ = nullptr;
  while (!stack_.empty()) {
    if (--stack_.back().remaining > 0) {
      state_ = State::kType;
      return;
    }
    stack_.pop_back();
  }
  state_ = State::kDone;
}

size_t Parser::on_bulk(std::string_view in) {
  const size_t n = std::min(in.size(), bulk_remaining_);
  current_->str.append(in.data(), n);
  bulk_remaining_ -= n;
  if (bulk_remaining_ == 0) {
    state_ = State::kBulkCr;
  }
  return n;
}

size_t Parser::on_bulk_end(std::string_view in) {
  const char want = state_ == State::kBulkCr ? '\r' : '\n';
  if (in[0] != want) {
    fail("bulk string not terminated by CRLF");
  } else if (state_ == State::kBulkCr) {
    state_ = State::kBulkLf;
  } else {
    element_done();
  }
  return 1;
}

}  // namespace sluice::redis
