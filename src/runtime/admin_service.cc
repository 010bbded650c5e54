#include "runtime/admin_service.h"

namespace sluice::runtime {

void AdminService::submit(server::AdminRequest req,
                          std::function<void(server::AdminResponse)> reply) {
  loop_.post([this, req = std::move(req), reply = std::move(reply)]() mutable {
    pending_.emplace_back(std::move(reply), handle_(req));
    if (!flush_posted_) {
      // Posted from inside the loop's batch, so it runs after every request already queued.
      flush_posted_ = true;
      loop_.post([this] { flush(); });
    }
  });
}

void AdminService::flush() {
  flush_posted_ = false;
  publish_();
  auto release = [done = std::move(pending_)]() mutable {
    for (auto& [reply, resp] : done) {
      reply(std::move(resp));
    }
  };
  pending_.clear();
  barrier_(std::move(release));
}

}  // namespace sluice::runtime
