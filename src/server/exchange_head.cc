// The request head an upstream gets: the client's request line and fields, with the plugins'
// edits applied, hop-by-hop fields dropped (an upgrade's excepted, exchange_tunnel.cc), X-Real-IP
// and X-Forwarded-* added, the body's framing regenerated, and the Host line chosen per node
// (pass_host).

#include <charconv>

#include "server/exchange.h"
#include "server/worker.h"

namespace sluice::server {

namespace {

// Headers the gateway sets itself or regenerates.
bool replaced_upstream(std::string_view n) {
  switch (n.size()) {
    case 4:
      return http::iequals(n, "host");
    case 6:
      return http::iequals(n, "expect");
    case 9:
      return http::iequals(n, "x-real-ip");
    case 14:
      return http::iequals(n, "content-length");
    case 15:
      return http::iequals(n, "x-forwarded-for");
    case 16:
      return http::iequals(n, "x-forwarded-host") || http::iequals(n, "x-forwarded-port");
    case 17:
      return http::iequals(n, "x-forwarded-proto");
    default:
      return false;
  }
}

std::string_view strip_port(std::string_view host) {
  if (!host.empty() && host.front() == '[') {
    size_t end = host.find(']');
    return end == std::string_view::npos ? host : host.substr(0, end + 1);
  }
  size_t colon = host.rfind(':');
  return colon == std::string_view::npos ? host : host.substr(0, colon);
}

}  // namespace

void Exchange::build_upstream_head() {
  const plugin::RequestEdits* ed = nullptr;
  if (st_.plugins && !pctx_.upstream.empty()) [[unlikely]] {
    ed = &pctx_.upstream;
  }
  const http::RequestHead& req = *st_.req;
  proxy::RequestStart r;
  r.method = req.method_text;
  if (ed != nullptr && !ed->method.empty()) {
    r.method = ed->method;
    st_.up_method = http::parse_method(ed->method);
  }
  if (ed != nullptr && !ed->uri.empty()) {
    r.target = ed->uri;
  } else if (!req.authority.empty()) {
    target_.assign(req.path.empty() ? std::string_view("/") : req.path);
    if (!req.query.empty()) {
      target_.append("?").append(req.query);
    }
    r.target = target_;
  } else {
    r.target = req.target;
  }
  req_fields_.clear();
  xff_.clear();
  const http::ConnectionTokens listed(req.headers, req.num_headers);
  for (size_t i = 0; i < req.num_headers; ++i) {
    const http::Header& hd = req.headers[i];
    if (http::iequals(hd.name, "x-forwarded-for")) {
      if (!xff_.empty()) {
        xff_.append(", ");
      }
      xff_.append(hd.value);
      continue;
    }
    if (http::is_hop_by_hop(hd.name) || replaced_upstream(hd.name) ||
        (!listed.empty() && listed.contains(hd.name))) {
      continue;
    }
    if (ed != nullptr && ed->headers.drops(hd.name)) {
      continue;
    }
    req_fields_.push_back(hd);
  }
  add_forwarding_fields(ed);
  st_.upgrade = wants_upgrade(req, listed) && (ed == nullptr || !ed->headers.drops("upgrade"));
  if (st_.upgrade) {
    // enable_websocket: the client's Upgrade goes up with the connection option that names
    // it, as APISIX's upstream_upgrade and upstream_connection pass them (hop-by-hop fields
    // are dropped otherwise).
    req_fields_.push_back({"Upgrade", req.find("upgrade")->value});
    req_fields_.push_back({"Connection", "upgrade"});
  }
  if (ed != nullptr) {
    // Framing and hop-by-hop fields are the codec's: an edit cannot forge them.
    ed->headers.for_each_added([this](std::string_view name, std::string_view value) {
      if (!http::is_hop_by_hop(name) && !http::iequals(name, "content-length") &&
          !http::iequals(name, "host") && !http::iequals(name, "expect")) {
        req_fields_.push_back({name, value});
      }
    });
  }
  r.fields = req_fields_;
  r.upgrade = st_.upgrade;
  if (st_.has_body && !st_.body_chunked) {
    r.body = proxy::RequestStart::Body::kLength;
    r.length = st_.body_length;
  } else if (st_.body_chunked) {
    r.body = proxy::RequestStart::Body::kChunked;
  } else if (req.find("content-length") != nullptr) {
    r.body = proxy::RequestStart::Body::kEmpty;
  }
  up_->prepare(r);
  client_host_.assign(ed != nullptr && !ed->host.empty() ? std::string_view(ed->host) : req.host);
}

// X-Real-IP and X-Forwarded-*, each unless a plugin's edit names it (its value then comes with
// the edits).
void Exchange::add_forwarding_fields(const plugin::RequestEdits* ed) {
  auto ours = [ed](std::string_view name) { return ed == nullptr || !ed->headers.drops(name); };
  if (ours("x-real-ip")) {
    req_fields_.push_back({"X-Real-IP", st_.client.ip});
  }
  if (ours("x-forwarded-for")) {
    if (!xff_.empty()) {
      xff_.append(", ");
    }
    xff_.append(st_.client.ip);
    req_fields_.push_back({"X-Forwarded-For", xff_});
  }
  if (ours("x-forwarded-proto")) {
    req_fields_.push_back({"X-Forwarded-Proto", st_.client.tls != nullptr ? "https" : "http"});
  }
  // An HTTP/1.0 request may come without a Host.
  if (!st_.req->host.empty() && ours("x-forwarded-host")) {
    req_fields_.push_back({"X-Forwarded-Host", strip_port(st_.req->host)});
  }
  if (ours("x-forwarded-port")) {
    auto end = std::to_chars(port_text_, port_text_ + sizeof(port_text_), st_.client.local_port);
    req_fields_.push_back(
        {"X-Forwarded-Port", {port_text_, static_cast<size_t>(end.ptr - port_text_)}});
  }
}

// The Host a try on `node` sends, as pass_host says.
std::string_view Exchange::host_for(int node) const {
  // A plugin's host edit (proxy-rewrite's `host`) wins over pass_host: it is in client_host_.
  bool edited = st_.plugins && !pctx_.upstream.host.empty();
  switch (edited ? upstream::PassHost::kPass : st_.up_conf->pass_host) {
    case upstream::PassHost::kPass:
      // An HTTP/1.0 client may send no Host; HTTP/1.1 upstreams require one.
      return client_host_.empty() ? std::string_view(st_.up_conf->nodes[node].host_header)
                                  : std::string_view(client_host_);
    case upstream::PassHost::kNode:
      return st_.up_conf->nodes[node].host_header;
    case upstream::PassHost::kRewrite:
      return st_.up_conf->upstream_host;
  }
  return {};
}

}  // namespace sluice::server
