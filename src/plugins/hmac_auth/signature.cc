#include "plugins/hmac_auth/signature.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include <array>

namespace sluice::plugins::hmac_auth {

namespace {

bool is_ows(char c) { return c == ' ' || c == '\t'; }
bool is_alnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}
// What a parameter value may hold: printable ASCII and space, but no quote, backslash (no
// escapes: APISIX reads none) or comma (APISIX splits the header on commas first).
bool value_char(char c) {
  auto u = static_cast<unsigned char>(c);
  return u >= 0x20 && u < 0x7f && c != '"' && c != '\\' && c != ',';
}

void skip_ows(std::string_view s, size_t* i) {
  while (*i < s.size() && is_ows(s[*i])) {
    ++*i;
  }
}

// `headers`: names separated by single spaces, none empty.
bool valid_header_list(std::string_view v) {
  if (v.empty() || v.front() == ' ' || v.back() == ' ') {
    return false;
  }
  return v.find("  ") == std::string_view::npos;
}

// Stores one known parameter; false for a second occurrence.
bool store(std::string_view name, std::string_view value, SignatureParams* p) {
  std::string_view* slot = nullptr;
  bool* has = nullptr;
  if (name == "keyId") {
    slot = &p->key_id, has = &p->has_key_id;
  } else if (name == "algorithm") {
    slot = &p->algorithm, has = &p->has_algorithm;
  } else if (name == "headers") {
    if (!valid_header_list(value)) {
      return false;
    }
    slot = &p->headers, has = &p->has_headers;
  } else if (name == "signature") {
    slot = &p->signature, has = &p->has_signature;
  } else {
    return true;  // unknown: skipped, as APISIX does
  }
  if (*has) {
    return false;
  }
  *slot = value;
  *has = true;
  return true;
}

}  // namespace

bool parse_algorithm(std::string_view name, Algorithm* out) {
  if (name == "hmac-sha256") {
    *out = Algorithm::kSha256;
  } else if (name == "hmac-sha512") {
    *out = Algorithm::kSha512;
  } else if (name == "hmac-sha1") {
    *out = Algorithm::kSha1;
  } else {
    return false;
  }
  return true;
}

ParseResult parse_signature_header(std::string_view s, SignatureParams* out) {
  *out = SignatureParams{};
  constexpr std::string_view kScheme = "Signature";
  if (!s.starts_with(kScheme)) {
    return ParseResult::kNotSignature;
  }
  size_t i = kScheme.size();
  if (i >= s.size() || !is_ows(s[i])) {
    return ParseResult::kMalformed;
  }
  skip_ows(s, &i);
  while (true) {
    const size_t name_at = i;
    while (i < s.size() && is_alnum(s[i])) {
      ++i;
    }
    std::string_view name = s.substr(name_at, i - name_at);
    if (name.empty() || i + 1 >= s.size() || s[i] != '=' || s[i + 1] != '"') {
      return ParseResult::kMalformed;
    }
    i += 2;
    const size_t value_at = i;
    while (i < s.size() && value_char(s[i])) {
      ++i;
    }
    if (i >= s.size() || s[i] != '"') {
      return ParseResult::kMalformed;
    }
    if (!store(name, s.substr(value_at, i - value_at), out)) {
      return ParseResult::kMalformed;
    }
    ++i;
    skip_ows(s, &i);
    if (i == s.size()) {
      return ParseResult::kOk;
    }
    if (s[i] != ',') {
      return ParseResult::kMalformed;
    }
    ++i;
    skip_ows(s, &i);
  }
}

const std::string_view* find_header(const http::Header* headers, size_t n, std::string_view name) {
  for (size_t i = 0; i < n; ++i) {
    if (http::iequals(headers[i].name, name)) {
      return &headers[i].value;
    }
  }
  return nullptr;
}

void build_signing_string(const SignatureParams& p, std::string_view method,
                          std::string_view request_uri, const http::Header* headers, size_t n,
                          std::string* out) {
  out->clear();
  out->append(p.key_id).push_back('\n');
  std::string_view list = p.headers;
  while (!list.empty()) {
    const size_t sp = list.find(' ');
    std::string_view name = list.substr(0, sp);
    list = sp == std::string_view::npos ? std::string_view() : list.substr(sp + 1);
    if (const std::string_view* v = find_header(headers, n, name)) {
      out->append(name).append(": ").append(*v).push_back('\n');
    } else if (name == "@request-target") {
      out->append(method).push_back(' ');
      out->append(request_uri.empty() ? std::string_view("/") : request_uri).push_back('\n');
    }
  }
}

size_t compute_hmac(Algorithm a, std::string_view key, std::string_view data,
                    unsigned char mac[kMaxMac]) {
  const EVP_MD* md = a == Algorithm::kSha1     ? EVP_sha1()
                     : a == Algorithm::kSha256 ? EVP_sha256()
                                               : EVP_sha512();
  unsigned int len = 0;
  static const unsigned char kEmpty = 0;
  const void* k = key.empty() ? static_cast<const void*>(&kEmpty) : key.data();
  const unsigned char* d =
      data.empty() ? &kEmpty : reinterpret_cast<const unsigned char*>(data.data());
  if (HMAC(md, k, static_cast<int>(key.size()), d, data.size(), mac, &len) == nullptr) {
    return 0;
  }
  return len;
}

namespace {

constexpr std::array<int8_t, 256> make_table() {
  std::array<int8_t, 256> t{};
  for (auto& v : t) {
    v = -1;
  }
  const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (int i = 0; i < 64; ++i) {
    t[static_cast<unsigned char>(alphabet[i])] = static_cast<int8_t>(i);
  }
  return t;
}
constexpr std::array<int8_t, 256> kTable = make_table();

}  // namespace

