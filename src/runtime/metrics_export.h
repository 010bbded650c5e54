#pragma once
// The prometheus plugin's export server (plugin_attr.prometheus.export_addr, default
// 127.0.0.1:9091): answers GET <export_uri> with every worker's metrics summed, on the control
// thread's loop, so a scrape never costs a worker anything but its relaxed counter stores.

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include "common/status.h"
#include "io/event_loop.h"

namespace sluice::runtime {

// Thread: control
class MetricsExport final : public io::IoHandler {
 public:
  // `render` produces the exposition text for one scrape.
  MetricsExport(io::EventLoop& loop, std::string uri, std::function<std::string()> render);
  ~MetricsExport() override;

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
  std::string uri_;
  std::function<std::string()> render_;
  int fd_ = -1;
  std::unordered_map<Conn*, std::unique_ptr<Conn>> conns_;
};

}  // namespace sluice::runtime
