#pragma once
// request-id: gives each request an id (the client's own when it sent one), sends it upstream
// in `header_name` and, with include_in_response, to the client, as APISIX 3.x's (priority
// 12015, rewrite + header_filter). See README.md beside this file.

#include <string>

#include "plugin/info.h"
#include "plugins/request_id/config.h"

namespace sluice::plugins::request_id {

const plugin::PluginInfo& info();

// Thread: any (immutable)
class RequestId final : public plugin::Plugin {
 public:
  explicit RequestId(Conf conf) : conf_(std::move(conf)) {}
  uint32_t phases() const override;
  plugin::Action rewrite(plugin::Context& ctx) const override;
  void header_filter(plugin::Context& ctx) const override;

  // Appends a new id made with the conf's algorithm.
  void make_id(std::string* out) const;

 private:
  Conf conf_;
};

}  // namespace sluice::plugins::request_id
