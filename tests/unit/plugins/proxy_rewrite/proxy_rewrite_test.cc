// proxy-rewrite's rewrite hook on a fake request: the request-target, method, Host and header
// edits it leaves in Context::upstream.

#include "plugins/proxy_rewrite/proxy_rewrite.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "unit/router/fake_request.h"

namespace sluice::plugins::proxy_rewrite {
namespace {

using plugin::Action;
using plugin::Json;
using Headers = std::initializer_list<std::pair<std::string_view, std::string_view>>;
using PluginPtr = std::shared_ptr<const plugin::Plugin>;

PluginPtr make(const char* conf) {
  plugin::Shared shared;
  auto p = info().make(Json::parse(conf), plugin::BuildEnv{"route/1", shared});
  EXPECT_TRUE(p.is_ok()) << conf << ": " << p.status().message();
  return p.is_ok() ? *p : nullptr;
}

// What the upstream would get: the request line's method and target, the Host, and the
// header fields in the order the server writes them (originals the edits keep, then the
// added and set ones).
struct Sent {
  Action action = Action::kContinue;
  std::string method, uri, host, headers;
  int reply_status = 0;
  std::string reply_body;
};

// Runs `conf`'s rewrite hook on `method target` with `headers`.
Sent run(const char* conf, std::string_view target, Headers headers = {},
         std::string_view method = "GET") {
  PluginPtr p = make(conf);
  if (p == nullptr) {
    return {};
  }
  router::testing::FakeRequest req(method, target, "example.com", headers, "10.0.0.7");
  plugin::Context ctx;
  ctx.req = &req.head;
  ctx.match = req.ctx;
  ctx.route_id = "r1";
  ctx.route_name = "route-one";
  ctx.consumer = "jack";
  EXPECT_EQ(p->phases(), plugin::phase_bit(plugin::Phase::kRewrite));
  Sent s;
  s.action = p->rewrite(ctx);
  const plugin::RequestEdits& ed = ctx.upstream;
  s.method = ed.method.empty() ? std::string(req.head.method_text) : ed.method;
  s.uri = ed.uri.empty() ? std::string(req.head.target) : ed.uri;
  s.host = ed.host.empty() ? std::string(req.head.host) : ed.host;
  for (size_t i = 0; i < req.head.num_headers; ++i) {
    const http::Header& h = req.head.headers[i];
    if (!ed.headers.drops(h.name)) {
      s.headers.append(h.name).append(": ").append(h.value).append("\n");
    }
  }
  ed.headers.for_each_added([&s](std::string_view n, std::string_view v) {
    s.headers.append(n).append(": ").append(v).append("\n");
  });
  s.reply_status = ctx.reply_status;
  s.reply_body = ctx.reply_body;
  return s;
}

std::string uri_of(const char* conf, std::string_view target, Headers headers = {}) {
  return run(conf, target, headers).uri;
}

TEST(ProxyRewrite, UriReplacesThePathAndKeepsTheClientsArgs) {
  struct {
    const char* conf;
    const char* target;
    const char* want;
  } cases[] = {
      {R"J({"uri": "/test/home.html"})J", "/test/index.html", "/test/home.html"},
      {R"J({"uri": "/plugin_proxy_rewrite_args"})J", "/hello?q=apisix&a=iresty",
       "/plugin_proxy_rewrite_args?q=apisix&a=iresty"},
      // A query in `uri` stays; the client's arguments follow it after '&'.
      {R"J({"uri": "/get?arg1=apisix&arg2=plugin"})J", "/get", "/get?arg1=apisix&arg2=plugin"},
      {R"J({"uri": "/get?arg1=apisix"})J", "/get?x=1", "/get?arg1=apisix&x=1"},
      // A bare '?' is no argument: nginx's $is_args is empty.
      {R"J({"uri": "/b"})J", "/a?", "/b"},
      // The path part is escaped as nginx's ngx_escape_uri does; the query part is not.
      {R"J({"uri": "/a b#c%d?e f"})J", "/x", "/a%20b%23c%25d?e%20f"},
      {R"J({"uri": "/é"})J", "/x", "/%C3%A9"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(uri_of(c.conf, c.target), c.want) << c.conf << " " << c.target;
  }
}

TEST(ProxyRewrite, UriVariables) {
  Headers h = {{"X-Id", "42"}, {"X-Sp", "a b"}, {"Cookie", "sid=s1; t=2"}};
  struct {
    const char* uri;
    const char* target;
    const char* want;
  } cases[] = {
      {"/$arg_name/${http_x_id}", "/x?name=joe", "/joe/42?name=joe"},
      {"/u$uri", "/a//b/./c/../d", "/u/a/b/d"},
      {"/$request_uri", "/p?q=1", "//p%253Fq=1?q=1"},  // the value's '?' is escaped, then '%'
      {"/$remote_addr/$host/$server_port/$request_method", "/", "/10.0.0.7/example.com/9080/GET"},
      {"/$route_id/$route_name/$consumer_name/$cookie_sid", "/", "/r1/route-one/jack/s1"},
      {"/$http_x_sp", "/", "/a%20b"},
      // Unknown or empty: "", or the default after `??`.
      {"/[$nothing]/[${nothing}]/[${ nothing ?? dflt }]/[${arg_a??x}]", "/?a=1",
       "/[]/[]/[dflt]/[1]?a=1"},
      // `\$` and a `$` that starts no name stay as they are.
      {"/\\$remote_addr/$/$-", "/", "/\\$remote_addr/$/$-"},
      // APISIX's bare names take dots: `$host.json` is the (unknown) variable `host.json`.
      {"/$host.json/${host}.json", "/", "//example.com.json"},
      // A variable's '?' is data: escaped (to %3F, whose '%' the path escaping escapes again,
      // as APISIX does), never the start of the query.
      {"/v/$arg_v", "/?v=a?b", "/v/a%253Fb?v=a?b"},
  };
  for (const auto& c : cases) {
    std::string conf = Json{{"uri", c.uri}}.dump();
    EXPECT_EQ(uri_of(conf.c_str(), c.target, h), c.want) << c.uri << " " << c.target;
  }
}

TEST(ProxyRewrite, ConnectionVariables) {
  const char* conf = R"J({"uri": "/$scheme/${https}", "headers": {"set": {"X-Sni":
                        "${ssl_server_name ?? none}"}}})J";
  Sent plain = run(conf, "/");
  EXPECT_EQ(plain.uri, "/http/");
  EXPECT_EQ(plain.headers, "X-Sni: none\n");

