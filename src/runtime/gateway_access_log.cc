// The Gateway's access log duties: the workers' settings (the file made and checked at start,
// so a path that cannot be written stops the start as nginx's open() failure does), SIGUSR1's
// reopen (logrotate's postrotate: every worker writes what it buffered into the moved file,
// then opens the path again) and the built-in rotation, checked on the 200 ms tick. The error
// log is stderr only: there is no file of the gateway's own to reopen.

#include <ctime>

#include "common/log.h"
#include "runtime/gateway.h"

namespace sluice::runtime {

common::Status Gateway::access_log_settings(server::Settings* settings) {
  const config::AccessLogConfig& a = conf_.access_log;
  if (!a.enabled) {
    return common::Status::ok();
  }
  auto format = accesslog::Format::compile(a.format, a.escape);
  if (!format) {  // parse_gateway_config compiled it already
    return common::Status::error("nginx_config.http.access_log_format: " +
                                 format.status().message());
  }
  if (common::Status st = accesslog::prepare_log_file(a.path); !st) {
    return common::Status::error("nginx_config.http.access_log: " + st.message());
  }
  auto c = std::make_shared<accesslog::Config>();
  c->path = a.path;
  c->format = std::move(format).value();
  c->buffer_size = a.buffer;
  settings->access_log = std::move(c);
  if (a.rotate.enabled()) {
    rotator_ = std::make_unique<accesslog::Rotator>(a.path, a.rotate, time(nullptr));
  }
  SLUICE_LOG(kInfo, "access log: {}", a.path);
  return common::Status::ok();
}

void Gateway::reopen_logs() {
  if (!conf_.access_log.enabled) {
    SLUICE_LOG(kNotice,
               "SIGUSR1: the access log is off and the error log is stderr: nothing to "
               "reopen");
    return;
  }
  SLUICE_LOG(kNotice, "SIGUSR1: reopening {}", conf_.access_log.path);
  for (auto& w : workers_) {
    w->reopen_access_log();
  }
}

void Gateway::rotate_access_log() {
  if (!rotator_) {
    return;
  }
  int64_t now = time(nullptr);
  if (!rotator_->due(now)) {
    return;
  }
  if (common::Status st = rotator_->rotate(now); !st) {
    SLUICE_LOG(kError, "access log rotation failed: {}", st.message());
    return;
  }
  SLUICE_LOG(kInfo, "access log rotated: {}.1", rotator_->path());
  for (auto& w : workers_) {
    w->reopen_access_log();
  }
}

}  // namespace sluice::runtime
