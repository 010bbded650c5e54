#pragma once
// A configuration's warnings, logged once per change of state. Every Admin API write rebuilds
// the snapshot, and a build says again everything it noticed (a node that does not resolve, a
// plugin not enabled); logging all of it on each write buries the one new line. A warning is
// logged when it appears, and a notice when it goes away (the name resolves again, the plugin
// was enabled); in between, nothing.

#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::runtime {

// Thread: control
class WarningMemory {
 public:
  // `source` prefixes each line ("store", "apisix.yaml").
  void report(std::string_view source, const std::vector<std::string>& warnings);

 private:
  std::set<std::string> last_;
};

}  // namespace sluice::runtime
