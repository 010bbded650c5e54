// Fuzz target: redirect's conf checks and its rewrite hook. The input is a conf (one line of
// JSON) and a request head after it. A conf the check refuses still exercises the check; the
// request then runs through one of a few fixed confs chosen by the input's hash. The answer
// must be safe to write on the wire whatever the request held:
//   - the hook continues with no edit, or answers 500 with no Location, or answers the conf's
//     status (301 / 308 for http_to_https) with a Location;
//   - the Location has no control byte but tab, and no DEL;
//   - with encode_uri, every '%' before its first '?' starts a %XX escape, and that part has
//     no space, '#' or byte >= 0x80;
//   - the body is nginx's page exactly for 301, 302, 303, 307 and 308, with text/html.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "codec/h1/parser.h"
#include "fuzz/fuzz_check.h"
#include "plugins/redirect/redirect.h"

namespace {

using namespace sluice;
using nlohmann::json;

const char* const kFixed[] = {
    R"J({"uri": "$uri/x${arg_a}\\$host$$/$request_uri", "append_query_string": true})J",
    R"J({"regex_uri": ["^/(\\w+)/(.*)", "/$2/$1?x=$0"], "ret_code": 301, "encode_uri": true,
         "append_query_string": true})J",
    R"J({"http_to_https": true, "encode_uri": true})J",
    R"J({"uri": "https://$host$request_uri", "ret_code": 307, "encode_uri": true})J",
};

bool hex(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

void check_location(std::string_view loc, bool encoded) {
  for (char ch : loc) {
    auto c = static_cast<unsigned char>(ch);
    FUZZ_CHECK(c == '\t' || (c >= 0x20 && c != 0x7f));
  }
  if (!encoded) {
    return;
  }
  std::string_view path = loc.substr(0, loc.find('?'));
  for (size_t i = 0; i < path.size(); ++i) {
    auto c = static_cast<unsigned char>(path[i]);
    FUZZ_CHECK(c != ' ' && c != '#' && c < 0x80);
    if (c == '%') {
      FUZZ_CHECK(i + 2 < path.size() && hex(path[i + 1]) && hex(path[i + 2]));
    }
  }
}

void run(const plugin::Plugin& p, const json& conf, const http::RequestHead& head) {
  plugin::Context ctx;
  ctx.req = &head;
  ctx.match.req = &head;
  ctx.match.remote_addr = "10.0.0.1";
  plugin::Action a = p.rewrite(ctx);
  const std::string* loc = nullptr;
  bool has_loc = ctx.resp.headers.lookup("Location", &loc) && loc != nullptr;
  if (a == plugin::Action::kContinue) {
    FUZZ_CHECK(ctx.resp.headers.empty() && ctx.reply_status == 0);
    return;
  }
  FUZZ_CHECK(a == plugin::Action::kReply);
  if (ctx.reply_status == 500 && !has_loc) {
    FUZZ_CHECK(ctx.reply_body.empty());  // a regex that could not run
    return;
  }
  FUZZ_CHECK(has_loc);
  if (conf.value("http_to_https", false)) {
    FUZZ_CHECK(ctx.reply_status == 301 || ctx.reply_status == 308);
    FUZZ_CHECK(loc->starts_with("https://"));
  } else {
    FUZZ_CHECK(ctx.reply_status == conf.value("ret_code", 302));
  }
  check_location(*loc, conf.value("encode_uri", false));
  int s = ctx.reply_status;
  bool page = s == 301 || s == 302 || s == 303 || s == 307 || s == 308;
  FUZZ_CHECK(page == !ctx.reply_body.empty());
  const std::string* type = nullptr;
  FUZZ_CHECK(page == (ctx.resp.headers.lookup("Content-Type", &type) && type != nullptr &&
                      *type == "text/html"));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  size_t nl = in.find('\n');
  std::string_view conf_text = in.substr(0, nl);
  std::string_view request = nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);

  json conf = json::parse(conf_text, nullptr, false);
  plugin::Shared shared;
  shared.ssl_port = 9443;
  const plugin::PluginInfo& info = plugins::redirect::info();
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
  run(*p, conf, head);
  return 0;
}
