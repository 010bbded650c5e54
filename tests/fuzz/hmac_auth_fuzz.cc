// Fuzz target: hmac-auth's Authorization parser, signing-string builder, strict base64 and
// IMF-fixdate parser, and verify() over them. The input's first line is the Authorization
// value; each later line `name: value` is a request header. Invariants:
//   - kNotSignature exactly when the value does not start with "Signature"; kOk views lie in
//     the input, hold no quote, backslash, comma or control byte, and a `headers` list has no
//     empty name; writing the parameters back out and parsing again gives the same ones;
//   - the signing string is keyId, then one line per listed name the request has (or
//     "@request-target"), each ending in "\n";
//   - a base64 the decoder accepts encodes back to itself (padding aside); a Date the parser
//     accepts formats back to itself;
//   - the request, re-signed with the key of an indexed consumer, verifies at its own Date,
//     and fails once one bit of the signature flips.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "plugin/consumer.h"
#include "plugins/hmac_auth/hmac_auth.h"
#include "plugins/hmac_auth/signature.h"

namespace {

using namespace sluice;
using namespace sluice::plugins::hmac_auth;

bool clean(std::string_view v) {
  for (char ch : v) {
    auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == ',') {
      return false;
    }
  }
  return true;
}

std::string write_back(const SignatureParams& p) {
  std::string out = "Signature ";
  auto add = [&](bool has, const char* name, std::string_view v) {
    if (has) {
      out.append(out.size() > 10 ? "," : "").append(name).append("=\"").append(v).append("\"");
    }
  };
  add(p.has_signature, "signature", p.signature);
  add(p.has_headers, "headers", p.headers);
  add(p.has_key_id, "keyId", p.key_id);
  add(p.has_algorithm, "algorithm", p.algorithm);
  return out;
}

void check_params(std::string_view in, const SignatureParams& p) {
  const std::string_view vals[] = {p.key_id, p.algorithm, p.headers, p.signature};
  const bool has[] = {p.has_key_id, p.has_algorithm, p.has_headers, p.has_signature};
  for (int i = 0; i < 4; ++i) {
    FUZZ_CHECK(fuzz::inside(vals[i], in.data(), in.size()));
    FUZZ_CHECK(clean(vals[i]));
    FUZZ_CHECK(has[i] || vals[i].empty());
  }
  if (p.has_headers) {
    FUZZ_CHECK(!p.headers.empty() && p.headers.front() != ' ' && p.headers.back() != ' ');
    FUZZ_CHECK(p.headers.find("  ") == std::string_view::npos);
  }
  if (p.has_key_id || p.has_algorithm || p.has_headers || p.has_signature) {
    std::string again = write_back(p);
    SignatureParams q;
    FUZZ_CHECK(parse_signature_header(again, &q) == ParseResult::kOk);
    FUZZ_CHECK(q.key_id == p.key_id && q.algorithm == p.algorithm && q.headers == p.headers &&
               q.signature == p.signature && q.has_key_id == p.has_key_id &&
               q.has_algorithm == p.has_algorithm && q.has_headers == p.has_headers &&
               q.has_signature == p.has_signature);
  }
}

void check_signing_string(const SignatureParams& p, const http::RequestHead& h, std::string* s) {
  build_signing_string(p, h.method_text, request_uri(h), h.headers, h.num_headers, s);
  FUZZ_CHECK(s->starts_with(std::string(p.key_id) + "\n"));
  size_t lines = 1;
  std::string_view list = p.headers;
  while (!list.empty()) {
    size_t sp = list.find(' ');
    std::string_view name = list.substr(0, sp);
    list = sp == std::string_view::npos ? std::string_view() : list.substr(sp + 1);
    lines += find_header(h.headers, h.num_headers, name) != nullptr || name == "@request-target";
  }
  FUZZ_CHECK(static_cast<size_t>(std::count(s->begin(), s->end(), '\n')) == lines);
  FUZZ_CHECK(s->back() == '\n');
}

