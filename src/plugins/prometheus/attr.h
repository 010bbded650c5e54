#pragma once
// plugin_attr.prometheus's default_buckets and metrics.<family>.extra_labels (APISIX's keys):
// checked when config.yaml is read, then turned into the metric cells' layout and the variables
// each request's extra label values come from.

#include <array>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "metrics/http_metrics.h"
#include "plugin/info.h"

namespace sluice::plugins::prometheus {

// The families that take extra labels, in the order of LabelVars' arrays.
enum class Family { kStatus, kLatency, kBandwidth };
inline constexpr std::array<std::string_view, 3> kFamilyKeys = {"http_status", "http_latency",
                                                                "bandwidth"};
// Extra labels one family may have.
inline constexpr size_t kMaxExtraLabels = 16;

// The variable behind one extra label, as APISIX's ctx.var names it ("$http_x" -> http_x).
// Thread: any (immutable)
class LabelVar {
 public:
  // `ref` is "$name"; a name Sluice cannot read per request is an error naming it.
  static common::StatusOr<LabelVar> parse(std::string_view ref);
  // The value comes from the request head, which is read before any phase (Plugin::head).
  bool reads_request_head() const { return kind_ == Kind::kRequest && var_.reads_request_head(); }
  // Room for a value made here: a status, or upstream_addr's "[ipv6]:port".
  using Buf = char[64];
  // The value now (empty when nil); may point into `scratch` or `buf`.
  std::string_view get(const plugin::Context& ctx, router::VarScratch* scratch, Buf& buf) const;

 private:
  enum class Kind : uint8_t {
    kRequest,  // router::Var
    kStatus,
    kRouteId,
    kRouteName,
    kServiceId,
    kServiceName,
    kConsumerName,
    kConsumerGroupId,
    kUpstreamAddr,  // the last try's node, as nginx's $upstream_addr names it
  };
  Kind kind_ = Kind::kRequest;
  router::Var var_;
};

// What the cells and the log hook take from plugin_attr.prometheus.
// Thread: any (immutable once made)
struct Attr {
  std::shared_ptr<const metrics::HttpLayout> layout = metrics::HttpMetrics::default_layout();
  std::array<std::vector<LabelVar>, 3> vars;  // by Family, in the layout's label order
  bool reads_head = false;                    // a variable reads the request head
  bool cpu = true;                            // route_accounting: measure worker CPU time
};

// default_buckets: a non-empty list of strictly increasing positive numbers. The message
// does not name the key; the caller does.
common::Status check_default_buckets(const plugin::Json& v);
// metrics.<family>.extra_labels: a list of one-key maps {label_name: "$variable"}.
common::Status check_extra_labels(const plugin::Json& v, Family f);
// metrics.<family>.expire: seconds a label set may go unrecorded before it leaves the export
// (0: never), a number from 0 to kMaxExpireSeconds.
common::Status check_expire(const plugin::Json& v);
inline constexpr double kMaxExpireSeconds = 365.0 * 24 * 3600;
// The families' expire values together: one label set holds a route's status, latency and
// bandwidth cells, which expire as one, so the values set must agree (unset ones take theirs).
// The message names the families; the caller names plugin_attr.prometheus.metrics.
common::Status check_expires(const plugin::Json& attr);

// From plugin_attr.prometheus as config.yaml's reader left it (checked); defaults where unset.
Attr read_attr(const plugin::Json& attr);

}  // namespace sluice::plugins::prometheus
