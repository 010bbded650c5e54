#include "plugins/gzip/gzip.h"

#include <zlib.h>

#include <algorithm>
#include <memory>

namespace sluice::plugins::gzip {

using plugin::BodyPiece;
using plugin::Context;

namespace {

const char kTag = 0;
constexpr size_t kKeepIdle = 8;  // idle streams a worker keeps (256 KiB each at level 1..9)

// One deflate stream with its output buffer.
// Thread: worker
struct Stream final : plugin::CoderState {
  size_t slot = 0;
  coding::Pool<Stream>* pool = nullptr;
  z_stream z{};
  bool ready = false;
  int level = 0;
  size_t keep = 0;  // buffers.number x size: the output capacity kept between pieces
  coding::OutBuffer out;

  Stream() = default;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() {
    if (ready) {
      deflateEnd(&z);
    }
  }
  void release() override {
    deflateReset(&z);
    pool->release(this);
  }
  // Deflates `in` with `flush` into out; the bytes written.
  size_t deflate_all(std::string_view in, int flush);
};

using Pool = coding::Pool<Stream>;

size_t Stream::deflate_all(std::string_view in, int flush) {
  out.trim(keep);  // a big piece's buffer is not kept for the next (buffers)
  // With Z_SYNC_FLUSH / Z_FINISH everything fits in deflateBound plus the flush markers.
  out.reserve(std::max<size_t>(deflateBound(&z, in.size()) + 64, 256));
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  size_t used = 0;
  while (true) {
    z.next_out = out.data.get() + used;
    z.avail_out = static_cast<uInt>(out.cap - used);
    int rc = deflate(&z, flush);
    used = out.cap - z.avail_out;
    if (rc == Z_STREAM_END || (z.avail_out != 0 && z.avail_in == 0) || rc == Z_STREAM_ERROR) {
      return used;
    }
    out.grow(used);  // rare: the bound was short (pending bits)
  }
}

common::StatusOr<std::shared_ptr<const plugin::Plugin>> make(const plugin::Json& json,
                                                             const plugin::BuildEnv&) {
  auto conf = parse(json);
  if (!conf.is_ok()) {
    return conf.status();
  }
  return std::shared_ptr<const plugin::Plugin>(std::make_shared<const Gzip>(std::move(*conf)));
}

}  // namespace

const plugin::PluginInfo& info() {
  static const plugin::PluginInfo kInfo{
      .name = "gzip",
      .priority = 995,
      .stream = false,
      .check = check,
      .make = make,
      .schema = kSchema,
      .worker_init = worker_init,
      // APISIX sets nginx's gzip from each instance in turn, the route's last; here the
      // route's instance runs alone.
      .prefer_route = true,
  };
  return kInfo;
}

void worker_init(plugin::Shared&, plugin::WorkerLocal& local) {
  Pool& pool = local.object<Pool>("gzip.streams", [] { return std::make_unique<Pool>(kKeepIdle); });
  local.set_slot(&kTag, &pool);
}

size_t streams_lent(const plugin::WorkerLocal& local) {
  const Pool* pool = local.slot<Pool>(&kTag);
  return pool != nullptr ? pool->lent() : 0;
}

size_t streams_held(const plugin::WorkerLocal& local) {
  const Pool* pool = local.slot<Pool>(&kTag);
  return pool != nullptr ? pool->size() : 0;
}

void Gzip::head(Context& ctx) const { coding::read_head(ctx); }

// APISIX's header_filter: the type, length and HTTP version as the head stands; Vary goes on
// whether or not this client accepts gzip (nginx then tests Accept-Encoding).
void Gzip::header_filter(Context& ctx) const {
  bool type_later = false;
  if (!coding::head_qualifies(conf_.common, ctx, &type_later)) {
    return;
  }
  if (conf_.common.vary && !type_later) {
    ctx.resp.headers.add("Vary", "Accept-Encoding");
  }
  if ((ctx.coding & coding::kGzip) != 0 && ctx.coder == nullptr) {
    ctx.coder = this;
  }
}

void Gzip::start(Context& ctx) const {
  if (!coding::final_qualifies(conf_.common, ctx, true)) {
    ctx.end_coder();
    return;
  }
  if (ctx.upstream_resp == nullptr && ctx.reply_source == nullptr) {
    return;  // a gateway-made answer: decided with its body (code_reply)
  }
  if (!open(ctx)) {
    ctx.end_coder();
    return;
  }
  coding::edit_head(ctx, "gzip");
}

bool Gzip::open(Context& ctx) const {
  Pool* pool = ctx.worker != nullptr ? ctx.worker->slot<Pool>(&kTag) : nullptr;
  if (pool == nullptr) {
    return false;
  }
  Stream* s = pool->acquire();
  if (!s->ready) {
    // windowBits 15 + 16: the gzip wrapper; memLevel 8: nginx's gzip_window/hash defaults.
    if (deflateInit2(&s->z, conf_.comp_level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      pool->release(s);
      return false;
    }
    s->ready = true;
    s->level = conf_.comp_level;
  } else if (s->level != conf_.comp_level) {
    deflateParams(&s->z, conf_.comp_level, Z_DEFAULT_STRATEGY);  // no input yet: nothing out
    s->level = conf_.comp_level;
  }
  s->keep = static_cast<size_t>(conf_.buffers_number * conf_.buffers_size);
  ctx.coder_state = s;
  return true;
}

// Each piece goes out as soon as it came in (Z_SYNC_FLUSH: a byte-aligned end of block, the
// window kept), so a slow or event-stream upstream is not held back; the last piece ends the
// stream (Z_FINISH) and gives the stream back at once.
void Gzip::code(Context& ctx, BodyPiece& piece) const {
  auto* s = static_cast<Stream*>(ctx.coder_state);
  if (s == nullptr) {
    code_reply(ctx, piece);
    return;
  }
  if (piece.data().empty() && !piece.eof()) {
    return;
  }
  size_t n = s->deflate_all(piece.data(), piece.eof() ? Z_FINISH : Z_SYNC_FLUSH);
  piece.replace(std::string_view(reinterpret_cast<const char*>(s->out.data.get()), n));
  if (piece.eof()) {
    ctx.end_coder();  // replace() copied the bytes
  }
}

void Gzip::code_reply(Context& ctx, BodyPiece& piece) const {
  std::string_view body = piece.data();
  std::string_view type = coding::reply_type(ctx, body);
  if (!piece.eof() || type.empty() || !coding::type_matches(conf_.common, type) ||
      static_cast<int64_t>(body.size()) < conf_.common.min_length || !open(ctx)) {
    ctx.end_coder();
    return;
  }
  if (conf_.common.vary) {
    ctx.resp.headers.add("Vary", "Accept-Encoding");
  }
  coding::edit_head(ctx, "gzip");
  code(ctx, piece);
}

}  // namespace sluice::plugins::gzip
