#include "plugins/jwt_auth/token_source.h"

#include "common/strings.h"

namespace sluice::plugins::jwt_auth {

using plugin::Context;

namespace {

// Calls f(name, value, has_value, begin, end) for each `&`-separated argument of `query`;
// [begin, end) is the argument's span in `query`. Stops when f returns true.
template <class F>
bool each_arg(std::string_view query, F&& f) {
  size_t pos = 0;
  while (pos <= query.size()) {
    size_t end = query.find('&', pos);
    if (end == std::string_view::npos) {
      end = query.size();
    }
    std::string_view arg = query.substr(pos, end - pos);
    if (!arg.empty()) {
      size_t eq = arg.find('=');
      bool has_value = eq != std::string_view::npos;
      if (f(arg.substr(0, eq), has_value ? arg.substr(eq + 1) : std::string_view(), has_value, pos,
            end)) {
        return true;
      }
    }
    pos = end + 1;
  }
  return false;
}

bool arg_named(std::string_view raw_name, std::string_view want, std::string* tmp) {
  tmp->clear();
  unescape_arg(raw_name, tmp);
  return *tmp == want;
}

// The request target without every argument named `name`, into ctx.upstream.uri.
void hide_query(const RouteConf& conf, Context& ctx) {
  const http::RequestHead& req = *ctx.req;
  std::string& out = ctx.upstream.uri;
  out.assign(req.path);
  std::string tmp;
  bool first = true;
  each_arg(req.query, [&](std::string_view n, std::string_view, bool, size_t b, size_t e) {
    if (!arg_named(n, conf.query, &tmp)) {
      out.push_back(first ? '?' : '&');
      out.append(req.query.substr(b, e - b));
      first = false;
    }
    return false;
  });
}

// Calls f(name, value) for each cookie of every Cookie header; stops when f returns true.
template <class F>
bool each_cookie(const http::RequestHead& req, F&& f) {
  for (size_t i = 0; i < req.num_headers; ++i) {
    if (!http::iequals(req.headers[i].name, "cookie")) {
      continue;
    }
    std::string_view rest = req.headers[i].value;
    while (!rest.empty()) {
      size_t semi = rest.find(';');
      std::string_view pair = rest.substr(0, semi);
      rest = semi == std::string_view::npos ? std::string_view() : rest.substr(semi + 1);
      while (!pair.empty() && (pair.front() == ' ' || pair.front() == '\t')) {
        pair.remove_prefix(1);
      }
      size_t eq = pair.find('=');
      if (eq != std::string_view::npos && f(pair.substr(0, eq), pair.substr(eq + 1), pair)) {
        return true;
      }
    }
  }
  return false;
}

// The Cookie header without the cookie named `name` (APISIX's remove_specified_cookie joins
// the others with "; "); no Cookie header at all when none is left.
void hide_cookie(const RouteConf& conf, Context& ctx) {
  std::string& v = ctx.scratch;
  v.clear();
  each_cookie(*ctx.req, [&](std::string_view n, std::string_view, std::string_view pair) {
    if (n != conf.cookie) {
      if (!v.empty()) {
        v.append("; ");
      }
      v.append(pair);
    }
    return false;
  });
  if (v.empty()) {
    ctx.upstream.headers.remove("Cookie");
  } else {
    ctx.upstream.headers.set("Cookie", v);
  }
}

}  // namespace

void unescape_arg(std::string_view in, std::string* out) {
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '+') {
      out->push_back(' ');
    } else if (c == '%' && i + 2 < in.size() && common::hex_value(in[i + 1]) >= 0 &&
               common::hex_value(in[i + 2]) >= 0) {
      out->push_back(
          static_cast<char>(common::hex_value(in[i + 1]) * 16 + common::hex_value(in[i + 2])));
      i += 2;
    } else {
      out->push_back(c);
    }
  }
}

Source fetch_token(const RouteConf& conf, Context& ctx, std::string* buf, std::string_view* token) {
  const http::RequestHead& req = *ctx.req;
  if (const http::Header* h = req.find(conf.header); h != nullptr) {
    if (conf.hide_credentials) {
      ctx.upstream.headers.remove(conf.header);
    }
    std::string_view v = h->value;
    if (v.substr(0, 7) == "Bearer " || v.substr(0, 7) == "bearer ") {
      v.remove_prefix(7);
    }
    *token = v;
    return Source::kHeader;
  }
  std::string name_buf;
  bool found =
      each_arg(req.query, [&](std::string_view n, std::string_view v, bool, size_t, size_t) {
        if (!arg_named(n, conf.query, &name_buf)) {
          return false;
        }
        buf->clear();
        unescape_arg(v, buf);  // `?jwt` alone (Lua's true) gives an empty token: refused later
        return true;
      });
  if (found) {
    if (conf.hide_credentials) {
      hide_query(conf, ctx);
    }
    *token = *buf;
    return Source::kQuery;
  }
  found = each_cookie(req, [&](std::string_view n, std::string_view v, std::string_view) {
    if (n != conf.cookie) {
      return false;
    }
    *token = v;
    return true;
  });
  if (!found) {
    return Source::kNone;
  }
  if (conf.hide_credentials) {
    hide_cookie(conf, ctx);
  }
  return Source::kCookie;
}

}  // namespace sluice::plugins::jwt_auth
