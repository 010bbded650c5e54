#pragma once
// The per-request state of a client connection: message heads, rebuilt heads, decoders.
// Taken from the worker's free list when a request's first byte arrives and given back when
// the connection goes idle, so an idle keep-alive connection holds none of it.

#include <string>

#include "codec/h1/chunked.h"
#include "http/message.h"
#include "io/outbox.h"

namespace sluice::server {

// Thread: worker
struct Exchange {
  http::RequestHead req;  // views die once the upstream head is built
  http::ResponseHead resp;
  std::string up_head;      // the request head sent upstream
  std::string out_head;     // the response head (or local reply) sent to the client
  std::string client_host;  // the client's Host, kept past req's views for pass_host
  std::string xff;          // incoming X-Forwarded-For values, joined
  io::Outbox up_out;
  h1::ChunkedDecoder req_chunked;
  h1::ChunkedDecoder resp_chunked;
  char up_chunk_hdr[24];
  char chunk_hdr[24];
};

}  // namespace sluice::server
