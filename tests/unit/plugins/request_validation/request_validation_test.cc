// request-validation: APISIX's schema texts, the cases of APISIX's t/plugin/request-validation.t
// and its documented examples, error texts in jsonschema's words, form bodies.

#include "plugins/request_validation/request_validation.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "plugin/args.h"
#include "unit/router/fake_request.h"

namespace sluice::plugins::request_validation {
namespace {

using plugin::Action;
using plugin::Json;
using PluginPtr = std::shared_ptr<const plugin::Plugin>;
using Headers = std::initializer_list<std::pair<std::string_view, std::string_view>>;

std::string refusal(const char* conf) {
  auto s = info().check(Json::parse(conf), plugin::PluginUse::kHttp);
  return s.is_ok() ? std::string() : s.message();
}

PluginPtr make(const char* conf) {
  plugin::Shared shared;
  auto p = info().make(Json::parse(conf), plugin::BuildEnv{"route/1", shared});
  EXPECT_TRUE(p.is_ok()) << p.status().message();
  return p.is_ok() ? *p : nullptr;
}

struct Outcome {
  Action action;
  int status;
  std::string body;
};

Outcome run(const PluginPtr& p, Headers headers, std::string_view body = {}) {
  router::testing::FakeRequest req("POST", "/opentracing", "127.0.0.1", headers);
  plugin::Context ctx;
  ctx.req = &req.head;
  ctx.match = req.ctx;
  ctx.request_body = body;
  Outcome o;
  o.action = p->rewrite(ctx);
  o.status = ctx.reply_status;
  o.body = ctx.reply_body;
  return o;
}

TEST(RequestValidationConfTest, InfoAndSchema) {
  EXPECT_EQ(info().name, "request-validation");
  EXPECT_EQ(info().priority, 2800);
  EXPECT_EQ(refusal(R"({"body_schema": {}})"), "");
  EXPECT_EQ(refusal("{}"),
            R"(object matches none of the requireds: ["body_schema"] or ["header_schema"])");
  EXPECT_EQ(refusal(R"({"body_schema": "x"})"),
            R"(property "body_schema" validation failed: wrong type: expected object, got string)");
  EXPECT_EQ(refusal(R"({"body_schema": {}, "rejected_code": 600})"),
            R"(property "rejected_code" validation failed: expected 600 to be at most 599)");
  EXPECT_EQ(
      refusal(R"({"body_schema": {}, "rejected_msg": ""})"),
      R"(property "rejected_msg" validation failed: string too short, expected at least 1, got 0)");
  // The user's schema must itself be a schema.
  EXPECT_EQ(refusal(R"({"body_schema": {"type": "foo"}})").rfind("invalid body_schema: ", 0), 0u);
  EXPECT_EQ(refusal(R"({"header_schema": {"properties": {"a": {"minimum": "x"}}}})")
                .rfind("invalid header_schema: ", 0),
            0u);
  EXPECT_FALSE(make(R"({"header_schema": {}})")->needs_body());
  EXPECT_TRUE(make(R"({"body_schema": {}})")->needs_body());
}

// t/plugin/request-validation.t, TESTS 3-8.
const char kPayloadSchema[] = R"({
  "type": "object",
  "required": ["required_payload"],
  "properties": {
    "required_payload": {"type": "string"},
    "boolean_payload": {"type": "boolean"},
    "timeouts": {"type": "integer", "minimum": 1, "maximum": 254, "default": 3},
    "req_headers": {"type": "array", "minItems": 1, "items": {"type": "string"}}
  }
})";

TEST(RequestValidationTest, BodyRequiredPayload) {
  PluginPtr p = make((std::string(R"({"body_schema": )") + kPayloadSchema + "}").c_str());
  Headers json = {{"Content-Type", "application/json"}};
  Outcome o = run(p, json, R"({"boolean-payload": true})");
  EXPECT_EQ(o.action, Action::kReply);
  EXPECT_EQ(o.status, 400);
  EXPECT_EQ(o.body, R"(property "required_payload" is required)");
  EXPECT_EQ(run(p, json, R"({"boolean-payload": true, "required_payload": "hello"})").action,
            Action::kContinue);
}

TEST(RequestValidationTest, HeaderRequiredPayload) {
  PluginPtr p = make((std::string(R"({"header_schema": )") + kPayloadSchema + "}").c_str());
  Outcome o = run(p, {{"Content-Type", "application/json"}});
  EXPECT_EQ(o.status, 400);
  EXPECT_EQ(o.body, R"(property "required_payload" is required)");
  EXPECT_EQ(
      run(p, {{"Content-Type", "application/json"}, {"required_payload", "test payload"}}).action,
      Action::kContinue);
}

