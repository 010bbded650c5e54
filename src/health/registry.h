#pragma once
// Keeps upstreams' health state across snapshot rebuilds: a rebuild asks for the state of
// each checked upstream and gets the one it had before when the upstream's id, checks and
// node addresses are unchanged, so editing an unrelated route resets no node's health.

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "health/set.h"

namespace sluice::health {

// Thread: control
class Registry {
 public:
  // Starts a build; the sets handed out until commit() become the live ones.
  void begin();
  // The state for upstream `id`. `checks_text` is the checks JSON as configured: a change of it
  // (or of the node addresses) gives a new Set, which keeps the health of nodes that stayed.
  SetPtr get(const std::string& id, const std::string& name, const std::string& checks_text,
             std::shared_ptr<const Checks> checks, std::vector<Target> targets);
  // The build succeeded: its sets replace the previous ones (a failed build never commits).
  void commit();
  // The live sets, for the active checker and the metrics.
  std::vector<SetPtr> live() const;

 private:
  struct Entry {
    std::string checks_text;
    std::string nodes_text;
    SetPtr set;
  };
  std::unordered_map<std::string, Entry> live_;
  std::unordered_map<std::string, Entry> next_;
};

}  // namespace sluice::health
