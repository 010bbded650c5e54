#include "plugins/loggers/loggers.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <ctime>

#include "common/log.h"
#include "plugins/loggers/capture.h"
#include "plugins/loggers/sinks.h"

namespace sluice::plugins::loggers {

using plugin::Context;
using plugin::Phase;
using plugin::phase_bit;

namespace {

constexpr char kRegistryKey[] = "loggers.registry";

std::string hostname() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  return host;
}

std::shared_ptr<batch::Registry> registry(plugin::Shared& shared) {
  return shared.get<batch::Registry>(kRegistryKey,
                                     [] { return std::make_shared<batch::Registry>(); });
}

common::StatusOr<std::shared_ptr<const plugin::Plugin>> make(Kind kind, const plugin::Json& json,
                                                             const plugin::BuildEnv& env) {
  auto conf = parse(kind, json);
  if (!conf.is_ok()) {
    return conf.status();
  }
  Metadata meta;
  if (const plugin::Json* m = env.shared.metadata_of(plugin_name(kind)); m != nullptr) {
    auto parsed = parse_metadata(*m);
    if (parsed.is_ok()) {
      meta = std::move(parsed).value();
    } else {  // checked when written; a file-provided one may still be wrong
      SLUICE_LOG(kError, "plugin_metadata {} ignored: {}", plugin_name(kind),
                 parsed.status().message());
    }
  }
  conf->batch.max_pending = meta.max_pending;
  // APISIX labels the gauge with the route's id; a route's plugins are built under
  // "route/<id>", a service's under "service/<id>", and so on.
  std::string_view owner = env.owner;
  conf->batch.route_id = owner.starts_with("route/") ? std::string(owner.substr(6)) : std::string();
  LogFormat format = conf->log_format.empty() ? meta.log_format : conf->log_format;
  auto shared_conf = std::make_shared<const Conf>(std::move(conf).value());
  auto handle = registry(env.shared)->start(shared_conf->batch, make_sink(*shared_conf));
  return std::shared_ptr<const plugin::Plugin>(std::make_shared<const Logger>(
      shared_conf, std::move(format), std::move(handle), hostname()));
}

template <Kind K>
common::Status check_kind(const plugin::Json& conf, plugin::PluginUse use) {
  return check(K, conf, use);
}

template <Kind K>
common::StatusOr<std::shared_ptr<const plugin::Plugin>> make_kind(const plugin::Json& conf,
                                                                  const plugin::BuildEnv& env) {
  return make(K, conf, env);
}

void destroy(plugin::Shared& shared) {
  if (auto r = shared.find<batch::Registry>(kRegistryKey)) {
    r->stop();
  }
}

template <Kind K>
plugin::PluginInfo info(int priority) {
  plugin::PluginInfo i;
  i.name = plugin_name(K);
  i.priority = priority;
  i.check = check_kind<K>;
  i.make = make_kind<K>;
  i.schema = schema(K);
  i.destroy = K == Kind::kHttp ? destroy : nullptr;  // one registry: stopped once
  return i;
}

int64_t wall_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The wall clock at monotonic `now_ns`, from the offset between the two clocks read at most a
// second ago on this thread (as nginx caches its time): one clock read per entry, not two. A
// step of the wall clock shows within a second.
int64_t wall_ms_at(uint64_t now_ns) {
  thread_local uint64_t read_at_ns = 0;
  thread_local int64_t offset_ms = 0;
  if (read_at_ns == 0 || now_ns - read_at_ns > 1000000000u) {
    read_at_ns = now_ns;
    offset_ms = wall_ms_now() - static_cast<int64_t>(now_ns / 1000000);
  }
  return static_cast<int64_t>(now_ns / 1000000) + offset_ms;
}

// RFC 5424 as APISIX's rfc5424.encode("SYSLOG", "INFO", host, "apisix", pid, msg): facility
// syslog (5) and severity info (6) make <46>; the time is UTC with milliseconds.
std::string rfc5424(std::string_view host, std::string_view msg, int64_t wall_ms) {
  const time_t t = static_cast<time_t>(wall_ms / 1000);
  struct tm tm {};
  gmtime_r(&t, &tm);
  char ts[40];
  size_t n = strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
  static const pid_t kPid = getpid();  // a syscall: not one per entry
  return fmt::format("<46>1 {}.{:03}Z {} apisix {} - - {}\n", std::string_view(ts, n),
                     wall_ms % 1000, host.empty() ? "-" : host, kPid, msg);
}

}  // namespace

const plugin::PluginInfo& http_logger() {
  static const plugin::PluginInfo kInfo = info<Kind::kHttp>(410);
  return kInfo;
}
const plugin::PluginInfo& tcp_logger() {
  static const plugin::PluginInfo kInfo = info<Kind::kTcp>(405);
  return kInfo;
}
const plugin::PluginInfo& syslog() {
  static const plugin::PluginInfo kInfo = info<Kind::kSyslog>(401);
  return kInfo;
}
const plugin::PluginInfo& udp_logger() {
  static const plugin::PluginInfo kInfo = info<Kind::kUdp>(400);
  return kInfo;
}
const plugin::PluginInfo& file_logger() {
  static const plugin::PluginInfo kInfo = info<Kind::kFile>(399);
  return kInfo;
}

