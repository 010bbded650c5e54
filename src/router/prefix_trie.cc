#include "router/prefix_trie.h"

namespace sluice::router {

namespace {

uint32_t find_first(const std::string& first_bytes, char c) {
  const size_t i = first_bytes.find(c);
  return i == std::string::npos ? PrefixTrie::kNone : static_cast<uint32_t>(i);
}

}  // namespace

PrefixTrie::PrefixTrie() { build_.emplace_back(); }

uint32_t* PrefixTrie::insert(std::string_view key) {
  uint32_t cur = 0;
  size_t pos = 0;
  while (pos < key.size()) {
    const uint32_t slot = find_first(build_[cur].child_first, key[pos]);
    if (slot == kNone) {
      build_.emplace_back();
      build_.back().label = std::string(key.substr(pos));
      const auto leaf = static_cast<uint32_t>(build_.size() - 1);
      build_[cur].child_first.push_back(key[pos]);
      build_[cur].children.push_back(leaf);
      cur = leaf;
      break;
    }
    const uint32_t child = build_[cur].children[slot];
    const std::string& label = build_[child].label;
    size_t common = 0;
    while (common < label.size() && pos + common < key.size() &&
           label[common] == key[pos + common]) {
      ++common;
    }
    if (common < label.size()) {
      // Split: a new node takes the shared part of the label and adopts child.
      BuildNode mid;
      mid.label = label.substr(0, common);
      build_[child].label.erase(0, common);
      mid.child_first.push_back(build_[child].label[0]);
      mid.children.push_back(child);
      build_.push_back(std::move(mid));
      const auto mid_index = static_cast<uint32_t>(build_.size() - 1);
      build_[cur].children[slot] = mid_index;
      cur = mid_index;
    } else {
      cur = child;
    }
    pos += common;
  }
  if (build_[cur].value == kNone) {
    ++num_keys_;
  }
  return &build_[cur].value;
}

uint32_t PrefixTrie::pack(uint32_t build_index, uint32_t up) {
  const BuildNode& b = build_[build_index];
  const auto index = static_cast<uint32_t>(nodes_.size());
  Node n;
  n.label_begin = static_cast<uint32_t>(labels_.size());
  n.label_len = static_cast<uint32_t>(b.label.size());
  n.value = b.value;
  n.up = up;
  labels_ += b.label;
  nodes_.push_back(n);
  // Children's edges are contiguous; reserve them before packing the children themselves.
  const auto edges_begin = static_cast<uint32_t>(edge_nodes_.size());
  edge_bytes_ += b.child_first;
  edge_nodes_.resize(edge_nodes_.size() + b.children.size());
  nodes_[index].edges_begin = edges_begin;
  nodes_[index].edges_len = static_cast<uint32_t>(b.children.size());
  const uint32_t below = b.value != kNone ? index : up;
  for (size_t i = 0; i < b.children.size(); ++i) {
    edge_nodes_[edges_begin + i] = pack(b.children[i], below);
  }
  return index;
}

void PrefixTrie::finalize() {
  nodes_.clear();
  labels_.clear();
  edge_bytes_.clear();
  edge_nodes_.clear();
  nodes_.reserve(build_.size());
  pack(0, kNone);
  build_.clear();
  build_.shrink_to_fit();
}

uint32_t PrefixTrie::deepest_prefix(std::string_view s) const {
  uint32_t cur = 0;
  uint32_t deepest = nodes_[0].value != kNone ? 0 : kNone;
  size_t pos = 0;
  const char* labels = labels_.data();
  const char* edge_bytes = edge_bytes_.data();
  while (pos < s.size()) {
    const Node& node = nodes_[cur];
    const char c = s[pos];
    uint32_t child = kNone;
    for (uint32_t i = 0; i < node.edges_len; ++i) {
      if (edge_bytes[node.edges_begin + i] == c) {
        child = edge_nodes_[node.edges_begin + i];
        break;
      }
    }
    if (child == kNone) {
      break;
    }
    const Node& next = nodes_[child];
    if (next.label_len > s.size() - pos ||
        !bytes_equal(labels + next.label_begin + 1, s.data() + pos + 1, next.label_len - 1)) {
      break;
    }
    pos += next.label_len;
    cur = child;
    if (next.value != kNone) {
      deepest = cur;
    }
  }
  return deepest;
}

}  // namespace sluice::router
