// The standalone apisix.yaml (deployment.role data_plane, config_provider yaml): noticing
// that the file changed, and rebuilding the snapshot from it; a file that does not build is
// rejected whole and the previous configuration keeps serving.

#include <fmt/format.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "common/file.h"
#include "common/log.h"
#include "config/snapshot_builder.h"
#include "config/standalone.h"
#include "runtime/gateway.h"

namespace sluice::runtime {

bool Gateway::routes_file_changed() {
  struct stat st;
  FileStamp now;
  if (stat(conf_.standalone_path.c_str(), &st) == 0) {
    now.mtime_ns = st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
    now.size = st.st_size;
    now.inode = st.st_ino;
  }
  if (now == stamp_) {
    return false;
  }
  stamp_ = now;
  return true;
}

bool Gateway::reload_routes(bool at_start) {
  std::string text;
  if (!common::read_file(conf_.standalone_path, &text)) {
    SLUICE_LOG(kError, "cannot read {}: {}", conf_.standalone_path, strerror(errno));
    return false;
  }
  if (!at_start && text == last_text_) {
    return true;
  }
  // At the first load there is no previous configuration to fall back on: say so.
  const char* fallback =
      current_ ? "still serving the previous configuration" : "nothing is served";
  auto set = config::parse_standalone(text);
  if (!set) {
    SLUICE_LOG(kError, "{}: rejected, {}: {}", conf_.standalone_path, fallback,
               set.status().message());
    return false;
  }
  auto built = config::build_snapshot(*set, dns_, version_ + 1, &plugin_shared_, &health_,
                                      conf_.ssl.trusted_ca);
  if (!built) {
    SLUICE_LOG(kError, "{}: rejected, {}: {}", conf_.standalone_path, fallback,
               built.status().message());
    return false;
  }
  for (const auto& w : set->warnings) {
    SLUICE_LOG(kWarn, "{}: {}", conf_.standalone_path, w);
  }
  build_warnings_.report(conf_.standalone_path, built->warnings);
  ++version_;
  publish(built->snapshot);
  last_text_ = std::move(text);
  SLUICE_LOG(kNotice, "configuration {} loaded: {} route(s)", version_,
             built->snapshot->routes.size());
  return true;
}

}  // namespace sluice::runtime
