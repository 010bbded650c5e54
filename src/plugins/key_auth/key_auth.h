#pragma once
// key-auth: authenticates a request by an API key in a header (default `apikey`) or, when the
// header is absent, a query argument, looked up among the consumers' and credentials' keys, in
// the rewrite phase (priority 2500), as APISIX 3.x's. See README.md beside this file.

#include <string>
#include <string_view>

#include "plugin/consumer.h"
#include "plugin/info.h"
#include "plugins/key_auth/config.h"

namespace sluice::plugins::key_auth {

const plugin::PluginInfo& info();

// Every consumer's key: a SecretIndex, so that neither a hit nor a miss says anything about
// how close a wrong key came.
// Thread: any (immutable)
class KeyIndex final : public plugin::ConsumerIndex {
 public:
  plugin::SecretIndex keys;
};

// Thread: any (immutable)
class KeyAuth final : public plugin::Plugin {
 public:
  explicit KeyAuth(Conf conf) : conf_(std::move(conf)) {}
  uint32_t phases() const override { return plugin::phase_bit(plugin::Phase::kRewrite); }
  plugin::Action rewrite(plugin::Context& ctx) const override;

 private:
  // The key as the request carries it; false (with the 401 message) when it carries none.
  // `from_header` says where it was found.
  bool find_key(plugin::Context& ctx, std::string_view* key, bool* from_header) const;
  void hide(plugin::Context& ctx, bool from_header) const;
  plugin::Action fail(plugin::Context& ctx, std::string_view message) const;

  Conf conf_;
};

// The value of query argument `name` in `query` as ngx.req.get_uri_args gives it (`%XX` and
// `+` decoded), into `out`. 0: absent; 1: present once; 2: present more than once (APISIX then
// gets a table, which matches no key).
int query_arg(std::string_view query, std::string_view name, std::string* out);

// `query` without every `name=...` argument (and without a bare `name`).
void drop_query_arg(std::string_view query, std::string_view name, std::string* out);

}  // namespace sluice::plugins::key_auth
