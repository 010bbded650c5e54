// request-validation's rewrite hook per request: a header schema (APISIX's documented one), a
// JSON body schema (the documented one) and a form body, each valid, so the whole path runs.

#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "plugins/request_validation/request_validation.h"

namespace sluice::plugins::request_validation {
namespace {

using plugin::Json;

std::shared_ptr<const plugin::Plugin> make(const char* conf) {
  plugin::Shared shared;
  auto p = info().make(Json::parse(conf), plugin::BuildEnv{"route/1", shared});
  if (!p.is_ok()) {
    std::abort();
  }
  return *p;
}

// A request head with the headers curl sends, plus `type` as Content-Type.
struct Request {
  explicit Request(std::string_view type) {
    head.method = http::Method::kPost;
    head.uri = head.path = head.target = "/post";
    head.headers[head.num_headers++] = {"Host", "httpbin"};
    head.headers[head.num_headers++] = {"User-Agent", "curl/7.74.0"};
    head.headers[head.num_headers++] = {"Accept", "*/*"};
    head.headers[head.num_headers++] = {"Content-Type", type};
    ctx.req = &head;
    ctx.match.req = &head;
  }
  http::RequestHead head;
  plugin::Context ctx;
};

void run(benchmark::State& state, const char* conf, std::string_view type, std::string_view body) {
  auto p = make(conf);
  Request r(type);
  r.ctx.request_body = body;
  for (auto _ : state) {
    if (p->rewrite(r.ctx) != plugin::Action::kContinue) {
      state.SkipWithError("rejected");
      break;
    }
  }
}

void BM_HeaderSchema(benchmark::State& state) {
  run(state, R"({"header_schema": {"type": "object", "required": ["User-Agent", "Host"],
      "properties": {"User-Agent": {"type": "string", "pattern": "^curl\/"},
                     "Host": {"type": "string", "enum": ["httpbin.org", "httpbin"]}}}})",
      "application/json", "");
}
BENCHMARK(BM_HeaderSchema);

void BM_JsonBodySchema(benchmark::State& state) {
  run(state, R"({"body_schema": {"type": "object", "required": ["required_payload"],
      "properties": {"required_payload": {"type": "string"}, "boolean_payload": {"type": "boolean"},
        "array_payload": {"type": "array", "minItems": 1, "uniqueItems": true,
                          "items": {"type": "integer", "minimum": 200, "maximum": 599}}}}})",
      "application/json", R"({"required_payload":"hello", "array_payload":[301, 302, 303]})");
}
BENCHMARK(BM_JsonBodySchema);

void BM_FormBodySchema(benchmark::State& state) {
  run(state, R"({"body_schema": {"type": "object", "required": ["required_payload", "enum_payload"],
      "properties": {"required_payload": {"type": "string"},
        "enum_payload": {"type": "string", "enum": ["enum_string_1", "enum_string_2"]}}}})",
      "application/x-www-form-urlencoded", "required_payload=hello&enum_payload=enum_string_1");
}
BENCHMARK(BM_FormBodySchema);

}  // namespace
}  // namespace sluice::plugins::request_validation
