#pragma once
// gzip's conf, checked with APISIX's schema (apisix/plugins/gzip.lua) and error texts.

#include <cstdint>

#include "common/status.h"
#include "plugin/info.h"
#include "plugins/gzip/coding.h"

namespace sluice::plugins::gzip {

// Thread: any (immutable once built)
struct Conf {
  coding::Common common;
  int comp_level = 1;  // zlib's level, 1..9
  // nginx's gzip_buffers: Sluice writes the compressed output of each piece in steps of
  // `size` bytes and keeps at most number x size of it per request between pieces.
  int64_t buffers_number = 32;
  int64_t buffers_size = 4096;
};

// Errors are the text after `failed to check the configuration of plugin gzip err: `, e.g.
// `property "comp_level" validation failed: expected 10 to be at most 9`.
common::StatusOr<Conf> parse(const plugin::Json& conf);
common::Status check(const plugin::Json& conf, plugin::PluginUse use);

// The JSON schema served by GET /apisix/admin/plugins/gzip.
extern const char kSchema[];

}  // namespace sluice::plugins::gzip
