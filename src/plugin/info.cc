#include "plugin/info.h"

#include <algorithm>

namespace sluice::plugin {

const Json& Shared::attr_of(std::string_view name) const {
  static const Json kEmpty = Json::object();
  auto it = attr.find(name);
  return it != attr.end() && it->is_object() ? *it : kEmpty;
}

const Json* Shared::metadata_of(std::string_view plugin) {
  if (std::find(metadata_reads.begin(), metadata_reads.end(), plugin) == metadata_reads.end()) {
    metadata_reads.emplace_back(plugin);
  }
  if (metadata == nullptr) {
    return nullptr;
  }
  auto it = metadata->find(std::string(plugin));
  return it == metadata->end() ? nullptr : &it->second;
}

}  // namespace sluice::plugin
