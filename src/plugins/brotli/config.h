#pragma once
// brotli's conf, checked with APISIX's schema (apisix/plugins/brotli.lua) and error texts.

#include "common/status.h"
#include "plugin/info.h"
#include "plugins/gzip/coding.h"

namespace sluice::plugins::brotli {

// Thread: any (immutable once built)
struct Conf {
  coding::Common common;
  int mode = 0;        // 0 generic, 1 text, 2 font (BROTLI_MODE_*)
  int comp_level = 6;  // BROTLI_PARAM_QUALITY, 0..11
  int lgwin = 19;      // 0: the library's default window
  int lgblock = 0;     // 0: the library picks
};

// Errors are the text after `failed to check the configuration of plugin brotli err: `, e.g.
// `property "lgwin" validation failed: matches none of the enum values`.
common::StatusOr<Conf> parse(const plugin::Json& conf);
common::Status check(const plugin::Json& conf, plugin::PluginUse use);

// The JSON schema served by GET /apisix/admin/plugins/brotli.
extern const char kSchema[];

}  // namespace sluice::plugins::brotli
