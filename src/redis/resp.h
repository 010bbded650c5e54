#pragma once
// RESP2, the Redis wire protocol, without I/O: an encoder that appends a command to a string,
// and an incremental parser that takes bytes as they arrive and yields one reply at a time.
// The parser is bounded by ParserLimits, so a hostile or broken server cannot make it allocate
// more than a small multiple of the bytes it actually sent.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::redis {

// One parsed RESP2 reply; owns its bytes.
// Thread: any (value type)
struct Reply {
  enum class Type : uint8_t {
    kSimpleString,  // +OK
    kError,         // -ERR ...
    kInteger,       // :42
    kBulkString,    // $3 abc
    kNil,           // $-1
    kArray,         // *2 ...
    kNilArray,      // *-1
  };
  Type type = Type::kNil;
  int64_t integer = 0;          // kInteger
  std::string str;              // kSimpleString, kError, kBulkString
  std::vector<Reply> elements;  // kArray

  bool is_error() const { return type == Type::kError; }
  bool is_string() const { return type == Type::kSimpleString || type == Type::kBulkString; }
  bool is_nil() const { return type == Type::kNil || type == Type::kNilArray; }
};

// A compact, printable rendering for logs and test failures: "OK", "(error) ERR x", "(integer)
// 3", "\"abc\"", "(nil)", "[1, \"a\"]".
std::string describe(const Reply& reply);

// Appends `args` as a RESP2 command (an array of bulk strings).
void append_command(std::string* out, std::span<const std::string_view> args);
// The pieces of a command, for callers that build one from several sources: "*<count>\r\n"
// and "$<length>\r\n<bytes>\r\n".
void append_array_header(std::string* out, size_t count);
void append_bulk(std::string* out, std::string_view bytes);

// Caps on what one reply may declare or contain.
// Thread: any (value type)
struct ParserLimits {
  size_t max_depth = 8;                  // arrays inside arrays; a top-level array is depth 1
  size_t max_bulk_length = 16u << 20;    // bytes of one bulk string
  size_t max_array_length = 1u << 20;    // elements of one array
  size_t max_line_length = 64u << 10;    // bytes of a simple string, error or length line
  size_t max_total_elements = 4u << 20;  // replies (at any depth) in one top-level reply
};

// Incremental RESP2 parser: feed() bytes in any split; each call stops at the end of a reply.
// Thread: worker
class Parser {
 public:
  enum class Status { kNeedMore, kReply, kError };
  struct Step {
    Status status;
    // kNeedMore: all of the input. kReply: up to the end of the reply. kError: up to and
    // including the byte at which the input became invalid.
    size_t consumed;
  };

  explicit Parser(ParserLimits limits = {}) : limits_(limits) {}

  // Parses from `in`. After kReply, reply() holds the reply until the next feed(); after kError
  // every later feed() answers kError with nothing consumed until reset().
  Step feed(std::string_view in);
  const Reply& reply() const { return root_; }
  Reply take_reply() { return std::move(root_); }
  // Why the input is malformed (after kError), e.g. "invalid integer".
  const std::string& error() const { return error_; }
  void reset();

 private:
  enum class State : uint8_t { kType, kLine, kBulk, kBulkCr, kBulkLf, kDone, kError };
  struct Frame {
    Reply* array;
    size_t remaining;
  };

  size_t on_type(std::string_view in);
  size_t on_line(std::string_view in);
  size_t on_bulk(std::string_view in);
  size_t on_bulk_end(std::string_view in);
  bool finish_line(std::string_view line);
  bool start_bulk(int64_t length);
  bool start_array(int64_t length);
  void element_done();
  Reply* begin_element();
  bool fail(std::string why);

  ParserLimits limits_;
  State state_ = State::kType;
  char line_type_ = 0;
  std::string line_;  // a line split across feeds; holds at most max_line_length + 1 bytes
  Reply* current_ = nullptr;
  size_t bulk_remaining_ = 0;
  size_t elements_ = 0;
  std::vector<Frame> stack_;
  Reply root_;
  std::string error_;
};

}  // namespace sluice::redis
