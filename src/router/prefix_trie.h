#pragma once
// PrefixTrie: finds, for a string, every stored key that is a prefix of it, longest first.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "router/text.h"

namespace sluice::router {

// Thread: any (immutable after finalize()). A compressed radix tree over bytes. insert()
// builds it; finalize() packs it into flat arrays and links each key to the nearest key above
// it, so a lookup is one walk down (cost bounded by the length of the input, not the number of
// keys) and then a walk up those links.
class PrefixTrie {
 public:
  static constexpr uint32_t kNone = UINT32_MAX;

  PrefixTrie();
  // Returns the value slot for key, inserting it with kNone when new. The pointer is valid
  // until the next insert. Not allowed after finalize().
  uint32_t* insert(std::string_view key);
  // Packs the tree for lookups; call once after the last insert.
  void finalize();
  bool empty() const { return num_keys_ == 0; }

  // Calls visit(value) for every stored key that is a prefix of s (s itself included), longest
  // first, until visit returns true. Returns whether it did. Never allocates.
  template <typename Visit>
  bool visit_prefixes(std::string_view s, Visit&& visit) const {
    if (num_keys_ == 0) {
      return false;
    }
    for (uint32_t n = deepest_prefix(s); n != kNone; n = nodes_[n].up) {
      if (visit(nodes_[n].value)) {
        return true;
      }
    }
    return false;
  }

 private:
  struct BuildNode {
    std::string label;        // bytes on the edge into this node
    std::string child_first;  // first byte of each child's label, parallel to children
    std::vector<uint32_t> children;
    uint32_t value = kNone;
  };
  // The packed form: labels and child edges are spans of the arrays below.
  struct Node {
    uint32_t label_begin = 0;
    uint32_t label_len = 0;
    uint32_t edges_begin = 0;
    uint32_t edges_len = 0;
    uint32_t value = kNone;  // kNone: no key ends here
    uint32_t up = kNone;     // nearest ancestor (exclusive) where a key ends
  };
  uint32_t pack(uint32_t build_index, uint32_t up);
  uint32_t deepest_prefix(std::string_view s) const;

  std::vector<BuildNode> build_;  // emptied by finalize()
  std::vector<Node> nodes_;       // nodes_[0] is the root
  std::string labels_;
  std::string edge_bytes_;  // first byte of each child's label
  std::vector<uint32_t> edge_nodes_;
  size_t num_keys_ = 0;
};

}  // namespace sluice::router
