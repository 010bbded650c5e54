#pragma once
// Where each logger's batches go: an HTTP(S) server (http-logger), a TCP or UDP peer
// (tcp-logger, udp-logger, syslog) or a file (file-logger). Each runs on its processor's
// sender thread only.

#include <memory>

#include "batch/processor.h"
#include "plugins/loggers/conf.h"

namespace sluice::plugins::loggers {

// The sink for `conf`'s plugin.
std::unique_ptr<batch::Sink> make_sink(const Conf& conf);

// SIGUSR1: every file-logger sink opens its path again before its next write (the file was
// moved by logrotate). Thread: any.
void reopen_files();

// The body of one batch: one entry as it is when batch_max_size is 1, else a JSON array
// (`json`) or the entries one a line (`new_line`), as http-logger.lua's func makes them;
// appended to `out`, whose room is made once.
void join_entries(std::span<const std::string> entries, bool single, bool new_line,
                  std::string* out);
// The length of what join_entries() appends.
size_t joined_size(std::span<const std::string> entries, bool single, bool new_line);

}  // namespace sluice::plugins::loggers
