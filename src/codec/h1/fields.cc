#include "codec/h1/fields.h"

#include <cstdint>

#include "codec/h1/scan.h"

namespace sluice::h1 {

namespace {

constexpr uint64_t kMaxContentLength = INT64_MAX;

// 1*DIGIT only: no sign, no list, no hex, no whitespace (the value is already trimmed).
bool parse_content_length(std::string_view v, uint64_t* out) {
  if (v.empty() || v.size() > 19) {  // 19 digits cannot overflow uint64
    return false;
  }
  uint64_t n = 0;
  for (char c : v) {
    if (!is_digit(c)) {
      return false;
    }
    n = n * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = n;
  return n <= kMaxContentLength;
}

void note_content_length(std::string_view value, FieldSummary* s) {
  uint64_t n = 0;
  if (!parse_content_length(value, &n)) {
    s->cl_bad = true;
  } else if (s->cl_count == 0) {
    s->content_length = n;
  } else if (n != s->content_length) {
    s->cl_conflict = true;
  }
  ++s->cl_count;
}

bool all_tchar(std::string_view v) {
  for (char c : v) {
    if (!is_tchar(c)) {
      return false;
    }
  }
  return true;
}

// Calls fn(element) for each comma-separated element, OWS trimmed (empty ones included).
template <typename Fn>
void for_each_element(std::string_view v, Fn fn) {
  for (;;) {
    size_t comma = v.find(',');
    fn(trim_ows(v.substr(0, comma)));
    if (comma == std::string_view::npos) {
      return;
    }
    v.remove_prefix(comma + 1);
  }
}

// Several Transfer-Encoding lines form one list (RFC 9110 5.3), so state spans lines.
void note_transfer_encoding(std::string_view value, FieldSummary* s) {
  s->te_present = true;
  for_each_element(value, [s](std::string_view coding) {
    if (coding.empty() || !all_tchar(coding)) {
      s->te_bad = true;
    } else if (equals_lower(coding, "chunked")) {
      ++s->te_chunked;
      s->te_chunked_last = true;
    } else {
      ++s->te_other;
      s->te_chunked_last = false;
    }
  });
}

void note_connection(std::string_view value, FieldSummary* s) {
  for_each_element(value, [s](std::string_view option) {
    if (equals_lower(option, "close")) {
      s->conn_close = true;
    } else if (equals_lower(option, "keep-alive")) {
      s->conn_keep_alive = true;
    }
  });
}

// Dispatches on the name's length first: most fields are none of these.
void note_field(const http::Header& h, FieldSummary* s) {
  switch (h.name.size()) {
    case 4:
      if (equals_lower(h.name, "host")) {
        ++s->host_count;
        s->host = h.value;
      }
      break;
    case 6:
      if (equals_lower(h.name, "expect") && equals_lower(h.value, "100-continue")) {
        s->expect_continue = true;
      }
      break;
    case 10:
      if (equals_lower(h.name, "connection")) {
        note_connection(h.value, s);
      }
      break;
    case 14:
      if (equals_lower(h.name, "content-length")) {
        note_content_length(h.value, s);
      }
      break;
    case 17:
      if (equals_lower(h.name, "transfer-encoding")) {
        note_transfer_encoding(h.value, s);
      }
      break;
    default:
      break;
  }
}

const char* bad_name_reason(const char* name, const char* stop) {
  if (stop == name && *stop == ':') {
    return "empty field name";
  }
  if (stop != name && is_ows(*stop)) {
    return "whitespace before colon";
  }
  if (*stop == '\n') {
    return "bare LF";
  }
  if (*stop == '\r') {
    return "field line without colon";
  }
  return "invalid character in field name";
}

// One `name: OWS value OWS CRLF` line starting at p. With `invalid_name` given, a name holding
// visible non-token characters is taken whole and flagged rather than refused.
ParseResult parse_field_line(const char* p, const char* end, http::Header* h,
                             bool* invalid_name = nullptr) {
  const char* n = p;
  while (n < end && is_tchar(*n)) {
    ++n;
  }
  if (invalid_name != nullptr) {
    *invalid_name = false;
    while (n<end&& * n> ' ' && *n < 0x7f && *n != ':') {  // bytes >= 0x80 stop, char signed or not
      *invalid_name = true;
      ++n;
    }
  }
  if (n == end) {
    return parse_incomplete();
  }
  if (*n != ':' || n == p) {
    return parse_error(400, bad_name_reason(p, n));
  }
  const char* v = n + 1;
  const char* stop = find_line_stop(v, end);
  if (stop == end) {
    return parse_incomplete();
  }
  ParseResult eol = check_crlf(stop, end);
  if (eol.status != ParseStatus::kComplete) {
    return eol;
  }
  h->name = std::string_view(p, static_cast<size_t>(n - p));
  h->value = trim_ows(std::string_view(v, static_cast<size_t>(stop - v)));
  return parse_complete(static_cast<size_t>(stop + 2 - p));
}

Framing framing_error(int status, const char* why) {
  return {http::BodyKind::kNone, 0, status, why};
}

Framing transfer_encoding_framing(const FieldSummary& s) {
  if (s.te_bad) {
    return framing_error(400, "malformed Transfer-Encoding");
  }
  if (s.te_chunked > 1) {
    return framing_error(400, "chunked applied more than once");
  }
  if (s.te_chunked == 1 && !s.te_chunked_last) {
    return framing_error(400, "chunked is not the final transfer coding");
  }
  if (s.te_other > 0) {
    return framing_error(501, "unsupported transfer coding");
  }
  return {http::BodyKind::kChunked, 0, 0, ""};
}

}  // namespace

ParseResult parse_version(std::string_view v, int* minor) {
  if (v.size() != 8 || v.substr(0, 5) != "HTTP/" || !is_digit(v[5]) || v[6] != '.' ||
      !is_digit(v[7])) {
    return parse_error(400, "invalid HTTP version");
  }
  if (v[5] != '1' || (v[7] != '0' && v[7] != '1')) {
    return parse_error(505, "unsupported HTTP version");
  }
  *minor = v[7] - '0';
  return parse_complete(0);
}

ParseResult check_crlf(const char* stop, const char* end) {
  if (*stop != '\r') {
    return parse_error(400, *stop == '\n' ? "bare LF" : "control character in head");
  }
  if (stop + 1 == end) {
    return parse_incomplete();
  }
  if (stop[1] != '\n') {
    return parse_error(400, "bare CR");
  }
  return parse_complete(2);
}

ParseResult parse_fields(const char* begin, const char* end, size_t max_fields,
                         http::Header* headers, size_t* num_headers, FieldSummary* summary,
                         bool ignore_invalid_names) {
  const char* p = begin;
  for (;;) {
    if (p == end) {
      return parse_incomplete();
    }
    if (*p == '\r') {
      ParseResult eol = check_crlf(p, end);
      if (eol.status == ParseStatus::kComplete) {
        eol.consumed = static_cast<size_t>(p + 2 - begin);
      }
      return eol;
    }
    if (is_ows(*p)) {
      return parse_error(400, "obs-fold or whitespace before field name");
    }
    if (*num_headers >= max_fields) {
      return parse_error(431, "too many header fields");
    }
    http::Header* h = &headers[*num_headers];
    bool invalid_name = false;
    ParseResult line = parse_field_line(p, end, h, ignore_invalid_names ? &invalid_name : nullptr);
    if (line.status != ParseStatus::kComplete) {
      return line;
    }
    if (invalid_name) {
      p += line.consumed;  // left out: it names nothing the gateway or an upstream may read
      continue;
    }
    note_field(*h, summary);
    ++*num_headers;
    p += line.consumed;
  }
}

Framing decide_framing(const FieldSummary& s, bool allow_equal_cl) {
  if (s.te_present && s.cl_count > 0) {
    return framing_error(400, "both Content-Length and Transfer-Encoding");
  }
  if (s.te_present) {
    return transfer_encoding_framing(s);
  }
  if (s.cl_count == 0) {
    return {};
  }
  if (s.cl_bad) {
    return framing_error(400, "invalid Content-Length");
  }
  if (s.cl_conflict || (s.cl_count > 1 && !allow_equal_cl)) {
    return framing_error(400, "duplicate Content-Length");
  }
  if (s.content_length == 0) {
    return {http::BodyKind::kNone, 0, 0, ""};
  }
  return {http::BodyKind::kLength, s.content_length, 0, ""};
}

bool valid_host(std::string_view v) {
  for (char c : v) {
    if (!has_class(c, char_class::kHost)) {
      return false;
    }
  }
  return true;
}

}  // namespace sluice::h1
