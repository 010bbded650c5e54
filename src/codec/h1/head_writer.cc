#include "codec/h1/head_writer.h"

#include <charconv>

namespace sluice::h1 {

namespace {

void append_uint(std::string* out, uint64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, static_cast<size_t>(r.ptr - buf));
}

void append_field(std::string* out, const http::Header& f) {
  out->append(f.name).append(": ").append(f.value).append("\r\n");
}

}  // namespace

void write_response_head(std::string* out, const ResponseHeadOut& h) {
  out->clear();
  out->append("HTTP/1.1 ");
  append_uint(out, static_cast<uint64_t>(h.status));
  out->push_back(' ');
  out->append(h.reason).append("\r\n");
  out->append(h.first_lines);
  for (const http::Header& f : h.upstream) {
    if (!h.skip_name.empty() && http::iequals(f.name, h.skip_name)) {
      continue;
    }
    append_field(out, f);
  }
  out->append(h.middle_lines);
  for (const http::Header& f : h.fields) {
    append_field(out, f);
  }
  if (h.content_length >= 0) {
    out->append("Content-Length: ");
    append_uint(out, static_cast<uint64_t>(h.content_length));
    out->append("\r\n");
  } else if (h.chunked) {
    out->append("Transfer-Encoding: chunked\r\n");
  }
  if (!h.upgrade.empty()) {
    out->append("Upgrade: ").append(h.upgrade).append("\r\nConnection: upgrade\r\n\r\n");
    return;
  }
  switch (h.connection) {
    case ResponseHeadOut::Connection::kNone:
      break;
    case ResponseHeadOut::Connection::kKeepAlive:
      out->append("Connection: keep-alive\r\n");
      break;
    case ResponseHeadOut::Connection::kClose:
      out->append("Connection: close\r\n");
      break;
  }
  out->append("\r\n");
}

}  // namespace sluice::h1
