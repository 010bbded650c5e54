// The request head an upstream gets: the client's request line and fields, with the plugins'
// edits applied, hop-by-hop fields dropped, X-Real-IP and X-Forwarded-* added, the body's
// framing regenerated, and the Host line chosen per node (pass_host).

#include "common/strings.h"
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
  std::string& h = up_head_;
  h.clear();
  if (ed != nullptr && !ed->method.empty()) {
    h.append(ed->method);
    st_.up_method = http::parse_method(ed->method);
  } else {
    h.append(st_.req->method_text);
  }
  h.push_back(' ');
  if (ed != nullptr && !ed->uri.empty()) {
    h.append(ed->uri);
  } else if (!st_.req->authority.empty()) {
    h.append(st_.req->path.empty() ? std::string_view("/") : st_.req->path);
    if (!st_.req->query.empty()) {
      h.append("?").append(st_.req->query);
    }
  } else {
    h.append(st_.req->target);
  }
  h.append(" HTTP/1.1\r\n");
  // The Host line is inserted here per node by set_host_line().
  host_offset_ = h.size();
  host_len_ = 0;
  xff_.clear();
  const http::ConnectionTokens listed(st_.req->headers, st_.req->num_headers);
  for (size_t i = 0; i < st_.req->num_headers; ++i) {
    const http::Header& hd = st_.req->headers[i];
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
    h.append(hd.name).append(": ").append(hd.value).append("\r\n");
  }
  append_forwarding_headers(ed);
  if (ed != nullptr) {
    // Framing and hop-by-hop fields are the codec's: an edit cannot forge them.
    ed->headers.for_each_added([&h](std::string_view name, std::string_view value) {
      if (!http::is_hop_by_hop(name) && !http::iequals(name, "content-length") &&
          !http::iequals(name, "host") && !http::iequals(name, "expect")) {
        h.append(name).append(": ").append(value).append("\r\n");
      }
    });
  }
  if (st_.has_body && !st_.body_chunked) {
    h.append("Content-Length: ");
    common::append_uint(h, st_.body_length);
    h.append("\r\n");
  } else if (st_.body_chunked) {
    h.append("Transfer-Encoding: chunked\r\n");
  } else if (st_.req->find("content-length") != nullptr) {
    h.append("Content-Length: 0\r\n");  // an explicit empty body (POST) stays explicit
  }
  h.append("\r\n");
  client_host_.assign(ed != nullptr && !ed->host.empty() ? std::string_view(ed->host)
                                                         : st_.req->host);
}

// X-Real-IP and X-Forwarded-*, each unless a plugin's edit names it (its value then comes with
// the edits).
void Exchange::append_forwarding_headers(const plugin::RequestEdits* ed) {
  std::string& h = up_head_;
  auto ours = [ed](std::string_view name) { return ed == nullptr || !ed->headers.drops(name); };
  if (ours("x-real-ip")) {
    h.append("X-Real-IP: ").append(st_.client.ip).append("\r\n");
  }
  if (ours("x-forwarded-for")) {
    h.append("X-Forwarded-For: ");
    if (!xff_.empty()) {
      h.append(xff_).append(", ");
    }
    h.append(st_.client.ip).append("\r\n");
  }
  if (ours("x-forwarded-proto")) {
    h.append("X-Forwarded-Proto: http\r\n");
  }
  // An HTTP/1.0 request may come without a Host.
  if (!st_.req->host.empty() && ours("x-forwarded-host")) {
    h.append("X-Forwarded-Host: ").append(strip_port(st_.req->host)).append("\r\n");
  }
  if (ours("x-forwarded-port")) {
    h.append("X-Forwarded-Port: ");
    common::append_uint(h, st_.client.local_port);
    h.append("\r\n");
  }
}

// Inserts the Host line for node `node` (pass_host decides which).
void Exchange::set_host_line(int node) {
  std::string_view host;
  // A plugin's host edit (proxy-rewrite's `host`) wins over pass_host: it is in client_host.
  bool edited = st_.plugins && !pctx_.upstream.host.empty();
  switch (edited ? upstream::PassHost::kPass : st_.up_conf->pass_host) {
    case upstream::PassHost::kPass:
      // An HTTP/1.0 client may send no Host; HTTP/1.1 upstreams require one.
      host = client_host_.empty() ? std::string_view(st_.up_conf->nodes[node].host_header)
                                  : std::string_view(client_host_);
      break;
    case upstream::PassHost::kNode:
      host = st_.up_conf->nodes[node].host_header;
      break;
    case upstream::PassHost::kRewrite:
      host = st_.up_conf->upstream_host;
      break;
  }
  if (host_len_ > 0) {
    up_head_.erase(host_offset_, host_len_);
  }
  host_len_ = 0;
  if (!host.empty()) {
    // Three inserts in place: no temporary string on the request path.
    up_head_.insert(host_offset_, "\r\n");
    up_head_.insert(host_offset_, host);
    up_head_.insert(host_offset_, "Host: ");
    host_len_ = host.size() + 8;
  }
}

}  // namespace sluice::server
