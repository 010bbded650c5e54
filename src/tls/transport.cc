#include "tls/transport.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/x509.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "common/log.h"

namespace sluice::tls {

namespace {

// A record is at most 16 KiB of plaintext plus its header, padding and tag.
constexpr size_t kRecordRoom = 16384 + 512;
// Plaintext encrypted per round: one full record, so out_ never needs more than one buffer.
constexpr size_t kPlainChunk = 16384;

// Buffers of kRecordRoom bytes, per worker thread: a busy connection takes and gives them
// without allocating, an idle one holds none. The pool keeps a few for the connections busy
// at once; more would be memory every idle connection seems to cost.
constexpr size_t kPoolMax = 32;
struct BufferPool {
  std::vector<std::unique_ptr<char[]>> free;
  ~BufferPool() = default;
};
thread_local BufferPool t_pool;

void take(io::Buffer* b) {
  if (b->capacity() != 0) {
    return;
  }
  if (!t_pool.free.empty()) {
    b->adopt(std::move(t_pool.free.back()), kRecordRoom);
    t_pool.free.pop_back();
  } else {
    b->reserve_total(kRecordRoom);
  }
}

void give(io::Buffer* b) {
  if (b->capacity() == 0) {
    return;
  }
  if (b->capacity() == kRecordRoom && t_pool.free.size() < kPoolMax) {
    t_pool.free.push_back(b->detach());
  } else {
    b->release();
  }
}

// Small writes (a head and a short body) are encrypted as one record.
thread_local char t_stage[kPlainChunk];

std::string name_text(X509_NAME* name) {
  BIO* bio = BIO_new(BIO_s_mem());
  X509_NAME_print_ex(bio, name, 0, XN_FLAG_RFC2253);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  std::string out(data, n > 0 ? static_cast<size_t>(n) : 0);
  BIO_free(bio);
  return out;
}

}  // namespace

struct BioMethods {
  static BIO_METHOD* get() {
    static BIO_METHOD* m = make();
    return m;
  }
  static BIO_METHOD* make() {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "sluice");
    BIO_meth_set_write(m, [](BIO* b, const char* d, int n) {
      return static_cast<TlsTransport*>(BIO_get_data(b))->bio_write(d, n);
    });
    BIO_meth_set_read(m, [](BIO* b, char* d, int n) {
      return static_cast<TlsTransport*>(BIO_get_data(b))->bio_read(d, n);
    });
    BIO_meth_set_ctrl(
        m, [](BIO*, int cmd, long, void*) -> long { return cmd == BIO_CTRL_FLUSH ? 1 : 0; });
    BIO_meth_set_create(m, [](BIO* b) {
      BIO_set_init(b, 1);
      return 1;
    });
    return m;
  }
};

TlsTransport::TlsTransport(io::SocketTransport& sock, SSL* ssl) : sock_(sock), ssl_(ssl) {
  bio_ = BIO_new(BioMethods::get());
  BIO_set_data(bio_, this);
  SSL_set_bio(ssl_, bio_, bio_);  // the same BIO both ways takes our one reference
  SSL_set_app_data(ssl_, static_cast<HandshakeHost*>(this));
}

TlsTransport::~TlsTransport() {
  sock_.cancel_read();  // before in_ goes away: a queued read writes into it
  box_.cancel();
  SSL_free(ssl_);
  give(&in_);
  give(&out_);
}

void TlsTransport::chose(const CertEntryPtr& e, std::string_view sni) {
  cert_ = e;
  sni_.assign(sni);
}

int TlsTransport::bio_read(char* dst, int len) {
  BIO_clear_retry_flags(bio_);
  if (in_.empty()) {
    if (eof_) {
      return 0;
    }
    BIO_set_retry_read(bio_);
    return -1;
  }
  size_t n = std::min(in_.size(), static_cast<size_t>(len));
  std::memcpy(dst, in_.data(), n);
  in_.consume(n);
  return static_cast<int>(n);
}

int TlsTransport::bio_write(const char* src, int len) {
  BIO_clear_retry_flags(bio_);
  if (out_busy_) {
    BIO_set_retry_write(bio_);  // the socket still has the last batch: nothing may move
    return -1;
  }
  take(&out_);
  if (out_.writable() < static_cast<size_t>(len)) {
    out_.compact();
    if (out_.writable() < static_cast<size_t>(len)) {
      out_.reserve_total(out_.size() + len);
    }
  }
  std::memcpy(out_.write_ptr(), src, len);
  out_.commit(len);
  return len;
}

TlsTransport::Pump TlsTransport::fill() {
  if (eof_) {
    return Pump::kEof;
  }
  if (in_.capacity() == 0) {
    if (!sock_.readable() && !sock_.read_pending()) {
      return Pump::kWait;  // no edge yet: take no buffer
    }
    take(&in_);
  }
  if (!sock_.read_pending() && in_.writable() == 0) {
    in_.compact();
  }
  switch (sock_.read(in_, in_.capacity())) {
    case Read::kData:
      return Pump::kProgress;
    case Read::kWait:
      return Pump::kWait;
    case Read::kEof:
      break;
  }
  eof_ = true;
  return Pump::kEof;
}