  PluginPtr p = make(conf);
  ASSERT_NE(p, nullptr);
  router::testing::FakeRequest req("GET", "/", "example.com");
  router::TlsInfo tls;
  tls.server_name = "api.example.com";
  plugin::Context ctx;
  ctx.req = &req.head;
  ctx.match = req.ctx;
  ctx.match.tls = &tls;
  EXPECT_EQ(p->rewrite(ctx), Action::kContinue);
  EXPECT_EQ(ctx.upstream.uri, "/https/on");
  const std::string* sni = nullptr;
  ASSERT_TRUE(ctx.upstream.headers.lookup("X-Sni", &sni));
  ASSERT_NE(sni, nullptr);
  EXPECT_EQ(*sni, "api.example.com");
}

TEST(ProxyRewrite, RegexUri) {
  struct {
    const char* regex_uri;
    const char* target;
    const char* want;
  } cases[] = {
      {R"J(["^/test/(.*)/(.*)", "/$1-$2"])J", "/test/user/agent", "/user-agent"},
      {R"J(["^/iresty/(.*)/(.*)/(.*)", "/$1-$2-$3"])J", "/iresty/a/b/c?x=1", "/a-b-c?x=1"},
      // The first pair that matches wins; no match forwards the (normalised) path.
      {R"J(["^/a/(.*)", "/A/$1", "^/(.*)", "/other/$1"])J", "/a/x", "/A/x"},
      {R"J(["^/a/(.*)", "/A/$1", "^/(.*)", "/other/$1"])J", "/b", "/other/b"},
      {R"J(["^/a/(.*)", "/A/$1"])J", "/zz/y?k=v", "/zz/y?k=v"},
      {R"J(["^/a/(.*)", "/A/$1"])J", "/zz//q/../y", "/zz/y"},
      // ngx.re.sub replaces the first match only, and keeps the rest of the subject.
      {R"J(["b", "X"])J", "/abcb", "/aXcb"},
      {R"J(["^/(a)(b)?", "/[$0][${1}][$2][$9]$$"])J", "/ac", "/[/a][a][][]$c"},
      {R"J(["^/(\\d+)", "/n$1x"])J", "/12/z", "/n12x/z"},
      // The subject is the decoded path; the result is escaped again.
      {R"J(["^/test/(.*)", "/$1"])J", "/test/a%20b/c", "/a%20b/c"},
      // A '?' the template writes starts a query; the client's arguments follow after '&'.
      {R"J(["^/s/(.*)", "/search?q=$1"])J", "/s/x?page=2", "/search?q=x&page=2"},
      // A '?' decoded from the path is data: the whole result is escaped.
      {R"J(["^/p(.*)", "/r$1?z=1"])J", "/p%3Fq?x=1", "/r%3Fq%3Fz=1?x=1"},
  };
  for (const auto& c : cases) {
    std::string conf = std::string("{\"regex_uri\": ") + c.regex_uri + "}";
    EXPECT_EQ(uri_of(conf.c_str(), c.target), c.want) << c.regex_uri << " " << c.target;
  }
}

