#pragma once
// A protobuf wire-format writer for the few OTLP messages the opentelemetry plugin sends: tags,
// varints, fixed64, length-delimited fields, and nested messages whose length is written once
// they end. It appends to a caller's string (capacity kept), so encoding a span allocates
// nothing in steady state.

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace sluice::plugins::tracing {

// Thread: the caller's (a view over its buffer)
class ProtoWriter {
 public:
  enum WireType : uint8_t { kVarint = 0, kFixed64 = 1, kLen = 2, kFixed32 = 5 };

  explicit ProtoWriter(std::string* out) : out_(out) {}

  // Built on the stack and appended once: a push_back per byte checks the capacity per byte.
  void varint(uint64_t v) {
    if (v < 0x80) {
      out_->push_back(static_cast<char>(v));
      return;
    }
    char buf[10];
    size_t n = 0;
    while (v >= 0x80) {
      buf[n++] = static_cast<char>(v | 0x80);
      v >>= 7;
    }
    buf[n++] = static_cast<char>(v);
    out_->append(buf, n);
  }
  void tag(uint32_t field, WireType t) { varint(uint64_t{field} << 3 | t); }

  void uint_field(uint32_t field, uint64_t v) {
    tag(field, kVarint);
    varint(v);
  }
  // int64 fields carry negative values as ten-byte two's complement varints.
  void int_field(uint32_t field, int64_t v) { uint_field(field, static_cast<uint64_t>(v)); }
  void bool_field(uint32_t field, bool v) { uint_field(field, v ? 1 : 0); }
  void fixed64_field(uint32_t field, uint64_t v) {
    tag(field, kFixed64);
    char b[8];
    for (int i = 0; i < 8; ++i) {
      b[i] = static_cast<char>(v >> (8 * i));  // little-endian
    }
    out_->append(b, 8);
  }
  void double_field(uint32_t field, double d) {
    uint64_t v;
    std::memcpy(&v, &d, 8);
    fixed64_field(field, v);
  }
  void bytes_field(uint32_t field, std::string_view v) {
    tag(field, kLen);
    varint(v.size());
    out_->append(v);
  }
  void bytes_field(uint32_t field, const uint8_t* p, size_t n) {
    bytes_field(field, std::string_view(reinterpret_cast<const char*>(p), n));
  }

  // A nested message: begin() writes its tag and a one-byte length; end() fixes the length,
  // moving the body when it needs more bytes. Returns the mark end() takes.
  size_t begin(uint32_t field) {
    tag(field, kLen);
    out_->push_back(0);
    return out_->size();
  }
  void end(size_t mark) {
    const size_t len = out_->size() - mark;
    if (len < 0x80) {
      (*out_)[mark - 1] = static_cast<char>(len);
      return;
    }
    char buf[10];
    size_t n = 0;
    uint64_t v = len;
    while (v >= 0x80) {
      buf[n++] = static_cast<char>(v | 0x80);
      v >>= 7;
    }
    buf[n++] = static_cast<char>(v);
    out_->replace(mark - 1, 1, buf, n);
  }

  std::string* out() { return out_; }

 private:
  std::string* out_;
};

}  // namespace sluice::plugins::tracing