void check_base64(std::string_view sig) {
  unsigned char buf[256];
  size_t len = 0;
  if (!decode_base64(sig, buf, sizeof(buf), &len)) {
    return;
  }
  std::string back(4 * ((len + 2) / 3), '\0');
  back.resize(encode_base64(buf, len, back.data()));
  std::string padded(sig);
  while (padded.size() % 4 != 0) {
    padded.push_back('=');
  }
  FUZZ_CHECK(back == padded);
}

void check_date(const http::RequestHead& h) {
  const std::string_view* d = find_header(h.headers, h.num_headers, "Date");
  int64_t t = 0;
  // strftime writes years before 1000 with fewer digits, and knows no leap second.
  if (d == nullptr || !parse_imf_fixdate(*d, &t) || d->substr(23, 2) == "60" || (*d)[12] == '0') {
    return;
  }
  time_t tt = static_cast<time_t>(t);
  tm g{};
  FUZZ_CHECK(gmtime_r(&tt, &g) != nullptr);
  char buf[64];
  size_t n = strftime(buf, sizeof(buf), "%a, %d %b %Y %H:%M:%S GMT", &g);
  // The weekday name is checked for being one, not for being the right one.
  FUZZ_CHECK(std::string_view(buf, n).substr(3) == d->substr(3));
}

// Re-signs the request under the indexed key and verifies it at its own Date.
void check_verify(const SignatureParams& p, const http::RequestHead& h, std::string* s) {
  static plugin::Consumer consumer;
  static const plugin::Credential cred{&consumer, "c"};
  Algorithm algo{};
  int64_t t = 0;
  const std::string_view* d = find_header(h.headers, h.num_headers, "Date");
  if (!p.has_key_id || !p.has_algorithm || !parse_algorithm(p.algorithm, &algo) || d == nullptr ||
      !parse_imf_fixdate(*d, &t)) {
    return;
  }
  Index index;
  index.add(&cred, ConsumerConf{std::string(p.key_id), "fuzz-secret"}, nullptr);
  build_signing_string(p, h.method_text, request_uri(h), h.headers, h.num_headers, s);
  unsigned char mac[kMaxMac];
  size_t n = compute_hmac(algo, "fuzz-secret", *s, mac);
  FUZZ_CHECK(n > 0);
  std::string sig(4 * ((n + 2) / 3), '\0');
  sig.resize(encode_base64(mac, n, sig.data()));
  SignatureParams q = p;
  q.signature = sig;
  q.has_signature = true;
  Conf conf;
  const plugin::Credential* got = nullptr;
  std::string scratch;
  Failure f = verify(conf, &index, q, h, {}, t, &scratch, &got);
  FUZZ_CHECK(f == Failure::kNone && got == &cred);
  mac[n / 2] ^= 1;
  sig.resize(encode_base64(mac, n, sig.data()));
  q.signature = sig;
  FUZZ_CHECK(verify(conf, &index, q, h, {}, t, &scratch, &got) == Failure::kInvalidSignature);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::ExactCopy copy(std::string_view(reinterpret_cast<const char*>(data), size));
  std::string_view in = copy.view();
  size_t nl = in.find('\n');
  std::string_view auth = in.substr(0, nl);
  std::string_view rest = nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);

  http::RequestHead h;
  h.method_text = (fuzz::hash(in) & 1) != 0 ? "GET" : "POST";
  h.target = (fuzz::hash(in) & 2) != 0 ? "/get?a=1&b=%20" : "/";
  while (!rest.empty() && h.num_headers < http::kMaxHeaders) {
    size_t end = rest.find('\n');
    std::string_view line = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    size_t colon = line.find(": ");
    if (colon != std::string_view::npos) {
      h.headers[h.num_headers++] = {line.substr(0, colon), line.substr(colon + 2)};
    }
  }

  SignatureParams p;
  ParseResult r = parse_signature_header(auth, &p);
  FUZZ_CHECK((r == ParseResult::kNotSignature) == !auth.starts_with("Signature"));
  std::string s;
  if (r == ParseResult::kOk) {
    check_params(auth, p);
    check_signing_string(p, h, &s);
    check_base64(p.signature);
    check_verify(p, h, &s);
  }
  check_base64(auth);
  check_date(h);
  return 0;
}
