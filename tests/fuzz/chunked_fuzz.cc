// Fuzz target: h1::ChunkedDecoder on the input as a chunked body.
//
// The input is decoded whole, cut in two at a point derived from the input, and byte by byte;
// all three must agree on the outcome, the decoded data, where the body ends (kDone) or which
// byte is at fault (kError). Every step's consumed stays within its input, data spans lie
// inside it, and kNeedMore consumes everything. A body that decodes is re-framed with
// format_chunk_size and must decode to the same data.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "codec/h1/chunked.h"
#include "fuzz/fuzz_check.h"

namespace {

using sluice::fuzz::ExactCopy;
using sluice::fuzz::inside;
using sluice::h1::ChunkedDecoder;
using Status = ChunkedDecoder::Status;

struct Outcome {
  Status status = Status::kNeedMore;
  size_t offset = 0;  // kDone: bytes of the body; kError: offset of the bad byte
  std::string error;
  std::string data;

  friend bool operator==(const Outcome&, const Outcome&) = default;
};

// Feeds `in` cut at `cuts` (ascending offsets). With `copy`, each piece comes from its own
// exact-size heap copy so ASan sees a read past a piece; byte-by-byte feeding skips that, as a
// copy per byte would cost more than the decoding.
Outcome decode(std::string_view in, const std::vector<size_t>& cuts, bool copy) {
  ChunkedDecoder dec;
  Outcome out;
  size_t begin = 0;
  for (size_t i = 0; i <= cuts.size(); ++i) {
    const size_t end = i < cuts.size() ? cuts[i] : in.size();
    const ExactCopy piece(copy ? in.substr(begin, end - begin) : std::string_view());
    std::string_view rest = copy ? piece.view() : in.substr(begin, end - begin);
    size_t offset = begin;  // of rest in `in`
    begin = end;
    while (!rest.empty()) {
      const ChunkedDecoder::Step s = dec.step(rest);
      FUZZ_CHECK(s.consumed <= rest.size());
      switch (s.status) {
        case Status::kData:
          FUZZ_CHECK(s.consumed > 0 && !s.data.empty() && inside(s.data, rest.data(), s.consumed));
          FUZZ_CHECK(s.data.data() + s.data.size() == rest.data() + s.consumed);
          out.data.append(s.data);
          break;
        case Status::kNeedMore:
          FUZZ_CHECK(s.consumed == rest.size());
          break;
        case Status::kDone: {
          FUZZ_CHECK(dec.done());
          const ChunkedDecoder::Step again = dec.step(rest.substr(s.consumed));
          FUZZ_CHECK(again.status == Status::kDone && again.consumed == 0);
          out.status = Status::kDone;
          out.offset = offset + s.consumed;
          return out;
        }
        case Status::kError: {
          FUZZ_CHECK(dec.error() != nullptr && dec.error()[0] != '\0');
          const ChunkedDecoder::Step again = dec.step(rest);
          FUZZ_CHECK(again.status == Status::kError && again.consumed == 0);
          out.status = Status::kError;
          out.offset = offset + s.consumed;
          out.error = dec.error();
          return out;
        }
      }
      offset += s.consumed;
      rest.remove_prefix(s.consumed);
    }
  }
  out.offset = in.size();
  return out;
}

// Frames `data` as one chunk per `piece` bytes plus the last-chunk, as an encoder would.
std::string reframe(std::string_view data, size_t piece) {
  std::string out;
  for (size_t i = 0; i < data.size(); i += piece) {
    const std::string_view chunk = data.substr(i, piece);
    char size_line[20];
    const size_t n = sluice::h1::format_chunk_size(chunk.size(), size_line);
    FUZZ_CHECK(n >= 3 && n <= 18 && size_line[n - 2] == '\r' && size_line[n - 1] == '\n');
    out.append(size_line, n);
    out.append(chunk);
    out.append(sluice::h1::kChunkEnd);
  }
  out.append(sluice::h1::kLastChunk);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const Outcome whole = decode(in, {}, true);
  if (whole.status == Status::kNeedMore) {
    FUZZ_CHECK(whole.offset == in.size());
  }
  if (size >= 2) {
    const Outcome halves = decode(in, {1 + sluice::fuzz::hash(in) % (size - 1)}, true);
    FUZZ_CHECK(halves == whole);
  }
  // Byte by byte for short inputs; longer ones (where that would dominate the run time) are
  // cut at 64 points derived from the input.
  std::vector<size_t> cuts;
  if (size <= 512) {
    for (size_t i = 1; i < size; ++i) {
      cuts.push_back(i);
    }
  } else {
    uint64_t h = sluice::fuzz::hash(in);
    for (int i = 0; i < 64; ++i, h = h * 6364136223846793005ull + 1442695040888963407ull) {
      cuts.push_back(1 + (h >> 33) % (size - 1));
    }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  }
  FUZZ_CHECK(decode(in, cuts, false) == whole);

  if (whole.status == Status::kDone) {
    const std::string framed = reframe(whole.data, 1 + size % 7);
    const Outcome again = decode(framed, {}, true);
    FUZZ_CHECK(again.status == Status::kDone && again.offset == framed.size());
    FUZZ_CHECK(again.data == whole.data);
  }
  return 0;
}
