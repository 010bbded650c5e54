// HeaderEdits: set / add / remove in the order plugins made them, as the codec applies them
// over a parsed head; BodyPiece's replace and drop.

#include "plugin/edits.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace sluice::plugin {
namespace {

using Fields = std::vector<std::pair<std::string, std::string>>;

// The fields a head ends with: `original` less what the edits drop, then the added ones.
Fields edited(const Fields& original, const HeaderEdits& e) {
  Fields out;
  for (const auto& [n, v] : original) {
    if (!e.drops(n)) {
      out.emplace_back(n, v);
    }
  }
  e.for_each_added([&out](std::string_view n, std::string_view v) {
    out.emplace_back(std::string(n), std::string(v));
  });
  return out;
}

const Fields kOriginal = {{"Accept", "*/*"}, {"X-A", "1"}, {"x-a", "2"}, {"X-B", "b"}};

TEST(HeaderEdits, NoEditsKeepEveryField) {
  HeaderEdits e;
  EXPECT_TRUE(e.empty());
  EXPECT_EQ(edited(kOriginal, e), kOriginal);
}

TEST(HeaderEdits, Table) {
  struct Case {
    const char* name;
    void (*edit)(HeaderEdits&);
    Fields want;
  };
  const Case cases[] = {
      {"set replaces every original of that name, any case",
       [](HeaderEdits& e) { e.set("X-a", "new"); },
       {{"Accept", "*/*"}, {"X-B", "b"}, {"X-a", "new"}}},
      {"add keeps the originals",
       [](HeaderEdits& e) { e.add("X-A", "3"); },
       {{"Accept", "*/*"}, {"X-A", "1"}, {"x-a", "2"}, {"X-B", "b"}, {"X-A", "3"}}},
      {"remove drops every original",
       [](HeaderEdits& e) { e.remove("x-A"); },
       {{"Accept", "*/*"}, {"X-B", "b"}}},
      {"remove after add drops the added one too",
       [](HeaderEdits& e) {
         e.add("X-C", "c");
         e.remove("x-c");
       },
       kOriginal},
      {"set after add leaves one field",
       [](HeaderEdits& e) {
         e.add("X-C", "1");
         e.add("X-C", "2");
         e.set("X-C", "3");
       },
       {{"Accept", "*/*"}, {"X-A", "1"}, {"x-a", "2"}, {"X-B", "b"}, {"X-C", "3"}}},
      {"add after remove survives",
       [](HeaderEdits& e) {
         e.remove("X-B");
         e.add("X-B", "again");
       },
       {{"Accept", "*/*"}, {"X-A", "1"}, {"x-a", "2"}, {"X-B", "again"}}},
      {"added fields keep their order",
       [](HeaderEdits& e) {
         e.add("X-1", "a");
         e.set("X-2", "b");
         e.add("X-3", "c");
       },
       {{"Accept", "*/*"},
        {"X-A", "1"},
        {"x-a", "2"},
        {"X-B", "b"},
        {"X-1", "a"},
        {"X-2", "b"},
        {"X-3", "c"}}},
  };
  for (const Case& c : cases) {
    HeaderEdits e;
    c.edit(e);
    EXPECT_EQ(edited(kOriginal, e), c.want) << c.name;
  }
}

TEST(HeaderEdits, LookupSaysWhatTheEditsMadeOfAName) {
  HeaderEdits e;
  const std::string* v = nullptr;
  EXPECT_FALSE(e.lookup("X-A", &v));
  e.add("X-A", "1");
  ASSERT_TRUE(e.lookup("x-a", &v));
  EXPECT_EQ(*v, "1");
  e.set("X-A", "2");
  ASSERT_TRUE(e.lookup("X-A", &v));
  EXPECT_EQ(*v, "2");
  e.remove("X-A");
  EXPECT_TRUE(e.lookup("X-A", &v));
  EXPECT_EQ(v, nullptr);
}

TEST(HeaderEdits, ClearKeepsCapacityForTheNextRequest) {
  HeaderEdits e;
  e.set("X-Long-Name", std::string(100, 'v'));
  e.clear();
  EXPECT_TRUE(e.empty());
  EXPECT_FALSE(e.drops("X-Long-Name"));
  e.add("Y", "1");
  EXPECT_EQ(edited({}, e), (Fields{{"Y", "1"}}));
}

TEST(RequestAndResponseEdits, EmptyUntilSomethingChanges) {
  RequestEdits r;
  EXPECT_TRUE(r.empty());
  r.uri = "/new";
  EXPECT_FALSE(r.empty());
  r.clear();
  EXPECT_TRUE(r.empty());
  ResponseEdits s;
  EXPECT_TRUE(s.empty());
  s.body_changes = true;
  EXPECT_FALSE(s.empty());
  s.clear();
  EXPECT_TRUE(s.empty());
  EXPECT_EQ(s.content_length, -1);
}

TEST(BodyPiece, ReplaceCopiesIntoTheRequestsBufferAndDropEmpties) {
  std::string buffer;
  BodyPiece p("original", false, &buffer);
  EXPECT_EQ(p.data(), "original");
  {
    std::string temp = "replaced";
    p.replace(temp);
  }  // the hook's own string is gone; the piece still holds the bytes
  EXPECT_EQ(p.data(), "replaced");
  EXPECT_EQ(p.data().data(), buffer.data());
  p.replace(p.data().substr(2));  // a part of the buffer itself
  EXPECT_EQ(p.data(), "placed");
  p.drop();
  EXPECT_TRUE(p.data().empty());
  EXPECT_FALSE(p.eof());
}

}  // namespace
}  // namespace sluice::plugin