TEST(RequestValidationTest, JsonschemaWords) {
  PluginPtr p = make((std::string(R"({"body_schema": )") + kPayloadSchema + "}").c_str());
  Headers json = {{"Content-Type", "application/json"}};
  EXPECT_EQ(
      run(p, json, R"({"required_payload": 1})").body,
      R"(property "required_payload" validation failed: wrong type: expected string, got number)");
  EXPECT_EQ(run(p, json, R"({"required_payload": "a", "timeouts": 0})").body,
            R"(property "timeouts" validation failed: expected 0 to be at least 1)");
  EXPECT_EQ(run(p, json, R"({"required_payload": "a", "timeouts": 255})").body,
            R"(property "timeouts" validation failed: expected 255 to be at most 254)");
  EXPECT_EQ(run(p, json, R"({"required_payload": "a", "req_headers": []})").body,
            R"(property "req_headers" validation failed: expect array to have at least 1 items)");
  EXPECT_EQ(
      run(p, json, R"({"required_payload": "a", "req_headers": ["x", 1]})").body,
      R"(property "req_headers" validation failed: failed to validate item 2: wrong type: expected string, got number)");
  EXPECT_EQ(
      run(p, json, R"({"required_payload": "a", "boolean_payload": "true"})").body,
      R"(property "boolean_payload" validation failed: wrong type: expected boolean, got string)");
  Outcome bad = run(p, json, "{bad");
  EXPECT_EQ(bad.status, 400);
  EXPECT_NE(bad.body, "");
  // No body at all: the code, and no reason of the validator's.
  Outcome none = run(p, json);
  EXPECT_EQ(none.action, Action::kReply);
  EXPECT_EQ(none.body, "");
}

// APISIX's documented header example: names are found whatever their case.
TEST(RequestValidationTest, DocumentedHeaderExample) {
  PluginPtr p = make(R"({"header_schema": {"type": "object", "required": ["User-Agent", "Host"],
      "properties": {"User-Agent": {"type": "string", "pattern": "^curl\/"},
                     "Host": {"type": "string", "enum": ["httpbin.org", "httpbin"]}}}})");
  EXPECT_EQ(run(p, {{"Host", "httpbin"}, {"User-Agent", "curl/7.74.0"}}).action, Action::kContinue);
  EXPECT_EQ(run(p, {{"host", "127.0.0.1:9080"}, {"user-agent", "curl/7.74.0"}}).body,
            R"(property "Host" validation failed: matches none of the enum values)");
  EXPECT_EQ(
      run(p, {{"Host", "httpbin"}, {"User-Agent", "cli-mock"}}).body,
      R"(property "User-Agent" validation failed: failed to match pattern "^curl/" with "cli-mock")");
  EXPECT_EQ(run(p, {{"Host", "httpbin"}}).body, R"(property "User-Agent" is required)");
}

TEST(RequestValidationTest, RejectedCodeAndMessage) {
  PluginPtr p = make(R"({"header_schema": {"type": "object", "required": ["Host"],
      "properties": {"Host": {"type": "string", "enum": ["httpbin.org", "httpbin"]}}},
      "rejected_code": 403, "rejected_msg": "Request header validation failed."})");
  Outcome o = run(p, {{"Host", "httpbin2"}});
  EXPECT_EQ(o.status, 403);
  EXPECT_EQ(o.body, "Request header validation failed.");
}

TEST(RequestValidationTest, RepeatedHeadersAreAnArray) {
  PluginPtr p = make(R"({"header_schema": {"properties": {"x-a": {"type": "string"}}}})");
  EXPECT_EQ(run(p, {{"X-A", "1"}}).action, Action::kContinue);
  EXPECT_EQ(run(p, {{"X-A", "1"}, {"x-a", "2"}}).body,
            R"(property "x-a" validation failed: wrong type: expected string, got table)");
}

TEST(RequestValidationTest, FormBodies) {
  Json f = plugin::decode_args("a=1&b&a=2&c=x+y%21&=z&&d=");
  EXPECT_EQ(f, Json::parse(R"({"a": ["1", "2"], "b": true, "c": "x y!", "d": ""})"));
  PluginPtr p = make(R"({"body_schema": {"type": "object",
      "required": ["required_payload", "enum_payload"],
      "properties": {"required_payload": {"type": "string"},
                     "enum_payload": {"type": "string", "enum": ["enum_string_1", "enum_string_2"]}}}})");
  Headers form = {{"Content-Type", "application/x-www-form-urlencoded"}};
  EXPECT_EQ(run(p, form, "required_payload=hello&enum_payload=enum_string_1").action,
            Action::kContinue);
  EXPECT_EQ(run(p, form, "required_payload=hello").body, R"(property "enum_payload" is required)");
  // Any other Content-Type (a charset included, as APISIX compares the whole value) is JSON.
  EXPECT_EQ(run(p, {{"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"}},
                "required_payload=hello&enum_payload=enum_string_1")
                .status,
            400);
}

TEST(RequestValidationTest, ExplainNestedPaths) {
  PluginPtr p = make(R"({"body_schema": {"type": "object", "properties": {
      "a": {"type": "object", "additionalProperties": false, "properties": {
        "b": {"type": "array", "uniqueItems": true, "items": {"type": "integer", "exclusiveMinimum": 5}},
        "s": {"type": "string", "maxLength": 2}}}}}})");
  Headers json = {{"Content-Type", "application/json"}};
  EXPECT_EQ(
      run(p, json, R"({"a": {"b": [6, 5]}})").body,
      R"(property "a" validation failed: property "b" validation failed: failed to validate item 2: expected 5 to be greater than 5)");
  EXPECT_EQ(
      run(p, json, R"({"a": {"b": [6, 6]}})").body,
      R"(property "a" validation failed: property "b" validation failed: expected unique items but items 1 and 2 are equal)");
  EXPECT_EQ(
      run(p, json, R"({"a": {"s": "abc"}})").body,
      R"(property "a" validation failed: property "s" validation failed: string too long, expected at most 2, got 3)");
  EXPECT_EQ(run(p, json, R"({"a": {"z": 1}})").body,
            R"(property "a" validation failed: additional properties forbidden, found z)");
}

}  // namespace
}  // namespace sluice::plugins::request_validation
