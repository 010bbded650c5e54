#include "plugin/info.h"

namespace sluice::plugin {

const Json& Shared::attr_of(std::string_view name) const {
  static const Json kEmpty = Json::object();
  auto it = attr.find(name);
  return it != attr.end() && it->is_object() ? *it : kEmpty;
}

}  // namespace sluice::plugin