bool decode_base64(std::string_view in, unsigned char* out, size_t cap, size_t* len) {
  size_t n = in.size();
  size_t pad = 0;
  while (pad < 2 && n > 0 && in[n - 1] == '=') {
    --n;
    ++pad;
  }
  // Padding only when it completes a quad; without it the length must still be a quad's part.
  if ((pad > 0 && in.size() % 4 != 0) || n % 4 == 1) {
    return false;
  }
  const size_t want = n / 4 * 3 + (n % 4 == 0 ? 0 : n % 4 - 1);
  if (want > cap) {
    return false;
  }
  uint32_t acc = 0;
  int bits = 0;
  size_t o = 0;
  for (size_t i = 0; i < n; ++i) {
    int v = kTable[static_cast<unsigned char>(in[i])];
    if (v < 0) {
      return false;
    }
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = static_cast<unsigned char>(acc >> bits);
    }
  }
  // The bits the last character carries beyond the bytes must be zero (canonical form).
  if (bits > 0 && (acc & ((1u << bits) - 1)) != 0) {
    return false;
  }
  *len = o;
  return true;
}

size_t encode_base64(const unsigned char* in, size_t n, char* out) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  size_t o = 0;
  size_t i = 0;
  for (; i + 2 < n; i += 3) {
    uint32_t v = (uint32_t{in[i]} << 16) | (uint32_t{in[i + 1]} << 8) | in[i + 2];
    out[o++] = kAlphabet[v >> 18];
    out[o++] = kAlphabet[(v >> 12) & 63];
    out[o++] = kAlphabet[(v >> 6) & 63];
    out[o++] = kAlphabet[v & 63];
  }
  if (i < n) {
    uint32_t v = uint32_t{in[i]} << 16;
    if (i + 1 < n) {
      v |= uint32_t{in[i + 1]} << 8;
    }
    out[o++] = kAlphabet[v >> 18];
    out[o++] = kAlphabet[(v >> 12) & 63];
    out[o++] = i + 1 < n ? kAlphabet[(v >> 6) & 63] : '=';
    out[o++] = '=';
  }
  return o;
}

bool body_digest_matches(std::string_view digest_header, std::string_view body) {
  constexpr std::string_view kPrefix = "SHA-256=";
  if (!digest_header.starts_with(kPrefix)) {
    return false;
  }
  unsigned char md[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(body.data()), body.size(), md);
  char encoded[44];
  const size_t len = encode_base64(md, sizeof(md), encoded);
  return digest_header.substr(kPrefix.size()) == std::string_view(encoded, len);
}

namespace {

// Two digits at s[i], s[i + 1].
bool two_digits(std::string_view s, size_t i, int* out) {
  if (s[i] < '0' || s[i] > '9' || s[i + 1] < '0' || s[i + 1] > '9') {
    return false;
  }
  *out = (s[i] - '0') * 10 + (s[i + 1] - '0');
  return true;
}

int index_of(std::string_view name, const char* const* names, int count) {
  for (int i = 0; i < count; ++i) {
    if (name == names[i]) {
      return i;
    }
  }
  return -1;
}

bool leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

// Days from 1970-01-01 to y-m-d (Howard Hinnant's days_from_civil).
int64_t days_from_civil(int64_t y, int m, int d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

}  // namespace

bool parse_imf_fixdate(std::string_view s, int64_t* unix_seconds) {
  // "Sun, 06 Nov 1994 08:49:37 GMT": 29 bytes, every separator in its place.
  static const char* const kDays[] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};
  static const char* const kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                        "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  if (s.size() != 29 || s.substr(3, 2) != ", " || s[7] != ' ' || s[11] != ' ' || s[16] != ' ' ||
      s[19] != ':' || s[22] != ':' || s.substr(25) != " GMT") {
    return false;
  }
  if (index_of(s.substr(0, 3), kDays, 7) < 0) {
    return false;
  }
  const int month = index_of(s.substr(8, 3), kMonths, 12) + 1;
  int day = 0, y_hi = 0, y_lo = 0, hour = 0, min = 0, sec = 0;
  if (month == 0 || !two_digits(s, 5, &day) || !two_digits(s, 12, &y_hi) ||
      !two_digits(s, 14, &y_lo) || !two_digits(s, 17, &hour) || !two_digits(s, 20, &min) ||
      !two_digits(s, 23, &sec)) {
    return false;
  }
  static const int kMonthDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const int year = y_hi * 100 + y_lo;
  const int days_in_month = kMonthDays[month - 1] + (month == 2 && leap(year) ? 1 : 0);
  // 60 seconds: a leap second, which RFC 7231's second = 2DIGIT allows.
  if (day < 1 || day > days_in_month || hour > 23 || min > 59 || sec > 60) {
    return false;
  }
  *unix_seconds = days_from_civil(year, month, day) * 86400 + hour * 3600 + min * 60 + sec;
  return true;
}

std::string_view request_uri(const http::RequestHead& req) {
  if (req.authority.empty() || req.method == http::Method::kConnect) {
    return req.target;
  }
  const size_t sep = req.target.find("://");
  if (sep == std::string_view::npos) {
    return req.target;
  }
  std::string_view rest = req.target.substr(sep + 3 + req.authority.size());
  return rest.empty() ? std::string_view("/") : rest;
}

}  // namespace sluice::plugins::hmac_auth
