#pragma once
// A small HTTP/1.1 server on the control thread's loop for the gateway's own local endpoints:
// the prometheus plugin's export server (plugin_attr.prometheus.export_addr) and the status
// API (apisix.status). One request per connection, answered by a handler and closed, so a
// scrape or a probe never costs a worker anything.

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include "common/status.h"
#include "http/message.h"
#include "io/event_loop.h"

namespace sluice::runtime {

// Thread: control
class LocalHttp final : public io::IoHandler {
 public:
  struct Answer {
    int status = 200;
    std::string type = "text/plain";
    std::string body;
  };
  // Answers one complete request head (method and path checked by the handler).
  using Handler = std::function<Answer(const http::RequestHead&)>;

  // `what` names the server in errors ("prometheus export server").
  LocalHttp(io::EventLoop& loop, std::string what, Handler handler);
  ~LocalHttp() override;

  // Binds without SO_REUSEPORT: a second process on the same port is an error, not a share.
  common::Status listen(const std::string& ip, uint16_t port);
  // Serves on an already listening socket (inherited at a binary upgrade).
  void adopt(int fd);
  int fd() const { return fd_; }
  void on_io(uint32_t events) override;

 private:
  class Conn;
  void accept_all();
  void close(Conn* c);

  io::EventLoop& loop_;
  std::string what_;
  Handler handler_;
  int fd_ = -1;
  std::unordered_map<Conn*, std::unique_ptr<Conn>> conns_;
};

}  // namespace sluice::runtime
