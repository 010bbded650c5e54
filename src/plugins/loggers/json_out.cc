#include "plugins/loggers/json_out.h"

#include <algorithm>
#include <array>
#include <charconv>

#include "plugin/args.h"

namespace sluice::plugins::loggers {

namespace {

// 1: the byte is written as it is, in a run; 0: it needs a look (an escape or UTF-8).
constexpr std::array<uint8_t, 256> kPlain = [] {
  std::array<uint8_t, 256> t{};
  for (int c = 0x20; c < 0x80; ++c) {
    t[c] = 1;
  }
  t['"'] = 0;
  t['\\'] = 0;
  return t;
}();

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";

void append_escape(std::string* out, unsigned char c) {
  switch (c) {
    case '"':
      out->append("\\\"");
      return;
    case '\\':
      out->append("\\\\");
      return;
    case '\b':
      out->append("\\b");
      return;
    case '\f':
      out->append("\\f");
      return;
    case '\n':
      out->append("\\n");
      return;
    case '\r':
      out->append("\\r");
      return;
    case '\t':
      out->append("\\t");
      return;
    default: {
      static constexpr char kHex[] = "0123456789abcdef";
      const char u[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
      out->append(u, 6);
      return;
    }
  }
}

// The UTF-8 sequence a lead byte starts: its length and the range its second byte must be in
// (RFC 3629's table: no overlong forms, no surrogates, nothing past U+10FFFF). 0: not a lead.
struct Lead {
  uint8_t len, lo, hi;
};
Lead lead_of(unsigned char c) {
  if (c >= 0xC2 && c <= 0xDF) {
    return {2, 0x80, 0xBF};
  }
  if (c == 0xE0) {
    return {3, 0xA0, 0xBF};
  }
  if (c == 0xED) {
    return {3, 0x80, 0x9F};
  }
  if (c >= 0xE1 && c <= 0xEF) {
    return {3, 0x80, 0xBF};
  }
  if (c == 0xF0) {
    return {4, 0x90, 0xBF};
  }
  if (c >= 0xF1 && c <= 0xF3) {
    return {4, 0x80, 0xBF};
  }
  if (c == 0xF4) {
    return {4, 0x80, 0x8F};
  }
  return {0, 0, 0};
}

}  // namespace

void append_json_string(std::string* out, std::string_view s) {
  out->push_back('"');
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    size_t run = i;
    while (run < n && kPlain[p[run]] != 0) {
      ++run;
    }
    out->append(s.data() + i, run - i);
    i = run;
    if (i == n) {
      break;
    }
    const unsigned char c = p[i];
    if (c < 0x80) {
      append_escape(out, c);
      ++i;
      continue;
    }
    const Lead l = lead_of(c);
    if (l.len == 0) {
      out->append(kReplacement);  // not a lead byte: replaced, and read past
      ++i;
      continue;
    }
    size_t j = 1;
    for (; j < l.len; ++j) {
      if (i + j == n) {
        out->append(kReplacement);  // cut short by the string's end
        out->push_back('"');
        return;
      }
      const unsigned char b = p[i + j];
      const bool ok = j == 1 ? (b >= l.lo && b <= l.hi) : (b >= 0x80 && b <= 0xBF);
      if (!ok) {
        break;
      }
    }
    if (j < l.len) {
      out->append(kReplacement);  // the byte that broke the sequence is read again
      i += j;
      continue;
    }
    out->append(s.data() + i, l.len);
    i += l.len;
  }
  out->push_back('"');
}

void append_ms(std::string* out, uint64_t ns) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof(buf), ns / 1000000);
  out->append(buf, r.ptr);
  uint64_t frac = ns % 1000000;
  if (frac == 0) {
    return;
  }
  char digits[7] = {'.', 0, 0, 0, 0, 0, 0};
  for (int k = 6; k >= 1; --k) {
    digits[k] = static_cast<char>('0' + frac % 10);
    frac /= 10;
  }
  int len = 7;
  while (digits[len - 1] == '0') {
    --len;
  }
  out->append(digits, static_cast<size_t>(len));
}

void PairObject::clear() {
  bytes_.clear();
  items_.clear();
}

void PairObject::add(std::string_view key, std::string_view value, bool lower) {
  Item it{};
  it.key = static_cast<uint32_t>(bytes_.size());
  it.key_len = static_cast<uint32_t>(key.size());
  bytes_.append(key);
  if (lower) {
    for (size_t k = it.key; k < bytes_.size(); ++k) {
      char& c = bytes_[k];
      if (c >= 'A' && c <= 'Z') {
        c = static_cast<char>(c + ('a' - 'A'));
      }
    }
  }
  it.value = static_cast<uint32_t>(bytes_.size());
  bytes_.append(value);
  it.value_len = static_cast<uint32_t>(value.size());
  it.order = static_cast<uint32_t>(items_.size());
  it.is_true = false;
  items_.push_back(it);
}

void PairObject::add_arg(std::string_view raw_key, std::string_view raw_value, bool has_value) {
  Item it{};
  it.key = static_cast<uint32_t>(bytes_.size());
  plugin::unescape_arg(raw_key, &bytes_);
  it.key_len = static_cast<uint32_t>(bytes_.size() - it.key);
  it.value = static_cast<uint32_t>(bytes_.size());
  if (has_value) {
    plugin::unescape_arg(raw_value, &bytes_);
  }
  it.value_len = static_cast<uint32_t>(bytes_.size() - it.value);
  it.order = static_cast<uint32_t>(items_.size());
  it.is_true = !has_value;
  items_.push_back(it);
}

void PairObject::render(std::string* out) {
  // By key, then in the order given: a key's values stay in order. std::sort with the order as
  // the last key sorts as a stable sort would, without its temporary buffer.
  std::sort(items_.begin(), items_.end(), [this](const Item& a, const Item& b) {
    const int c = key_of(a).compare(key_of(b));
    return c != 0 ? c < 0 : a.order < b.order;
  });
  auto value = [&](const Item& i) {
    if (i.is_true) {
      out->append("true");
    } else {
      append_json_string(out, std::string_view(bytes_.data() + i.value, i.value_len));
    }
  };
  out->push_back('{');
  for (size_t i = 0; i < items_.size();) {
    size_t j = i + 1;
    while (j < items_.size() && key_of(items_[j]) == key_of(items_[i])) {
      ++j;
    }
    if (i != 0) {
      out->push_back(',');
    }
    append_json_string(out, key_of(items_[i]));
    out->push_back(':');
    if (j - i == 1) {
      value(items_[i]);
    } else {
      out->push_back('[');
      for (size_t k = i; k < j; ++k) {
        if (k != i) {
          out->push_back(',');
        }
        value(items_[k]);
      }
      out->push_back(']');
    }
    i = j;
  }
  out->push_back('}');
}

}  // namespace sluice::plugins::loggers
