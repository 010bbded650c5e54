#pragma once
// consumer-restriction: lets a request through, or not, by who it authenticated as (its
// consumer, the consumer's group) or where it goes (its route, its service), with a
// whitelist, a blacklist and per-consumer allowed methods, in the access phase (priority
// 2400), as APISIX 3.x's. See README.md beside this file.

#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "common/status.h"
#include "plugin/info.h"

namespace sluice::plugins::consumer_restriction {

const plugin::PluginInfo& info();

enum class Type : uint8_t { kConsumerName, kServiceId, kRouteId, kConsumerGroupId };

// Thread: any (immutable after parse)
struct Conf {
  Type type = Type::kConsumerName;
  std::string type_name = "consumer_name";
  std::unordered_set<std::string> whitelist, blacklist;
  bool has_whitelist = false, has_blacklist = false;
  // allowed_by_methods: the methods each listed value may use, in the conf's order (the
  // first item naming a value decides).
  std::vector<std::pair<std::string, std::vector<std::string>>> allowed_by_methods;
  int rejected_code = 403;
  std::string rejected_msg;  // empty: "The <type> is forbidden."
  bool has_rejected_msg = false;
};

// Errors are the text after APISIX's `... plugin consumer-restriction err: `.
common::StatusOr<Conf> parse(const plugin::Json& conf);
common::Status check(const plugin::Json& conf, plugin::PluginUse use);
extern const char kSchema[];

// Thread: any (immutable)
class ConsumerRestriction final : public plugin::Plugin {
 public:
  explicit ConsumerRestriction(Conf conf);
  uint32_t phases() const override { return plugin::phase_bit(plugin::Phase::kAccess); }
  plugin::Action access(plugin::Context& ctx) const override;

 private:
  bool method_allowed(std::string_view method, std::string_view value) const;

  Conf conf_;
  std::string rejected_body_;  // {"message":...}\n, made once
  std::string missing_body_;   // the 401 for a request without the value
};

}  // namespace sluice::plugins::consumer_restriction
