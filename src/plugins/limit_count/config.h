#pragma once
// limit-count's conf, typed and checked with APISIX's schema and error texts.

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "plugin/info.h"

namespace sluice::plugins::limit_count {

enum class KeyType { kVar, kVarCombination, kConstant };
enum class Policy { kLocal, kRedis, kRedisCluster };

// Thread: any (value type)
struct Conf {
  uint64_t count = 0;
  uint64_t time_window = 0;  // seconds
  KeyType key_type = KeyType::kVar;
  std::string key = "remote_addr";
  int rejected_code = 503;
  bool has_rejected_msg = false;
  std::string rejected_msg;
  Policy policy = Policy::kLocal;
  bool allow_degradation = false;
  bool show_limit_quota_header = true;
  std::string group;
  // policy: redis
  std::string redis_host;
  int redis_port = 6379;
  std::string redis_username, redis_password;
  int redis_database = 0;
  int redis_timeout = 1000;  // ms
  // policy: redis-cluster
  std::vector<std::string> redis_cluster_nodes;
  std::string redis_cluster_name;
};

// Errors are the text after APISIX's `... plugin limit-count err: `, e.g.
// `property "count" is required`, `property "count" validation failed: expected 0 to be
// greater than 0`, `property "redis_host" is required` (policy redis).
common::StatusOr<Conf> parse(const plugin::Json& conf);
common::Status check(const plugin::Json& conf, plugin::PluginUse use);
// `group conf mismatched` when another conf of c.group was checked before (see config.cc).
common::Status check_group(const Conf& c);
// Only `policy`, `redis_ssl` and the redis fields of `conf`, into `c`: the part of APISIX's
// schema (utils/redis-schema.lua) that limit-req and limit-conn share with limit-count.
// Why a key reading the request body (post_arg_*, graphql_*) is refused, or empty.
std::string body_key_reason(KeyType type, const std::string& key);
common::Status parse_policy(const plugin::Json& conf, Conf* c);

// The JSON schema served by GET /apisix/admin/plugins/limit-count.
extern const char kSchema[];

}  // namespace sluice::plugins::limit_count
