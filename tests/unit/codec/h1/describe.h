#pragma once
// One text per parse result, so results from different buffers (and splits) compare by value.

#include <sstream>
#include <string>

#include "codec/h1/parser.h"
#include "unit/codec/h1/feed.h"

namespace sluice::h1 {

inline std::string describe_error(const ParseResult& r) {
  if (r.status == ParseStatus::kIncomplete) {
    return std::string(kIncompleteText);
  }
  return "error " + std::to_string(r.error_status) + ": " + r.error;
}

inline const char* body_name(http::BodyKind k) {
  switch (k) {
    case http::BodyKind::kNone:
      return "none";
    case http::BodyKind::kLength:
      return "length";
    case http::BodyKind::kChunked:
      return "chunked";
    case http::BodyKind::kUntilClose:
      return "until-close";
  }
  return "?";
}

template <typename Head>
void describe_headers(const Head& h, std::ostringstream& o) {
  for (size_t i = 0; i < h.num_headers; ++i) {
    o << "\n  [" << h.headers[i].name << "]: [" << h.headers[i].value << "]";
  }
}

inline std::string describe(const ParseResult& r, const http::RequestHead& h) {
  if (r.status != ParseStatus::kComplete) {
    return describe_error(r);
  }
  std::ostringstream o;
  o << "consumed=" << r.consumed << " method=" << h.method_text << "/" << static_cast<int>(h.method)
    << " target=[" << h.target << "] path=[" << h.path << "] query=[" << h.query << "] authority=["
    << h.authority << "] host=[" << h.host << "] 1." << h.version_minor
    << " body=" << body_name(h.body_kind) << "/" << h.content_length
    << " keep_alive=" << h.keep_alive << " expect=" << h.expect_continue;
  describe_headers(h, o);
  return o.str();
}

inline std::string describe(const ParseResult& r, const http::ResponseHead& h) {
  if (r.status != ParseStatus::kComplete) {
    return describe_error(r);
  }
  std::ostringstream o;
  o << "consumed=" << r.consumed << " status=" << h.status << " reason=[" << h.reason << "] 1."
    << h.version_minor << " body=" << body_name(h.body_kind) << "/" << h.content_length
    << " keep_alive=" << h.keep_alive;
  describe_headers(h, o);
  return o.str();
}

}  // namespace sluice::h1
