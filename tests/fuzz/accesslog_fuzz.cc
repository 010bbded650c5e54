// Fuzz target: the access log's format compiler and renderer. The input is a format (its first
// line) and a request head after it. A format the compiler refuses still exercises it; one it
// takes is rendered for the request (when the head parses) with the escape the input's hash
// picks. The line must be safe to append to a log whatever the request held:
//   - it ends with its one newline;
//   - with escape=default or json, a value adds no byte below 0x20 and no DEL: only the
//     format's own text could (checked when that text has none);
//   - with escape=json, a value adds no unescaped `"`: a JSON template stays one document.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "accesslog/render.h"
#include "codec/h1/parser.h"
#include "fuzz/fuzz_check.h"

namespace {

using namespace sluice;

bool clean(std::string_view s) {
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f || c == '"') {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  size_t eol = in.find('\n');
  std::string_view format = in.substr(0, eol);
  std::string_view head = eol == std::string_view::npos ? std::string_view() : in.substr(eol + 1);
  const uint64_t h = fuzz::hash(in);
  const accesslog::Escape escapes[] = {accesslog::Escape::kDefault, accesslog::Escape::kJson,
                                       accesslog::Escape::kNone};
  const accesslog::Escape escape = escapes[h % 3];
  fuzz::ExactCopy fcopy(format);
  auto f = accesslog::Format::compile(fcopy.view(), escape);
  if (!f.is_ok()) {
    FUZZ_CHECK(!f.status().message().empty());
    return 0;
  }
  fuzz::ExactCopy hcopy(head);
  http::RequestHead req;
  h1::ParseResult r = h1::parse_request(hcopy.view(), h1::Limits{}, &req);
  router::MatchContext m{&req, "192.0.2.1", {}, 9080};
  accesslog::Captured captured;
  if (r.status == h1::ParseStatus::kComplete) {
    captured.capture(*f, m, hcopy.view().substr(0, r.consumed));
  }
  std::vector<accesslog::UpstreamTry> tries = {{"127.0.0.1:80", 502, 0, -1, -1, 3},
                                               {"127.0.0.1:81", 200, 3, 0, 1, 4}};
  accesslog::Record rec;
  rec.conn.remote_addr = "192.0.2.1";
  rec.head = r.status == h1::ParseStatus::kComplete ? &captured : nullptr;
  rec.status = static_cast<int>(h % 600);
  rec.tries = tries;
  accesslog::Renderer renderer;
  accesslog::LineBuffer out;
  renderer.render(*f, rec, timespec{static_cast<time_t>(h % 4000000000u), 0}, &out);
  std::string_view line = out.view();
  FUZZ_CHECK(!line.empty() && line.back() == '\n');
  std::string literals;
  for (const accesslog::Part& p : f->parts()) {
    if (p.var == accesslog::Var::kLiteral) {
      literals.append(f->literal(p));
    }
  }
  if (escape != accesslog::Escape::kNone && clean(literals)) {
    std::string_view body = line.substr(0, line.size() - 1);
    size_t backslashes = 0;  // in a row, just before the byte looked at
    for (char ch : body) {
      auto c = static_cast<unsigned char>(ch);
      FUZZ_CHECK(c >= 0x20 && c != 0x7f);
      if (escape == accesslog::Escape::kJson && c == '"') {
        FUZZ_CHECK(backslashes % 2 == 1);  // the text has none: a value's, escaped
      }
      backslashes = c == '\\' ? backslashes + 1 : 0;
    }
  }
  return 0;
}
