#include "plugins/brotli/brotli.h"

#include <brotli/encode.h>

#include <algorithm>
#include <memory>

namespace sluice::plugins::brotli {

using plugin::BodyPiece;
using plugin::Context;

namespace {

const char kTag = 0;
constexpr size_t kKeepIdle = 8;
constexpr size_t kKeepOutput = 64 * 1024;  // output capacity kept between pieces

// One response's encoder (libbrotlienc has no reset: made per response) and the output
// buffer the pool keeps.
// Thread: worker
struct Stream final : plugin::CoderState {
  size_t slot = 0;
  coding::Pool<Stream>* pool = nullptr;
  BrotliEncoderState* enc = nullptr;
  coding::OutBuffer out;

  Stream() = default;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() { BrotliEncoderDestroyInstance(enc); }
  void release() override {
    BrotliEncoderDestroyInstance(enc);
    enc = nullptr;
    pool->release(this);
  }
  size_t encode(std::string_view in, BrotliEncoderOperation op);
};

using Pool = coding::Pool<Stream>;

size_t Stream::encode(std::string_view in, BrotliEncoderOperation op) {
  out.trim(kKeepOutput);
  out.reserve(std::max<size_t>(in.size() / 2 + 1024, 4096));
  size_t avail_in = in.size();
  const auto* next_in = reinterpret_cast<const uint8_t*>(in.data());
  size_t used = 0;
  while (true) {
    size_t avail_out = out.cap - used;
    uint8_t* next_out = out.data.get() + used;
    if (!BrotliEncoderCompressStream(enc, op, &avail_in, &next_in, &avail_out, &next_out,
                                     nullptr)) {
      return used;
    }
    used = out.cap - avail_out;
    bool done = avail_in == 0 && !BrotliEncoderHasMoreOutput(enc) &&
                (op != BROTLI_OPERATION_FINISH || BrotliEncoderIsFinished(enc));
    if (done) {
      return used;
    }
    if (avail_out == 0) {
      out.grow(used);
    }
  }
}

common::StatusOr<std::shared_ptr<const plugin::Plugin>> make(const plugin::Json& json,
                                                             const plugin::BuildEnv&) {
  auto conf = parse(json);
  if (!conf.is_ok()) {
    return conf.status();
  }
  return std::shared_ptr<const plugin::Plugin>(std::make_shared<const Brotli>(std::move(*conf)));
}

}  // namespace

const plugin::PluginInfo& info() {
  static const plugin::PluginInfo kInfo{
      .name = "brotli",
      .priority = 996,
      .stream = false,
      .check = check,
      .make = make,
      .schema = kSchema,
      .worker_init = worker_init,
      // A global rule's and a route's instance would both compress in APISIX (the body twice
      // over); here the route's runs alone.
      .prefer_route = true,
  };
  return kInfo;
}

void worker_init(plugin::Shared&, plugin::WorkerLocal& local) {
  Pool& pool =
      local.object<Pool>("brotli.streams", [] { return std::make_unique<Pool>(kKeepIdle); });
  local.set_slot(&kTag, &pool);
}

void Brotli::head(Context& ctx) const { coding::read_head(ctx); }

// APISIX's header_filter, in its order: Accept-Encoding, then the type, length and HTTP
// version as the head stands, then Vary.
void Brotli::header_filter(Context& ctx) const {
  if ((ctx.coding & coding::kBr) == 0) {
    return;
  }
  bool type_later = false;
  if (!coding::head_qualifies(conf_.common, ctx, &type_later)) {
    return;
  }
  if (conf_.common.vary && !type_later) {
    ctx.resp.headers.add("Vary", "Accept-Encoding");
  }
  if (ctx.coder == nullptr) {
    ctx.coder = this;
  }
}

void Brotli::start(Context& ctx) const {
  if (!coding::final_qualifies(conf_.common, ctx, false)) {
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
  coding::edit_head(ctx, "br");
}

bool Brotli::open(Context& ctx) const {
  Pool* pool = ctx.worker != nullptr ? ctx.worker->slot<Pool>(&kTag) : nullptr;
  if (pool == nullptr) {
    return false;
  }
  Stream* s = pool->acquire();
  s->enc = BrotliEncoderCreateInstance(nullptr, nullptr, nullptr);
  if (s->enc == nullptr) {
    pool->release(s);
    return false;
  }
  BrotliEncoderSetParameter(s->enc, BROTLI_PARAM_MODE, static_cast<uint32_t>(conf_.mode));
  BrotliEncoderSetParameter(s->enc, BROTLI_PARAM_QUALITY, static_cast<uint32_t>(conf_.comp_level));
  if (conf_.lgwin != 0) {
    BrotliEncoderSetParameter(s->enc, BROTLI_PARAM_LGWIN, static_cast<uint32_t>(conf_.lgwin));
  }
  BrotliEncoderSetParameter(s->enc, BROTLI_PARAM_LGBLOCK, static_cast<uint32_t>(conf_.lgblock));
  ctx.coder_state = s;
  return true;
}

// Each piece is flushed out as it came in (APISIX's body_filter: compress, then flush); the
// last ends the stream and gives the encoder back.
void Brotli::code(Context& ctx, BodyPiece& piece) const {
  auto* s = static_cast<Stream*>(ctx.coder_state);
  if (s == nullptr) {
    code_reply(ctx, piece);
    return;
  }
  if (piece.data().empty() && !piece.eof()) {
    return;
  }
  size_t n =
      s->encode(piece.data(), piece.eof() ? BROTLI_OPERATION_FINISH : BROTLI_OPERATION_FLUSH);
  piece.replace(std::string_view(reinterpret_cast<const char*>(s->out.data.get()), n));
  if (piece.eof()) {
    ctx.end_coder();  // replace() copied the bytes
  }
}

void Brotli::code_reply(Context& ctx, BodyPiece& piece) const {
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
  coding::edit_head(ctx, "br");
  code(ctx, piece);
}

}  // namespace sluice::plugins::brotli
