// Fuzz target: tls::parse_server_name on the input as the body of a ClientHello's server_name
// extension, and tls::CertIndex::find on the input (and on the name parsed from it) as an SNI.
//
// parse_server_name: a name it returns lies inside the input, right after a host_name entry
// header (type 0, then its length), is 1-255 bytes with no NUL, and the list length it came
// from covers the input exactly. find: the same object as a slow reference written from the
// matching rules (lower case, one trailing dot dropped, exact name, else the longest `*.suffix`
// of the name, which must cover exactly one more label, else `*`; the first object to claim a
// name keeps it), in an index with `*` and one without; upper-casing the name changes nothing.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz/fuzz_check.h"
#include "tls/cert_index.h"
#include "tls/context.h"

namespace {

using sluice::fuzz::ExactCopy;
using sluice::fuzz::inside;
using sluice::tls::CertEntry;
using sluice::tls::CertEntryPtr;
using sluice::tls::CertIndex;

// Names as an Admin API client might send them; one object per line, the same name twice.
const char* const kNames[] = {
    "a.test",
    "*.w.test",
    "*.test",
    "x.w.test",
    "*.deep.w.test",
    "Mixed.Case.test",
    "trailing.test.",
    "host.example.com",
    "*.example.com",
    "*.svc.example.net",
    "a.test",
    "*.W.TEST",
    "127.0.0.1",
    "*.1",
    "xn--bcher-kva.test",
    "*.a.b.c.d.e.f.g.h",
};

struct Fixture {
  std::vector<CertEntryPtr> entries;  // one per kNames item, then the `*` object
  CertIndex with_any, without_any;
  Fixture() {
    for (const char* n : kNames) {
      auto e = std::make_shared<const CertEntry>();
      entries.push_back(e);
      with_any.add(n, e);
      without_any.add(n, e);
    }
    entries.push_back(std::make_shared<const CertEntry>());
    with_any.add("*", entries.back());
  }
};

const Fixture& fixture() {
  static const Fixture* f = new Fixture();
  return *f;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') {
      c = static_cast<char>(c - 'A' + 'a');
    }
  }
  return out;
}

std::string stored(const char* n) {
  std::string s = lower(n);
  if (!s.empty() && s.back() == '.') {
    s.pop_back();
  }
  return s;
}

// The reference: the kNames index (or the `*` object) that should serve `sni`, or -1.
int reference(std::string_view sni, bool any) {
  std::string name = lower(sni);
  if (!name.empty() && name.back() == '.') {
    name.pop_back();
  }
  if (name.empty() || name.size() > 256) {
    return -1;
  }
  const int count = static_cast<int>(std::size(kNames));
  for (int i = 0; i < count; ++i) {
    if (!stored(kNames[i]).starts_with("*.") && stored(kNames[i]) == name) {
      return i;  // the first object with the name
    }
  }
  int best = -1;
  size_t best_len = 0;
  for (int i = 0; i < count; ++i) {
    std::string s = stored(kNames[i]);
    if (!s.starts_with("*.")) {
      continue;
    }
    std::string suffix = s.substr(1);  // ".w.test"
    // An empty first label (".w.test") is one label too, as in APISIX's radix tree.
    if (name.ends_with(suffix) && (best < 0 || suffix.size() > best_len)) {
      best = i;
      best_len = suffix.size();
    }
  }
  if (best >= 0) {
    std::string_view label = std::string_view(name).substr(0, name.size() - best_len);
    return label.find('.') == std::string_view::npos ? best : -1;
  }
  return any ? count : -1;
}

int found_index(const CertEntryPtr* e) {
  if (e == nullptr) {
    return -1;
  }
  const auto& entries = fixture().entries;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (entries[i] == *e) {
      // A later duplicate of a name stands for the first object with that name.
      return static_cast<int>(i);
    }
  }
  FUZZ_CHECK(false);  // an object the index was never given
  return -2;
}

void check_find(std::string_view sni) {
  const ExactCopy copy(sni);
  const Fixture& f = fixture();
  FUZZ_CHECK(found_index(f.with_any.find(copy.view())) == reference(copy.view(), true));
  FUZZ_CHECK(found_index(f.without_any.find(copy.view())) == reference(copy.view(), false));
  std::string upper(sni);
  for (char& c : upper) {
    if (c >= 'a' && c <= 'z') {
      c = static_cast<char>(c - 'a' + 'A');
    }
  }
  FUZZ_CHECK(found_index(f.with_any.find(upper)) == found_index(f.with_any.find(copy.view())));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const ExactCopy ext(in);
  const auto* p = reinterpret_cast<const unsigned char*>(ext.data());
  const std::string_view name = sluice::tls::parse_server_name(p, size);
  if (!name.empty()) {
    FUZZ_CHECK(inside(name, ext.data(), size));
    FUZZ_CHECK(name.size() <= 255);
    FUZZ_CHECK(name.find('\0') == std::string_view::npos);
    FUZZ_CHECK(size >= 2 && ((size_t{p[0]} << 8) | p[1]) + 2 == size);
    const size_t at = static_cast<size_t>(name.data() - ext.data());
    FUZZ_CHECK(at >= 5);
    FUZZ_CHECK(p[at - 3] == 0);
    FUZZ_CHECK(((size_t{p[at - 2]} << 8) | p[at - 1]) == name.size());
    check_find(name);
  }
  check_find(in);
  return 0;
}
