#include "plugins/redirect/redirect.h"

#include <string>

#include "common/log.h"
#include "plugins/proxy_rewrite/uri_text.h"

namespace sluice::plugins::redirect {

using plugin::Action;
using plugin::Context;
using proxy_rewrite::VarSource;

namespace {

common::StatusOr<std::shared_ptr<const plugin::Plugin>> make(const plugin::Json& json,
                                                             const plugin::BuildEnv& env) {
  auto conf = parse(json);
  if (!conf.is_ok()) {
    return conf.status();
  }
  return std::shared_ptr<const plugin::Plugin>(
      std::make_shared<const Redirect>(std::move(conf).value(), https_port(env.shared)));
}

// The page nginx writes for a redirect answered without a body (ngx_http_special_response.c):
// the codes with a page of their own; any other code goes without a body.
std::string_view page_title(int code) {
  switch (code) {
    case 301:
      return "301 Moved Permanently";
    case 302:
      return "302 Found";
    case 303:
      return "303 See Other";
    case 307:
      return "307 Temporary Redirect";
    case 308:
      return "308 Permanent Redirect";
    default:
      return {};
  }
}

void set_page(int code, Context& ctx) {
  std::string_view title = page_title(code);
  if (title.empty()) {
    return;
  }
  std::string& b = ctx.reply_body;
  b.clear();
  b.append("<html>\r\n<head><title>").append(title).append("</title></head>\r\n<body>\r\n");
  b.append("<center><h1>").append(title).append("</h1></center>\r\n");
  b.append("<hr><center>sluice</center>\r\n</body>\r\n</html>\r\n");
  ctx.resp.headers.set("Content-Type", "text/html");
}

// Per-thread buffers the Location is built in; their capacity stays.
struct Buffers {
  std::string made;      // the new URI as the conf makes it
  std::string location;  // as sent: encoded, with the client's arguments
};
Buffers& buffers() {
  thread_local Buffers b;
  return b;
}

}  // namespace

const plugin::PluginInfo& info() {
  static const plugin::PluginInfo kInfo{"redirect", 900, false, check, make, kSchema};
  return kInfo;
}

uint16_t https_port(const plugin::Shared& shared) {
  const plugin::Json& attr = shared.attr_of("redirect");
  if (auto it = attr.find("https_port"); it != attr.end() && it->is_number_unsigned()) {
    return it->get<uint16_t>();  // checked 1-65535 when config.yaml was read
  }
  return shared.ssl_port;
}

Redirect::Redirect(Conf conf, uint16_t port)
    : conf_(std::move(conf)), scheme_(router::Var::parse("scheme")) {
  // APISIX leaves the port out when it is 443 (or when none is known).
  std::string text = port == 0 || port == 443
                         ? std::string("https://$host$request_uri")
                         : "https://$host:" + std::to_string(port) + "$request_uri";
  to_https_ = std::move(UriTemplate::parse(text)).value();  // known variables only
}

Redirect::Target Redirect::target(Context& ctx, VarSource& src, std::string* out, int* code) const {
  *code = conf_.ret_code;
  if (conf_.http_to_https) {
    std::string_view scheme;
    if (!scheme_.get(ctx.match, &src.scratch, &scheme) || scheme != "http") {
      return Target::kNone;
    }
    to_https_.render(src, out);
    // ret_code does not apply: 301 keeps GET and HEAD, 308 keeps any other method and body.
    const http::Method m = ctx.req->method;
    *code = m == http::Method::kGet || m == http::Method::kHead ? 301 : 308;
    return Target::kMade;
  }
  if (conf_.has_uri) {
    conf_.uri.render(src, out);
    return Target::kMade;
  }
  if (!conf_.regex_uri) {
    return Target::kNone;  // `http_to_https: false`
  }
  proxy_rewrite::Captures caps;
  std::string why;
  int rc = conf_.regex_uri->match(src.uri, &caps, &why);
  if (rc < 0) {
    SLUICE_LOG(kError, "redirect: failed to substitute the uri:{} ({}): {}", src.uri,
               conf_.regex_uri->pattern(), why);
    return Target::kFailed;
  }
  if (rc == 0) {
    return Target::kNone;  // no match: the request goes on to the upstream
  }
  conf_.regex_uri->substitute(caps, out);
  return Target::kMade;
}

Action Redirect::rewrite(Context& ctx) const {
  // `$uri` and the regex subject: nginx's normalised path.
  std::string& uri = ctx.scratch;
  uri.clear();
  proxy_rewrite::append_normalized_path(
      ctx.req->path.empty() ? std::string_view("/") : ctx.req->path, &uri);
  VarSource src;
  src.ctx = &ctx;
  src.uri = uri;

  Buffers& buf = buffers();
  std::string& made = buf.made;
  made.clear();
  int code = 0;
  switch (target(ctx, src, &made, &code)) {
    case Target::kNone:
      return Action::kContinue;
    case Target::kFailed:
      ctx.reply_status = 500;  // no body of its own: the gateway's 500 answer
      return Action::kReply;
    case Target::kMade:
      break;
  }
  // encode_uri escapes what comes before the first '?'; append_query_string adds the
  // client's arguments (nginx's $is_args: only when there are some).
  std::string& loc = buf.location;
  loc.clear();
  size_t q = made.find('?');
  if (conf_.encode_uri) {
    proxy_rewrite::append_escaped_uri(std::string_view(made).substr(0, q), &loc);
    if (q != std::string::npos) {
      loc.append(made, q);
    }
  } else {
    loc.append(made);
  }
  if (conf_.append_query_string && !ctx.req->query.empty()) {
    loc.push_back(q != std::string::npos ? '&' : '?');
    loc.append(ctx.req->query);
  }
  proxy_rewrite::make_header_safe(&loc);  // a decoded $uri may hold CR LF
  ctx.resp.headers.set("Location", loc);
  ctx.reply_status = code;
  set_page(code, ctx);
  return Action::kReply;
}

}  // namespace sluice::plugins::redirect
