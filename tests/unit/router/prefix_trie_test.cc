#include "router/prefix_trie.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "router/str_map.h"

namespace sluice::router {
namespace {

std::vector<uint32_t> prefixes_of(const PrefixTrie& trie, std::string_view s) {
  std::vector<uint32_t> out;
  trie.visit_prefixes(s, [&out](uint32_t v) {
    out.push_back(v);
    return false;
  });
  return out;
}

TEST(PrefixTrie, LongestFirstAcrossSplits) {
  PrefixTrie trie;
  const std::vector<std::string> keys = {"/abc", "/abd", "/ab", "/abcdef", "", "/x/y", "/"};
  for (uint32_t i = 0; i < keys.size(); ++i) {
    *trie.insert(keys[i]) = i;
  }
  EXPECT_EQ(*trie.insert("/ab"), 2u);  // existing key keeps its value
  trie.finalize();
  struct Case {
    std::string input;
    std::vector<uint32_t> expect;
  };
  const Case cases[] = {
      {"/abcdefg", {3, 0, 2, 6, 4}},
      {"/abcde", {0, 2, 6, 4}},
      {"/abd", {1, 2, 6, 4}},
      {"/a", {6, 4}},
      {"/x/y/z", {5, 6, 4}},
      {"/x/", {6, 4}},
      {"", {4}},
      {"zzz", {4}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(prefixes_of(trie, c.input), c.expect) << c.input;
  }
  uint32_t seen = 0;
  EXPECT_TRUE(trie.visit_prefixes("/abcdef", [&seen](uint32_t v) {
    seen = v;
    return v == 2;
  }));
  EXPECT_EQ(seen, 2u);
}

TEST(PrefixTrie, EmptyTrieMatchesNothing) {
  PrefixTrie trie;
  EXPECT_TRUE(trie.empty());
  EXPECT_TRUE(prefixes_of(trie, "/a").empty());
  trie.finalize();
  EXPECT_TRUE(prefixes_of(trie, "/a").empty());
}

TEST(StrMap, InsertFindGrow) {
  StrMap map;
  EXPECT_EQ(map.find("a"), StrMap::kNone);
  for (uint32_t i = 0; i < 5000; ++i) {
    *map.insert("/key/" + std::to_string(i)) = i;
  }
  *map.insert("") = 9999;
  EXPECT_EQ(map.size(), 5001u);
  for (uint32_t i = 0; i < 5000; ++i) {
    ASSERT_EQ(map.find("/key/" + std::to_string(i)), i);
  }
  EXPECT_EQ(map.find(""), 9999u);
  EXPECT_EQ(map.find("/key/5000"), StrMap::kNone);
  EXPECT_EQ(map.find("/key/1 "), StrMap::kNone);
}

}  // namespace
}  // namespace sluice::router
