#pragma once
// The Admin API: APISIX's /apisix/admin/<kind>[/<id>[/<sub/path>]] over a ConfigStore.
// Every body is decoded by the same decoders the config path uses; nothing is written on
// any error. Writes land in the store, whose change feed the control thread turns into a new
// snapshot; the Api never touches workers.

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "admin/audit.h"
#include "admin/auth.h"
#include "config/resources.h"
#include "server/admin_hook.h"
#include "store/config_index.h"
#include "store/store.h"

namespace sluice::admin {

// One resource kind of the Admin API.
// Thread: any (immutable)
struct Kind {
  std::string_view name;      // "routes": the URL segment and the key segment
  std::string_view singular;  // "route": used in error messages
  bool post = true;           // POST with a generated id
  bool patch = true;
};
// nullptr for an unknown kind.
const Kind* find_kind(std::string_view name);

// Thread: control
class Api {
 public:
  // `now` gives Unix seconds (a seam for tests). `after_write` runs after every successful
  // write, before the answer is made: the owner drains the store's change feed into `index`
  // there, so the next request's reference checks see this write.
  Api(Auth auth, store::ConfigStore& store, const store::ConfigIndex& index,
      std::function<int64_t()> now, std::function<void()> after_write);

  server::AdminResponse handle(const server::AdminRequest& req);
  // What PUT /apisix/admin/plugins/reload runs: re-read the enabled plugins and their
  // attributes and rebuild. Without one, reload answers `done` and changes nothing.
  void set_plugin_reload(std::function<common::Status()> reload) { reload_ = std::move(reload); }
  // Keeps the audit log at `path` (audit.h); empty: none.
  void set_audit_log(std::string path);

 private:
  struct Call;  // one parsed request
  // Everything after the key is checked.
  server::AdminResponse route(const server::AdminRequest& req);
  server::AdminResponse dispatch(Call& c);
  server::AdminResponse plugins(const Call& c);
  // POST /apisix/admin/schema/validate/{kind} (APISIX 3.5+): the checks a PUT makes on the
  // body, nothing stored.
  server::AdminResponse validate(std::string_view rest, const server::AdminRequest& req);
  server::AdminResponse get_one(const Call& c);
  server::AdminResponse get_list(const Call& c);
  server::AdminResponse put(Call& c);
  server::AdminResponse post(Call& c);
  server::AdminResponse patch(Call& c);
  server::AdminResponse remove(const Call& c);
  // Deletes a consumer's credentials, before the consumer itself (APISIX's rmdir).
  server::AdminResponse remove_credentials_of(const std::string& consumer_key);
  // /consumers/{username}/credentials[/{id}] (APISIX 3.7+): PUT, GET, DELETE.
  server::AdminResponse credentials(Call& c);
  server::AdminResponse put_credential(const Call& c, const std::string& user, std::string id);
  // Validates `obj` as `c`'s kind, checks its references, stamps the times and writes it.
  server::AdminResponse write(const Call& c, const std::string& id, config::Json obj, bool created,
                              int64_t create_time, int64_t ttl, std::optional<int64_t> expect);
  common::Status check_references(const config::Json& obj, const Kind& kind);
  common::Status check_client_cert_ref(const config::Json& obj, const Kind& kind);
  std::string key_of(const Kind& kind, std::string_view id) const;

  Auth auth_;
  RecordingStore recording_;   // the store, remembering what a request changes for the audit
  store::ConfigStore& store_;  // = recording_
  AuditLog audit_{""};
  const store::ConfigIndex& index_;
  std::function<int64_t()> now_;
  std::function<void()> after_write_;
  std::function<common::Status()> reload_;
};

}  // namespace sluice::admin
