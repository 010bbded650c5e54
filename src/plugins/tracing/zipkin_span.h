#pragma once
// Zipkin v2 JSON of one request's spans, written straight into a buffer: apisix.request
// (SERVER), its children apisix.proxy and apisix.response_span as APISIX's span_version 2
// makes them, and beyond APISIX a CLIENT span per upstream try under apisix.proxy. Spans are
// comma-separated objects; the sink wraps a batch in [ ].

#include <cstdint>
#include <string>

#include "plugin/plugin.h"
#include "plugins/tracing/zipkin_conf.h"

namespace sluice::plugins::tracing {

// What the rewrite phase knows of the request span (the head is gone by the log phase): its
// http.method, http.url and peer tags, as JSON members.
void zipkin_request_tags(const plugin::Context& ctx, std::string* out);

// `s` as a JSON string (quoted, escaped; invalid UTF-8 becomes U+FFFD).
void append_json_string(std::string* out, std::string_view s);

void encode_zipkin(const ZipkinConf& conf, const plugin::Context& ctx, uint64_t end_ns,
                   std::string* out);

}  // namespace sluice::plugins::tracing
