// nghttp2's callbacks for an H2Session: streams made from HEADERS, fields and DATA handed to
// them, closes noted (the stream goes at the next reap, never inside a callback), and the
// per-connection token buckets that answer floods. Callbacks only record: exchanges run from
// H2Session::step.

#include "common/log.h"
#include "server/client_conn.h"
#include "server/h2_session.h"
#include "server/h2_stream.h"
#include "server/worker.h"

namespace sluice::server {

// The static trampolines nghttp2 calls, with the session as user data.
struct H2Callbacks {
  static H2Session* of(void* user) { return static_cast<H2Session*>(user); }

  static int begin_headers(nghttp2_session*, const nghttp2_frame* f, void* user) {
    return of(user)->on_begin_headers(f);
  }
  static int header(nghttp2_session* ng, const nghttp2_frame* f, const uint8_t* name,
                    size_t namelen, const uint8_t* value, size_t valuelen, uint8_t, void*) {
    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST) {
      return 0;  // trailers are not forwarded yet
    }
    auto* s = static_cast<H2Stream*>(nghttp2_session_get_stream_user_data(ng, f->hd.stream_id));
    if (s != nullptr) {
      s->on_header({reinterpret_cast<const char*>(name), namelen},
                   {reinterpret_cast<const char*>(value), valuelen});
    }
    return 0;
  }
  static int frame_recv(nghttp2_session*, const nghttp2_frame* f, void* user) {
    return of(user)->on_frame_recv(f);
  }
  static int frame_send(nghttp2_session*, const nghttp2_frame* f, void* user) {
    return of(user)->on_frame_send(f);
  }
  static int data_chunk(nghttp2_session* ng, uint8_t, int32_t id, const uint8_t* data, size_t len,
                        void*) {
    auto* s = static_cast<H2Stream*>(nghttp2_session_get_stream_user_data(ng, id));
    if (s == nullptr) {
      nghttp2_session_consume(ng, id, len);  // a stream we no longer keep: window back
      return 0;
    }
    s->on_data(data, len);
    return 0;
  }
  static int stream_close(nghttp2_session*, int32_t id, uint32_t, void* user) {
    return of(user)->on_stream_close(id);
  }
};

bool H2Session::make_session() {
  nghttp2_session_callbacks* cb = nullptr;
  if (nghttp2_session_callbacks_new(&cb) != 0) {
    return false;
  }
  nghttp2_session_callbacks_set_on_begin_headers_callback(cb, &H2Callbacks::begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(cb, &H2Callbacks::header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cb, &H2Callbacks::frame_recv);
  nghttp2_session_callbacks_set_on_frame_send_callback(cb, &H2Callbacks::frame_send);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, &H2Callbacks::data_chunk);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, &H2Callbacks::stream_close);
  nghttp2_option* opt = nullptr;
  if (nghttp2_option_new(&opt) != 0) {
    nghttp2_session_callbacks_del(cb);
    return false;
  }
  // Windows reopen only as exchanges consume the body (H2Stream::consume_body).
  nghttp2_option_set_no_auto_window_update(opt, 1);
  nghttp2_option_set_no_closed_streams(opt, 1);
  nghttp2_option_set_max_continuations(opt, cfg_.max_continuations);
  nghttp2_option_set_max_settings(opt, 32);
  nghttp2_option_set_max_outbound_ack(opt, 1000);
  // nghttp2's own Rapid Reset bucket stays as a backstop behind ours (which answers with
  // ENHANCE_YOUR_CALM and logs): twice our burst, the same rate.
  nghttp2_option_set_stream_reset_rate_limit(opt, uint64_t{cfg_.reset_burst} * 2, cfg_.reset_rate);
  int rv = nghttp2_session_server_new2(&ng_, cb, this, opt);
  nghttp2_option_del(opt);
  nghttp2_session_callbacks_del(cb);
  return rv == 0;
}

ssize_t H2Session::read_data(nghttp2_session*, int32_t, uint8_t* buf, size_t len, uint32_t* flags,
                             nghttp2_data_source* src, void*) {
  return static_cast<H2Stream*>(src->ptr)->produce(buf, len, flags);
}

int H2Session::on_begin_headers(const nghttp2_frame* f) {
  if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST) {
    return 0;
  }
  if (goaway_sent_) {
    reset_stream(f->hd.stream_id, NGHTTP2_REFUSED_STREAM);
    return 0;
  }
  if (++requests_ >= cfg_.max_requests) {
    goaway(f->hd.stream_id);  // this one is served, the client opens a new connection next
  }
  ++heads_pending_;
  auto s = std::make_unique<H2Stream>(*this, f->hd.stream_id, w_.take_message());
  nghttp2_session_set_stream_user_data(ng_, f->hd.stream_id, s.get());
  streams_[f->hd.stream_id] = std::move(s);
  return 0;
}

int H2Session::on_frame_recv(const nghttp2_frame* f) {
  const bool end = (f->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
  H2Stream* s = f->hd.stream_id != 0 ? stream(f->hd.stream_id) : nullptr;
  uint64_t now = w_.loop().now_ms();
  switch (f->hd.type) {
    case NGHTTP2_HEADERS:
      if (s != nullptr) {
        if (f->headers.cat == NGHTTP2_HCAT_REQUEST) {
          s->on_head_done(end);
        } else if (end) {
          s->on_remote_end();  // trailers end the body
        }
        mark_ready(s);
      }
      break;
    case NGHTTP2_DATA:
      if (f->hd.length == 0 && !end && !control_.take(now)) {
        fail(NGHTTP2_ENHANCE_YOUR_CALM, "empty DATA frame flood");
      }
      if (s != nullptr && end) {
        s->on_remote_end();
      }
      if (s != nullptr) {
        mark_ready(s);
      }
      break;
    case NGHTTP2_RST_STREAM:
      // CVE-2023-44487: every reset stream may have started an exchange and an upstream
      // request for nothing, so resets are budgeted per connection.
      if (!resets_.take(now)) {
        fail(NGHTTP2_ENHANCE_YOUR_CALM, "RST_STREAM flood (rapid reset)");
      }
      break;
    case NGHTTP2_PING:
    case NGHTTP2_SETTINGS:
    case NGHTTP2_PRIORITY:
      if ((f->hd.flags & NGHTTP2_FLAG_ACK) == 0 && !control_.take(now)) {
        fail(NGHTTP2_ENHANCE_YOUR_CALM, "control frame flood (PING, SETTINGS or PRIORITY)");
      }
      break;
    default:
      break;
  }
  return 0;
}

int H2Session::on_frame_send(const nghttp2_frame* f) {
  H2Stream* s = f->hd.stream_id != 0 ? stream(f->hd.stream_id) : nullptr;
  if (s == nullptr) {
    return 0;
  }
  if (f->hd.type == NGHTTP2_HEADERS) {
    s->head_bytes_ += 9 + f->hd.length;
  }
  // RFC 9113 8.1: a response complete before its request may end with RST_STREAM(NO_ERROR),
  // so the client stops sending a body nobody reads.
  if ((f->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0 && !s->remote_end()) {
    reset_stream(f->hd.stream_id, NGHTTP2_NO_ERROR);
  }
  return 0;
}

int H2Session::on_stream_close(int32_t id) {
  if (H2Stream* s = stream(id)) {
    s->on_closed();
    nghttp2_session_set_stream_user_data(ng_, id, nullptr);
    closed_.push_back(id);
    mark_ready(s);
  }
  return 0;
}

}  // namespace sluice::server
