#include "plugins/jwt_auth/json_scan.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>

namespace sluice::plugins::jwt_auth {

namespace {

// The bytes a string holds as they are: printable ASCII but the quote and the backslash.
constexpr std::array<bool, 256> make_plain() {
  std::array<bool, 256> t{};
  for (int c = 0x20; c < 0x80; ++c) {
    t[c] = c != '"' && c != '\\';
  }
  return t;
}
constexpr std::array<bool, 256> kPlain = make_plain();

bool is_digit(int c) { return c >= '0' && c <= '9'; }

int hex_value(int c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

void append_utf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// A cursor over the text; every read is bounds-checked (peek() is -1 at the end).
class Scanner {
 public:
  explicit Scanner(std::string_view t) : p_(t.data()), end_(t.data() + t.size()) {}

  bool at_end() const { return p_ == end_; }
  int peek() const { return p_ < end_ ? static_cast<unsigned char>(*p_) : -1; }
  bool eat(char c) {
    if (peek() != static_cast<unsigned char>(c))
      return false;
    ++p_;
    return true;
  }
  // nlohmann skips a UTF-8 BOM before the first token; a lone 0xEF is an error.
  bool skip_bom() {
    if (peek() != 0xEF)
      return true;
    return end_ - p_ >= 3 && static_cast<unsigned char>(p_[1]) == 0xBB &&
           static_cast<unsigned char>(p_[2]) == 0xBF && (p_ += 3, true);
  }
  void skip_ws() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r'))
      ++p_;
  }

  // A string, at its opening quote. *raw: the text between the quotes; *escaped: whether it
  // holds a backslash (then unescape() gives its value).
  bool string(std::string_view* raw, bool* escaped);
  // The scalar at the cursor (string, number, literal), or a whole array or object.
  bool value(JsonValue* out);

  static void unescape(std::string_view raw, std::string* out);

 private:
  bool utf8_tail(int lead);
  bool escape();
  bool number(JsonValue* out);
  bool literal(std::string_view word);
  bool container();

  const char* p_;
  const char* end_;
};

// RFC 3629's well-formed sequences (what nlohmann's lexer checks), after the lead byte.
bool Scanner::utf8_tail(int lead) {
  int n = 0;
  int lo = 0x80;
  int hi = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    n = 1;
  } else if (lead == 0xE0) {
    n = 2, lo = 0xA0;
  } else if ((lead >= 0xE1 && lead <= 0xEC) || lead == 0xEE || lead == 0xEF) {
    n = 2;
  } else if (lead == 0xED) {
    n = 2, hi = 0x9F;
  } else if (lead == 0xF0) {
    n = 3, lo = 0x90;
  } else if (lead >= 0xF1 && lead <= 0xF3) {
    n = 3;
  } else if (lead == 0xF4) {
    n = 3, hi = 0x8F;
  } else {
    return false;
  }
  for (int i = 0; i < n; ++i) {
    int c = peek();
    if (c < lo || c > hi)
      return false;
    ++p_;
    lo = 0x80, hi = 0xBF;
  }
  return true;
}

// After a backslash: one escape; a \u high surrogate must be followed by a \u low one.
bool Scanner::escape() {
  int c = peek();
  if (c < 0)
    return false;
  ++p_;
  switch (c) {
    case '"':
    case '\\':
    case '/':
    case 'b':
    case 'f':
    case 'n':
    case 'r':
    case 't':
      return true;
    case 'u':
      break;
    default:
      return false;
  }
  auto hex4 = [this](uint32_t* v) {
    *v = 0;
    for (int i = 0; i < 4; ++i) {
      int h = hex_value(peek());
      if (h < 0)
        return false;
      ++p_;
      *v = (*v << 4) | static_cast<uint32_t>(h);
    }
    return true;
  };
  uint32_t cp = 0;
  if (!hex4(&cp))
    return false;
  if (cp >= 0xDC00 && cp <= 0xDFFF)
    return false;
  if (cp >= 0xD800 && cp <= 0xDBFF) {
    uint32_t low = 0;
    return eat('\\') && eat('u') && hex4(&low) && low >= 0xDC00 && low <= 0xDFFF;
  }
  return true;
}

bool Scanner::string(std::string_view* raw, bool* escaped) {
  if (!eat('"'))
    return false;
  const char* start = p_;
  *escaped = false;
  for (;;) {
    while (p_ < end_ && kPlain[static_cast<unsigned char>(*p_)]) {
      ++p_;  // the common case, skipped in a tight loop
    }
    int c = peek();
    if (c < 0x20)
      return false;  // the end, or a control character (must be escaped)
    ++p_;
    if (c == '"') {
      *raw = std::string_view(start, static_cast<size_t>(p_ - 1 - start));
      return true;
    }
    if (c == '\\') {
      *escaped = true;
      if (!escape())
        return false;
    } else if (c >= 0x80 && !utf8_tail(c)) {
      return false;
    }
  }
}

// `raw` was checked by string(): every escape is complete and well-formed.
void Scanner::unescape(std::string_view raw, std::string* out) {
  out->clear();
  for (size_t i = 0; i < raw.size(); ++i) {
    char c = raw[i];
    if (c != '\\') {
      out->push_back(c);
      continue;
    }
    c = raw[++i];
    switch (c) {
      case 'b':
        out->push_back('\b');
        break;
      case 'f':
        out->push_back('\f');
        break;
      case 'n':
        out->push_back('\n');
        break;
      case 'r':
        out->push_back('\r');
        break;
      case 't':
        out->push_back('\t');
        break;
      case 'u': {
        auto hex4 = [&raw](size_t at) {
          uint32_t v = 0;
          for (size_t k = 0; k < 4; ++k)
            v = (v << 4) | static_cast<uint32_t>(hex_value(raw[at + k]));
          return v;
        };
        uint32_t cp = hex4(i + 1);
        i += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          cp = 0x10000 + ((cp - 0xD800) << 10) + (hex4(i + 3) - 0xDC00);
          i += 6;
        }
        append_utf8(cp, out);
        break;
      }
      default:
        out->push_back(c);
        break;  // " \ /
    }
  }
}

