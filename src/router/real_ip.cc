#include "router/real_ip.h"

namespace sluice::router {

namespace {

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

// Every address of every X-Forwarded-For line, in order; false on an empty or bad item.
bool forwarded_list(const http::RequestHead& req, std::string_view name,
                    std::vector<std::string_view>* out) {
  for (size_t i = 0; i < req.num_headers; ++i) {
    if (!http::iequals(req.headers[i].name, name)) {
      continue;
    }
    std::string_view v = req.headers[i].value;
    while (true) {
      size_t comma = v.find(',');
      std::string_view item = trim_ows(v.substr(0, comma));
      IpAddr ip;
      if (item.empty() || !parse_ip(item, &ip)) {
        return false;
      }
      out->push_back(item);
      if (comma == std::string_view::npos) {
        break;
      }
      v.remove_prefix(comma + 1);
    }
  }
  return !out->empty();
}

}  // namespace

bool RealIpConfig::trusts(const IpAddr& ip) const {
  for (const auto& c : trusted) {
    if (c.contains(ip)) {
      return true;
    }
  }
  return false;
}

bool find_real_ip(const RealIpConfig& conf, const IpAddr& peer, const http::RequestHead& req,
                  IpAddr* addr, std::string* text) {
  if (conf.trusted.empty() || !conf.trusts(peer)) {
    return false;
  }
  std::vector<std::string_view> list;
  if (!forwarded_list(req, conf.header, &list)) {
    return false;
  }
  if (conf.header != "x-forwarded-for" && list.size() != 1) {
    return false;  // X-Real-IP and the like name exactly one address
  }
  size_t pick = list.size() - 1;
  if (conf.recursive) {
    IpAddr ip;
    while (pick > 0 && parse_ip(list[pick], &ip) && conf.trusts(ip)) {
      --pick;
    }
  }
  if (!parse_ip(list[pick], addr)) {
    return false;
  }
  text->assign(list[pick]);
  return true;
}

}  // namespace sluice::router
