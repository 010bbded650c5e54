#pragma once
// An upstream's `tls` object (APISIX's upstream tls schema: client_cert, client_key,
// client_cert_id, verify; and 3.19's ca_certs) and the checks APISIX makes after the schema.

#include "common/status.h"
#include "config/resources.h"

namespace sluice::config {

// Errors are fragments (`failed to validate dependent schema for "client_cert": ...`).
common::StatusOr<UpstreamTlsConf> decode_upstream_tls(const Json& v);

// After the schema, with no "invalid configuration: " prefix: `tls` needs scheme https, and
// an inline client certificate and key must parse and belong together ("failed to parse
// cert: ...", as APISIX's ssl.validate says).
common::Status check_upstream_tls(const UpstreamConf& u);

}  // namespace sluice::config
