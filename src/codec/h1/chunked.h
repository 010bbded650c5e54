#pragma once
// Resumable, zero-copy decoder for the chunked transfer coding (RFC 9112 7.1), and the framing
// bytes an encoder needs to re-frame a body as chunked.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace sluice::h1 {

// Decodes one chunked body. It never buffers and never asks the caller to keep bytes: outside
// chunk data every byte it is shown is consumed at once, its meaning kept in a few words of
// state, so a size line, CRLF or trailer split across reads resumes where it stopped. Hence
// kNeedMore always has consumed == in.size().
class ChunkedDecoder {  // Thread: worker
 public:
  static constexpr size_t kMaxSizeLine = 4096;      // size line incl. extensions, without CRLF
  static constexpr size_t kMaxTrailerBytes = 8192;  // trailer section incl. its final CRLF
  static constexpr uint64_t kMaxChunkSize = uint64_t{1} << 62;

  enum class Status { kData, kNeedMore, kDone, kError };
  struct Step {
    Status status;
    size_t consumed;        // bytes of `in` used by this step (always advance by this)
    std::string_view data;  // for kData: chunk payload bytes, a sub-span of `in`
  };

  // Consumes from `in` and returns at most one data span. kNeedMore: all of `in` was consumed
  // and more input is needed. kDone: after the last-chunk, trailer section and final CRLF;
  // consumed stops right after it so pipelined bytes remain. kError: a violation, for good
  // (consumed is the offset of the offending byte); error() says which.
  Step step(std::string_view in);
  bool done() const { return state_ == State::kDone; }
  const char* error() const { return error_; }
  void reset() { *this = ChunkedDecoder(); }

 private:
  enum class State : uint8_t {
    kSize,             // hex digits of chunk-size
    kExtName,          // first byte of a chunk-ext-name, after ';'
    kExtNameMore,      // rest of the name; '=', ';' or CR may follow
    kExtValue,         // first byte of a chunk-ext-val: token or quoted-string
    kExtToken,         // rest of a token value
    kExtQuoted,        // inside a quoted-string
    kExtQuotedEscape,  // after a backslash in a quoted-string
    kExtQuotedEnd,     // after the closing quote
    kSizeLf,           // CR of the size line seen
    kData,             // chunk payload; remaining_ bytes left
    kDataCr,           // CRLF after the payload
    kDataLf,
    kTrailerStart,  // start of a trailer line or of the final CRLF
    kTrailerName,
    kTrailerValue,
    kTrailerLf,
    kFinalLf,
    kDone,
    kError,
  };

  bool fail(const char* why);
  bool on_byte(char c);
  bool on_size_line_byte(char c);
  bool on_ext_byte(char c);
  bool on_trailer_byte(char c);
  bool end_size_line(char c);

  State state_ = State::kSize;
  uint64_t remaining_ = 0;  // the size being parsed, then the payload bytes left
  uint32_t digits_ = 0;
  uint32_t line_bytes_ = 0;
  uint32_t trailer_bytes_ = 0;
  const char* error_ = "";
};

// Writes `<hex>\r\n` (lower-case hex, no leading zeros) and returns its length (at most 18).
size_t format_chunk_size(uint64_t n, char out[20]);
inline constexpr std::string_view kChunkEnd = "\r\n";
inline constexpr std::string_view kLastChunk = "0\r\n\r\n";

}  // namespace sluice::h1
