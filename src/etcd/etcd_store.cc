#include "etcd/etcd_store.h"

#include <fmt/format.h>

#include <ctime>

#include "common/log.h"
#include "store/config_index.h"

namespace sluice::etcd {

using common::Status;
using common::StatusOr;
using store::Change;
using store::Entry;

store::Entry to_entry(KeyValue kv) {
  Entry e;
  e.key = std::move(kv.key);
  e.value = std::move(kv.value);
  e.create_revision = kv.create_revision;
  e.mod_revision = kv.mod_revision;
  return e;
}

bool valid_utf8(std::string_view s) {
  constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<uint8_t>(s[i]);
    size_t n;  // continuation bytes
    if (c < 0x80) {
      n = 0;
    } else if ((c >> 5) == 0x6) {
      n = 1;
    } else if ((c >> 4) == 0xe) {
      n = 2;
    } else if ((c >> 3) == 0x1e) {
      n = 3;
    } else {
      return false;
    }
    if (i + n >= s.size()) {
      return false;
    }
    uint32_t cp = n == 0 ? c : c & (0x3fu >> n);
    for (size_t k = 1; k <= n; ++k) {
      auto b = static_cast<uint8_t>(s[i + k]);
      if ((b & 0xc0) != 0x80) {
        return false;
      }
      cp = (cp << 6) | (b & 0x3fu);
    }
    if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
      return false;  // overlong, beyond Unicode, or a surrogate
    }
    i += n + 1;
  }
  return true;
}

bool is_resource_key(std::string_view prefix, const KeyValue& kv) {
  store::KeyParts parts;
  if (kv.value == "init_dir" || !store::split_key(prefix, kv.key, &parts)) {
    return false;
  }
  if (!valid_utf8(kv.key)) {
    SLUICE_LOG(kError, "etcd: a key under {} that is not valid UTF-8 was skipped", prefix);
    return false;
  }
  return true;
}

EtcdStore::EtcdStore(ClientOptions opts, std::string prefix)
    : client_(std::move(opts)), prefix_(std::move(prefix)) {}

void EtcdStore::saw(const Header& h) { revision_ = std::max(revision_, h.revision); }

StatusOr<std::optional<Entry>> EtcdStore::get(std::string_view key) {
  auto r = client_.range(key, {});
  if (!r) {
    return r.status();
  }
  saw(r->header);
  if (r->kvs.empty() || r->kvs[0].value == "init_dir") {
    return std::optional<Entry>();
  }
  int64_t lease = r->kvs[0].lease;
  Entry e = to_entry(std::move(r->kvs[0]));
  if (lease != 0) {
    // A key on a lease (?ttl=): what is left of it, so that a PATCH keeps the rest of its
    // lifetime as it does on the embedded store.
    auto t = client_.call("/v3/lease/timetolive", Json{{"ID", std::to_string(lease)}});
    if (!t) {
      return t.status();
    }
    int64_t left = json_i64(*t, "TTL");
    if (left > 0) {
      e.expire_at = static_cast<int64_t>(time(nullptr)) + left;
    }
  }
  return std::optional<Entry>(std::move(e));
}

StatusOr<std::vector<Entry>> EtcdStore::list(std::string_view prefix) {
  auto r = client_.range(prefix, prefix_end(prefix));
  if (!r) {
    return r.status();
  }
  saw(r->header);
  std::vector<Entry> out;
  out.reserve(r->kvs.size());
  for (auto& kv : r->kvs) {
    if (kv.value != "init_dir" && kv.key != prefix && valid_utf8(kv.key)) {
      out.push_back(to_entry(std::move(kv)));
    }
  }
  return out;
}

namespace {

Json compare_for(std::string_view key, int64_t expect) {
  // expect 0: the key must be absent (version 0); n: its mod_revision must be n.
  Json c = {{"key", base64_encode(key)}, {"result", "EQUAL"}};
  if (expect == 0) {
    c["target"] = "VERSION";
    c["version"] = "0";
  } else {
    c["target"] = "MOD";
    c["mod_revision"] = std::to_string(expect);
  }
  return c;
}

// obj[name] when obj is an object holding it, else null: an odd answer never throws.
Json field(const Json& obj, const char* name) {
  if (!obj.is_object()) {
    return Json();
  }
  auto it = obj.find(name);
  return it == obj.end() ? Json() : *it;
}

// The first element of obj[name] (an array), else null.
Json first_of(const Json& obj, const char* name) {
  Json a = field(obj, name);
  return a.is_array() && !a.empty() ? a[0] : Json();
}

bool succeeded(const Json& txn) {
  Json s = field(txn, "succeeded");
  return s.is_boolean() && s.get<bool>();
}

Status conflict(std::string_view key) {
  return Status::error(fmt::format("conflict: {} was changed by another writer", key));
}

}  // namespace

