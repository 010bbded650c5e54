#pragma once
// One worker's access log: lines are rendered into a buffer and written with one write(2) of
// whole lines when the buffer is full, when the flush timer fires, at a reopen and at the end.
// Every worker holds its own descriptor on the same file, opened O_APPEND, so the workers'
// writes land whole and never interleave, and no lock is shared between them. The one
// blocking call on a worker is that write(): a few per second at most under load
// (docs/access-log.md#cost-and-placement). A failed write is never retried: its lines are
// dropped and counted, and the error log says so at most once per ten seconds.

#include <cstdint>
#include <memory>
#include <string>

#include "accesslog/config.h"
#include "accesslog/line_buffer.h"
#include "accesslog/record.h"
#include "accesslog/render.h"

namespace sluice::accesslog {

// Thread: worker (constructed on the control thread before the worker runs)
class Writer {
 public:
  struct Stats {
    uint64_t lines = 0;         // lines written whole
    uint64_t writes = 0;        // write(2) calls
    uint64_t lost_lines = 0;    // lines a failed or short write dropped
    uint64_t write_errors = 0;  // failed or short writes, and failed opens
  };

  explicit Writer(std::shared_ptr<const Config> config);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  const Config& config() const { return *config_; }
  const Format& format() const { return config_->format; }
  // Renders `r`'s line into the buffer, and writes the buffer once it holds buffer_size bytes.
  // True when the line is the first one buffered: the caller arms the flush timer. `now_ms`:
  // the worker loop's monotonic time; the line's wall-clock time is derived from it (the clock
  // itself is read once a second).
  bool log(const Record& r, uint64_t now_ms);
  // Writes what is buffered, if anything.
  void flush();
  // Flushes into the file open now, then opens the path again: logrotate (or the built-in
  // rotation) moved the file away. On failure the old descriptor is kept.
  void reopen();
  const Stats& stats() const { return stats_; }
  bool open() const { return fd_ >= 0; }

 private:
  void lost(uint64_t lines, int err, const char* what);

  std::shared_ptr<const Config> config_;
  int fd_ = -1;
  LineBuffer buf_;
  uint64_t buffered_lines_ = 0;
  Renderer renderer_;
  Stats stats_;
  uint64_t reported_ms_ = 0;        // when a failure was last reported (monotonic)
  uint64_t lost_since_report_ = 0;  // lines dropped since
  // Wall-clock milliseconds minus the loop's monotonic ones, as of clock_ms_.
  int64_t wall_offset_ms_ = 0;
  uint64_t clock_ms_ = 0;
  bool clock_read_ = false;
};

// Opens `path` to append to it (creating it 0644), for a worker or to check it at start.
// Returns the descriptor, or -1 with errno set.
int open_for_append(const std::string& path);

}  // namespace sluice::accesslog