io::Outbox::Result TlsTransport::flush(int* err) {
  if (!out_busy_) {
    if (out_.empty()) {
      return io::Outbox::Result::kDone;
    }
    box_.add(out_.view());
    out_busy_ = true;
  }
  if (!sock_.writable()) {
    return io::Outbox::Result::kBlocked;
  }
  io::Outbox::Result r = sock_.write(box_, err);
  if (r == io::Outbox::Result::kDone) {
    out_busy_ = false;
    out_.clear();
  }
  return r;
}

TlsTransport::Pump TlsTransport::on_ssl_error(int ret, bool* want_write) {
  *want_write = false;
  int e = SSL_get_error(ssl_, ret);
  if (e == SSL_ERROR_WANT_READ) {
    return Pump::kProgress;
  }
  if (e == SSL_ERROR_WANT_WRITE) {
    *want_write = true;
    return Pump::kProgress;
  }
  if (e == SSL_ERROR_ZERO_RETURN) {
    eof_ = true;  // close_notify: a clean end
    return Pump::kEof;
  }
  if (!done_ || !eof_) {
    // A broken handshake or record, or a close in the middle of one: say why in the log.
    unsigned long code = ERR_peek_error();
    if (code != 0) {
      char buf[256];
      ERR_error_string_n(code, buf, sizeof(buf));
      error_ = buf;
    } else if (eof_) {
      error_ = "the peer closed the connection";
    } else {
      error_ = std::string("TLS error ") + std::to_string(e);
    }
    if (!done_ && !SSL_is_server(ssl_) && (SSL_get_verify_mode(ssl_) & SSL_VERIFY_PEER) != 0) {
      // An upstream's certificate refused: say why as nginx does ("(62:hostname mismatch)").
      long v = SSL_get_verify_result(ssl_);
      if (v != X509_V_OK) {
        error_ = "upstream SSL certificate verify error: (" + std::to_string(v) + ":" +
                 X509_verify_cert_error_string(v) + ")";
      }
    }
    failed_ = !eof_ || !done_;
  }
  ERR_clear_error();
  eof_ = true;
  return Pump::kEof;
}

void TlsTransport::finish_handshake() {
  done_ = true;
  info_.protocol = SSL_get_version(ssl_);
  info_.cipher = SSL_get_cipher_name(ssl_);
  info_.session_reused = SSL_session_reused(ssl_) == 1;
  if (sni_.empty()) {
    if (const char* name = SSL_get_servername(ssl_, TLSEXT_NAMETYPE_host_name)) {
      sni_ = name;
    }
  }
  info_.server_name = sni_;
  if (!SSL_is_server(ssl_)) {
    return;
  }
  X509* peer = SSL_get0_peer_certificate(ssl_);
  if (peer == nullptr) {
    verify_ = "NONE";
  } else {
    long r = SSL_get_verify_result(ssl_);
    verify_ =
        r == X509_V_OK ? "SUCCESS" : std::string("FAILED:") + X509_verify_cert_error_string(r);
    s_dn_ = name_text(X509_get_subject_name(peer));
    i_dn_ = name_text(X509_get_issuer_name(peer));
    BIGNUM* bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(peer), nullptr);
    if (bn != nullptr) {
      char* hex = BN_bn2hex(bn);
      serial_ = hex;
      OPENSSL_free(hex);
      BN_free(bn);
    }
  }
  info_.client_verify = verify_;
  info_.client_s_dn = s_dn_;
  info_.client_i_dn = i_dn_;
  info_.client_serial = serial_;
}

bool TlsTransport::readable() const {
  // A handshake flight the socket could not take yet counts: read() is what sends it.
  return sock_.readable() || !in_.empty() || SSL_has_pending(ssl_) == 1 ||
         (!done_ && (out_busy_ || !out_.empty()));
}

void TlsTransport::send_alert() {
  // A fatal alert OpenSSL wrote on failing (unrecognized_name, certificate_required, ...):
  // the peer learns why, as from nginx, instead of seeing a bare close.
  if (!out_busy_ && !out_.empty()) {
    io::send_now(sock_.fd(), out_.data(), out_.size());
    out_.clear();
  }
}