StatusOr<Json> EtcdStore::write(std::string_view key, const char* path, const char* request,
                                const char* response, Json req, std::optional<int64_t> expect,
                                Header* h) {
  if (!expect) {
    auto r = client_.call(path, req);
    if (r) {
      *h = decode_header(*r);
      saw(*h);
    }
    return r;
  }
  Json txn = {{"compare", Json::array({compare_for(key, *expect)})},
              {"success", Json::array({Json{{request, std::move(req)}}})}};
  auto r = client_.call("/v3/kv/txn", txn);
  if (!r) {
    return r.status();
  }
  *h = decode_header(*r);
  saw(*h);
  if (!succeeded(*r)) {
    return conflict(key);
  }
  return field(first_of(*r, "responses"), response);
}

StatusOr<Entry> EtcdStore::put(std::string_view key, std::string_view value, int64_t ttl_seconds,
                               std::optional<int64_t> expect) {
  int64_t lease = 0;
  if (ttl_seconds > 0) {
    auto l = client_.lease_grant(ttl_seconds);
    if (!l) {
      return l.status();
    }
    lease = *l;
  }
  Json req = {{"key", base64_encode(key)}, {"value", base64_encode(value)}, {"prev_kv", true}};
  if (lease != 0) {
    req["lease"] = std::to_string(lease);
  }
  Header h;
  auto r = write(key, "/v3/kv/put", "request_put", "response_put", std::move(req), expect, &h);
  if (!r) {
    if (lease != 0) {  // granted for a write that did not happen: give it back
      client_.call("/v3/lease/revoke", Json{{"ID", std::to_string(lease)}});
    }
    return r.status();
  }
  Json prev = field(*r, "prev_kv");
  Entry e;
  e.key = std::string(key);
  e.value = std::string(value);
  e.mod_revision = h.revision;
  KeyValue before;
  e.create_revision = !prev.is_null() && decode_kv(prev, &before) && before.create_revision > 0
                          ? before.create_revision
                          : h.revision;
  changes_.push_back(Change{false, e});
  return e;
}

StatusOr<std::optional<Entry>> EtcdStore::remove(std::string_view key,
                                                 std::optional<int64_t> expect) {
  Json req = {{"key", base64_encode(key)}, {"prev_kv", true}};
  Header h;
  auto r = write(key, "/v3/kv/deleterange", "request_delete_range", "response_delete_range",
                 std::move(req), expect, &h);
  if (!r) {
    return r.status();
  }
  Json prevs = field(*r, "prev_kvs");
  KeyValue kv;
  if (!prevs.is_array() || prevs.empty() || !decode_kv(prevs[0], &kv)) {
    return std::optional<Entry>();
  }
  Entry was = to_entry(std::move(kv));
  Entry gone = was;
  gone.value.clear();
  gone.mod_revision = h.revision;
  changes_.push_back(Change{true, std::move(gone)});
  return std::optional<Entry>(std::move(was));
}

// One Txn with no compare: etcd applies every op at one revision, or none (a Txn over
// --max-txn-ops, or one naming a key twice, is refused whole).
Status EtcdStore::apply_batch(const std::vector<store::BatchOp>& ops) {
  if (ops.empty()) {
    return Status::ok();
  }
  Json success = Json::array();
  for (const store::BatchOp& op : ops) {
    if (op.remove) {
      success.push_back(
          {{"request_delete_range", {{"key", base64_encode(op.key)}, {"prev_kv", true}}}});
    } else {
      success.push_back({{"request_put",
                          {{"key", base64_encode(op.key)},
                           {"value", base64_encode(op.value)},
                           {"prev_kv", true}}}});
    }
  }
  auto r = client_.call("/v3/kv/txn", Json{{"success", std::move(success)}});
  if (!r) {
    return r.status();
  }
  Header h = decode_header(*r);
  saw(h);
  Json responses = field(*r, "responses");
  for (size_t i = 0; i < ops.size(); ++i) {
    const Json one = responses.is_array() && i < responses.size() ? responses[i] : Json();
    KeyValue before;
    if (ops[i].remove) {
      Json prevs = field(field(one, "response_delete_range"), "prev_kvs");
      if (prevs.is_array() && !prevs.empty() && decode_kv(prevs[0], &before)) {
        Entry gone = to_entry(std::move(before));
        gone.value.clear();
        gone.mod_revision = h.revision;
        changes_.push_back(Change{true, std::move(gone)});
      }
      continue;
    }
    Json prev = field(field(one, "response_put"), "prev_kv");
    Entry e{ops[i].key, ops[i].value, h.revision, h.revision, 0};
    if (!prev.is_null() && decode_kv(prev, &before) && before.create_revision > 0) {
      e.create_revision = before.create_revision;
    }
    changes_.push_back(Change{false, std::move(e)});
  }
  return Status::ok();
}

std::vector<Change> EtcdStore::take_changes() {
  std::vector<Change> out;
  out.swap(changes_);
  return out;
}

StatusOr<int64_t> EtcdStore::generate_id() {
  auto r = client_.call("/v3/kv/put", Json{{"key", base64_encode(prefix_ + "/gen_id")},
                                           {"value", base64_encode("1")}});
  if (!r) {
    return r.status();
  }
  Header h = decode_header(*r);
  saw(h);
  return h.revision;
}

}  // namespace sluice::etcd
