// Fuzz target: h1::parse_response on the input as a response head, once for each request
// method that changes its framing (GET, HEAD, CONNECT).
//
// Checks beyond sanitizer reports: every error is 502; a complete head's views lie inside the
// consumed bytes, which end in CRLFCRLF; parsing exactly those bytes gives the same head and
// one byte fewer is incomplete; any prefix is incomplete or the whole input's result; the
// framing follows RFC 9112 6.3 as parser.h states it.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "codec/h1/parser.h"
#include "fuzz/fuzz_check.h"

namespace {

using sluice::fuzz::ExactCopy;
using sluice::fuzz::inside;
using namespace sluice;
using http::BodyKind;
using http::Method;

bool clean(std::string_view v) {
  return v.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
}

void put_view(std::string* out, std::string_view v, const char* base) {
  if (v.empty()) {
    *out += "-|";
    return;
  }
  *out += std::to_string(v.data() - base) + "+" + std::to_string(v.size()) + "|";
}

void check_head(const h1::ParseResult& r, const http::ResponseHead& h, const char* base,
                Method method) {
  const size_t n = r.consumed;
  FUZZ_CHECK(n >= 4 && std::string_view(base + n - 4, 4) == "\r\n\r\n");
  FUZZ_CHECK(h.status >= 100 && h.status <= 999);
  FUZZ_CHECK(inside(h.reason, base, n) && clean(h.reason));
  FUZZ_CHECK(h.version_minor == 0 || h.version_minor == 1);
  FUZZ_CHECK(h.num_headers <= http::kMaxHeaders);
  for (size_t i = 0; i < h.num_headers; ++i) {
    const http::Header& f = h.headers[i];
    FUZZ_CHECK(!f.name.empty() && inside(f.name, base, n) && inside(f.value, base, n));
    FUZZ_CHECK(clean(f.name) && clean(f.value));
    FUZZ_CHECK(f.name.find_first_of(" \t:") == std::string_view::npos);
  }
  const bool no_body = method == Method::kHead || (h.status >= 100 && h.status < 200) ||
                       h.status == 204 || h.status == 304 ||
                       (method == Method::kConnect && h.status >= 200 && h.status < 300);
  if (no_body) {
    FUZZ_CHECK(h.body_kind == BodyKind::kNone);
  }
  FUZZ_CHECK(h.body_kind != BodyKind::kLength || h.content_length > 0);
  FUZZ_CHECK(h.body_kind == BodyKind::kLength || h.content_length == 0 || no_body);
  FUZZ_CHECK(h.body_kind != BodyKind::kUntilClose || !h.keep_alive);
}

std::string describe(const h1::ParseResult& r, const http::ResponseHead& h, const char* base) {
  switch (r.status) {
    case h1::ParseStatus::kIncomplete:
      return "incomplete";
    case h1::ParseStatus::kError:
      return "error " + std::to_string(r.error_status) + " " + r.error;
    case h1::ParseStatus::kComplete:
      break;
  }
  std::string s = "complete " + std::to_string(r.consumed) + "|" + std::to_string(h.status) + "|";
  put_view(&s, h.reason, base);
  s += std::to_string(h.version_minor) + "|" + std::to_string(static_cast<int>(h.body_kind)) + "|" +
       std::to_string(h.content_length) + "|" + std::to_string(h.keep_alive) + "|";
  for (size_t i = 0; i < h.num_headers; ++i) {
    put_view(&s, h.headers[i].name, base);
    put_view(&s, h.headers[i].value, base);
  }
  return s;
}

std::string parse(std::string_view in, Method method, h1::ParseResult* result) {
  ExactCopy copy(in);
  http::ResponseHead head;
  const h1::ParseResult r = h1::parse_response(copy.view(), h1::Limits(), method, &head);
  if (r.status == h1::ParseStatus::kComplete) {
    FUZZ_CHECK(r.consumed <= in.size());
    check_head(r, head, copy.data(), method);
  } else if (r.status == h1::ParseStatus::kError) {
    FUZZ_CHECK(r.error_status == 502);
    FUZZ_CHECK(r.error != nullptr && r.error[0] != '\0');
  }
  if (result != nullptr) {
    *result = r;
  }
  return describe(r, head, copy.data());
}

h1::ParseResult check_prefixes(std::string_view in, Method method) {
  h1::ParseResult whole;
  const std::string text = parse(in, method, &whole);
  auto same_or_incomplete = [&](size_t k) {
    const std::string got = parse(in.substr(0, k), method, nullptr);
    FUZZ_CHECK(got == "incomplete" || got == text);
  };
  if (whole.status == h1::ParseStatus::kComplete) {
    FUZZ_CHECK(parse(in.substr(0, whole.consumed), method, nullptr) == text);
    FUZZ_CHECK(parse(in.substr(0, whole.consumed - 1), method, nullptr) == "incomplete");
  }
  if (!in.empty()) {
    same_or_incomplete(sluice::fuzz::hash(in) % in.size());
  }
  return whole;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  // Prefixes for GET only: the method changes nothing in how the head is scanned.
  const h1::ParseResult get = check_prefixes(in, Method::kGet);
  h1::ParseResult head;
  h1::ParseResult connect;
  parse(in, Method::kHead, &head);
  parse(in, Method::kConnect, &connect);
  // The method changes the framing, never where the head ends.
  for (const h1::ParseResult& other : {head, connect}) {
    if (get.status == h1::ParseStatus::kComplete && other.status == h1::ParseStatus::kComplete) {
      FUZZ_CHECK(get.consumed == other.consumed);
    }
  }
  return 0;
}
