#include "tls/cert_index.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace sluice::tls {
namespace {

// Objects that carry only their identity: the index never looks inside them.
CertEntryPtr entry() { return std::make_shared<const CertEntry>(); }

// What `index.find(sni)` chose, as the name the test gave that object ("" for none).
class NamedIndex {
 public:
  void add(const std::string& sni, const std::string& name) {
    auto it = by_name_.find(name);
    if (it == by_name_.end()) {
      it = by_name_.emplace(name, entry()).first;
    }
    index_.add(sni, it->second);
  }
  std::string find(std::string_view sni) const {
    const CertEntryPtr* e = index_.find(sni);
    if (e == nullptr) {
      return "";
    }
    for (const auto& [name, p] : by_name_) {
      if (p == *e) {
        return name;
      }
    }
    return "?";
  }
  const CertIndex& index() const { return index_; }

 private:
  CertIndex index_;
  std::map<std::string, CertEntryPtr> by_name_;
};

struct FindCase {
  const char* sni;
  const char* want;  // the object's name, "" for no certificate
};

void expect_finds(const NamedIndex& idx, const std::vector<FindCase>& cases) {
  for (const FindCase& c : cases) {
    EXPECT_EQ(idx.find(c.sni), c.want) << "sni \"" << c.sni << "\"";
  }
}

TEST(CertIndexTest, ExactNames) {
  NamedIndex idx;
  idx.add("a.test", "A");
  idx.add("b.a.test", "B");
  expect_finds(idx, {{"a.test", "A"},
                     {"b.a.test", "B"},
                     {"c.a.test", ""},
                     {"test", ""},
                     {"xa.test", ""},
                     {"a.test.evil", ""},
                     {"", ""}});
}

TEST(CertIndexTest, WildcardCoversExactlyOneLabel) {
  NamedIndex idx;
  idx.add("*.w.test", "W");
  expect_finds(idx, {{"x.w.test", "W"},
                     {"long-label-123.w.test", "W"},
                     {"w.test", ""},        // the wildcard's own suffix is not covered
                     {"y.x.w.test", ""},    // two labels: refused
                     {"a.b.c.w.test", ""},  // three labels: refused
                     {".w.test", "W"},      // an empty label is one label (so in APISIX)
                     {"xw.test", ""}});
}

TEST(CertIndexTest, ExactBeatsWildcard) {
  NamedIndex idx;
  idx.add("*.w.test", "W");
  idx.add("x.w.test", "X");
  expect_finds(idx, {{"x.w.test", "X"}, {"y.w.test", "W"}});
}

TEST(CertIndexTest, DeepestWildcardSuffixWins) {
  NamedIndex idx;
  idx.add("*.test", "T");
  idx.add("*.w.test", "W");
  expect_finds(idx, {{"a.test", "T"},
                     {"w.test", "T"},  // one label under *.test
                     {"a.w.test", "W"},
                     {"b.a.w.test", ""}});  // *.w.test is deepest and covers two labels
}

TEST(CertIndexTest, DeeperNameRefusedRatherThanFallingToAny) {
  NamedIndex idx;
  idx.add("*", "ANY");
  idx.add("*.w.test", "W");
  expect_finds(idx, {{"x.w.test", "W"},
                     // APISIX's radix tree matches the longest suffix, *.w.test, and then
                     // refuses it: `*` is not tried again.
                     {"y.x.w.test", ""},
                     {"other.test", "ANY"},
                     {"w.test", "ANY"},
                     {"localhost", "ANY"}});
}

TEST(CertIndexTest, AnyCoversEveryName) {
  NamedIndex idx;
  idx.add("*", "ANY");
  expect_finds(idx, {{"a", "ANY"}, {"a.b.c.d.e", "ANY"}, {"127.0.0.1", "ANY"}});
  EXPECT_EQ(idx.find(""), "") << "no name: the caller's fallback_sni decides";
}

TEST(CertIndexTest, CaseInsensitive) {
  NamedIndex idx;
  idx.add("Mixed.Test", "M");
  idx.add("*.WILD.test", "W");
  expect_finds(idx, {{"mixed.test", "M"},
                     {"MIXED.TEST", "M"},
                     {"mIxEd.tEsT", "M"},
                     {"A.wild.TEST", "W"},
                     {"a.Wild.test", "W"}});
}

TEST(CertIndexTest, TrailingDotIgnored) {
  NamedIndex idx;
  idx.add("a.test.", "A");  // stored without its dot, as APISIX's ssl_filter does
  idx.add("*.w.test", "W");
  expect_finds(idx, {{"a.test", "A"},
                     {"a.test.", "A"},
                     {"x.w.test.", "W"},
                     {"a.test..", ""},  // only one dot is dropped
                     {".", ""}});
}

TEST(CertIndexTest, FirstObjectKeepsAName) {
  NamedIndex idx;
  idx.add("a.test", "FIRST");
  idx.add("a.test", "SECOND");
  idx.add("*.w.test", "FIRST");
  idx.add("*.W.TEST", "SECOND");
  idx.add("*", "FIRST");
  idx.add("*", "SECOND");
  idx.add("A.TEST.", "SECOND");
  expect_finds(idx, {{"a.test", "FIRST"}, {"x.w.test", "FIRST"}, {"other", "FIRST"}});
}

TEST(CertIndexTest, Size) {
  CertIndex idx;
  EXPECT_EQ(idx.size(), 0u);
  auto e = entry();
  idx.add("a.test", e);
  idx.add("a.test", e);
  idx.add("*.a.test", e);
  idx.add("*", e);
  EXPECT_EQ(idx.size(), 3u);
}

TEST(CertIndexTest, LongNames) {
  NamedIndex idx;
  std::string label(63, 'x');
  std::string name = label + "." + label + "." + label + "." + std::string(61, 'y');  // 253
  ASSERT_EQ(name.size(), 253u);
  idx.add(name, "LONG");
  idx.add("*", "ANY");
  EXPECT_EQ(idx.find(name), "LONG");
  EXPECT_EQ(idx.find(name + "."), "LONG");
  // Longer than a DNS name can be: refused (the handshake then tries fallback_sni), with no
  // write past the lookup's buffer.
  EXPECT_EQ(idx.find(std::string(300, 'a')), "");
  EXPECT_EQ(idx.find(std::string(4096, 'a') + ".w.test"), "");
}

TEST(CertIndexTest, ById) {
  CertIndex idx;
  auto server = entry();
  auto client = entry();
  idx.add_by_id("1", server);
  idx.add("a.test", server);
  idx.add_by_id("client-1", client);
  ASSERT_NE(idx.find_id("1"), nullptr);
  EXPECT_EQ(*idx.find_id("1"), server);
  ASSERT_NE(idx.find_id("client-1"), nullptr);
  EXPECT_EQ(*idx.find_id("client-1"), client);
  EXPECT_EQ(idx.find_id("2"), nullptr);
  EXPECT_EQ(idx.find_id(""), nullptr);
  EXPECT_EQ(idx.find("client-1"), nullptr) << "ids are not names";
  idx.add_by_id("1", client);
  EXPECT_EQ(*idx.find_id("1"), server) << "the first object keeps an id";
}

}  // namespace
}  // namespace sluice::tls
