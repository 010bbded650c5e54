#include "health/registry.h"

#include <algorithm>

namespace sluice::health {

namespace {

std::string nodes_text(const std::vector<Target>& targets) {
  std::string s;
  for (const Target& t : targets) {
    s.append(t.key()).append(t.pickable ? "+" : "-").append(t.host_header).push_back(',');
  }
  return s;
}

}  // namespace

void Registry::begin() { next_.clear(); }

SetPtr Registry::get(const std::string& id, const std::string& name, const std::string& checks_text,
                     std::shared_ptr<const Checks> checks, std::vector<Target> targets) {
  if (auto it = next_.find(id); it != next_.end()) {
    return it->second.set;  // the same upstream reached twice in one build
  }
  Entry e;
  e.checks_text = checks_text;
  e.nodes_text = nodes_text(targets);
  auto old = live_.find(id);
  if (old != live_.end() && old->second.checks_text == e.checks_text &&
      old->second.nodes_text == e.nodes_text && old->second.set->name() == name) {
    e.set = old->second.set;
  } else {
    e.set = std::make_shared<Set>(name, std::move(checks), std::move(targets));
    if (old != live_.end() && old->second.checks_text == e.checks_text) {
      e.set->inherit(*old->second.set);
    }
  }
  SetPtr out = e.set;
  next_[id] = std::move(e);
  return out;
}

void Registry::commit() {
  live_ = std::move(next_);
  next_.clear();
}

std::vector<SetPtr> Registry::live() const {
  std::vector<SetPtr> out;
  out.reserve(live_.size());
  for (const auto& [id, e] : live_) {
    out.push_back(e.set);
  }
  std::sort(out.begin(), out.end(),
            [](const SetPtr& a, const SetPtr& b) { return a->name() < b->name(); });
  return out;
}

}  // namespace sluice::health
