// Fuzz target: proxy-rewrite's conf checks and its rewrite hook. The input is a conf (one line
// of JSON) and a request head after it. A conf the check refuses still exercises the check;
// the request then runs through one of a few fixed confs chosen by the input's hash. The
// rewrite's output must be safe to write on the wire whatever the request held, and the
// normalised path ($uri) must be normal:
//   - the upstream target (when the rewrite gives one) has no control byte, space or DEL;
//   - unless use_real_request_uri_unsafe, every '%' in its path starts a %XX escape, and the
//     path has no '#';
//   - header values have no CR, LF or NUL;
//   - $uri has no empty, "." or ".." segment (a trailing slash aside).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "codec/h1/parser.h"
#include "fuzz/fuzz_check.h"
#include "plugins/proxy_rewrite/proxy_rewrite.h"
#include "plugins/proxy_rewrite/uri_text.h"

namespace {

using namespace sluice;
using nlohmann::json;

const char* const kFixed[] = {
    R"J({})J",
    R"J({"uri": "/u/$uri?a=$arg_a&h=${http_x ?? none}", "headers": {"X-U": "$uri"}})J",
    R"J({"regex_uri": ["^/(\\w+)/(.*)", "/$2/$1?x=$0", "^(.*)$", "/all$1"],
         "headers": {"add": {"X-1": "$1"}, "set": {"X-2": "${2}$request_uri"},
                     "remove": ["X-3"]}})J",
    R"J({"use_real_request_uri_unsafe": true, "regex_uri": ["^/a(.*)", "/b$1"],
         "headers": {"X-C": "$1$args"}})J",
    R"J({"use_real_request_uri_unsafe": true, "uri": "/$http_x/$arg_a"})J",
};

bool hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// An empty target (a replacement that leaves nothing) sends the client's own, as nginx does.
void check_uri(std::string_view uri, bool unsafe) {
  for (char ch : uri) {
    auto c = static_cast<unsigned char>(ch);
    FUZZ_CHECK(c > 0x20 && c != 0x7f);
  }
  if (unsafe) {
    return;
  }
  std::string_view path = uri.substr(0, uri.find('?'));
  for (size_t i = 0; i < path.size(); ++i) {
    FUZZ_CHECK(path[i] != '#');
    if (path[i] == '%') {
      FUZZ_CHECK(i + 2 < path.size() && hex(path[i + 1]) && hex(path[i + 2]));
    }
  }
}

void check_segments(std::string_view path) {
  if (path.empty() || path[0] != '/') {
    return;
  }
  size_t i = 1;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) {
      j = path.size();
    }
    std::string_view seg = path.substr(i, j - i);
    FUZZ_CHECK(j == path.size() || !seg.empty());
    FUZZ_CHECK(seg != "." && seg != "..");
    i = j + 1;
  }
}

void run(const plugin::Plugin& p, const http::RequestHead& head, bool unsafe) {
  plugin::Context ctx;
  ctx.req = &head;
  ctx.match.req = &head;
  ctx.match.remote_addr = "10.0.0.1";
  plugin::Action a = p.rewrite(ctx);
  if (a == plugin::Action::kReply) {
    FUZZ_CHECK(ctx.reply_status == 500);
    return;
  }
  FUZZ_CHECK(a == plugin::Action::kContinue);
  check_uri(ctx.upstream.uri, unsafe);
  ctx.upstream.headers.for_each_added([](std::string_view, std::string_view v) {
    FUZZ_CHECK(v.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos);
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  size_t nl = in.find('\n');
  std::string_view conf_text = in.substr(0, nl);
  std::string_view request = nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);

  json conf = json::parse(conf_text, nullptr, false);
  plugin::Shared shared;
  const plugin::PluginInfo& info = plugins::proxy_rewrite::info();
  std::shared_ptr<const plugin::Plugin> p;
  if (!conf.is_discarded()) {
    common::Status checked = info.check(conf, plugin::PluginUse::kHttp);
    auto made = info.make(conf, plugin::BuildEnv{"route/1", shared});
    FUZZ_CHECK(checked.is_ok() == made.is_ok());  // the check and the build agree
    if (made.is_ok()) {
      p = *made;
    }
  }
  if (p == nullptr) {
    conf = json::parse(kFixed[fuzz::hash(in) % std::size(kFixed)]);
    auto made = info.make(conf, plugin::BuildEnv{"route/1", shared});
    FUZZ_CHECK(made.is_ok());
    p = *made;
  }
  fuzz::ExactCopy req(request);
  http::RequestHead head;
  if (h1::parse_request(req.view(), h1::Limits(), &head).status != h1::ParseStatus::kComplete) {
    return 0;
  }
  bool unsafe = conf.value("use_real_request_uri_unsafe", false);
  run(*p, head, unsafe);
  std::string normalised;
  plugins::proxy_rewrite::append_normalized_path(head.path, &normalised);
  check_segments(normalised);
  return 0;
}
