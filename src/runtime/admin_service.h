#pragma once
// Carries Admin API requests from the workers to the control thread and the answers back.
// Requests that arrive together are handled one after another, then the snapshot is rebuilt
// once and published, and only then are the answers released: a 2xx leaves once every worker
// has applied the configuration it announces (the barrier runs behind the publication on each
// worker's loop), so a request on any worker after the 2xx sees the change.

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
  // Runs its argument once every worker's loop has run what was posted to it before (on the
  // last of them).
  using Barrier = std::function<void(std::function<void()>)>;
  // `handle` answers one request; `publish` rebuilds and publishes when something changed.
  AdminService(io::EventLoop& control, Handle handle, std::function<void()> publish,
               Barrier barrier)
      : loop_(control),
        handle_(std::move(handle)),
        publish_(std::move(publish)),
        barrier_(std::move(barrier)) {}

  void submit(server::AdminRequest req, std::function<void(server::AdminResponse)> reply) override;

 private:
  void flush();

  io::EventLoop& loop_;
  Handle handle_;
  std::function<void()> publish_;
  Barrier barrier_;
  std::vector<std::pair<std::function<void(server::AdminResponse)>, server::AdminResponse>>
      pending_;
  bool flush_posted_ = false;
};

}  // namespace sluice::runtime
