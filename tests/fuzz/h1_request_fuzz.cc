// Fuzz target: h1::parse_request on the input as a request head.
//
// Besides sanitizer reports it checks the parser's contract (codec/h1/parser.h): a complete
// head's views lie inside the consumed bytes (path may be the static "/"), which end in
// CRLFCRLF; parsing exactly those bytes gives the same head and one byte fewer is incomplete;
// any prefix is incomplete or gives the whole input's result; uri is the normalised path;
// errors carry one of the documented statuses; a head accepted under tight limits is accepted
// the same way under the defaults; methods use nginx's alphabet (A-Z, `_`, `-`); and
// underscores_in_headers only decides whether `_` fields stay in the head, never whether the
// head is accepted.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "codec/h1/parser.h"
#include "fuzz/fuzz_check.h"
#include "http/path.h"

namespace {

using sluice::fuzz::ExactCopy;
using sluice::fuzz::inside;
using namespace sluice;

bool clean(std::string_view v) {
  return v.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
}

// Appends "offset+size" of v relative to base (views are compared across copies).
void put_view(std::string* out, std::string_view v, const char* base) {
  if (v.empty()) {
    *out += "-|";
    return;
  }
  *out += std::to_string(v.data() - base) + "+" + std::to_string(v.size()) + "|";
}

void check_head(const h1::ParseResult& r, const http::RequestHead& h, const char* base,
                const h1::Limits& limits) {
  const size_t n = r.consumed;
  FUZZ_CHECK(n >= 4 && std::string_view(base + n - 4, 4) == "\r\n\r\n");
  FUZZ_CHECK(!h.method_text.empty() && inside(h.method_text, base, n));
  FUZZ_CHECK(h.method == http::parse_method(h.method_text));
  for (char c : h.method_text) {
    FUZZ_CHECK((c >= 'A' && c <= 'Z') || c == '_' || c == '-');
  }
  FUZZ_CHECK(!h.target.empty() && inside(h.target, base, n) && clean(h.target));
  FUZZ_CHECK(h.target.size() <= limits.max_request_line);
  FUZZ_CHECK(inside(h.path, base, n) || (h.path == "/" && !h.authority.empty()));
  FUZZ_CHECK(inside(h.query, base, n) && inside(h.authority, base, n) && inside(h.host, base, n));
  FUZZ_CHECK(clean(h.host) && clean(h.path) && clean(h.query));
  FUZZ_CHECK(h.authority.empty() || h.host == h.authority);
  // uri is the normalised path (the path fuzz target checks the rules): a view of path, or of
  // uri_buf when normalising changed it; CONNECT has none, asterisk-form is "*".
  if (h.method == http::Method::kConnect) {
    FUZZ_CHECK(h.uri.empty());
  } else if (h.path == "*") {
    FUZZ_CHECK(h.uri == "*");
  } else {
    std::string buf(h.path.size(), '\0');
    const http::NormalizedPath want = http::normalize_path(h.path, buf.data());
    FUZZ_CHECK(want.ok() && h.uri == want.path);
    FUZZ_CHECK(h.uri.data() == h.path.data() ||
               (h.uri.data() == h.uri_buf.data() && h.uri.size() <= h.uri_buf.size()));
  }
  FUZZ_CHECK(h.version_minor == 0 || h.version_minor == 1);
  FUZZ_CHECK(h.num_headers <= limits.max_headers && h.num_headers <= http::kMaxHeaders);
  for (size_t i = 0; i < h.num_headers; ++i) {
    const http::Header& f = h.headers[i];
    FUZZ_CHECK(!f.name.empty() && inside(f.name, base, n) && inside(f.value, base, n));
    FUZZ_CHECK(clean(f.name) && clean(f.value));
    FUZZ_CHECK(f.name.find_first_of(" \t:") == std::string_view::npos);
    FUZZ_CHECK(limits.underscores_in_headers || f.name.find('_') == std::string_view::npos);
    FUZZ_CHECK(f.value.empty() || (f.value.front() != ' ' && f.value.front() != '\t' &&
                                   f.value.back() != ' ' && f.value.back() != '\t'));
  }
  FUZZ_CHECK(h.body_kind == http::BodyKind::kNone || h.body_kind == http::BodyKind::kLength ||
             h.body_kind == http::BodyKind::kChunked);
  FUZZ_CHECK(h.body_kind != http::BodyKind::kChunked || h.version_minor == 1);
  FUZZ_CHECK(h.body_kind == http::BodyKind::kLength || h.content_length == 0);
}

// The result as text: status, error or the whole head as offsets into `base`.
std::string describe(const h1::ParseResult& r, const http::RequestHead& h, const char* base) {
  switch (r.status) {
    case h1::ParseStatus::kIncomplete:
      return "incomplete";
    case h1::ParseStatus::kError:
      return "error " + std::to_string(r.error_status) + " " + r.error;
    case h1::ParseStatus::kComplete:
      break;
  }
  std::string s = "complete " + std::to_string(r.consumed) + "|";
  put_view(&s, h.method_text, base);
  put_view(&s, h.target, base);
  if (inside(h.path, base, r.consumed)) {
    put_view(&s, h.path, base);
  } else {
    s += "static /|";
  }
  put_view(&s, h.query, base);
  put_view(&s, h.authority, base);
  put_view(&s, h.host, base);
  s += std::to_string(h.version_minor) + "|" + std::to_string(static_cast<int>(h.body_kind)) + "|" +
       std::to_string(h.content_length) + "|" + std::to_string(h.keep_alive) +
       std::to_string(h.expect_continue) + "|";
  for (size_t i = 0; i < h.num_headers; ++i) {
    put_view(&s, h.headers[i].name, base);
    put_view(&s, h.headers[i].value, base);
  }
  return s;
}

// Parses `in` from an exact-size copy; checks the result on its own and returns its text.
std::string parse(std::string_view in, const h1::Limits& limits, h1::ParseResult* result) {
  ExactCopy copy(in);
  http::RequestHead head;
  const h1::ParseResult r = h1::parse_request(copy.view(), limits, &head);
  switch (r.status) {
    case h1::ParseStatus::kComplete:
      FUZZ_CHECK(r.consumed <= in.size());
      check_head(r, head, copy.data(), limits);
      break;
    case h1::ParseStatus::kError:
      FUZZ_CHECK(r.error_status == 400 || r.error_status == 414 || r.error_status == 431 ||
                 r.error_status == 501 || r.error_status == 505);
      FUZZ_CHECK(r.error != nullptr && r.error[0] != '\0');
      break;
    case h1::ParseStatus::kIncomplete:
      break;
  }
  if (result != nullptr) {
    *result = r;
  }
  return describe(r, head, copy.data());
}

// Whole input, then prefixes: each incomplete or the same result.
std::string check_prefixes(std::string_view in, const h1::Limits& limits) {
  h1::ParseResult whole;
  const std::string text = parse(in, limits, &whole);
  auto same_or_incomplete = [&](size_t k) {
    const std::string got = parse(in.substr(0, k), limits, nullptr);
    FUZZ_CHECK(got == "incomplete" || got == text);
  };
  if (whole.status == h1::ParseStatus::kComplete) {
    FUZZ_CHECK(parse(in.substr(0, whole.consumed), limits, nullptr) == text);
    FUZZ_CHECK(parse(in.substr(0, whole.consumed - 1), limits, nullptr) == "incomplete");
  }
  if (!in.empty()) {
    same_or_incomplete(sluice::fuzz::hash(in) % in.size());
    same_or_incomplete(in.size() / 2);
  }
  return text;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const h1::Limits defaults;
  const std::string loose = check_prefixes(in, defaults);

  h1::Limits underscores;
  underscores.underscores_in_headers = true;
  const std::string kept = check_prefixes(in, underscores);
  FUZZ_CHECK(kept.starts_with("complete") == loose.starts_with("complete"));
  if (!loose.starts_with("complete")) {
    FUZZ_CHECK(kept == loose);
  }

  h1::Limits tight;
  tight.max_request_line = 64;
  tight.max_header_bytes = 256;
  tight.max_headers = 4;
  const std::string strict = check_prefixes(in, tight);
  if (strict.starts_with("complete")) {
    FUZZ_CHECK(strict == loose);
  }
  return 0;
}
