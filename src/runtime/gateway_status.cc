// apisix.status: the status API on its own listener (default 127.0.0.1:7085), served on the
// control thread like the prometheus export server. APISIX's two endpoints, with its answers:
// GET /status, the process is up; GET /status/ready, every worker serves the configuration
// published last (503 with the first worker that does not, in APISIX's words, otherwise). An
// etcd node that has heard from neither etcd nor its persisted copy serves an empty
// configuration meanwhile: not ready either.
// /apisix/status and /apisix/status/ready answer the same.

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "common/log.h"
#include "runtime/gateway.h"

namespace sluice::runtime {

namespace {

LocalHttp::Answer json_answer(int status, std::string body) {
  return {status, "application/json", std::move(body)};
}

}  // namespace

LocalHttp::Answer Gateway::status_answer(const http::RequestHead& head) const {
  std::string_view path = head.path;
  if (path.starts_with("/apisix/")) {
    path.remove_prefix(7);
  }
  const bool ready = path == "/status/ready";
  if (!ready && path != "/status") {
    return json_answer(404, R"({"error_msg":"404 Route Not Found"})");
  }
  if (head.method != http::Method::kGet && head.method != http::Method::kHead) {
    return json_answer(405, R"({"error_msg":"405 Method Not Allowed"})");
  }
  if (ready) {
    const uint64_t want = current_ ? current_->version : 0;
    for (size_t i = 0; i < workers_.size(); ++i) {
      uint64_t has = workers_[i]->applied_version();
      if (want == 0 || has == 0 || !etcd_loaded_) {
        return json_answer(
            503, fmt::format(R"({{"status":"error","error":"worker id: {} has not received )"
                             R"(configuration"}})",
                             i));
      }
      if (has != want) {
        return json_answer(
            503, fmt::format(R"({{"status":"error","error":"worker id: {} serves configuration )"
                             R"({} of {}"}})",
                             i, has, want));
      }
    }
  }
  return json_answer(200, R"({"status":"ok"})");
}

// A port taken by another process since prepare_listeners() is fatal, as for the proxy's own
// ports: a probe answered by something else is worse than a start refused.
common::Status Gateway::start_status_server() {
  const config::StatusServer& sc = conf_.status;
  if (!sc.enabled) {
    return common::Status::ok();
  }
  status_server_ = std::make_unique<LocalHttp>(
      ctl_, "status server", [this](const http::RequestHead& head) { return status_answer(head); });
  if (inherited_status_fd_ >= 0) {
    status_server_->adopt(std::exchange(inherited_status_fd_, -1));
    return common::Status::ok();
  }
  common::Status st = status_server_->listen(sc.addr.ip, sc.addr.port);
  if (!st) {
    status_server_.reset();
    return common::Status::error(fmt::format("apisix.status: {}", st.message()));
  }
  return common::Status::ok();
}

}  // namespace sluice::runtime
