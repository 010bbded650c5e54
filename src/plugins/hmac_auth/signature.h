#pragma once
// The pieces of APISIX 3.x's hmac-auth scheme (draft-cavage-http-signatures as APISIX reads
// it), each pure and testable alone: the `Authorization: Signature ...` parameters, the signing
// string, the MAC, the Date header and the body digest. Nothing here allocates except into the
// caller's string.

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <string>
#include <string_view>

#include "http/message.h"

namespace sluice::plugins::hmac_auth {

enum class Algorithm : uint8_t { kSha1, kSha256, kSha512 };
inline constexpr size_t kMaxMac = 64;  // SHA-512

// "hmac-sha1", "hmac-sha256", "hmac-sha512"; false for any other name.
bool parse_algorithm(std::string_view name, Algorithm* out);
// The bit of `a` in a set of allowed algorithms.
constexpr uint8_t algorithm_bit(Algorithm a) { return uint8_t{1} << static_cast<uint8_t>(a); }

// The parameters of `Signature keyId="...",algorithm="...",headers="...",signature="..."`, as
// views into the header value. A parameter absent from the header is empty with has_* false.
struct SignatureParams {
  std::string_view key_id, algorithm, headers, signature;
  bool has_key_id = false, has_algorithm = false, has_headers = false, has_signature = false;
};

enum class ParseResult : uint8_t {
  kOk,
  kNotSignature,  // does not start with "Signature" (APISIX's has_prefix test)
  kMalformed,     // starts so, but is not a clean parameter list
};

// Parses an Authorization value. After "Signature", one or more spaces or tabs, then
// `name="value"` pairs separated by commas with optional spaces or tabs around them. A name is
// letters and digits (APISIX's %w+); a value is printable ASCII or spaces, without '"', '\' or
// ','. Names other than keyId, algorithm, headers and signature are skipped, as APISIX skips
// them; one of those four given twice is refused (APISIX would keep the last). A `headers`
// list is names separated by single spaces, none empty.
ParseResult parse_signature_header(std::string_view value, SignatureParams* out);

// The first value of the request header `name` (ASCII case-insensitive), or nullptr.
const std::string_view* find_header(const http::Header* headers, size_t n, std::string_view name);

// Builds APISIX's signing string into *out: keyId, then for each name of `headers` in order
// `<name>: <value>` when the request has that header (the name as the client listed it), or
// `<METHOD> <request_uri>` for "@request-target", a listed header the request lacks adding
// nothing; each item ends with "\n". `request_uri` is nginx's $request_uri ("/" when empty).
void build_signing_string(const SignatureParams& p, std::string_view method,
                          std::string_view request_uri, const http::Header* headers, size_t n,
                          std::string* out);

// HMAC of `data` under `key`; writes the MAC into mac[0..] and returns its length.
size_t compute_hmac(Algorithm a, std::string_view key, std::string_view data,
                    unsigned char mac[kMaxMac]);

// Strict base64 (RFC 4648 section 4): the standard alphabet, '=' padding only at the end and
// only as much as the length needs; unpadded input is read as if padded. Writes at most `cap`
// bytes; false when the input is not canonical or decodes to more than `cap`.
bool decode_base64(std::string_view in, unsigned char* out, size_t cap, size_t* len);
// Writes 4 * ceil(n / 3) bytes at `out`; returns that count.
size_t encode_base64(const unsigned char* in, size_t n, char* out);

// RFC 7231 IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT`, exactly; false for anything else
// (the obsolete RFC 850 and asctime forms too) and for a date that does not exist.
bool parse_imf_fixdate(std::string_view s, int64_t* unix_seconds);

// Whether `digest_header` is exactly "SHA-256=" and the base64 of SHA-256(body).
bool body_digest_matches(std::string_view digest_header, std::string_view body);

// nginx's $request_uri for a parsed request head: the target as sent, from its path on (an
// absolute-form target loses its scheme and authority).
std::string_view request_uri(const http::RequestHead& req);

}  // namespace sluice::plugins::hmac_auth