// JSON's number grammar, then its value as a double. nlohmann refuses a number whose double
// is infinite ("number overflow") and takes one that underflows as 0.
bool Scanner::number(JsonValue* out) {
  const char* start = p_;
  eat('-');
  int int_digits = 0;  // significant digits before the point (0 when it is "0")
  if (eat('0')) {
  } else if (is_digit(peek()) && peek() != '0') {
    while (is_digit(peek()))
      ++p_, ++int_digits;
  } else {
    return false;
  }
  int zeros = 0;  // when the integer part is 0: zeros after the point before a digit that is not
  if (eat('.')) {
    if (!is_digit(peek()))
      return false;
    for (bool leading = int_digits == 0; is_digit(peek()); ++p_) {
      leading = leading && peek() == '0';
      zeros += leading ? 1 : 0;
    }
  }
  int64_t exponent = 0;  // saturated: only its sign against `zeros` matters
  if (peek() == 'e' || peek() == 'E') {
    ++p_;
    bool negative = !eat('+') && eat('-');
    if (!is_digit(peek()))
      return false;
    for (; is_digit(peek()); ++p_) {
      exponent = std::min<int64_t>(exponent * 10 + (peek() - '0'), int64_t{1} << 40);
    }
    exponent = negative ? -exponent : exponent;
  }
  double v = 0;
  auto [ptr, ec] = std::from_chars(start, p_, v);
  if (ptr != p_)
    return false;  // cannot happen: the text is a valid number
  if (ec == std::errc::result_out_of_range) {
    // The value is at least 10^(e-1) with e its decimal exponent: out of range with e > 0 is
    // too big (refused), with e <= 0 too small (0). A zero is never out of range.
    const int64_t e = int_digits > 0 ? int_digits + exponent : exponent - zeros;
    if (e > 0)
      return false;
    v = *start == '-' ? -0.0 : 0.0;
  }
  if (!std::isfinite(v))
    return false;
  if (out != nullptr) {
    out->type = JsonValue::Type::kNumber;
    out->number = v;
  }
  return true;
}

bool Scanner::literal(std::string_view word) {
  if (static_cast<size_t>(end_ - p_) < word.size() || std::string_view(p_, word.size()) != word) {
    return false;
  }
  p_ += word.size();
  return true;
}

