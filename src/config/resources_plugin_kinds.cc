// The decoders of the kinds that are mostly a `plugins` object: consumers, global_rules,
// plugin_configs, consumer_groups, plugin_metadata.

#include <fmt/format.h>

#include <cctype>

#include "config/field_decoder.h"
#include "config/plugin_registry.h"
#include "config/resources.h"

namespace sluice::config {

using common::Status;
using common::StatusOr;

namespace {

StatusOr<std::string> as_username(const Json& v) {
  auto s = as_string(v, 1, 100);
  if (!s.is_ok()) {
    return s;
  }
  for (char c : *s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') {
      return Status::error(
          fmt::format(R"(failed to match pattern "^[a-zA-Z0-9_\-]+$" with "{}")", *s));
    }
  }
  return s;
}

StatusOr<ConsumerConf> decode_consumer_fields(const Json& obj) {
  ConsumerConf c;
  FieldDecoder d(obj);
  d.only({"username", "desc", "labels", "plugins", "group_id", "create_time", "update_time"});
  d.require({"username"});
  d.field("username", &c.username, as_username);
  d.field("desc", &c.desc, [](const Json& v) { return as_string(v, 0, 256); });
  d.field("labels", &c.labels, as_labels);
  d.field("plugins", &c.plugins, as_object);
  d.field("group_id", &c.group_id, as_id);
  d.field("create_time", &c.create_time, as_timestamp);
  d.field("update_time", &c.update_time, as_timestamp);
  if (!d.ok()) {
    return invalid_configuration(d.status());
  }
  if (!c.plugins.is_null()) {
    Status s = check_plugins(c.plugins, PluginUse::kConsumer);
    if (!s.is_ok()) {
      return Status::error("invalid plugins configuration: " + s.message());
    }
  }
  c.id = c.username;
  return c;
}

StatusOr<GlobalRuleConf> decode_global_rule_fields(const Json& obj) {
  GlobalRuleConf g;
  FieldDecoder d(obj);
  d.only({"id", "plugins", "create_time", "update_time"});
  d.require({"plugins"});
  d.field("id", &g.id, as_id);
  d.field("plugins", &g.plugins, as_object);
  d.field("create_time", &g.create_time, as_timestamp);
  d.field("update_time", &g.update_time, as_timestamp);
  Status s = finish_decode(d, g.plugins);
  if (!s.is_ok()) {
    return s;
  }
  return g;
}

// plugin_configs and consumer_groups share their schema: common fields plus `plugins`.
template <typename T>
StatusOr<T> decode_plugin_set(const Json& obj) {
  T t;
  FieldDecoder d(obj);
  d.only({"id", "name", "desc", "labels", "plugins", "create_time", "update_time"});
  d.require({"plugins"});
  decode_common_fields(d, &t);
  d.field("plugins", &t.plugins, as_object);
  Status s = finish_decode(d, t.plugins);
  if (!s.is_ok()) {
    return s;
  }
  return t;
}

StatusOr<PluginMetadataConf> decode_plugin_metadata_fields(const std::string& plugin_name,
                                                           const Json& obj) {
  if (find_plugin(plugin_name) == nullptr) {
    return Status::error(fmt::format("unknown plugin [{}]", plugin_name));
  }
  if (!obj.is_object()) {
    return invalid_configuration(wrong_type("object", obj));
  }
  PluginMetadataConf m{plugin_name, obj};
  auto id = m.value.find("id");
  if (id != m.value.end()) {
    if (!id->is_string() || id->get_ref<const std::string&>() != plugin_name) {
      return Status::error("wrong plugin_metadata id");
    }
    m.value.erase(id);
  }
  Status s = check_plugin_metadata(plugin_name, m.value, all_plugins());
  if (!s.is_ok()) {
    return s;
  }
  return m;
}

}  // namespace

StatusOr<ConsumerConf> decode_consumer(const Json& obj) {
  return no_throw([&] { return decode_consumer_fields(obj); });
}

StatusOr<GlobalRuleConf> decode_global_rule(const Json& obj) {
  return no_throw([&] { return decode_global_rule_fields(obj); });
}

StatusOr<PluginConfigConf> decode_plugin_config(const Json& obj) {
  return no_throw([&] { return decode_plugin_set<PluginConfigConf>(obj); });
}

StatusOr<ConsumerGroupConf> decode_consumer_group(const Json& obj) {
  return no_throw([&] { return decode_plugin_set<ConsumerGroupConf>(obj); });
}

StatusOr<PluginMetadataConf> decode_plugin_metadata(const std::string& plugin_name,
                                                    const Json& obj) {
  return no_throw([&] { return decode_plugin_metadata_fields(plugin_name, obj); });
}

}  // namespace sluice::config
