// Fuzz target: the tracers' parsers of incoming context (W3C traceparent, B3 single and multi)
// and zipkin's JSON string escaper.
//
// Each parser sees the input from an exact-size copy (a read past it is an ASan report). A
// traceparent that parses is written back and must parse to the same ids and flag; a B3
// context must have a non-zero span id; the escaper's output must be a JSON string that
// nlohmann reads back as the input when the input is valid UTF-8 without a replacement.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "fuzz/fuzz_check.h"
#include "plugins/tracing/ids.h"
#include "plugins/tracing/zipkin_span.h"

namespace {

using namespace sluice::plugins::tracing;

void check_traceparent(std::string_view in) {
  sluice::fuzz::ExactCopy copy(in);
  Incoming tp = parse_traceparent(copy.view());
  if (!tp.valid) {
    return;
  }
  FUZZ_CHECK(tp.span_id != 0 && (tp.sampled == 0 || tp.sampled == 1));
  std::string out;
  append_traceparent(&out, tp.trace_id, tp.span_id, tp.sampled == 1);
  Incoming again = parse_traceparent(out);
  FUZZ_CHECK(again.valid && again.span_id == tp.span_id && again.sampled == tp.sampled);
  FUZZ_CHECK(std::memcmp(again.trace_id, tp.trace_id, 16) == 0);
}

void check_b3(std::string_view in) {
  sluice::fuzz::ExactCopy copy(in);
  Incoming single = parse_b3_single(copy.view());
  FUZZ_CHECK(!single.valid || single.span_id != 0);
  FUZZ_CHECK(single.sampled >= -1 && single.sampled <= 1);
  // The input split in five for the multi headers.
  std::string_view parts[5];
  std::string_view rest = copy.view();
  for (auto& p : parts) {
    size_t nl = rest.find('\n');
    p = rest.substr(0, nl);
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
  }
  Incoming multi = parse_b3_multi(parts[0], parts[1], parts[2], parts[3], parts[4]);
  FUZZ_CHECK(!multi.valid || multi.span_id != 0);
}

void check_json(std::string_view in) {
  std::string out;
  append_json_string(&out, in);
  auto j = nlohmann::json::parse(out, nullptr, false);
  FUZZ_CHECK(j.is_string());
  if (out.find("\\ufffd") == std::string::npos) {
    FUZZ_CHECK(j.get<std::string>() == in);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  check_traceparent(in);
  check_b3(in);
  check_json(in);
  return 0;
}
