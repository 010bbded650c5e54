#include "proxy/h2_client.h"

#include "common/log.h"
#include "proxy/upstream_conn.h"

namespace sluice::proxy {

namespace {

// One write batch at most, as on the downstream side.
constexpr size_t kBatch = 64 * 1024;

H2StreamSink* sink(nghttp2_session* ng, int32_t id) {
  return static_cast<H2StreamSink*>(nghttp2_session_get_stream_user_data(ng, id));
}

int on_header(nghttp2_session* ng, const nghttp2_frame* f, const uint8_t* name, size_t namelen,
              const uint8_t* value, size_t valuelen, uint8_t, void*) {
  if (f->hd.type == NGHTTP2_HEADERS) {
    if (H2StreamSink* s = sink(ng, f->hd.stream_id)) {
      s->on_field({reinterpret_cast<const char*>(name), namelen},
                  {reinterpret_cast<const char*>(value), valuelen});
    }
  }
  return 0;
}

int on_frame_recv(nghttp2_session* ng, const nghttp2_frame* f, void*) {
  H2StreamSink* s = f->hd.stream_id != 0 ? sink(ng, f->hd.stream_id) : nullptr;
  if (s == nullptr) {
    return 0;
  }
  bool end = (f->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
  if (f->hd.type == NGHTTP2_HEADERS) {
    s->on_fields_done(end);
  } else if (f->hd.type == NGHTTP2_DATA && end) {
    s->on_end();
  }
  return 0;
}

int on_data_chunk(nghttp2_session* ng, uint8_t, int32_t id, const uint8_t* data, size_t len,
                  void*) {
  if (H2StreamSink* s = sink(ng, id)) {
    s->on_data(data, len);
  } else {
    nghttp2_session_consume(ng, id, len);  // nobody reads it: the window goes back
  }
  return 0;
}

int on_stream_close(nghttp2_session* ng, int32_t id, uint32_t code, void*) {
  if (H2StreamSink* s = sink(ng, id)) {
    nghttp2_session_set_stream_user_data(ng, id, nullptr);
    s->on_close(code);
  }
  return 0;
}

}  // namespace

H2Client::~H2Client() { nghttp2_session_del(ng_); }

std::unique_ptr<H2Client> H2Client::make() {
  std::unique_ptr<H2Client> c(new H2Client());
  nghttp2_session_callbacks* cb = nullptr;
  if (nghttp2_session_callbacks_new(&cb) != 0) {
    return nullptr;
  }
  nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data_chunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
  nghttp2_option* opt = nullptr;
  if (nghttp2_option_new(&opt) != 0) {
    nghttp2_session_callbacks_del(cb);
    return nullptr;
  }
  // Windows reopen only as the client takes the response body (H2UpstreamRequest::consume):
  // a slow client holds the upstream back instead of growing a buffer here.
  nghttp2_option_set_no_auto_window_update(opt, 1);
  int rv = nghttp2_session_client_new2(&c->ng_, cb, c.get(), opt);
  nghttp2_option_del(opt);
  nghttp2_session_callbacks_del(cb);
  if (rv != 0) {
    return nullptr;
  }
  nghttp2_settings_entry iv[] = {
      {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, kH2StreamWindow},
  };
  if (nghttp2_submit_settings(c->ng_, NGHTTP2_FLAG_NONE, iv, std::size(iv)) != 0) {
    return nullptr;
  }
  nghttp2_session_set_local_window_size(c->ng_, NGHTTP2_FLAG_NONE, 0, kH2StreamWindow * 16);
  return c;
}

bool H2Client::feed(std::string_view in) {
  if (in.empty()) {
    return !broken_;
  }
  ssize_t n = nghttp2_session_mem_recv(ng_, reinterpret_cast<const uint8_t*>(in.data()), in.size());
  if (n < 0) {
    SLUICE_LOG(kInfo, "upstream HTTP/2: {}", nghttp2_strerror(static_cast<int>(n)));
    broken_ = true;
  }
  return !broken_;
}

bool H2Client::fill() {
  wbuf_.clear();
  while (wbuf_.size() < kBatch) {
    const uint8_t* data = nullptr;
    ssize_t n = nghttp2_session_mem_send(ng_, &data);
    if (n < 0) {
      SLUICE_LOG(kInfo, "upstream HTTP/2: {}", nghttp2_strerror(static_cast<int>(n)));
      broken_ = true;
      break;
    }
    if (n == 0) {
      break;
    }
    wbuf_.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
  }
  out_.add(wbuf_);
  return !wbuf_.empty();
}

io::Outbox::Result H2Client::flush(UpstreamConn& c, int* err) {
  while (true) {
    if (out_.empty() && !fill()) {
      return io::Outbox::Result::kDone;
    }
    if (!c.socket().writable()) {
      return io::Outbox::Result::kBlocked;
    }
    io::Outbox::Result r = c.stream().write(out_, err);
    if (r != io::Outbox::Result::kDone) {
      return r;
    }
  }
}

bool H2Client::usable() const {
  return !broken_ && !ended_ && nghttp2_session_check_request_allowed(ng_) != 0;
}

bool H2Client::idle_input(UpstreamConn& c) {
  while (true) {
    switch (c.stream().read(c.in(), 16384)) {
      case io::Transport::Read::kData:
        if (!feed(c.in().view())) {
          return false;
        }
        c.in().consume(c.in().size());
        continue;
      case io::Transport::Read::kEof:
        return false;
      case io::Transport::Read::kWait:
        break;
    }
    break;
  }
  int err = 0;
  return usable() && flush(c, &err) != io::Outbox::Result::kError;
}

}  // namespace sluice::proxy
