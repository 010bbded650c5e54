#pragma once
// request-validation: in the rewrite phase (priority 2800), checks the request's headers
// against header_schema and its body (JSON, or application/x-www-form-urlencoded) against
// body_schema, answering rejected_code with rejected_msg or the validator's reason. See
// README.md beside this file.

#include <string_view>

#include "plugin/info.h"
#include "plugins/request_validation/config.h"

namespace sluice::plugins::request_validation {

const plugin::PluginInfo& info();

// The request's headers as ngx.req.get_headers() gives them to APISIX's validator: names in
// lower case, a repeated header as an array of its values, and each of `names` (the schema's)
// also under its own spelling when the request has it in another case or with '-' for '_'.
plugin::Json header_object(const http::RequestHead& req, const std::vector<std::string>& names);

// Thread: any (immutable)
class RequestValidation final : public plugin::Plugin {
 public:
  explicit RequestValidation(Conf conf) : conf_(std::move(conf)) {}
  uint32_t phases() const override { return plugin::phase_bit(plugin::Phase::kRewrite); }
  bool needs_body() const override { return conf_.body_schema != nullptr; }
  plugin::Action rewrite(plugin::Context& ctx) const override;

 private:
  plugin::Action reject(plugin::Context& ctx, std::string_view why) const;
  Conf conf_;
};

}  // namespace sluice::plugins::request_validation
