// Captured: the head variables of a format evaluated while the request head is there.

#include "accesslog/record.h"
#include "http/message.h"

namespace sluice::accesslog {

namespace {

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') {
    return c - 'A';
  }
  if (c >= 'a' && c <= 'z') {
    return c - 'a' + 26;
  }
  if (c >= '0' && c <= '9') {
    return c - '0' + 52;
  }
  return c == '+' ? 62 : c == '/' ? 63 : -1;
}

// Standard base64, padding optional, appended to `out`; false on any other byte.
bool append_base64_decoded(std::string_view in, std::string* out) {
  while (!in.empty() && in.back() == '=') {
    in.remove_suffix(1);
  }
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    int v = base64_value(c);
    if (v < 0) {
      return false;
    }
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out->push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return true;
}

// nginx's $remote_user: the user of `Authorization: Basic base64(user:password)`.
bool remote_user(const http::RequestHead& req, std::string* out, std::string_view* user) {
  const http::Header* h = req.find("authorization");
  if (h == nullptr || h->value.size() < 6 || !http::iequals(h->value.substr(0, 6), "basic ")) {
    return false;
  }
  std::string_view b64 = h->value.substr(6);
  while (!b64.empty() && b64.front() == ' ') {
    b64.remove_prefix(1);
  }
  size_t begin = out->size();
  if (!append_base64_decoded(b64, out)) {
    out->resize(begin);
    return false;
  }
  std::string_view decoded(out->data() + begin, out->size() - begin);
  size_t colon = decoded.find(':');
  if (colon == std::string_view::npos) {
    out->resize(begin);
    return false;
  }
  out->resize(begin + colon);
  *user = std::string_view(out->data() + begin, colon);
  return true;
}

// The request line as sent: the raw head's first line, or rebuilt from the parsed head (an
// HTTP/2 request's raw head is the HTTP/1.1 one its stream made: nginx logs HTTP/2.0).
void request_line(const http::RequestHead& req, std::string_view raw, std::string* out) {
  if (!raw.empty() && req.version_major != 2) {
    size_t eol = raw.find('\n');
    std::string_view line = raw.substr(0, eol);
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    out->append(line);
    return;
  }
  out->append(req.method_text.empty() ? http::method_name(req.method) : req.method_text);
  out->append(" ").append(req.target);
  if (req.version_major == 2) {
    out->append(" HTTP/2.0");
    return;
  }
  out->append(" HTTP/1.");
  out->push_back(static_cast<char>('0' + req.version_minor));
}

}  // namespace

void Captured::put(bool found, std::string_view value) {
  Slot s;
  s.found = found;
  s.begin = static_cast<uint32_t>(bytes_.size());
  if (found) {
    bytes_.append(value);
    s.size = static_cast<uint32_t>(value.size());
  }
  slots_.push_back(s);
}

void Captured::capture(const Format& f, const router::MatchContext& m, std::string_view raw_head) {
  clear();
  const http::RequestHead& req = *m.req;
  router::VarScratch scratch;
  for (const HeadVar& v : f.head_vars()) {
    std::string_view value;
    switch (v.kind) {
      case HeadVar::Kind::kRouter: {
        bool found = v.var.find(m, &scratch, &value);
        put(found, value);
        break;
      }
      case HeadVar::Kind::kRequest: {
        Slot s{static_cast<uint32_t>(bytes_.size()), 0, true};
        request_line(req, raw_head, &bytes_);
        s.size = static_cast<uint32_t>(bytes_.size() - s.begin);
        slots_.push_back(s);
        break;
      }
      case HeadVar::Kind::kServerProtocol: {
        char proto[] = "HTTP/1.x";
        proto[7] = static_cast<char>('0' + req.version_minor);
        put(true, req.version_major == 2 ? "HTTP/2.0" : proto);
        break;
      }
      case HeadVar::Kind::kRemoteUser: {
        Slot s{static_cast<uint32_t>(bytes_.size()), 0, false};
        std::string_view user;
        s.found = remote_user(req, &bytes_, &user);
        s.size = static_cast<uint32_t>(user.size());
        slots_.push_back(s);
        break;
      }
      case HeadVar::Kind::kIsArgs:
        put(true, req.query.empty() ? std::string_view() : "?");
        break;
    }
  }
}

bool Captured::get(size_t slot, std::string_view* out) const {
  if (slot >= slots_.size() || !slots_[slot].found) {
    return false;
  }
  *out = std::string_view(bytes_).substr(slots_[slot].begin, slots_[slot].size);
  return true;
}

}  // namespace sluice::accesslog
