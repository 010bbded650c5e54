#include "plugin/consumer.h"

#include <fmt/format.h>
#include <sys/random.h>

#include <cstring>

#include "common/log.h"
#include "plugin/plugin.h"

namespace sluice::plugin {

const Consumer* Consumers::find(std::string_view name) const {
  if (names_.empty()) {
    return nullptr;
  }
  const uint64_t h = std::hash<std::string_view>()(name);
  const size_t mask = names_.size() - 1;
  for (size_t i = h & mask; names_[i].index != kNoName; i = (i + 1) & mask) {
    if (names_[i].hash == h && consumers_[names_[i].index]->name == name) {
      return consumers_[names_[i].index].get();
    }
  }
  return nullptr;
}

void Consumers::index_name(uint32_t index) {
  if (2 * (consumers_.size()) > names_.size()) {
    std::vector<NameSlot> old = std::move(names_);
    names_.assign(old.empty() ? 16 : 2 * old.size(), NameSlot{});
    for (const NameSlot& s : old) {
      if (s.index != kNoName) {
        place_name(s);
      }
    }
  }
  const std::string& name = consumers_[index]->name;
  const uint64_t h = std::hash<std::string_view>()(name);
  const size_t mask = names_.size() - 1;
  for (size_t i = h & mask; names_[i].index != kNoName; i = (i + 1) & mask) {
    if (names_[i].hash == h && consumers_[names_[i].index]->name == name) {
      names_[i].index = index;  // a second consumer of that name: the later one is found
      return;
    }
  }
  place_name({h, index});
}

void Consumers::place_name(const NameSlot& s) {
  const size_t mask = names_.size() - 1;
  size_t i = s.hash & mask;
  while (names_[i].index != kNoName) {
    i = (i + 1) & mask;
  }
  names_[i] = s;
}

const ConsumerIndex* Consumers::index(std::string_view plugin) const {
  for (const auto& [name, index] : indexes_) {
    if (name == plugin) {
      return index.get();
    }
  }
  return nullptr;
}

void Consumers::reserve(size_t consumers, size_t credentials) {
  consumers_.reserve(consumers);
  credentials_.reserve(credentials);
  size_t want = 16;
  while (want < 2 * consumers) {
    want *= 2;
  }
  if (want > names_.size() && consumers_.empty()) {
    names_.assign(want, NameSlot{});
  }
}

Consumer& Consumers::add(std::unique_ptr<Consumer> c) {
  c->self.consumer = c.get();
  Consumer& ref = *c;
  consumers_.push_back(std::move(c));
  index_name(static_cast<uint32_t>(consumers_.size() - 1));
  return ref;
}

const Credential& Consumers::add_credential(const Consumer& c, std::string id) {
  auto cred = std::make_unique<Credential>();
  cred->consumer = &c;
  cred->id = std::move(id);
  credentials_.push_back(std::move(cred));
  return *credentials_.back();
}

void Consumers::set_index(std::string_view plugin, std::shared_ptr<const ConsumerIndex> index) {
  for (auto& [name, slot] : indexes_) {
    if (name == plugin) {
      slot = std::move(index);
      return;
    }
  }
  indexes_.emplace_back(std::string(plugin), std::move(index));
}

void attach_consumer(Context& ctx, const Credential& cred) {
  const Consumer& c = *cred.consumer;
  ctx.credential = &cred;
  ctx.consumer = c.name;
  ctx.consumer_group_id = c.group_id;
  // APISIX's core.request.set_header with a nil value removes the header: a client cannot
  // pass its own X-Consumer-* through an authenticating route.
  HeaderEdits& h = ctx.upstream.headers;
  h.set("X-Consumer-Username", c.name);
  if (cred.id.empty()) {
    h.remove("X-Credential-Identifier");
  } else {
    h.set("X-Credential-Identifier", cred.id);
  }
  if (c.custom_id.empty()) {
    h.remove("X-Consumer-Custom-ID");
  } else {
    h.set("X-Consumer-Custom-ID", c.custom_id);
  }
}

void auth_reply(Context& ctx, int status, std::string_view message) {
  ctx.reply_status = status;
  ctx.reply_body = nlohmann::json{{"message", message}}.dump();
  ctx.reply_body += '\n';
}

bool attach_anonymous(Context& ctx, std::string_view plugin, std::string_view name) {
  const Consumer* c = ctx.consumers != nullptr ? ctx.consumers->find(name) : nullptr;
  if (c == nullptr) {
    SLUICE_LOG(kError,
               "{} failed to authenticate the request, code: 401. error: failed to get anonymous "
               "consumer {}",
               plugin, name);
    auth_reply(ctx, 401, "Invalid user authorization");
    return false;
  }
  attach_consumer(ctx, c->self);
  return true;
}

bool secret_equal(std::string_view a, std::string_view b) {
  // Different lengths: the same work over `a` alone, so the time still depends only on the
  // lengths.
  const bool same_len = a.size() == b.size();
  const char* q = same_len ? b.data() : a.data();
  volatile unsigned char diff = same_len ? 0 : 1;
  unsigned char acc = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    acc |= static_cast<unsigned char>(a[i] ^ q[i]);
  }
  diff = diff | acc;
  return diff == 0;
}

