#pragma once
// The resource decoders' value checks: the generic ones from schema/checks.h, and those that
// know APISIX's resource shapes (ids, hosts, labels, timeouts, SNIs, CIDRs).

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "config/plugin_registry.h"
#include "config/resources.h"
#include "schema/checks.h"

namespace sluice::config {

using schema::as_array;
using schema::as_bool;
using schema::as_enum;
using schema::as_integer;
using schema::as_number;
using schema::as_object;
using schema::as_string;
using schema::as_string_array;
using schema::FieldDecoder;
using schema::json_text;
using schema::json_type_name;
using schema::property_error;
using schema::wrong_type;

// An APISIX id: a string of 1-64 of [a-zA-Z0-9-_.] or an integer >= 1; returned as a string.
common::StatusOr<std::string> as_id(const Json& v);
// A host: `^\*?[0-9a-zA-Z-._\[\]:]+$` (APISIX's host_def).
common::StatusOr<std::string> as_host(const Json& v);
common::StatusOr<std::map<std::string, std::string>> as_labels(const Json& v);
// {connect, send, read}, each a number > 0, all three required.
common::StatusOr<TimeoutConf> as_timeout(const Json& v);
common::StatusOr<int64_t> as_timestamp(const Json& v);
// A route's or an SSL's `status`: 1 enabled, 0 disabled.
common::StatusOr<int> as_enable_status(const Json& v);
// The start of a oneOf failure, as APISIX's schema check words it.
inline constexpr const char* kOnlyOneSchema = "value should match only one schema, but matches ";

// The fields every resource has: id, name, desc, labels, create_time, update_time.
template <typename T>
void decode_common_fields(FieldDecoder& d, T* r) {
  d.field("id", &r->id, as_id);
  d.field("name", &r->name, [](const Json& v) { return as_string(v, 1, 100); });
  d.field("desc", &r->desc, [](const Json& v) { return as_string(v, 0, 256); });
  d.field("labels", &r->labels, as_labels);
  d.field("create_time", &r->create_time, as_timestamp);
  d.field("update_time", &r->update_time, as_timestamp);
}

// `$secret://...` and `$env://...` stand for a PEM fetched when the certificate is loaded.
bool is_reference(std::string_view s);
// A PEM (128 bytes to 64 KiB, APISIX's certificate_scheme) or a reference.
common::StatusOr<std::string> as_pem_field(const Json& v);
// An SNI: `^\*?[0-9a-zA-Z-._]+$` (APISIX's host_def_pat).
common::StatusOr<std::string> as_sni(const Json& v);
// An IP address or CIDR block (APISIX's ip_def), as router::parse_cidr reads it.
common::StatusOr<std::string> as_ip_or_cidr(const Json& v);

// The end of a decoder whose resource has a `plugins` object: `invalid configuration: ` and
// the decoder's first error, else check_plugins's error when `plugins` is not null.
common::Status finish_decode(const FieldDecoder& d, const Json& plugins,
                             PluginUse use = PluginUse::kHttp);

// Shared between the resource decoders: decode one upstream object, errors as fragments.
common::StatusOr<UpstreamConf> decode_upstream_fields(const Json& obj);
// The rules APISIX's check_upstream_conf applies after the schema (chash needs a key, rewrite
// needs upstream_host), with its texts, which carry no "invalid configuration: " prefix.
common::Status check_upstream_rules(const UpstreamConf& u);
// finish_decode for an object that may carry an inline upstream: the schema, then the upstream's
// rules, then the plugins, in APISIX's order.
common::Status finish_decode(const FieldDecoder& d, const std::optional<UpstreamConf>& upstream,
                             const Json& plugins, PluginUse use = PluginUse::kHttp);
// `invalid configuration: <fragment>`.
common::Status invalid_configuration(const common::Status& fragment);

// Runs a public decoder so that no library exception escapes it.
template <typename F>
auto no_throw(F&& decode) -> decltype(decode()) {
  try {
    return decode();
  } catch (const std::exception& e) {
    return common::Status::error(std::string("invalid configuration: ") + e.what());
  }
}

}  // namespace sluice::config
