#pragma once
// Consumers as the request path sees them: who a request authenticated as, the indexes auth
// plugins find credentials in, and what authenticating does to the request (APISIX's
// consumer.lua attach_consumer). Built with the snapshot (config/snapshot_consumers.cc);
// immutable afterwards.

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace sluice::plugin {

class Chain;
struct Context;
struct Consumer;

// What an auth plugin finds a request's credentials to be.
// Thread: any (immutable)
struct Credential {
  const Consumer* consumer = nullptr;
  // The credential object's id (X-Credential-Identifier); empty for an auth conf in the
  // consumer's own `plugins`.
  std::string id;
};

// Thread: any (immutable)
struct Consumer {
  std::string name;       // the username: $consumer_name, X-Consumer-Username
  std::string group_id;   // empty: none; $consumer_group_id
  std::string custom_id;  // labels.custom_id: X-Consumer-Custom-ID, when set
  // The consumer's plugins that are not auth plugins, over its group's (the consumer's win
  // per name): merged into the route's chain once a request authenticates as it (APISIX's
  // merge_consumer_route). Null when there are none.
  std::shared_ptr<const Chain> chain;
  // group_id names no consumer group: a request that authenticates as it is answered 503.
  bool group_missing = false;
  // The consumer itself, for anonymous_consumer and auth confs in its own `plugins`.
  Credential self;
};

// One consumer-side conf of an auth plugin (from a consumer's `plugins` or a credential's),
// as the plugin's index is built from.
struct AuthConf {
  const Credential* credential;
  const nlohmann::json* conf;  // checked against the plugin's consumer schema; secrets clear
};

// An auth plugin's lookup structure over every AuthConf of it (PluginInfo::index).
// Thread: any (immutable)
class ConsumerIndex {
 public:
  virtual ~ConsumerIndex() = default;
};

// Every consumer and credential of a snapshot, and each auth plugin's index.
// Thread: any (immutable once built)
class Consumers {
 public:
  // null when no consumer has that username.
  const Consumer* find(std::string_view name) const;
  // The index of the auth plugin named `plugin`, null when no consumer has a conf for it.
  const ConsumerIndex* index(std::string_view plugin) const;
  template <class T>
  const T* index_as(std::string_view plugin) const {
    return static_cast<const T*>(index(plugin));
  }
  size_t size() const { return consumers_.size(); }

  // Building (control thread).
  void reserve(size_t consumers, size_t credentials);
  Consumer& add(std::unique_ptr<Consumer> c);
  const Credential& add_credential(const Consumer& c, std::string id);
  void set_index(std::string_view plugin, std::shared_ptr<const ConsumerIndex> index);

 private:
  struct NameSlot {
    uint64_t hash = 0;
    uint32_t index = UINT32_MAX;  // into consumers_
  };
  static constexpr uint32_t kNoName = UINT32_MAX;
  void index_name(uint32_t index);
  void place_name(const NameSlot& s);

  std::vector<std::unique_ptr<Consumer>> consumers_;
  std::vector<std::unique_ptr<Credential>> credentials_;
  // Open addressing by name, at most half full: 100,000 consumers index without a node each.
  std::vector<NameSlot> names_;
  std::vector<std::pair<std::string, std::shared_ptr<const ConsumerIndex>>> indexes_;
};

// Marks the request as authenticated by `cred` (ctx.consumer, ctx.credential, the
// consumer_name / consumer_group_id variables) and tells the upstream, as APISIX does:
// X-Consumer-Username, X-Credential-Identifier and X-Consumer-Custom-ID (each only when it has
// a value) replace whatever the client sent under those names.
void attach_consumer(Context& ctx, const Credential& cred);

// An auth plugin's failure: `status` with `{"message":"<message>"}` (APISIX's auth answers).
void auth_reply(Context& ctx, int status, std::string_view message);

// The consumer named by an auth plugin's `anonymous_consumer`, attached; when there is none,
// the request is answered 401 `{"message":"Invalid user authorization"}` and the failure
// logged naming `plugin`. Returns false then.
bool attach_anonymous(Context& ctx, std::string_view plugin, std::string_view name);

// Equality of two secrets (keys, passwords, MACs) in time that depends only on their
// lengths, never on where they first differ.
bool secret_equal(std::string_view a, std::string_view b);

// A map from secret strings (key-auth's keys) to credentials whose lookup time says nothing
// about the secret asked for: keys are hashed with SipHash-2-4 under a random per-process key,
// so bucket probes reveal nothing an attacker can steer, and the stored secret is compared with
// secret_equal; a miss compares against a stored secret too, so a missing key and a wrong one
// cost the same.
// Thread: any (immutable once built)
class SecretIndex {
 public:
  // Room for `n` secrets without growing (building 100,000 keys rehashes nothing).
  void reserve(size_t n);
  // A later add of the same secret replaces the earlier (APISIX: the last consumer wins);
  // returns the credential it replaced, or null.
  const Credential* add(std::string_view secret, const Credential* cred);
  const Credential* find(std::string_view secret) const;
  size_t size() const { return items_.size(); }

 private:
  struct Item {
    std::string secret;
    const Credential* cred;
  };
  struct Slot {
    uint64_t hash = 0;
    uint32_t item = kEmpty;  // index into items_
  };
  static constexpr uint32_t kEmpty = UINT32_MAX;
  void grow(size_t slots);

  // Open addressing, linear probing, at most half full: a probe touches one or two slots.
  std::vector<Slot> slots_;
  std::vector<Item> items_;
};

// A map from a public name (basic-auth's username, hmac-auth's key_id) to the credential and
// the secret it must present. Compare the secret with secret_equal, against a decoy when the
// name is missing, so a missing name costs what a wrong secret does.
// Thread: any (immutable once built)
class NamedSecrets {
 public:
  struct Entry {
    const Credential* credential;
    std::string secret;
  };
  // A later add of the same name replaces the earlier (APISIX's table overwrite), with a
  // warning naming both consumers: "<plugin>: consumers a and b have the same <what>; b's is
  // used".
  void add(std::string_view name, const Credential* cred, std::string secret,
           std::string_view plugin, std::string_view what, std::vector<std::string>* warnings);
  const Entry* find(std::string_view name) const;
  size_t size() const { return map_.size(); }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  std::unordered_map<std::string, Entry, Hash, std::equal_to<>> map_;
};

// SipHash-2-4 of `data` under the 128-bit key k0,k1 (Aumasson and Bernstein).
uint64_t siphash24(uint64_t k0, uint64_t k1, std::string_view data);

}  // namespace sluice::plugin
