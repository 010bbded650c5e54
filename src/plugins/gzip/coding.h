#pragma once
// What gzip and brotli share: the schema fields both have (types, min_length, http_version,
// vary), reading the request's Accept-Encoding, the checks APISIX and nginx make before
// compressing, the head edits compression makes, and a per-worker pool that lends each
// compressing request its stream.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "plugin/info.h"
#include "plugin/plugin.h"
#include "schema/checks.h"

namespace sluice::plugins::coding {

// Context::coding bits.
enum : uint8_t {
  kGzip = 1,     // Accept-Encoding accepts gzip
  kBr = 2,       // ... and br
  kHttp10 = 4,   // the request is HTTP/1.0
  kHead = 8,     // a HEAD request: nginx's header_only, nothing to compress
  kRead = 0x80,  // the head has been read
};

// The codings of kGzip | kBr that an Accept-Encoding value accepts (RFC 9110 12.5.3): a
// coding listed with a qvalue above 0, or one not listed when `*` is, with a qvalue above 0.
// `x-gzip` is gzip. Tokens compare without case.
uint8_t parse_accept_encoding(std::string_view value);
// Reads the request head once per request into ctx.coding (every Accept-Encoding field).
void read_head(plugin::Context& ctx);

// The fields gzip and brotli have alike.
struct Common {
  bool any_type = false;  // types "*"
  std::vector<std::string> types{"text/html"};
  int64_t min_length = 20;
  bool http10 = false;  // http_version 1.0: HTTP/1.0 requests are compressed too
  bool vary = false;
};
// Decodes `types`, `min_length`, `http_version` and `vary` with APISIX's texts.
void decode_common(schema::FieldDecoder& d, Common* c);

// APISIX's type test: the media type before any `;` (spaces trimmed, case ignored) equals
// one of `types`, or types is "*". No Content-Type: no match.
bool type_matches(const Common& c, std::string_view content_type);

// The response head as the client will get it, so far: ctx.resp's edits over the upstream's
// head. False when the field is absent.
bool final_header(const plugin::Context& ctx, std::string_view name, std::string_view* out);
// The length the body will have, or -1 when unknown (chunked, or a plugin changes it).
int64_t final_length(const plugin::Context& ctx);
int final_status(const plugin::Context& ctx);
// The Content-Type of a gateway-made answer, as Exchange::reply() picks it when no plugin
// set one: JSON bodies start with `{`, other bodies are text/plain, an empty one has none.
std::string_view reply_type(const plugin::Context& ctx, std::string_view body);

// APISIX's header_filter test with the head as it stands: type, length and HTTP version.
// For a gateway-made answer (no upstream head) the type is known only with its body:
// `type_later` is set and the type is not tested.
bool head_qualifies(const Common& c, const plugin::Context& ctx, bool* type_later);
// The test once the head is final: a response with a body (not HEAD, 1xx, 204 or 304), not a
// 206, not encoded already, and the type and length tests again (a later plugin may have changed
// them). `nginx_statuses`: only a 200, 403 or 404, as nginx's gzip filter (APISIX's brotli
// compresses any status).
bool final_qualifies(const Common& c, const plugin::Context& ctx, bool nginx_statuses);
// The edits compressing makes: Content-Encoding, no length (chunked) or Accept-Ranges, a
// strong ETag made weak (nginx's ngx_http_weak_etag; an invalid one dropped).
void edit_head(plugin::Context& ctx, std::string_view encoding);

// A per-worker pool of streams `S` (S: default-constructible, with `size_t slot` and
// `Pool<S>* pool`), lent to a request for its response and given back by S's release() (the
// log phase, or the end of the body): at most one per response being compressed, and `keep`
// idle ones kept for the next. It owns every stream, lent or not, so none outlives the worker.
// Thread: worker
// A coder's output buffer: sized before each piece, doubled (keeping what is written) when
// the coder needs more, and dropped after a piece that made it bigger than a coder keeps.
// Thread: worker
struct OutBuffer {
  std::unique_ptr<uint8_t[]> data;
  size_t cap = 0;

  // Lets go of a buffer grown past `keep` bytes.
  void trim(size_t keep) {
    if (cap > keep) {
      data.reset();
      cap = 0;
    }
  }
  // At least n bytes (contents not kept).
  void reserve(size_t n) {
    if (cap < n) {
      data.reset(new uint8_t[n]);  // NOLINT: uninitialised on purpose, the coder fills it
      cap = n;
    }
  }
  // Twice the room, the first `used` bytes kept.
  void grow(size_t used) {
    std::unique_ptr<uint8_t[]> bigger(new uint8_t[cap * 2]);
    std::copy_n(data.get(), used, bigger.get());
    data = std::move(bigger);
    cap *= 2;
  }
};

template <class S>
class Pool : public plugin::WorkerObject {
 public:
  explicit Pool(size_t keep) : keep_(keep) {}
  S* acquire() {
    if (!idle_.empty()) {
      S* s = idle_.back();
      idle_.pop_back();
      return s;
    }
    all_.push_back(std::make_unique<S>());
    all_.back()->slot = all_.size() - 1;
    all_.back()->pool = this;
    return all_.back().get();
  }
  void release(S* s) {
    if (idle_.size() < keep_) {
      idle_.push_back(s);
      return;
    }
    size_t i = s->slot;
    std::swap(all_[i], all_.back());
    all_[i]->slot = i;
    all_.pop_back();  // destroys s
  }
  size_t lent() const { return all_.size() - idle_.size(); }
  size_t size() const { return all_.size(); }

 private:
  size_t keep_;
  std::vector<std::unique_ptr<S>> all_;
  std::vector<S*> idle_;
};

}  // namespace sluice::plugins::coding
