#include "etcd/endpoint.h"

#include <fmt/format.h>

namespace sluice::etcd {

common::StatusOr<Endpoint> parse_endpoint(std::string_view url) {
  auto e = config::parse_etcd_endpoint(url);
  if (!e) {
    return common::Status::error(fmt::format("{}: {}", url, e.status().message()));
  }
  return e;
}

}  // namespace sluice::etcd