// A replacement that leaves nothing: no target of the plugin's, the client's goes (nginx
// sends its unparsed URI when $upstream_uri is empty).
TEST(ProxyRewrite, EmptyResultKeepsTheClientsTarget) {
  PluginPtr p = make(R"J({"regex_uri": ["^/.*", ""]})J");
  ASSERT_NE(p, nullptr);
  router::testing::FakeRequest req("GET", "/x");
  plugin::Context ctx;
  ctx.req = &req.head;
  ctx.match = req.ctx;
  EXPECT_EQ(p->rewrite(ctx), Action::kContinue);
  EXPECT_EQ(ctx.upstream.uri, "");
}

TEST(ProxyRewrite, UriWinsOverRegexUri) {
  EXPECT_EQ(uri_of(R"J({"uri": "/u", "regex_uri": ["^/(.*)", "/r/$1"]})J", "/x"), "/u");
}

TEST(ProxyRewrite, NoUriForwardsTheNormalisedPath) {
  EXPECT_EQ(uri_of(R"J({"method": "POST"})J", "/a/%7e/b%2Fc/../d%3F?x=%20"), "/a/~/b/d%3F?x=%20");
  EXPECT_EQ(uri_of(R"J({})J", "/a%00b"), "/a%00b");
  EXPECT_EQ(uri_of(R"J({})J", "/bad%zz%4"), "/bad%25zz%254");  // kept as sent, then escaped
  EXPECT_EQ(uri_of(R"J({})J", "/../../x"), "/x");
}

TEST(ProxyRewrite, UseRealRequestUriUnsafe) {
  // Nothing normalised, decoded, escaped or appended.
  EXPECT_EQ(uri_of(R"J({"use_real_request_uri_unsafe": true})J", "/a%2Fb/../c?x=%20"),
            "/a%2Fb/../c?x=%20");
  // The regex sees the raw target, query included.
  EXPECT_EQ(uri_of(R"J({"use_real_request_uri_unsafe": true, "regex_uri": ["^/a(.*)", "/b$1"]})J",
                   "/a%20x?y=1"),
            "/b%20x?y=1");
  // With `uri`, APISIX forwards it alone: the client's arguments are dropped.
  EXPECT_EQ(uri_of(R"J({"use_real_request_uri_unsafe": true, "uri": "/new"})J", "/old?x=1"),
            "/new");
  // Still never a byte that would split the request line.
  Headers h = {{"X-V", "a b"}};
  EXPECT_EQ(uri_of(R"J({"use_real_request_uri_unsafe": true, "uri": "/$http_x_v"})J", "/", h),
            "/a%20b");
}

TEST(ProxyRewrite, MethodAndHost) {
  Sent s = run(R"J({"uri": "/anything", "method": "POST", "host": "myapisix.demo:8080"})J", "/get");
  EXPECT_EQ(s.action, Action::kContinue);
  EXPECT_EQ(s.method, "POST");
  EXPECT_EQ(s.host, "myapisix.demo:8080");
  EXPECT_EQ(s.uri, "/anything");
  Sent same = run(R"J({"uri": "/anything"})J", "/get", {}, "DELETE");
  EXPECT_EQ(same.method, "DELETE");
  EXPECT_EQ(same.host, "example.com");
}

TEST(ProxyRewrite, FlatHeadersAreSet) {
  Headers h = {{"X-Api-Version", "v2"}, {"X-Api-useless", "old"}, {"Accept", "*/*"}};
  Sent s = run(R"J({"headers": {"X-Api-Version": "v1", "X-Api-Engine": "apisix",
                               "X-Api-useless": "", "X-Num": 2.5}})J",
               "/", h);
  // Set replaces the client's value; an empty value removes the header (ngx.req.set_header).
  EXPECT_EQ(s.headers, "Accept: */*\nX-Api-Engine: apisix\nX-Api-Version: v1\nX-Num: 2.5\n");
}

TEST(ProxyRewrite, AddSetRemove) {
  Headers h = {{"X-Api-Version", "v2"}, {"User-Agent", "curl/8"}, {"X-Both", "c"}};
  Sent s = run(R"J({"headers": {
      "add": {"X-Api-Version": "v1", "X-Both": "added", "X-New": "n"},
      "set": {"X-Both": "set", "X-Gone": "g"},
      "remove": ["User-Agent", "x-gone"]}})J",
               "/", h);
  // add keeps the client's field; set then replaces every field of its name; remove runs last.
  EXPECT_EQ(s.headers, "X-Api-Version: v2\nX-Api-Version: v1\nX-New: n\nX-Both: set\n");
}

