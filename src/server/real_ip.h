#pragma once
// config.yaml's real_ip handling lives in the router room (router/real_ip.h), where the real-ip
// plugin reuses it; the server keeps its names.

#include "router/real_ip.h"

namespace sluice::server {

using router::find_real_ip;
using router::RealIpConfig;

}  // namespace sluice::server
