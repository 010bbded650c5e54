#include "plugins/response_rewrite/body_filters.h"

#include <fmt/format.h>

namespace sluice::plugins::response_rewrite {

using common::Status;
using common::StatusOr;

namespace {

// ngx.re's option letters as PCRE2 compile options. "o" (compile once) and "j" (JIT) are what
// Sluice always does; "d" (DFA matching) has no substitution semantics worth keeping.
Status compile_options(const std::string& regex, const std::string& opts, uint32_t* out,
                       bool* utf) {
  uint32_t o = 0;
  for (char c : opts) {
    switch (c) {
      case 'o':
      case 'j':
        break;
      case 'i':
        o |= PCRE2_CASELESS;
        break;
      case 's':
        o |= PCRE2_DOTALL;
        break;
      case 'm':
        o |= PCRE2_MULTILINE;
        break;
      case 'u':
      case 'U':  // ngx.re skips the UTF-8 check; Sluice always makes it
        o |= PCRE2_UTF;
        *utf = true;
        break;
      case 'x':
        o |= PCRE2_EXTENDED;
        break;
      case 'a':
        o |= PCRE2_ANCHORED;
        break;
      case 'D':
        o |= PCRE2_DUPNAMES;
        break;
      case 'J':  // PCRE1's JAVASCRIPT_COMPAT, as PCRE2 spells it
        o |= PCRE2_ALT_BSUX | PCRE2_ALLOW_EMPTY_CLASS | PCRE2_MATCH_UNSET_BACKREF;
        break;
      case 'd':
        return Status::error(fmt::format(
            "regex \"{}\" validation failed: flag \"d\" (DFA matching) is not supported by Sluice",
            regex));
      default:
        return Status::error(fmt::format(
            "regex \"{}\" validation failed: unknown flag \"{}\" (flags \"{}\")", regex, c, opts));
    }
  }
  *out = o;
  return Status::ok();
}

// Length of the UTF-8 sequence starting with `lead` (1 for a stray byte).
size_t utf8_len(unsigned char lead) {
  return lead < 0xC0 ? 1 : (lead < 0xE0 ? 2 : (lead < 0xF0 ? 3 : 4));
}

}  // namespace

StatusOr<std::vector<BodyFilter::Piece>> BodyFilter::parse_replace(const std::string& r) {
  auto bad = [&r](std::string_view why) {
    return Status::error(fmt::format("replace \"{}\" validation failed: {}", r, why));
  };
  std::vector<Piece> pieces;
  std::string text;
  auto group = [&](uint32_t n) {
    if (!text.empty()) {
      pieces.push_back(Piece{std::move(text), 0});
      text.clear();
    }
    pieces.push_back(Piece{"", n});
  };
  for (size_t i = 0; i < r.size(); ++i) {
    if (r[i] != '$') {
      text.push_back(r[i]);
      continue;
    }
    if (i + 1 < r.size() && r[i + 1] == '$') {
      text.push_back('$');
      ++i;
      continue;
    }
    bool braced = i + 1 < r.size() && r[i + 1] == '{';
    size_t j = i + (braced ? 2 : 1);
    uint32_t n = 0;
    size_t digits = 0;
    while (j < r.size() && r[j] >= '0' && r[j] <= '9' && digits < 6) {
      n = n * 10 + static_cast<uint32_t>(r[j] - '0');
      ++j;
      ++digits;
    }
    if (digits == 0) {
      return bad("a \"$\" must start $N, ${N} or $$");
    }
    if (braced) {
      if (j >= r.size() || r[j] != '}') {
        return bad("the closing bracket of a ${N} is missing");
      }
      ++j;
    }
    group(n);
    i = j - 1;
  }
  if (!text.empty()) {
    pieces.push_back(Piece{std::move(text), 0});
  }
  return pieces;
}

StatusOr<BodyFilter> BodyFilter::compile(const std::string& regex, const std::string& replace,
                                         const std::string& options, bool global) {
  BodyFilter f;
  uint32_t opts = 0;
  if (Status s = compile_options(regex, options, &opts, &f.utf_); !s.is_ok()) {
    return s;
  }
  int err = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(regex.data()), regex.size(), opts,
                                   &err, &offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof(msg));
    return Status::error(fmt::format("regex \"{}\" validation failed: {} at offset {}", regex,
                                     reinterpret_cast<const char*>(msg), offset));
  }
  f.code_.reset(code, CodeFree());
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // pcre2_match uses it when it compiled
  auto pieces = parse_replace(replace);
  if (!pieces.is_ok()) {
    return pieces.status();
  }
  f.replace_ = std::move(pieces).value();
  f.global_ = global;
  return f;
}

void BodyFilter::append_replacement(std::string_view body, const PCRE2_SIZE* ov, uint32_t pairs,
                                    std::string* out) const {
  for (const Piece& p : replace_) {
    if (!p.text.empty()) {
      out->append(p.text);
    } else if (p.group < pairs && ov[2 * p.group] != PCRE2_UNSET) {
      out->append(body.substr(ov[2 * p.group], ov[2 * p.group + 1] - ov[2 * p.group]));
    }  // a group past the pattern's, or unset, is empty (as in ngx.re.sub)
  }
}

bool BodyFilter::apply(std::string_view body, std::string* out) const {
  out->clear();
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> md(
      pcre2_match_data_create_from_pattern(code_.get(), nullptr), &pcre2_match_data_free);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(body.data());
  size_t copied = 0;  // body[0, copied) is in *out
  size_t pos = 0;
  while (pos <= body.size()) {
    int rc = pcre2_match(code_.get(), subject, body.size(), pos, 0, md.get(), nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) {
      break;
    }
    if (rc < 0) {
      out->assign(body);
      return false;
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
    out->append(body.substr(copied, ov[0] - copied));
    append_replacement(body, ov, pcre2_get_ovector_count(md.get()), out);
    copied = ov[1];
    pos = ov[1];
    if (ov[1] == ov[0]) {  // an empty match: step over one character
      pos += (utf_ && pos < body.size()) ? utf8_len(static_cast<unsigned char>(body[pos])) : 1;
    }
    if (!global_) {
      break;
    }
  }
  out->append(body.substr(std::min(copied, body.size())));
  return true;
}

}  // namespace sluice::plugins::response_rewrite