io::Transport::Read TlsTransport::read(io::Buffer& b, size_t max_buffer) {
  while (true) {
    if (failed_ || (eof_ && in_.empty() && done_ && SSL_has_pending(ssl_) == 0 &&
                    (SSL_get_shutdown(ssl_) & SSL_RECEIVED_SHUTDOWN) != 0)) {
      return Read::kEof;
    }
    if (b.writable() == 0) {
      b.compact();
      if (b.writable() == 0) {
        if (b.capacity() >= max_buffer) {
          return Read::kWait;
        }
        b.reserve_total(std::min(std::max<size_t>(b.capacity() * 2, 4096), max_buffer));
      }
    }
    if (done_ && in_.empty() && SSL_has_pending(ssl_) == 0 && out_.empty() && !eof_) {
      // Nothing for OpenSSL to decrypt: a read from the socket first, rather than an
      // SSL_read that can only fail (a third of a kept-alive request's TLS cost).
      Pump p = fill();
      if (p == Pump::kWait) {
        if (in_.empty() && !sock_.read_pending()) {
          give(&in_);
        }
        return Read::kWait;
      }
    }
    size_t got = 0;
    int ret = SSL_read_ex(ssl_, b.write_ptr(), b.writable(), &got);
    if (!done_ && SSL_is_init_finished(ssl_)) {
      finish_handshake();
    }
    if (ret == 1) {
      b.commit(got);
      return Read::kData;
    }
    bool want_write = false;
    if (on_ssl_error(ret, &want_write) == Pump::kEof) {
      send_alert();
      return Read::kEof;
    }
    // Handshake messages (and alerts) go out before we wait for the peer's answer.
    int err = 0;
    io::Outbox::Result w = flush(&err);
    if (w == io::Outbox::Result::kError) {
      failed_ = true;
      error_ = std::strerror(err);
      return Read::kEof;
    }
    if (want_write) {
      if (w != io::Outbox::Result::kDone) {
        return Read::kWait;  // driven again when the socket takes the batch
      }
      continue;
    }
    switch (fill()) {
      case Pump::kProgress:
        continue;
      case Pump::kWait:
        if (in_.empty() && !sock_.read_pending() && done_) {
          give(&in_);
        }
        return Read::kWait;
      case Pump::kEof:
        continue;  // SSL reads the end (bio_read returns 0) and says how it ended
    }
  }
}

io::Outbox::Result TlsTransport::write(io::Outbox& out, int* err) {
  while (true) {
    if (failed_) {
      *err = EPIPE;
      return io::Outbox::Result::kError;
    }
    io::Outbox::Result r = flush(err);
    if (r != io::Outbox::Result::kDone) {
      return r;
    }
    if (out.empty()) {
      if (done_) {
        give(&out_);
      }
      return io::Outbox::Result::kDone;
    }
    const char* src;
    size_t len;
    size_t total = out.pending_bytes();
    if (out.pending_count() > 1 && total <= kPlainChunk) {
      // A head and a short body: one record, one encryption.
      size_t at = 0;
      for (int i = 0; i < out.pending_count(); ++i) {
        const iovec& v = out.pending_at(i);
        std::memcpy(t_stage + at, v.iov_base, v.iov_len);
        at += v.iov_len;
      }
      src = t_stage;
      len = total;
    } else {
      const iovec& v = out.pending_at(0);
      src = static_cast<const char*>(v.iov_base);
      len = std::min(v.iov_len, kPlainChunk);
    }
    size_t wrote = 0;
    int ret = SSL_write_ex(ssl_, src, len, &wrote);
    if (!done_ && SSL_is_init_finished(ssl_)) {
      finish_handshake();
    }
    if (ret == 1) {
      out.consume(wrote);
      continue;
    }
    bool want_write = false;
    if (on_ssl_error(ret, &want_write) == Pump::kEof) {
      *err = EPIPE;
      return io::Outbox::Result::kError;
    }
    if (want_write) {
      continue;  // flush() first, then the same bytes again
    }
    // The handshake (an upstream connection's first write) needs the peer's answer.
    r = flush(err);
    if (r == io::Outbox::Result::kError) {
      return r;
    }
    switch (fill()) {
      case Pump::kProgress:
        continue;
      case Pump::kWait:
        return io::Outbox::Result::kQueued;  // driven again when the answer arrives
      case Pump::kEof:
        continue;
    }
  }
}

void TlsTransport::close_notify() {
  if (!done_ || failed_ || (SSL_get_shutdown(ssl_) & SSL_SENT_SHUTDOWN) != 0) {
    return;
  }
  if (out_busy_ || !out_.empty()) {
    // Response bytes are still on their way: a close_notify cannot overtake them. The session
    // stays resumable all the same.
    SSL_set_shutdown(ssl_, SSL_SENT_SHUTDOWN);
    return;
  }
  SSL_shutdown(ssl_);  // close_notify into out_
  if (!out_.empty()) {
    io::send_now(sock_.fd(), out_.data(), out_.size());
    out_.clear();
  }
  ERR_clear_error();
}

void TlsTransport::shutdown_write() {
  close_notify();
  sock_.shutdown_write();
}

bool TlsTransport::cancel_read() {
  bool stray = sock_.cancel_read();
  if (!in_.empty() && !failed_) {
    // Records that arrived after the response: handshake messages (a TLS 1.3 session ticket)
    // are taken in; application data is a stray.
    char byte;
    size_t got = 0;
    if (SSL_read_ex(ssl_, &byte, 1, &got) == 1) {
      stray = true;
    }
    ERR_clear_error();
  }
  if (in_.empty() && !sock_.read_pending()) {
    give(&in_);
  }
  return stray || !in_.empty() || SSL_has_pending(ssl_) == 1;
}

void TlsTransport::release_buffers() {
  if (in_.empty() && !sock_.read_pending()) {
    give(&in_);
  }
  if (out_.empty() && !out_busy_) {
    give(&out_);
  }
}

}  // namespace sluice::tls