void render_metrics(const plugin::Shared& shared, std::string& out) {
  if (auto r = shared.find<batch::Registry>(kRegistryKey)) {
    r->render(out);
  }
}

Logger::Logger(std::shared_ptr<const Conf> conf, LogFormat format,
               std::shared_ptr<batch::Handle> out, std::string hostname)
    : conf_(std::move(conf)),
      format_(std::move(format)),
      out_(std::move(out)),
      hostname_(std::move(hostname)) {}

uint32_t Logger::phases() const {
  uint32_t p = phase_bit(Phase::kLog);
  if (format_.empty()) {
    p |= phase_bit(Phase::kHeaderFilter);  // the response headers of the default entry
  }
  if (conf_->body.include_resp_body) {
    p |= phase_bit(Phase::kHeaderFilter) | phase_bit(Phase::kBodyFilter);
  }
  return p;
}

void Logger::head(Context& ctx) const {
  if (conf_->kind == Kind::kSyslog || format_.empty()) {  // syslog's HOSTNAME; service_id
    static const router::Var kHost = router::Var::parse("host");
    router::VarScratch scratch;
    std::string_view host;
    kHost.get(ctx.match, &scratch, &host);
    put(ctx, this, Part::kHost, host);
  }
  if (format_.empty()) {
    const size_t at = begin_record(ctx, this, Part::kRequest);
    request_members(ctx, &ctx.log_capture);
    end_record(ctx, at);
    if (conf_->body.include_req_body && conf_->body.req_body_expr.eval(ctx.match)) {
      put(ctx, this, Part::kReqBody, "1");
    }
  } else if (format_.head_count() > 0) {
    const size_t at = begin_record(ctx, this, Part::kFormatHead);
    capture_head(format_, ctx.match, &ctx.log_capture);
    end_record(ctx, at);
  }
}

void Logger::header_filter(Context& ctx) const {
  if (format_.empty()) {
    const size_t at = begin_record(ctx, this, Part::kRespHeaders);
    response_headers(ctx, &ctx.log_capture);
    end_record(ctx, at);
  }
  if (!conf_->body.include_resp_body) {
    return;
  }
  router::ResponseView view;
  view.status = ctx.resp.status != 0 ? ctx.resp.status : ctx.status;
  view.upstream = ctx.upstream_resp;
  router::MatchContext m = ctx.match;
  m.resp = &view;
  if (conf_->body.resp_body_expr.eval(m)) {
    ctx.mark();  // body_filter keeps this response's body
  }
}

void Logger::body_filter(Context& ctx, plugin::BodyPiece& piece) const {
  if (!ctx.marked() || piece.data().empty()) {
    return;
  }
  const size_t have = recorded(ctx, this, Part::kRespBody);
  const size_t max = conf_->body.max_resp_body_bytes;
  if (have < max) {
    put(ctx, this, Part::kRespBody, piece.data().substr(0, max - have));
  }
}

std::string Logger::entry(const Context& ctx, uint64_t now_ns, int64_t wall_ms) const {
  LogInput in{&ctx, {}, hostname_, now_ns, wall_ms};
  std::string out;
  out.reserve(ctx.log_capture.size() + 512);
  if (!format_.empty()) {
    in.head = view(ctx, this, Part::kFormatHead).value_or(std::string_view());
    out.push_back('{');
    render_format(format_, in, &out);
    if (ctx.route != nullptr) {  // log-util's get_custom_format_log adds them
      out.append(out.size() > 1 ? "," : "").append("\"route_id\":");
      append_json_string(&out, ctx.route_id);
      if (!ctx.service_id.empty()) {
        out.append(",\"service_id\":");
        append_json_string(&out, ctx.service_id);
      }
    } else if (conf_->kind == Kind::kHttp) {
      out.append(out.size() > 1 ? "," : "").append("\"route_id\":\"no-matched\"");
    }
    out.push_back('}');
  } else {
    std::string resp_body;
    FullInput f;
    f.in = in;
    f.request = view(ctx, this, Part::kRequest).value_or(std::string_view());
    f.host = view(ctx, this, Part::kHost).value_or(std::string_view());
    f.version = SLUICE_VERSION;
    f.no_matched_route_id = conf_->kind == Kind::kHttp;
    f.resp_headers = view(ctx, this, Part::kRespHeaders);
    if (view(ctx, this, Part::kReqBody) && !ctx.request_body.empty()) {
      f.req_body = ctx.request_body.substr(0, conf_->body.max_req_body_bytes);
    }
    if (find(ctx, this, Part::kRespBody, &resp_body)) {  // recorded piece by piece
      f.resp_body = resp_body;
    }
    render_full(f, &out);
  }
  if (conf_->kind == Kind::kSyslog) {
    return rfc5424(view(ctx, this, Part::kHost).value_or(std::string_view()), out, wall_ms);
  }
  return out;
}

void Logger::log(Context& ctx) const {
  const uint64_t now_ns = plugin::monotonic_ns();
  out_->push(entry(ctx, now_ns, wall_ms_at(now_ns)), now_ns / 1000000);
}

}  // namespace sluice::plugins::loggers