// An array or object at the cursor, skipped (checked, not kept) without recursion: one bit
// per open level says whether it is an object.
bool Scanner::container() {
  std::array<uint64_t, kMaxJsonDepth / 64> is_object{};
  size_t depth = 0;
  auto open = [&](bool obj) {
    if (depth == kMaxJsonDepth)
      return false;
    uint64_t bit = uint64_t{1} << (depth % 64);
    is_object[depth / 64] = obj ? is_object[depth / 64] | bit : is_object[depth / 64] & ~bit;
    ++depth;
    ++p_;
    return true;
  };
  auto top_is_object = [&] { return (is_object[(depth - 1) / 64] >> ((depth - 1) % 64)) & 1; };
  if (!open(peek() == '{'))
    return false;
  bool want_value = true;  // after an opening bracket or a comma
  bool first = true;       // right after an opening bracket: the closing one may follow
  while (depth > 0) {
    skip_ws();
    const char close = top_is_object() ? '}' : ']';
    if (!want_value) {
      if (eat(',')) {
        want_value = true;
        first = false;
      } else if (eat(close)) {
        --depth;
      } else {
        return false;
      }
      continue;
    }
    if (first && eat(close)) {
      --depth;
      want_value = false;
      continue;
    }
    if (close == '}') {
      std::string_view name;
      bool escaped = false;
      if (!string(&name, &escaped))
        return false;
      skip_ws();
      if (!eat(':'))
        return false;
      skip_ws();
    }
    int c = peek();
    if (c == '{' || c == '[') {
      if (!open(c == '{'))
        return false;
      first = true;
      continue;
    }
    if (!value(nullptr))
      return false;
    want_value = false;
    first = false;
  }
  return true;
}

bool Scanner::value(JsonValue* out) {
  using Type = JsonValue::Type;
  const int c = peek();
  Type type = Type::kAbsent;
  switch (c) {
    case '"': {
      std::string_view raw;
      bool escaped = false;
      if (!string(&raw, &escaped))
        return false;
      if (out != nullptr) {
        if (escaped) {
          unescape(raw, &out->string);
        } else {
          out->string.assign(raw);
        }
      }
      type = Type::kString;
      break;
    }
    case 't':
      if (!literal("true"))
        return false;
      type = Type::kTrue;
      break;
    case 'f':
      if (!literal("false"))
        return false;
      type = Type::kFalse;
      break;
    case 'n':
      if (!literal("null"))
        return false;
      type = Type::kNull;
      break;
    case '{':
    case '[':
      if (!container())
        return false;
      type = c == '{' ? Type::kObject : Type::kArray;
      break;
    default:
      return number(out);
  }
  if (out != nullptr)
    out->type = type;
  return true;
}

}  // namespace

bool scan_json_object(std::string_view text, std::span<const JsonWanted> wanted,
                      std::string* scratch) {
  for (const JsonWanted& w : wanted)
    w.value->type = JsonValue::Type::kAbsent;
  Scanner s(text);
  if (!s.skip_bom())
    return false;
  s.skip_ws();
  if (!s.eat('{'))
    return false;
  s.skip_ws();
  if (!s.eat('}')) {
    for (;;) {
      s.skip_ws();
      std::string_view name;
      bool escaped = false;
      if (!s.string(&name, &escaped))
        return false;
      if (escaped) {
        Scanner::unescape(name, scratch);
        name = *scratch;
      }
      s.skip_ws();
      if (!s.eat(':'))
        return false;
      s.skip_ws();
      // The value goes to the first member wanted by this name, then is copied to the others
      // (a route's key_claim_name may be "exp").
      JsonValue* first = nullptr;
      for (const JsonWanted& w : wanted) {
        if (w.name != name)
          continue;
        if (first == nullptr) {
          first = w.value;
          if (!s.value(first))
            return false;
        } else {
          w.value->type = first->type;
          w.value->number = first->number;
          w.value->string.assign(first->string);
        }
      }
      if (first == nullptr && !s.value(nullptr))
        return false;
      s.skip_ws();
      if (s.eat('}'))
        break;
      if (!s.eat(','))
        return false;
    }
  }
  s.skip_ws();
  // A NUL ends the text for nlohmann's lexer and for APISIX's cjson (ch2token['\0'] = T_END):
  // what follows it is never read, so it is not refused either.
  return s.at_end() || s.peek() == 0;
}

}  // namespace sluice::plugins::jwt_auth
