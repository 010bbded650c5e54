#pragma once
// The per-request state of a client connection: message heads, rebuilt heads, decoders.
// Taken from the worker's free list when a request's first byte arrives and given back when
// the connection goes idle, so an idle keep-alive connection holds none of it.

#include <cstdint>
#include <string>
#include <string_view>

#include "codec/h1/chunked.h"
#include "http/message.h"
#include "io/outbox.h"
#include "plugin/chain.h"
#include "server/admin_hook.h"

namespace sluice::server {

// Thread: worker
struct Exchange {
  http::RequestHead req;  // views die once the upstream head is built
  http::ResponseHead resp;
  std::string up_head;      // the request head sent upstream
  std::string out_head;     // the response head (or local reply) sent to the client
  std::string client_host;  // the client's Host, kept past req's views for pass_host
  std::string xff;          // incoming X-Forwarded-For values, joined
  std::string real_ip;      // the client address a trusted proxy named, when it did
  std::string up_statuses;  // each upstream try's status, "502, 504, 200" ($upstream_status)
  io::Outbox up_out;
  h1::ChunkedDecoder req_chunked;
  h1::ChunkedDecoder resp_chunked;
  char up_chunk_hdr[24];
  char chunk_hdr[24];
  // The plugins' view of this request, and the chains it runs (pinned by the snapshot).
  plugin::Context pctx;
  plugin::Chains chains;
};

// The interim answer to `Expect: 100-continue`, sent by the gateway itself.
inline constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

// An Admin API request on a client connection: the request being read, then the answer being
// written. Allocated per admin request only, so proxied requests never pay for it.
// Thread: worker
struct AdminExchange {
  AdminRequest req;
  AdminResponse resp;
  uint64_t wait_id = 0;  // Worker::admin_wait id while submitted; 0 otherwise
};

}  // namespace sluice::server
