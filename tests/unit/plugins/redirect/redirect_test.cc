// redirect's rewrite hook on a fake request: the Location it builds, the status, the page it
// answers with, and the requests it lets through. Cases from APISIX's t/plugin/redirect.t.

#include "plugins/redirect/redirect.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "unit/router/fake_request.h"

namespace sluice::plugins::redirect {
namespace {

using plugin::Action;
using plugin::Json;
using Headers = std::initializer_list<std::pair<std::string_view, std::string_view>>;

// What the client would get.
struct Answer {
  Action action = Action::kContinue;
  int status = 0;
  std::string location = "(none)";
  std::string content_type = "(none)";
  std::string body;
};

struct Request {
  std::string_view target = "/hello";
  std::string_view method = "GET";
  std::string_view host = "foo.com";
  bool tls = false;
};

std::string edited(const plugin::HeaderEdits& h, std::string_view name) {
  const std::string* v = nullptr;
  if (!h.lookup(name, &v)) {
    return "(none)";
  }
  return v == nullptr ? "(removed)" : *v;
}

Answer run(const char* conf, Request r, uint16_t port = 0) {
  auto c = parse(Json::parse(conf));
  EXPECT_TRUE(c.is_ok()) << conf << ": " << c.status().message();
  if (!c.is_ok()) {
    return {};
  }
  Redirect p(std::move(c).value(), port);
  EXPECT_EQ(p.phases(), plugin::phase_bit(plugin::Phase::kRewrite));
  router::testing::FakeRequest req(r.method, r.target, r.host, {}, "10.0.0.7");
  router::TlsInfo tls;
  plugin::Context ctx;
  ctx.req = &req.head;
  ctx.match = req.ctx;
  ctx.match.tls = r.tls ? &tls : nullptr;
  Answer a;
  a.action = p.rewrite(ctx);
  a.status = ctx.reply_status;
  a.location = edited(ctx.resp.headers, "Location");
  a.content_type = edited(ctx.resp.headers, "Content-Type");
  a.body = ctx.reply_body;
  return a;
}

std::string location(const char* conf, std::string_view target) {
  Answer a = run(conf, {.target = target});
  EXPECT_EQ(a.action, Action::kReply) << conf << " " << target;
  return a.location;
}

TEST(Redirect, UriTemplates) {
  struct {
    const char* uri;
    const char* target;
    const char* want;
  } cases[] = {
      {"/test/add", "/hello", "/test/add"},
      {"$uri/test/add", "/hello", "/hello/test/add"},
      {"$uri/test/a${arg_name}c", "/hello?name=json", "/hello/test/ajsonc"},
      {"/foo$$uri", "/hello?name=json", "/foo$/hello"},
      {"\\$uri/foo$uri\\$uri/bar", "/hello", "\\$uri/foo/hello\\$uri/bar"},
      {"$uri/$bad_var/bar", "/hello", "/hello//bar"},
      {"https://$host$request_uri", "/hello?a=1", "https://foo.com/hello?a=1"},
      // redirect's own pattern, not resolve_var's: names stop at '.', `${...}` takes a bare
      // name only, and a backslash before anything but `$name` is dropped.
      {"$uri.html", "/hello", "/hello.html"},
      {"${uri}x/${ uri }/${uri ?? y}", "/a", "/ax/${ uri }/${uri ?? y}"},
      {"/a\\b/\\${uri}", "/h", "/ab//h"},
      {"/${uri", "/h", "/${uri"},
      {"/$-/$", "/h", "/$-/$"},
      {"/$scheme/$https", "/h", "/http/"},
      // $uri is nginx's normalised path; the query is not in it.
      {"$uri", "/a//b/./c/../d?x=1", "/a/b/d"},
  };
  for (const auto& c : cases) {
    std::string conf = Json{{"uri", c.uri}}.dump();
    EXPECT_EQ(location(conf.c_str(), c.target), c.want) << c.uri << " " << c.target;
  }
}

TEST(Redirect, RetCodeAndPage) {
  Answer a = run(R"J({"uri": "/test/add", "ret_code": 301})J", {});
  EXPECT_EQ(a.status, 301);
  EXPECT_EQ(a.content_type, "text/html");
  EXPECT_EQ(a.body,
            "<html>\r\n<head><title>301 Moved Permanently</title></head>\r\n<body>\r\n"
            "<center><h1>301 Moved Permanently</h1></center>\r\n"
            "<hr><center>sluice</center>\r\n</body>\r\n</html>\r\n");
  // The default is 302, whose page nginx titles "302 Found".
  a = run(R"J({"uri": "/x"})J", {});
  EXPECT_EQ(a.status, 302);
  EXPECT_NE(a.body.find("<title>302 Found</title>"), std::string::npos) << a.body;
  for (auto [code, title] : {std::pair{303, "303 See Other"},
                             {307, "307 Temporary Redirect"},
                             {308, "308 Permanent Redirect"}}) {
    std::string conf = Json{{"uri", "/x"}, {"ret_code", code}}.dump();
    a = run(conf.c_str(), {});
    EXPECT_EQ(a.status, code);
    EXPECT_NE(a.body.find(std::string("<h1>") + title + "</h1>"), std::string::npos) << a.body;
  }
  // Codes nginx has no page for go without a body (the gateway gives 4xx and 5xx its own).
  for (int code : {200, 300, 304, 399, 404}) {
    std::string conf = Json{{"uri", "/x"}, {"ret_code", code}}.dump();
    a = run(conf.c_str(), {});
    EXPECT_EQ(a.status, code);
    EXPECT_EQ(a.location, "/x");
    EXPECT_EQ(a.body, "");
    EXPECT_EQ(a.content_type, "(none)");
  }
}

TEST(Redirect, RegexUri) {
  const char* conf = R"J({"regex_uri": ["^/test/(.*)", "http://test.com/${1}"], "ret_code": 301})J";
  Answer a = run(conf, {.target = "/test/1"});
  EXPECT_EQ(a.action, Action::kReply);
  EXPECT_EQ(a.status, 301);
  EXPECT_EQ(a.location, "http://test.com/1");
  // No match: the request goes on, nothing is left for the response.
  a = run(conf, {.target = "/hello"});
  EXPECT_EQ(a.action, Action::kContinue);
  EXPECT_EQ(a.location, "(none)");
  EXPECT_EQ(a.status, 0);
  // ngx.re.sub replaces the first match and keeps the rest; it runs on $uri.
  EXPECT_EQ(location(R"J({"regex_uri": ["/b/", "/c/"]})J", "/a/b/b/d?q=1"), "/a/c/b/d");
  EXPECT_EQ(location(R"J({"regex_uri": ["^/(\\w+)/(\\w+)", "/$2/$1/$0"]})J", "/x/y/z"),
            "/y/x//x/y/z");
  EXPECT_EQ(location(R"J({"regex_uri": ["^/a(.*)", "/b$1"]})J", "/a%20b"), "/b b");
}

TEST(Redirect, RegexThatCannotRunAnswers500) {
  // PCRE2's match limit: APISIX logs the error and answers 500 without a body of its own.
  std::string target = "/" + std::string(40, 'a') + "b";
  Answer a = run(R"J({"regex_uri": ["^/(a+)+$", "/x"]})J", {.target = target});
  EXPECT_EQ(a.action, Action::kReply);
  EXPECT_EQ(a.status, 500);
  EXPECT_EQ(a.location, "(none)");
  EXPECT_EQ(a.body, "");
}

TEST(Redirect, EncodeUri) {
  EXPECT_EQ(location(R"J({"regex_uri": ["^/test/(.*)", "http://test.com/${1}"],
                          "encode_uri": true})J",
                     "/test/with%20space"),
            "http://test.com/with%20space");
  EXPECT_EQ(location(R"J({"uri": "$uri", "encode_uri": true})J", "/hello/with%20space"),
            "/hello/with%20space");
  // Only what comes before the first '?' is escaped (nginx's NGX_ESCAPE_URI: '%' too).
  EXPECT_EQ(location(R"J({"uri": "/a b%#é?c d", "encode_uri": true})J", "/"),
            "/a%20b%25%23%C3%A9?c d");
  // Without it, the value goes as made (a space stays a space).
  EXPECT_EQ(location(R"J({"uri": "$uri"})J", "/hello/with%20space"), "/hello/with space");
}

TEST(Redirect, AppendQueryString) {
  struct {
    const char* conf;
    const char* target;
    const char* want;
  } cases[] = {
      {R"J({"uri": "$uri", "append_query_string": true})J", "/hello?name=json", "/hello?name=json"},
      {R"J({"uri": "$uri?type=string", "append_query_string": true})J", "/hello?name=json",
       "/hello?type=string&name=json"},
      {R"J({"uri": "$uri?type=string", "append_query_string": true})J", "/hello",
       "/hello?type=string"},
      // A bare '?' is no argument (nginx's $is_args is empty).
      {R"J({"uri": "$uri", "append_query_string": true})J", "/hello?", "/hello"},
      {R"J({"uri": "$uri"})J", "/hello?name=json", "/hello"},
      {R"J({"regex_uri": ["^/(.*)", "/new/$1"], "append_query_string": true})J", "/a?b=1&c",
       "/new/a?b=1&c"},
      // The '?' that decides between '?' and '&' is the made URI's, before encode_uri.
      {R"J({"uri": "/a?x=1", "encode_uri": true, "append_query_string": true})J", "/h?y=2",
       "/a?x=1&y=2"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(location(c.conf, c.target), c.want) << c.conf << " " << c.target;
  }
}

TEST(Redirect, HttpToHttps) {
  const char* conf = R"J({"http_to_https": true})J";
  Answer a = run(conf, {.target = "/hello?a=1"});
  EXPECT_EQ(a.action, Action::kReply);
  EXPECT_EQ(a.status, 301);
  EXPECT_EQ(a.location, "https://foo.com/hello?a=1");
  // The listener's port when it is not 443; the request-target as sent (not normalised).
  EXPECT_EQ(run(conf, {.target = "/a//b%20c?x"}, 9443).location, "https://foo.com:9443/a//b%20c?x");
  EXPECT_EQ(run(conf, {}, 443).location, "https://foo.com/hello");
  // $host: lower case, without the client's port.
  EXPECT_EQ(run(conf, {.host = "Foo.COM:9080"}, 8443).location, "https://foo.com:8443/hello");
  // 301 for GET and HEAD, 308 (method and body kept) for the others; ret_code plays no part.
  EXPECT_EQ(run(conf, {.method = "HEAD"}).status, 301);
  EXPECT_EQ(run(conf, {.method = "POST"}).status, 308);
  EXPECT_EQ(run(conf, {.method = "DELETE"}).status, 308);
  EXPECT_EQ(run(R"J({"http_to_https": true, "ret_code": 302})J", {}).status, 301);
  // encode_uri applies to the HTTPS URL too.
  EXPECT_EQ(
      run(R"J({"http_to_https": true, "encode_uri": true})J", {.target = "/a%20b?c%20d"}, 9443)
          .location,
      "https://foo.com:9443/a%2520b?c%20d");
}

TEST(Redirect, HttpsRequestsAndFalseGoThrough) {
  Answer a = run(R"J({"http_to_https": true})J", {.tls = true}, 9443);
  EXPECT_EQ(a.action, Action::kContinue);
  EXPECT_EQ(a.location, "(none)");
  EXPECT_EQ(a.status, 0);
  a = run(R"J({"http_to_https": false})J", {});
  EXPECT_EQ(a.action, Action::kContinue);
  EXPECT_EQ(a.location, "(none)");
  // A `uri` redirect does not look at the scheme.
  EXPECT_EQ(run(R"J({"uri": "/x"})J", {.tls = true}).location, "/x");
}

TEST(Redirect, LocationIsHeaderSafe) {
  // $uri is decoded: CR LF must not end the header line. (The server refuses a request whose
  // path decodes to control bytes before any plugin runs; this is the plugin's own guard.)
  EXPECT_EQ(location(R"J({"uri": "$uri"})J", "/a%0D%0ASet-Cookie:%20x=1"),
            "/a%0D%0ASet-Cookie: x=1");
}

TEST(Redirect, HttpsPortFromPluginAttrThenListener) {
  plugin::Shared shared;
  EXPECT_EQ(https_port(shared), 0);
  shared.ssl_port = 9443;
  EXPECT_EQ(https_port(shared), 9443);
  shared.attr = Json::parse(R"({"redirect": {"https_port": 8443}})");
  EXPECT_EQ(https_port(shared), 8443);
  // make() takes the port from the build environment.
  auto made =
      info().make(Json::parse(R"({"http_to_https": true})"), plugin::BuildEnv{"route/1", shared});
  ASSERT_TRUE(made.is_ok()) << made.status().message();
  router::testing::FakeRequest req("GET", "/p", "h.example");
  plugin::Context ctx;
  ctx.req = &req.head;
  ctx.match = req.ctx;
  EXPECT_EQ((*made)->rewrite(ctx), Action::kReply);
  EXPECT_EQ(edited(ctx.resp.headers, "Location"), "https://h.example:8443/p");
}

}  // namespace
}  // namespace sluice::plugins::redirect
