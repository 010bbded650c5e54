#include "plugins/proxy_rewrite/proxy_rewrite.h"

#include "plugins/proxy_rewrite/uri_text.h"

namespace sluice::plugins::proxy_rewrite {

using plugin::Action;
using plugin::Context;

namespace {

common::StatusOr<std::shared_ptr<const plugin::Plugin>> make(const plugin::Json& json,
                                                             const plugin::BuildEnv&) {
  auto conf = parse(json);
  if (!conf.is_ok()) {
    return conf.status();
  }
  return std::shared_ptr<const plugin::Plugin>(
      std::make_shared<const ProxyRewrite>(std::move(conf).value()));
}

// nginx's $request_uri (APISIX's real_request_uri): the target as sent, from its path on.
std::string_view real_request_uri(const http::RequestHead& req) {
  if (!req.target.empty() && req.target[0] != '/' && !req.path.empty() &&
      req.path.data() >= req.target.data() &&
      req.path.data() < req.target.data() + req.target.size()) {
    return std::string_view(
        req.path.data(),
        static_cast<size_t>(req.target.data() + req.target.size() - req.path.data()));
  }
  return req.target;
}

// Per-thread buffers the rewrite builds text in; their capacity stays.
struct Buffers {
  std::string uri;    // the rewritten path before escaping
  std::string value;  // one header value
};
Buffers& buffers() {
  thread_local Buffers b;
  return b;
}

}  // namespace

const plugin::PluginInfo& info() {
  static const plugin::PluginInfo kInfo{"proxy-rewrite", 1008, false, check, make, kSchema};
  return kInfo;
}

Action ProxyRewrite::rewrite(Context& ctx) const {
  // `$uri` and the regex subject: nginx's normalised path, kept in ctx.scratch until the
  // header values (which may read it or the captures into it) are written.
  std::string& uri = ctx.scratch;
  uri.clear();
  append_normalized_path(ctx.req->path.empty() ? std::string_view("/") : ctx.req->path, &uri);
  VarSource src;
  src.ctx = &ctx;
  src.uri = uri;

  if (!conf_.host.empty()) {
    ctx.upstream.host = conf_.host;
  }
  Captures caps;
  if (!rewrite_uri(ctx, src, &caps)) {
    return Action::kReply;
  }
  rewrite_headers(ctx, src, caps);
  if (!conf_.method.empty()) {
    ctx.upstream.method = conf_.method;
  }
  return Action::kContinue;
}

bool ProxyRewrite::rewrite_uri(Context& ctx, VarSource& src, Captures* caps) const {
  const http::RequestHead& req = *ctx.req;
  const bool unsafe = conf_.use_real_request_uri_unsafe;
  std::string_view subject = unsafe ? real_request_uri(req) : src.uri;
  std::string_view rewritten = subject;
  std::string& buf = buffers().uri;
  bool separator = false;  // a '?' in the result starts a query the conf wrote
  if (conf_.has_uri) {
    buf.clear();
    conf_.uri.render(src, Captures{}, true, &buf);
    rewritten = buf;
    separator = true;
  } else if (!conf_.regex_uri.empty()) {
    separator = subject.find('?') == std::string_view::npos;
    if (!run_regex(ctx, src, subject, caps, &rewritten)) {
      return false;
    }
  }

  std::string& out = ctx.upstream.uri;
  out.clear();
  if (unsafe) {
    append_wire_safe(rewritten, &out);  // as given, but never a byte that splits the line
    return true;
  }
  size_t q = separator ? rewritten.find('?') : std::string_view::npos;
  append_escaped_uri(rewritten.substr(0, q), &out);
  if (q != std::string_view::npos) {
    append_wire_safe(rewritten.substr(q), &out);
  }
  if (!req.query.empty()) {  // nginx's $is_args: the client sent arguments
    out.push_back(q != std::string_view::npos ? '&' : '?');
    out.append(req.query);
  }
  return true;
}

bool ProxyRewrite::run_regex(Context& ctx, const VarSource& src, std::string_view subject,
                             Captures* caps, std::string_view* rewritten) const {
  std::string why;
  for (const RegexRule& rule : conf_.regex_uri) {
    int rc = rule.match(subject, caps, &why);
    if (rc < 0) {
      ctx.reply_status = 500;
      // The path is the client's: invalid UTF-8 is replaced, never thrown on.
      ctx.reply_body =
          plugin::Json{{"error_msg", "failed to match the uri " + std::string(src.uri) + " (" +
                                         rule.pattern() + ")  : " + why}}
              .dump(-1, ' ', false, plugin::Json::error_handler_t::replace) +
          "\n";
      return false;
    }
    if (rc > 0) {
      std::string& buf = buffers().uri;
      buf.clear();
      rule.substitute(*caps, &buf);
      *rewritten = buf;
      return true;
    }
  }
  return true;
}

void ProxyRewrite::rewrite_headers(Context& ctx, VarSource& src, const Captures& caps) const {
  plugin::HeaderEdits& edits = ctx.upstream.headers;
  std::string& v = buffers().value;
  for (const HeaderValue& h : conf_.headers.add) {
    v.clear();
    h.value.render(src, caps, false, &v);
    make_header_safe(&v);
    if (!v.empty()) {
      edits.add(h.name, v);
    }
  }
  for (const HeaderValue& h : conf_.headers.set) {
    v.clear();
    h.value.render(src, caps, false, &v);
    make_header_safe(&v);
    if (v.empty()) {
      edits.remove(h.name);  // ngx.req.set_header with "" clears the header
    } else {
      edits.set(h.name, v);
    }
  }
  for (const std::string& name : conf_.headers.remove) {
    edits.remove(name);
  }
}

}  // namespace sluice::plugins::proxy_rewrite
