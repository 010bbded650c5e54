#pragma once
// Protocol-neutral HTTP message heads. Every string_view points into the connection's read
// buffer; a head is valid only while that buffer region is untouched.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace sluice::http {

enum class Method : uint8_t {
  kGet,
  kHead,
  kPost,
  kPut,
  kDelete,
  kPatch,
  kOptions,
  kConnect,
  kTrace,
  kPurge,
  kOther,  // a syntactically valid token we do not know; still proxied
};

// Bit for Method m in a method mask (router's `methods`).
constexpr uint32_t method_bit(Method m) { return 1u << static_cast<uint32_t>(m); }
Method parse_method(std::string_view token);
std::string_view method_name(Method m);
// RFC 9110 9.2.2: GET HEAD PUT DELETE OPTIONS TRACE.
bool is_idempotent(Method m);

struct Header {
  std::string_view name;
  std::string_view value;  // leading/trailing whitespace already trimmed
};

inline constexpr size_t kMaxHeaders = 100;

enum class BodyKind : uint8_t {
  kNone,        // no body follows
  kLength,      // Content-Length bytes follow
  kChunked,     // Transfer-Encoding: chunked
  kUntilClose,  // responses only: body runs until the peer closes
};

// Thread: worker
struct RequestHead {
  Method method = Method::kOther;
  std::string_view method_text;
  std::string_view target;     // request-target exactly as sent
  std::string_view path;       // origin path without query ("/a/b"); for absolute-form, its path
  std::string_view query;      // after '?', without it; empty if none
  std::string_view authority;  // host[:port] from an absolute-form target, else empty
  std::string_view host;       // effective host: authority if present, else the Host header
  int version_minor = 1;       // HTTP/1.x
  int version_major = 1;       // 2: the request came over HTTP/2 (rebuilt as an HTTP/1.1 head)
  // The path as nginx's $uri: percent-decoded, dot segments resolved, slashes merged
  // (http/path.h). Routes match it and it is the `uri` variable; a view of `path` when that is
  // already normal, else of uri_buf. `path` and `target` stay raw: they are what is forwarded.
  std::string_view uri;
  std::string uri_buf;  // its capacity is kept with the reused exchange
  Header headers[kMaxHeaders];
  size_t num_headers = 0;

  BodyKind body_kind = BodyKind::kNone;
  uint64_t content_length = 0;   // valid when body_kind == kLength
  bool keep_alive = true;        // after applying version default and Connection tokens
  bool expect_continue = false;  // Expect: 100-continue

  // First header with this name (ASCII case-insensitive), or nullptr.
  const Header* find(std::string_view name) const;
  // Re-points every view into the `len` bytes at `from` to the same offsets at `to` (a copy
  // of those bytes), and `uri` into this head's own uri_buf when it was there, so a copied
  // head outlives the buffer it was parsed from.
  void rebase(const char* from, size_t len, const char* to);
};

// Thread: worker
struct ResponseHead {
  int status = 0;
  std::string_view reason;
  int version_minor = 1;
  Header headers[kMaxHeaders];
  size_t num_headers = 0;
  BodyKind body_kind = BodyKind::kNone;  // as framed by the headers alone (see h1 codec)
  uint64_t content_length = 0;
  bool keep_alive = true;

  const Header* find(std::string_view name) const;
};

// ASCII case-insensitive equality, for header names and tokens. Inline: it runs for every
// header of every message.
inline bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x != y) {
      // Only letters may differ, and only by the 0x20 case bit.
      char lx = static_cast<char>(x | 0x20);
      if (lx != static_cast<char>(y | 0x20) || lx < 'a' || lx > 'z') {
        return false;
      }
    }
  }
  return true;
}

// True for the connection-level headers RFC 9110 7.6.1 says a proxy must not forward:
// Connection, Keep-Alive, Proxy-Connection, TE, Trailer, Transfer-Encoding, Upgrade,
// Proxy-Authenticate, Proxy-Authorization.
bool is_hop_by_hop(std::string_view name);

// The header names listed in a message's Connection header(s) (RFC 9110 7.6.1: those
// headers are hop-by-hop too). `close` and `keep-alive` are left out: they name no header a
// proxy would otherwise forward. Collected once per message, so the usual
// `Connection: keep-alive` costs nothing per header.
// Thread: worker
class ConnectionTokens {
 public:
  ConnectionTokens(const Header* headers, size_t n);
  bool empty() const { return n_ == 0; }
  bool contains(std::string_view name) const;

 private:
  static constexpr size_t kMax = 16;
  std::string_view names_[kMax];
  size_t n_ = 0;
  const Header* headers_;  // for the rare message listing more than kMax tokens
  size_t num_headers_;
  bool overflow_ = false;
};

}  // namespace sluice::http
