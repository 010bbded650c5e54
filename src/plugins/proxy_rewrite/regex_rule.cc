#include "plugins/proxy_rewrite/regex_rule.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

namespace sluice::plugins::proxy_rewrite {

using common::Status;
using common::StatusOr;

namespace {

// One match data per thread, grown to the largest pattern seen: steady state allocates
// nothing.
// Thread: worker (thread_local)
class ThreadMatchData {
 public:
  ~ThreadMatchData() {
    if (data_ != nullptr) {
      pcre2_match_data_free(data_);
    }
  }
  pcre2_match_data* get(uint32_t pairs) {
    if (pairs > pairs_) {
      if (data_ != nullptr) {
        pcre2_match_data_free(data_);
      }
      data_ = pcre2_match_data_create(pairs, nullptr);
      pairs_ = pairs;
    }
    return data_;
  }

 private:
  pcre2_match_data* data_ = nullptr;
  uint32_t pairs_ = 0;
};

std::string pcre2_message(int code) {
  PCRE2_UCHAR msg[256];
  int n = pcre2_get_error_message(code, msg, sizeof(msg));
  return n < 0 ? "unknown error " + std::to_string(code)
               : std::string(reinterpret_cast<const char*>(msg), static_cast<size_t>(n));
}

bool ascii_digit(char c) { return c >= '0' && c <= '9'; }
bool word_char(char c) {
  return ascii_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

// The capture reference after a `$` (r[*i] is the byte after it): `N` or `{N}`. Moves *i past
// it; false for what lua-nginx-module's script compiler refuses: an unclosed `{`, nothing
// after the `$`, a named capture.
bool read_capture_ref(std::string_view r, size_t* i, long* group) {
  bool bracket = r[*i] == '{';
  if (bracket && ++*i == r.size()) {
    return false;
  }
  const size_t start = *i;
  const bool number = ascii_digit(r[*i]);
  *group = 0;
  for (; *i < r.size(); ++*i) {
    char c = r[*i];
    if (c == '}' && bracket) {
      bracket = false;
      ++*i;
      return *i - 1 > start && number;
    }
    if (number ? !ascii_digit(c) : !word_char(c)) {
      break;
    }
    if (number && *group <= 100000) {
      *group = *group * 10 + (c - '0');
    }
  }
  return !bracket && *i > start && number;
}

}  // namespace

// ngx.re.sub's template: `$$` is a `$`, `$N` and `${N}` are captures; a named variable, an
// unclosed `${`, a bare or trailing `$` are errors.
bool RegexRule::parse_replacement(std::string_view r, std::vector<Piece>* out) {
  std::string text;
  for (size_t i = 0; i < r.size();) {
    if (r[i] != '$') {
      text.push_back(r[i++]);
      continue;
    }
    if (++i == r.size()) {
      return false;
    }
    if (r[i] == '$') {
      text.push_back('$');
      ++i;
      continue;
    }
    long group = 0;
    if (!read_capture_ref(r, &i, &group)) {
      return false;
    }
    if (!text.empty()) {
      out->push_back({std::move(text), -1});
      text.clear();
    }
    out->push_back({{}, static_cast<int>(group)});
  }
  if (!text.empty()) {
    out->push_back({std::move(text), -1});
  }
  return true;
}

StatusOr<RegexRule> RegexRule::compile(std::string_view pattern, std::string_view replacement) {
  int err = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), 0,
                                   &err, &offset, nullptr);
  if (code == nullptr) {
    std::string msg =
        "pcre2_compile() failed: " + pcre2_message(err) + " in \"" + std::string(pattern) + "\"";
    if (offset < pattern.size()) {
      msg += " at \"" + std::string(pattern.substr(offset)) + "\"";
    }
    return Status::error(std::move(msg));
  }
  RegexRule rule;
  rule.code_.reset(code, [](void* c) { pcre2_code_free(static_cast<pcre2_code*>(c)); });
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // without JIT the interpreter still matches
  uint32_t groups = 0;
  pcre2_pattern_info(code, PCRE2_INFO_CAPTURECOUNT, &groups);
  rule.pairs_ = groups + 1;
  rule.pattern_.assign(pattern);
  if (!parse_replacement(replacement, &rule.replacement_)) {
    return Status::error("failed to compile the replacement template");
  }
  return rule;
}

int RegexRule::match(std::string_view subject, Captures* caps, std::string* why) const {
  thread_local ThreadMatchData tmd;
  pcre2_match_data* md = tmd.get(pairs_);
  static const char kEmpty = 0;  // PCRE2 refuses a null subject, even an empty one
  const char* data = subject.data() != nullptr ? subject.data() : &kEmpty;
  int rc = pcre2_match(static_cast<const pcre2_code*>(code_.get()),
                       reinterpret_cast<PCRE2_SPTR>(data), subject.size(), 0, 0, md, nullptr);
  if (rc == PCRE2_ERROR_NOMATCH) {
    return 0;
  }
  if (rc < 0) {
    why->assign(pcre2_message(rc));
    return -1;
  }
  caps->subject = subject;
  caps->ovector = pcre2_get_ovector_pointer(md);
  caps->count = rc == 0 ? pcre2_get_ovector_count(md) : static_cast<uint32_t>(rc);
  return 1;
}

void RegexRule::substitute(const Captures& caps, std::string* out) const {
  const std::string_view s = caps.subject;
  const size_t start = caps.ovector[0], end = caps.ovector[1];
  out->append(s.substr(0, start));
  for (const Piece& p : replacement_) {
    if (p.group < 0) {
      out->append(p.text);
    } else {
      out->append(caps.group(static_cast<uint32_t>(p.group)));
    }
  }
  out->append(s.substr(end));
}

}  // namespace sluice::plugins::proxy_rewrite
