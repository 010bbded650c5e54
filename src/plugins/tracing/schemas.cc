// The tracers' JSON schemas for GET /apisix/admin/plugins/{name}: APISIX 3.x's.

#include "plugins/tracing/otel_conf.h"

namespace sluice::plugins::tracing {

const char* const kOtelSchema = R"({"type": "object", "properties": {
  "sampler": {"type": "object", "properties": {
    "name": {"type": "string", "enum": ["always_on", "always_off", "trace_id_ratio", "parent_base"],
             "title": "sampling strategy", "default": "always_off"},
    "options": {"type": "object", "properties": {
      "fraction": {"type": "number", "title": "trace_id_ratio fraction", "default": 0},
      "root": {"type": "object", "title": "parent_base root sampler", "properties": {
        "name": {"type": "string", "enum": ["always_on", "always_off", "trace_id_ratio"],
                 "title": "sampling strategy", "default": "always_off"},
        "options": {"type": "object", "properties": {
          "fraction": {"type": "number", "title": "trace_id_ratio fraction parameter",
                       "default": 0}}, "default": {"fraction": 0}}},
        "default": {"name": "always_off", "options": {"fraction": 0}}}},
      "default": {"fraction": 0, "root": {"name": "always_off"}}}},
    "default": {"name": "always_off", "options": {"fraction": 0, "root": {"name": "always_off"}}}},
  "additional_attributes": {"type": "array", "items": {"type": "string", "minLength": 1}},
  "additional_header_prefix_attributes": {"type": "array",
                                          "items": {"type": "string", "minLength": 1}}}})";

}  // namespace sluice::plugins::tracing
