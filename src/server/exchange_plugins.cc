// The plugin path of an exchange: set up the request's plugin context, run the request
// phases (which may suspend on an asynchronous hook and resume later), then header_filter
// when the response head is built and log when the exchange ends.

#include "common/log.h"
#include "server/client_conn.h"
#include "server/worker.h"

namespace sluice::server {

namespace {

// The route's uri pattern that `path` matches, as APISIX's matched_uri reports it.
std::string_view matched_pattern(const std::vector<std::string>& uris, std::string_view path) {
  for (const std::string& u : uris) {
    std::string_view p = u;
    if (!p.empty() && p.back() == '*') {
      if (path.starts_with(p.substr(0, p.size() - 1))) {
        return u;
      }
    } else if (path == p) {
      return u;
    }
  }
  return uris.empty() ? std::string_view() : std::string_view(uris.front());
}

// The route's host that `host` matches (case-insensitive, `*.` wildcards); empty if none.
std::string_view matched_host(const std::vector<std::string>& hosts, std::string_view host) {
  if (size_t colon = host.rfind(':'); colon != std::string_view::npos && host.front() != '[') {
    host = host.substr(0, colon);
  }
  for (const std::string& h : hosts) {
    std::string_view p = h;
    if (p.starts_with("*.")) {
      std::string_view suffix = p.substr(1);
      if (host.size() > suffix.size() &&
          http::iequals(host.substr(host.size() - suffix.size()), suffix)) {
        return h;
      }
    } else if (http::iequals(host, p)) {
      return h;
    }
  }
  return {};
}

}  // namespace

void ClientConn::begin_plugins(const router::MatchContext& m) {
  plugin::Context& c = ex_->pctx;
  c.reset();
  c.req = &ex_->req;
  c.match = m;
  c.worker = &w_.plugin_local();
  c.conn = this;
  c.snapshot = snap_.get();
  c.route = route_;
  ex_->chains = {snap_->global.get(), route_ != nullptr ? route_->chain.get() : nullptr};
  if (route_ != nullptr) {
    c.route_id = route_->id;
    c.service_id = route_->service_id;
    c.route_name = route_->name;
    c.service_name = route_->service_name;
  }
  c.timed = ex_->chains.timed();
  if (c.timed) {
    c.start_ns = plugin::monotonic_ns();
    c.bytes_in = head_len_;
    if (route_ != nullptr) {
      c.matched_uri = matched_pattern(route_->uris, ex_->req.uri);
      c.matched_host = matched_host(route_->hosts, ex_->req.host);
    }
  }
  plugin::prepare(ex_->chains, c);
  plugins_ = true;
}

bool ClientConn::run_request_plugins() {
  plugin::Phase last = route_ != nullptr ? plugin::Phase::kBeforeProxy : plugin::Phase::kAccess;
  plugin::Action a = plugin::run_request(ex_->chains, ex_->pctx, last);
  if (a == plugin::Action::kPending) {
    state_ = State::kPluginWait;
    arm_timer(w_.settings().header_timeout_ms);  // the hook's own timeout comes first
    return false;
  }
  if (a == plugin::Action::kReply) {
    in_.consume(head_len_);
    local_reply(ex_->pctx.reply_status, ex_->pctx.reply_body, false);
    return false;
  }
  return true;
}

void ClientConn::on_plugin_resume(plugin::Action a) {
  plugin_wait_ = 0;
  state_ = State::kReadHead;  // placeholder until the request moves on below
  plugin::resumed(ex_->chains, ex_->pctx, a);
  if (a == plugin::Action::kReply) {
    in_.consume(head_len_);
    local_reply(ex_->pctx.reply_status, ex_->pctx.reply_body, false);
  } else if (run_request_plugins()) {
    route_request();
  }
  drive();
}

void ClientConn::forget_plugin_wait() {
  if (plugin_wait_ != 0) {
    w_.plugin_forget(plugin_wait_);
    plugin_wait_ = 0;
  }
}

void ClientConn::plugin_header_filter(int status) {
  ex_->pctx.status = status;
  plugin::run_response(ex_->chains, ex_->pctx, plugin::Phase::kHeaderFilter);
}

void ClientConn::end_plugins() {
  plugins_ = false;
  plugin::Context& c = ex_->pctx;
  if (c.status == 0) {
    c.status = 499;  // nginx's code for a request the client gave up on before any answer
  }
  c.bytes_out += ex_->out_head.size();
  plugin::run_response(ex_->chains, c, plugin::Phase::kLog);
  c.req = nullptr;
  c.match.req = nullptr;
}

}  // namespace sluice::server
