// Fuzz target: redis::Parser on the input as a stream of RESP2 replies from a server.
//
// The input is parsed whole, cut in two at a point derived from the input, and byte by byte
// (inputs over 512 bytes: at 64 derived points); all three must agree on every reply, on the
// error and the offset of the byte at fault, or on needing more. Every step consumes no more
// than it was given, kNeedMore consumes everything, and an error is sticky and says why.
// Each reply stays within the limits, and its canonical encoding is no longer than the bytes
// it came from and parses back to itself. Replies accepted under tight limits are parsed the
// same way under the defaults.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "redis/resp.h"

namespace {

using sluice::fuzz::ExactCopy;
using sluice::redis::Parser;
using sluice::redis::ParserLimits;
using sluice::redis::Reply;
using Status = Parser::Status;

// The canonical RESP2 bytes of a reply (shortest numbers), and its depth and element count.
void encode(const Reply& r, std::string* out, size_t depth, size_t* max_depth, size_t* count,
            const ParserLimits& limits) {
  ++*count;
  switch (r.type) {
    case Reply::Type::kSimpleString:
    case Reply::Type::kError:
      FUZZ_CHECK(r.str.size() <= limits.max_line_length);
      FUZZ_CHECK(r.str.find_first_of("\r\n") == std::string::npos);
      out->append(r.type == Reply::Type::kError ? "-" : "+").append(r.str).append("\r\n");
      return;
    case Reply::Type::kInteger:
      out->append(":").append(std::to_string(r.integer)).append("\r\n");
      return;
    case Reply::Type::kBulkString:
      FUZZ_CHECK(r.str.size() <= limits.max_bulk_length);
      sluice::redis::append_bulk(out, r.str);
      return;
    case Reply::Type::kNil:
      out->append("$-1\r\n");
      return;
    case Reply::Type::kNilArray:
      out->append("*-1\r\n");
      return;
    case Reply::Type::kArray:
      FUZZ_CHECK(r.elements.size() <= limits.max_array_length);
      if (!r.elements.empty()) {
        *max_depth = std::max(*max_depth, depth + 1);
      }
      sluice::redis::append_array_header(out, r.elements.size());
      for (const Reply& e : r.elements) {
        encode(e, out, depth + 1, max_depth, count, limits);
      }
      return;
  }
  FUZZ_CHECK(false);
}

struct Outcome {
  std::vector<std::string> replies;  // canonical encodings
  std::string error;
  size_t offset = 0;  // kError: just past the byte at fault
  bool complete = true;

  friend bool operator==(const Outcome&, const Outcome&) = default;
};

std::string checked_encoding(const Reply& r, size_t consumed, const ParserLimits& limits) {
  std::string enc;
  size_t depth = 0, count = 0;
  encode(r, &enc, 0, &depth, &count, limits);
  FUZZ_CHECK(depth <= limits.max_depth);
  FUZZ_CHECK(count <= limits.max_total_elements);
  FUZZ_CHECK(enc.size() <= consumed);
  return enc;
}

// Feeds `in` cut at `cuts` (ascending); with `copy`, each piece is its own exact-size copy.
Outcome parse(std::string_view in, const std::vector<size_t>& cuts, bool copy,
              const ParserLimits& limits) {
  Parser p(limits);
  Outcome out;
  size_t begin = 0;
  size_t reply_bytes = 0;  // consumed since the last reply ended
  for (size_t i = 0; i <= cuts.size(); ++i) {
    const size_t end = i < cuts.size() ? cuts[i] : in.size();
    const ExactCopy piece(copy ? in.substr(begin, end - begin) : std::string_view());
    std::string_view rest = copy ? piece.view() : in.substr(begin, end - begin);
    size_t offset = begin;
    begin = end;
    while (!rest.empty()) {
      const Parser::Step s = p.feed(rest);
      FUZZ_CHECK(s.consumed <= rest.size());
      offset += s.consumed;
      reply_bytes += s.consumed;
      rest.remove_prefix(s.consumed);
      out.complete = s.status == Status::kReply;
      if (s.status == Status::kNeedMore) {
        FUZZ_CHECK(rest.empty());
      } else if (s.status == Status::kReply) {
        FUZZ_CHECK(s.consumed > 0);
        out.replies.push_back(checked_encoding(p.reply(), reply_bytes, limits));
        reply_bytes = 0;
      } else {
        FUZZ_CHECK(s.consumed > 0 && !p.error().empty());
        const Parser::Step again = p.feed(rest);
        FUZZ_CHECK(again.status == Status::kError && again.consumed == 0);
        out.error = p.error();
        out.offset = offset;
        return out;
      }
    }
  }
  return out;
}

std::vector<size_t> derived_cuts(std::string_view in) {
  std::vector<size_t> cuts;
  if (in.size() <= 512) {
    for (size_t i = 1; i < in.size(); ++i) {
      cuts.push_back(i);
    }
    return cuts;
  }
  uint64_t h = sluice::fuzz::hash(in);
  for (int i = 0; i < 64; ++i, h = h * 6364136223846793005ull + 1442695040888963407ull) {
    cuts.push_back(1 + (h >> 33) % (in.size() - 1));
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  return cuts;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const ParserLimits defaults;
  const Outcome whole = parse(in, {}, true, defaults);
  if (size >= 2) {
    FUZZ_CHECK(parse(in, {1 + sluice::fuzz::hash(in) % (size - 1)}, true, defaults) == whole);
  }
  FUZZ_CHECK(parse(in, derived_cuts(in), false, defaults) == whole);

  // A canonical encoding parses back to itself.
  for (const std::string& enc : whole.replies) {
    Parser p;
    const Parser::Step s = p.feed(enc);
    FUZZ_CHECK(s.status == Status::kReply && s.consumed == enc.size());
    FUZZ_CHECK(checked_encoding(p.reply(), enc.size(), defaults) == enc);
  }

  // What tight limits accept, the defaults accept the same way.
  ParserLimits tight;
  tight.max_depth = 2;
  tight.max_bulk_length = 16;
  tight.max_array_length = 4;
  tight.max_line_length = 8;
  tight.max_total_elements = 8;
  const Outcome small = parse(in, {}, true, tight);
  FUZZ_CHECK(small.replies.size() <= whole.replies.size());
  for (size_t i = 0; i < small.replies.size(); ++i) {
    FUZZ_CHECK(small.replies[i] == whole.replies[i]);
  }
  if (small.error.empty()) {
    FUZZ_CHECK(small == whole);
  }
  return 0;
}
