#include "accesslog/render.h"

#include <sys/random.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>

#include "accesslog/escape.h"

namespace sluice::accesslog {

namespace {

constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

void append_uint(uint64_t v, LineBuffer* out) {
  char* p = out->room(20);
  out->commit(static_cast<size_t>(std::to_chars(p, p + 20, v).ptr - p));
}

// nginx's "%T.%03M": seconds and milliseconds.
void append_seconds(uint64_t ms, LineBuffer* out) {
  append_uint(ms / 1000, out);
  char frac[4] = {'.', static_cast<char>('0' + ms / 100 % 10),
                  static_cast<char>('0' + ms / 10 % 10), static_cast<char>('0' + ms % 10)};
  out->append({frac, sizeof(frac)});
}

// A list of the tries' values, ", " between them (nginx's $upstream_* variables).
template <class Each>
void append_each(std::span<const UpstreamTry> tries, Each each, LineBuffer* out) {
  for (size_t i = 0; i < tries.size(); ++i) {
    if (i != 0) {
      out->append(", ");
    }
    each(tries[i]);
  }
}

uint64_t splitmix(uint64_t* s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

Renderer::Renderer() {
  uint64_t seed[2] = {0, 0};
  if (getrandom(seed, sizeof(seed), 0) != sizeof(seed)) {
    seed[0] = static_cast<uint64_t>(getpid()) ^ reinterpret_cast<uintptr_t>(this);
    seed[1] = static_cast<uint64_t>(time(nullptr));
  }
  rng_[0] = seed[0];
  rng_[1] = seed[1];
  pid_len_ = static_cast<size_t>(snprintf(pid_, sizeof(pid_), "%d", static_cast<int>(getpid())));
}

void Renderer::refresh_times(time_t second) {
  second_ = second;
  tm t;
  localtime_r(&second, &t);
  int off = static_cast<int>(t.tm_gmtoff / 60) % (24 * 60);
  char sign = off < 0 ? '-' : '+';
  off = off < 0 ? -off : off;
  time_local_len_ = static_cast<size_t>(snprintf(time_local_, sizeof(time_local_),
                                                 "%02d/%s/%d:%02d:%02d:%02d %c%02d%02d", t.tm_mday,
                                                 kMonths[t.tm_mon], t.tm_year + 1900, t.tm_hour,
                                                 t.tm_min, t.tm_sec, sign, off / 60, off % 60));
  time_iso_len_ = static_cast<size_t>(snprintf(
      time_iso_, sizeof(time_iso_), "%4d-%02d-%02dT%02d:%02d:%02d%c%02d:%02d", t.tm_year + 1900,
      t.tm_mon + 1, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec, sign, off / 60, off % 60));
}

void Renderer::append_request_id(LineBuffer* out) {
  constexpr char kLowerHex[] = "0123456789abcdef";
  char id[32];
  for (int half = 0; half < 2; ++half) {
    uint64_t v = splitmix(&rng_[half]);
    for (int i = 0; i < 16; ++i) {
      id[half * 16 + i] = kLowerHex[(v >> (60 - 4 * i)) & 0xf];
    }
  }
  out->append({id, sizeof(id)});
}

bool Renderer::list(const Part& p, const Record& r, LineBuffer* out) {
  if (r.tries.empty()) {
    return false;
  }
  auto time_of = [out](int64_t ms) {
    if (ms < 0) {
      out->push_back('-');
    } else {
      append_seconds(static_cast<uint64_t>(ms), out);
    }
  };
  switch (p.var) {
    case Var::kUpstreamAddr:
      append_each(
          r.tries, [out](const UpstreamTry& t) { out->append(t.addr); }, out);
      break;
    case Var::kUpstreamStatus:
      append_each(
          r.tries,
          [out](const UpstreamTry& t) {
            if (t.status == 0) {
              out->push_back('-');
            } else {
              append_uint(static_cast<uint64_t>(t.status), out);
            }
          },
          out);
      break;
    case Var::kUpstreamResponseTime:
      append_each(
          r.tries, [&](const UpstreamTry& t) { time_of(t.response_ms); }, out);
      break;
    case Var::kUpstreamConnectTime:
      append_each(
          r.tries, [&](const UpstreamTry& t) { time_of(t.connect_ms); }, out);
      break;
    default:  // kUpstreamHeaderTime
      append_each(
          r.tries, [&](const UpstreamTry& t) { time_of(t.header_ms); }, out);
      break;
  }
  return true;
}

bool Renderer::value(const Format& f, const Part& p, const Record& r, const timespec& now,
                     LineBuffer* out) {
  std::string_view v;
  switch (p.var) {
    case Var::kLiteral:
    case Var::kCount:
      return true;
    case Var::kConn:
      if (!f.conn_var(p).find(r.conn, &scratch_, &v)) {
        return false;
      }
      break;
    case Var::kHead:
      if (r.head == nullptr || !r.head->get(p.begin, &v)) {
        return false;
      }
      break;
    case Var::kStatus:
      append_uint(static_cast<uint64_t>(r.status), out);
      return true;
    case Var::kBodyBytesSent:
      append_uint(r.body_bytes_sent, out);
      return true;
    case Var::kBytesSent:
      append_uint(r.bytes_sent, out);
      return true;
    case Var::kRequestLength:
      append_uint(r.request_length, out);
      return true;
    case Var::kRequestTime:
      append_seconds(r.request_ms, out);
      return true;
    case Var::kMsec:
      append_seconds(static_cast<uint64_t>(now.tv_sec) * 1000 + now.tv_nsec / 1000000, out);
      return true;
    // The gateway's own text, never in need of an escape.
    case Var::kTimeLocal:
      out->append({time_local_, time_local_len_});
      return true;
    case Var::kTimeIso8601:
      out->append({time_iso_, time_iso_len_});
      return true;
    case Var::kUpstreamAddr:
    case Var::kUpstreamStatus:
    case Var::kUpstreamResponseTime:
    case Var::kUpstreamConnectTime:
    case Var::kUpstreamHeaderTime:
      return list(p, r, out);
    case Var::kUpstreamScheme:
      out->append(r.upstream_tls ? "https" : "http");
      return true;
    case Var::kUpstreamHost:
      if (r.has_upstream_host) {
        v = r.upstream_host;
      } else if (r.head == nullptr || !r.head->get(static_cast<size_t>(f.host_slot()), &v)) {
        v = {};  // `set $upstream_host $http_host` with no Host: empty, not missing
      }
      break;
    case Var::kUpstreamUri:
      v = r.upstream_uri;
      break;
    case Var::kServerAddr:
      v = r.server_addr;
      if (v.empty()) {
        return false;
      }
      break;
    case Var::kRemotePort:
      if (r.remote_port == 0) {
        return false;
      }
      append_uint(r.remote_port, out);
      return true;
    case Var::kRequestId:
      if (r.request_id.empty()) {
        append_request_id(out);
        return true;
      }
      v = r.request_id;
      break;
    case Var::kRouteId:
    case Var::kRouteName:
    case Var::kServiceId:
    case Var::kServiceName:
    case Var::kConsumerName:
      v = p.var == Var::kRouteId       ? r.route_id
          : p.var == Var::kRouteName   ? r.route_name
          : p.var == Var::kServiceId   ? r.service_id
          : p.var == Var::kServiceName ? r.service_name
                                       : r.consumer_name;
      if (v.empty()) {
        return false;  // no route (a 404), no service, no consumer
      }
      break;
    case Var::kHostname:
      v = f.hostname();
      break;
    case Var::kPid:
      out->append({pid_, pid_len_});
      return true;
  }
  append_escaped(f.escape(), v, out);
  return true;
}

void Renderer::render(const Format& f, const Record& r, const timespec& now, LineBuffer* out) {
  if (now.tv_sec != second_ && (f.uses(Var::kTimeLocal) || f.uses(Var::kTimeIso8601))) {
    refresh_times(now.tv_sec);
  }
  for (const Part& p : f.parts()) {
    if (p.var == Var::kLiteral) {
      out->append(f.literal(p));
    } else if (!value(f, p, r, now, out) && f.escape() == Escape::kDefault) {
      out->push_back('-');  // nginx: a variable that is not there; json and none print nothing
    }
  }
  out->push_back('\n');
}

}  // namespace sluice::accesslog
