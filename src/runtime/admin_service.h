#pragma once
// Carries Admin API requests from the workers to the control thread and the answers back.
// Requests that arrive together are handled one after another, then the snapshot is rebuilt
// once and published, and only then are the answers released: a 2xx leaves after every
// worker has been handed the configuration it announces.

#include <functional>
#include <utility>
#include <vector>

#include "io/event_loop.h"
#include "server/admin_hook.h"

namespace sluice::runtime {

// Thread: any (submit); control (everything it posts)
class AdminService : public server::AdminHandler {
 public:
  using Handle = std::function<server::AdminResponse(const server::AdminRequest&)>;
  // `handle` answers one request; `publish` rebuilds and publishes when something changed.
  AdminService(io::EventLoop& control, Handle handle, std::function<void()> publish)
      : loop_(control), handle_(std::move(handle)), publish_(std::move(publish)) {}

  void submit(server::AdminRequest req, std::function<void(server::AdminResponse)> reply) override;

 private:
  void flush();

  io::EventLoop& loop_;
  Handle handle_;
  std::function<void()> publish_;
  std::vector<std::pair<std::function<void(server::AdminResponse)>, server::AdminResponse>>
      pending_;
  bool flush_posted_ = false;
};

}  // namespace sluice::runtime