TEST(ProxyRewrite, HeaderValuesReadVariablesAndCaptures) {
  Sent s = run(R"J({"regex_uri": ["^/iresty/(.*)/(.*)", "/$1-$2"],
                   "headers": {"add": {"X-Client": "$remote_addr"},
                               "set": {"X-Cap": "$1-${2}x", "X-Whole": "$0", "X-None": "$7",
                                       "X-Con": "${consumer_name}@${route_id}",
                                       "X-Def": "${http_nope ?? fallback}"}}})J",
               "/iresty/a/b");
  EXPECT_EQ(s.uri, "/a-b");
  EXPECT_EQ(s.headers,
            "X-Client: 10.0.0.7\nX-Cap: a-bx\nX-Con: jack@r1\nX-Def: fallback\n"
            "X-Whole: /iresty/a/b\n");
  // Without a match there are no captures: `$1` reads "".
  Sent none =
      run(R"J({"regex_uri": ["^/iresty/(.*)", "/$1"], "headers": {"set": {"X-Cap": "[$1]"}}})J",
          "/other");
  EXPECT_EQ(none.headers, "X-Cap: []\n");
  // `uri` never runs the regex: no captures either.
  Sent uri =
      run(R"J({"uri": "/u", "regex_uri": ["^/(.*)", "/$1"], "headers": {"X-C": "[$1]"}})J", "/abc");
  EXPECT_EQ(uri.headers, "X-C: []\n");
}

TEST(ProxyRewrite, HeaderValuesFromTheRequestCannotSplitLines) {
  Sent s = run(R"J({"regex_uri": ["^/h/(.*)", "/h"], "headers": {"X-C": "$1", "X-U": "$uri"}})J",
               "/h/a%0D%0AX-Evil:%201");
  // PCRE's '.' stops at the newline (as in APISIX); `$uri` carries the whole decoded path.
  EXPECT_EQ(s.headers, "X-C: a%0D\nX-U: /h/a%0D%0AX-Evil: 1\n");
}

TEST(ProxyRewrite, RegexThatCannotRunAnswers500) {
  std::string target = "/" + std::string(40, 'a') + "b";
  Sent s = run(R"J({"regex_uri": ["^/(a+)+$", "/x"]})J", target);
  EXPECT_EQ(s.action, Action::kReply);
  EXPECT_EQ(s.reply_status, 500);
  Json body = Json::parse(s.reply_body);
  EXPECT_EQ(body["error_msg"].get<std::string>().rfind(
                "failed to match the uri " + target + " (^/(a+)+$)  : ", 0),
            0u)
      << s.reply_body;
  EXPECT_EQ(s.reply_body.back(), '\n');
  // The client's path in the message may be invalid UTF-8: replaced, never thrown on (found
  // by the fuzz target).
  std::string bad = "/" + std::string(30, 'a') + "\xe1" + std::string(10, 'a') + "b";
  Sent b = run(R"J({"regex_uri": ["(a+)+$", "/x"]})J", bad);
  EXPECT_EQ(b.reply_status, 500);
  EXPECT_FALSE(Json::parse(b.reply_body, nullptr, false).is_discarded()) << b.reply_body;
}

// The same configured plugin on one reused Context gives the same edits request after
// request (the buffers it keeps between requests hold nothing over).
TEST(ProxyRewrite, ReusedContext) {
  PluginPtr p = make(R"J({"regex_uri": ["^/t/(.*)", "/$1"], "headers": {"set": {"X-C": "$1"}}})J");
  ASSERT_NE(p, nullptr);
  plugin::Context ctx;
  for (const char* target : {"/t/long-first-value", "/t/b", "/zz"}) {
    router::testing::FakeRequest req("GET", target);
    ctx.reset();
    ctx.req = &req.head;
    ctx.match = req.ctx;
    ASSERT_EQ(p->rewrite(ctx), Action::kContinue);
    std::string_view t(target);
    bool hit = t.starts_with("/t/");
    EXPECT_EQ(ctx.upstream.uri, hit ? std::string(t.substr(2)) : std::string(t));
    const std::string* v = nullptr;
    EXPECT_TRUE(ctx.upstream.headers.lookup("x-c", &v));
    if (hit) {
      ASSERT_NE(v, nullptr);
      EXPECT_EQ(*v, t.substr(3));
    } else {
      EXPECT_EQ(v, nullptr);  // set to "" removes
    }
  }
}

}  // namespace
}  // namespace sluice::plugins::proxy_rewrite
