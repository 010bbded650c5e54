#include "plugins/tracing/ids.h"

#include <sys/random.h>
#include <time.h>

#include <cstring>

#include "common/strings.h"

namespace sluice::plugins::tracing {

namespace {

struct Xoshiro {
  uint64_t s[4];
  Xoshiro() {
    if (getrandom(s, sizeof(s), 0) != static_cast<ssize_t>(sizeof(s))) {
      // Never expected; a thread's address and the clock still differ per thread.
      uint64_t seed = reinterpret_cast<uintptr_t>(this) ^ static_cast<uint64_t>(time(nullptr));
      for (uint64_t& w : s) {
        seed += 0x9e3779b97f4a7c15ull;  // splitmix64
        uint64_t z = seed;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        w = z ^ (z >> 31);
      }
    }
    if ((s[0] | s[1] | s[2] | s[3]) == 0) {
      s[0] = 1;
    }
  }
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t next() {
    const uint64_t result = rotl(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
  }
};

bool all_zero(const uint8_t* p, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (p[i] != 0) {
      return false;
    }
  }
  return true;
}

// A B3 trace id: 16 or 32 hex digits, into the 128-bit id (a 64-bit one in the lower half).
bool parse_b3_trace(std::string_view s, uint8_t out[16]) {
  std::memset(out, 0, 16);
  if (s.size() == 32) {
    return parse_hex(s, out, 16) && !all_zero(out, 16);
  }
  return s.size() == 16 && parse_hex(s, out + 8, 8) && !all_zero(out, 16);
}

int b3_sampled(std::string_view s) {
  if (s == "1" || s == "true") {
    return 1;
  }
  if (s == "0" || s == "false") {
    return 0;
  }
  return -1;
}

}  // namespace

uint64_t random_u64() {
  thread_local Xoshiro rng;
  return rng.next();
}

uint64_t new_span_id() {
  uint64_t v;
  do {
    v = random_u64();
  } while (v == 0);
  return v;
}

void new_trace_id(uint8_t out[16]) {
  uint64_t a = random_u64(), b = new_span_id();
  std::memcpy(out, &a, 8);
  std::memcpy(out + 8, &b, 8);
}

int64_t wall_minus_monotonic() {
  timespec rt, mt;
  clock_gettime(CLOCK_REALTIME, &rt);
  clock_gettime(CLOCK_MONOTONIC, &mt);
  return (static_cast<int64_t>(rt.tv_sec) - mt.tv_sec) * 1000000000 +
         (static_cast<int64_t>(rt.tv_nsec) - mt.tv_nsec);
}

void append_hex(std::string* out, const uint8_t* in, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  const size_t at = out->size();
  out->resize(at + 2 * n);
  char* p = out->data() + at;
  for (size_t i = 0; i < n; ++i) {
    p[2 * i] = kDigits[in[i] >> 4];
    p[2 * i + 1] = kDigits[in[i] & 15];
  }
}

void append_hex64(std::string* out, uint64_t v) {
  uint8_t b[8];
  for (int i = 7; i >= 0; --i) {
    b[i] = static_cast<uint8_t>(v);
    v >>= 8;
  }
  append_hex(out, b, 8);
}

bool parse_hex(std::string_view s, uint8_t* out, size_t n) {
  if (s.size() != 2 * n) {
    return false;
  }
  for (size_t i = 0; i < n; ++i) {
    int hi = common::hex_value(s[2 * i]), lo = common::hex_value(s[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      return false;
    }
    out[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return true;
}

bool parse_hex64(std::string_view s, uint64_t* out) {
  uint8_t b[8];
  if (!parse_hex(s, b, 8)) {
    return false;
  }
  uint64_t v = 0;
  for (uint8_t x : b) {
    v = v << 8 | x;
  }
  *out = v;
  return true;
}

Incoming parse_traceparent(std::string_view v) {
  Incoming in;
  // version "-" trace-id "-" parent-id "-" flags; version 00 is exactly that long, a later
  // version may append fields after another "-".
  if (v.size() < 55 || v[2] != '-' || v[35] != '-' || v[52] != '-') {
    return in;
  }
  uint8_t version, flags;
  if (!parse_hex(v.substr(0, 2), &version, 1) || version == 0xff ||
      (version == 0 && v.size() != 55) || (v.size() > 55 && v[55] != '-')) {
    return in;
  }
  for (char c : v.substr(0, 55)) {
    if (c >= 'A' && c <= 'F') {
      return in;  // the spec's ids are lowercase
    }
  }
  if (!parse_hex(v.substr(3, 32), in.trace_id, 16) || all_zero(in.trace_id, 16) ||
      !parse_hex64(v.substr(36, 16), &in.span_id) || in.span_id == 0 ||
      !parse_hex(v.substr(53, 2), &flags, 1)) {
    return Incoming{};
  }
  in.sampled = flags & 1;
  in.valid = true;
  return in;
}

void append_traceparent(std::string* out, const uint8_t trace_id[16], uint64_t span_id,
                        bool sampled) {
  out->append("00-");
  append_hex(out, trace_id, 16);
  out->push_back('-');
  append_hex64(out, span_id);
  out->append(sampled ? "-01" : "-00");
}

Incoming parse_b3_single(std::string_view v) {
  Incoming in;
  if (v.size() == 1) {  // a sampling decision alone
    in.debug = v == "d";
    in.sampled = in.debug ? 1 : b3_sampled(v);
    return in;
  }
  size_t d1 = v.find('-');
  if (d1 == std::string_view::npos) {
    return in;
  }
  std::string_view rest = v.substr(d1 + 1);
  size_t d2 = rest.find('-');
  std::string_view span = rest.substr(0, d2);
  Incoming out;
  if (!parse_b3_trace(v.substr(0, d1), out.trace_id) || !parse_hex64(span, &out.span_id) ||
      out.span_id == 0) {
    return in;
  }
  if (d2 != std::string_view::npos) {
    rest = rest.substr(d2 + 1);
    size_t d3 = rest.find('-');
    std::string_view flag = rest.substr(0, d3);
    if (flag == "d") {
      out.debug = true;
      out.sampled = 1;
    } else if (flag == "1" || flag == "0") {
      out.sampled = flag == "1";
    } else {
      return in;
    }
    if (d3 != std::string_view::npos && !parse_hex64(rest.substr(d3 + 1), &out.parent_id)) {
      return in;
    }
  }
  out.valid = true;
  return out;
}

Incoming parse_b3_multi(std::string_view trace_id, std::string_view span_id,
                        std::string_view parent_id, std::string_view sampled,
                        std::string_view flags) {
  Incoming in;
  in.debug = flags == "1";
  in.sampled = in.debug ? 1 : b3_sampled(sampled);
  if (trace_id.empty() && span_id.empty()) {
    return in;
  }
  Incoming out = in;
  if (!parse_b3_trace(trace_id, out.trace_id) || !parse_hex64(span_id, &out.span_id) ||
      out.span_id == 0 || (!parent_id.empty() && !parse_hex64(parent_id, &out.parent_id))) {
    return in;  // the decision stands; the malformed context starts a new trace
  }
  out.valid = true;
  return out;
}

}  // namespace sluice::plugins::tracing
