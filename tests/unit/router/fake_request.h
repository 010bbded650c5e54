#pragma once
// FakeRequest: a RequestHead plus the storage its views point into, for router tests.

#include <initializer_list>
#include <list>
#include <string>
#include <string_view>
#include <utility>

#include "http/message.h"
#include "http/path.h"
#include "router/expr.h"
#include "router/ip.h"

namespace sluice::router::testing {

// Thread: any (test only). Not copyable: the head holds views into this object.
class FakeRequest {
 public:
  FakeRequest(std::string_view method, std::string_view target, std::string_view host = "",
              std::initializer_list<std::pair<std::string_view, std::string_view>> headers = {},
              std::string_view remote = "127.0.0.1", uint16_t port = 9080) {
    head.method_text = keep(method);
    head.method = http::parse_method(head.method_text);
    head.target = keep(target);
    const size_t q = head.target.find('?');
    head.path = head.target.substr(0, q);
    // As the h1 parser does; a path that cannot be normalised leaves uri empty.
    if (!head.path.empty() && head.path[0] == '/') {
      head.uri_buf.resize(head.path.size());
      head.uri = http::normalize_path(head.path, head.uri_buf.data()).path;
    } else {
      head.uri = head.path;
    }
    head.query = q == std::string_view::npos ? std::string_view() : head.target.substr(q + 1);
    head.host = keep(host);
    for (const auto& [name, value] : headers) {
      head.headers[head.num_headers++] = http::Header{keep(name), keep(value)};
    }
    ctx.req = &head;
    ctx.remote_addr = keep(remote);
    if (!remote.empty()) {
      parse_ip(remote, &ctx.remote_ip);
    }
    ctx.server_port = port;
  }
  FakeRequest(const FakeRequest&) = delete;
  FakeRequest& operator=(const FakeRequest&) = delete;

  http::RequestHead head;
  MatchContext ctx;

 private:
  std::string_view keep(std::string_view s) { return storage_.emplace_back(s); }
  std::list<std::string> storage_;
};

}  // namespace sluice::router::testing