namespace {

inline uint64_t rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

inline void sip_round(uint64_t& v0, uint64_t& v1, uint64_t& v2, uint64_t& v3) {
  v0 += v1;
  v1 = rotl(v1, 13);
  v1 ^= v0;
  v0 = rotl(v0, 32);
  v2 += v3;
  v3 = rotl(v3, 16);
  v3 ^= v2;
  v0 += v3;
  v3 = rotl(v3, 21);
  v3 ^= v0;
  v2 += v1;
  v1 = rotl(v1, 17);
  v1 ^= v2;
  v2 = rotl(v2, 32);
}

inline uint64_t load_le64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) {
    v = (v << 8) | p[i];
  }
  return v;
}

struct SipKey {
  uint64_t k0 = 0, k1 = 0;
  SipKey() {
    uint64_t k[2] = {0, 0};
    if (getrandom(k, sizeof(k), 0) != static_cast<ssize_t>(sizeof(k))) {
      k[0] = reinterpret_cast<uintptr_t>(this) * 0x9e3779b97f4a7c15u;  // never in practice
      k[1] = ~k[0];
    }
    k0 = k[0];
    k1 = k[1];
  }
};

const SipKey& sip_key() {
  static const SipKey key;
  return key;
}

}  // namespace

uint64_t siphash24(uint64_t k0, uint64_t k1, std::string_view data) {
  uint64_t v0 = 0x736f6d6570736575u ^ k0;
  uint64_t v1 = 0x646f72616e646f6du ^ k1;
  uint64_t v2 = 0x6c7967656e657261u ^ k0;
  uint64_t v3 = 0x7465646279746573u ^ k1;
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  const size_t n = data.size();
  const size_t full = n & ~size_t{7};
  for (size_t i = 0; i < full; i += 8) {
    uint64_t m = load_le64(p + i);
    v3 ^= m;
    sip_round(v0, v1, v2, v3);
    sip_round(v0, v1, v2, v3);
    v0 ^= m;
  }
  uint64_t last = static_cast<uint64_t>(n & 0xff) << 56;
  for (size_t i = full; i < n; ++i) {
    last |= static_cast<uint64_t>(p[i]) << (8 * (i - full));
  }
  v3 ^= last;
  sip_round(v0, v1, v2, v3);
  sip_round(v0, v1, v2, v3);
  v0 ^= last;
  v2 ^= 0xff;
  for (int i = 0; i < 4; ++i) {
    sip_round(v0, v1, v2, v3);
  }
  return v0 ^ v1 ^ v2 ^ v3;
}

void SecretIndex::reserve(size_t n) {
  items_.reserve(n);
  size_t want = 16;
  while (want < 2 * n) {
    want *= 2;
  }
  if (want > slots_.size()) {
    grow(want);
  }
}

void SecretIndex::grow(size_t slots) {
  std::vector<Slot> old = std::move(slots_);
  slots_.assign(slots, Slot{});
  const size_t mask = slots - 1;
  for (const Slot& s : old) {
    if (s.item != kEmpty) {
      size_t i = s.hash & mask;
      while (slots_[i].item != kEmpty) {
        i = (i + 1) & mask;
      }
      slots_[i] = s;
    }
  }
}

const Credential* SecretIndex::add(std::string_view secret, const Credential* cred) {
  if (2 * (items_.size() + 1) > slots_.size()) {
    grow(slots_.empty() ? 16 : 2 * slots_.size());
  }
  const uint64_t h = siphash24(sip_key().k0, sip_key().k1, secret);
  const size_t mask = slots_.size() - 1;
  size_t i = h & mask;
  for (; slots_[i].item != kEmpty; i = (i + 1) & mask) {
    if (slots_[i].hash != h) {
      continue;  // no look at the item: probes stay within the slot array
    }
    Item& it = items_[slots_[i].item];
    if (it.secret == secret) {
      const Credential* was = it.cred;
      it.cred = cred;
      return was;
    }
  }
  slots_[i] = {h, static_cast<uint32_t>(items_.size())};
  items_.push_back({std::string(secret), cred});
  return nullptr;
}

const Credential* SecretIndex::find(std::string_view secret) const {
  const Credential* found = nullptr;
  bool compared = false;
  if (!slots_.empty()) {
    const uint64_t h = siphash24(sip_key().k0, sip_key().k1, secret);
    const size_t mask = slots_.size() - 1;
    for (size_t i = h & mask; slots_[i].item != kEmpty; i = (i + 1) & mask) {
      if (slots_[i].hash == h) {
        const Item& it = items_[slots_[i].item];
        compared = true;
        if (secret_equal(secret, it.secret)) {
          found = it.cred;
        }
      }
    }
  }
  if (!compared) {
    // The same comparison a hit costs: against a secret of the asked length.
    static const std::string kDecoy(4096, '\0');
    secret_equal(secret,
                 std::string_view(kDecoy).substr(0, std::min(secret.size(), kDecoy.size())));
  }
  return found;
}

void NamedSecrets::add(std::string_view name, const Credential* cred, std::string secret,
                       std::string_view plugin, std::string_view what,
                       std::vector<std::string>* warnings) {
  auto it = map_.find(name);
  if (it == map_.end()) {
    map_.emplace(std::string(name), Entry{cred, std::move(secret)});
    return;
  }
  if (warnings != nullptr) {
    warnings->push_back(fmt::format("{}: consumers {} and {} have the same {}; {}'s is used",
                                    plugin, it->second.credential->consumer->name,
                                    cred->consumer->name, what, cred->consumer->name));
  }
  it->second = Entry{cred, std::move(secret)};
}

const NamedSecrets::Entry* NamedSecrets::find(std::string_view name) const {
  auto it = map_.find(name);
  return it == map_.end() ? nullptr : &it->second;
}

}  // namespace sluice::plugin
