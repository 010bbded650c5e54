#pragma once
// Renders a Format for one Record into a line, with the format's escape applied to variable
// values. Nothing is allocated once the output buffer has grown to a line's size.

#include <cstdint>
#include <ctime>
#include <string>

#include "accesslog/format.h"
#include "accesslog/line_buffer.h"
#include "accesslog/record.h"

namespace sluice::accesslog {

// What rendering keeps between lines: the time texts of the current second and the generator
// behind $request_id (nginx's: 16 random bytes in hex).
// Thread: worker (one per worker)
class Renderer {
 public:
  Renderer();
  // Appends `r`'s line, newline included, to `out`. `now`: the wall-clock time of the line.
  void render(const Format& f, const Record& r, const timespec& now, LineBuffer* out);

 private:
  // Appends the value of variable part `p`; false when it is not there.
  bool value(const Format& f, const Part& p, const Record& r, const timespec& now, LineBuffer* out);
  bool list(const Part& p, const Record& r, LineBuffer* out);
  void refresh_times(time_t second);
  void append_request_id(LineBuffer* out);

  time_t second_ = -1;
  char time_local_[64] = {0};  // 28/Sep/2024:10:00:00 +0200
  char time_iso_[64] = {0};    // 2024-09-28T10:00:00+02:00
  char pid_[16] = {0};
  size_t time_local_len_ = 0, time_iso_len_ = 0, pid_len_ = 0;
  uint64_t rng_[2] = {0, 0};
  router::VarScratch scratch_;
};

}  // namespace sluice::accesslog
