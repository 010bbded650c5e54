"""A scriptable, threaded HTTP/1.1 upstream built on raw sockets.

It is deliberately not http.server: tests need it to misbehave (reset before answering, close
mid-body, drip bytes, close an idle keep-alive connection) and to record exactly what the
gateway sent (raw request heads, connection counts, who closed a connection).

Usage:
    up = FakeUpstream(name="a")          # starts listening on a free loopback port
    up.route("/slow", delay(2.0))        # exact path
    up.route("/files/*", download(1 << 20))  # prefix (a trailing '*')
    ...                                  # every other path: echo()
    up.stop()

Every behaviour is an object with handle(up, conn, req) -> keep, where keep is True (keep the
connection), False (close it after the response) or a float (keep it, but close it from this
side once it has been idle that many seconds).
"""

import hashlib
import json
import random
import select
import socket
import struct
import threading
import time
import zlib

# A deterministic byte pattern for large transfers. Its length is deliberately not a power of
# two, so that a dropped, duplicated or reordered buffer shows up in the CRC.
PATTERN_LEN = (1 << 20) + 13
PATTERN = random.Random(20240501).randbytes(PATTERN_LEN)
_PATTERN2 = memoryview(PATTERN + PATTERN)


def pattern_chunks(total, max_chunk=PATTERN_LEN):
    """Yields memoryviews that together form the first `total` bytes of PATTERN repeated."""
    offset = 0
    max_chunk = min(max_chunk, PATTERN_LEN)
    while offset < total:
        start = offset % PATTERN_LEN
        n = min(max_chunk, total - offset)
        yield _PATTERN2[start:start + n]
        offset += n


def pattern_crc(total):
    crc = 0
    for chunk in pattern_chunks(total):
        crc = zlib.crc32(chunk, crc)
    return crc


REASONS = {
    100: "Continue", 200: "OK", 201: "Created", 204: "No Content", 206: "Partial Content",
    301: "Moved Permanently", 302: "Found", 304: "Not Modified", 400: "Bad Request",
    401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 413: "Payload Too Large",
    418: "I'm a teapot", 429: "Too Many Requests", 500: "Internal Server Error",
    502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout",
}


class ProtocolError(Exception):
    pass


class Request:
    """One request as the upstream received it (fields filled in as it is processed)."""

    def __init__(self, raw_head, method, target, version, headers, conn):
        self.raw_head = raw_head
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers  # list of (name, value), as received, in order
        path, _, query = target.partition("?")
        self.path = path
        self.query = query
        self.conn_id = conn.record.id
        self.conn_req = 0  # 1-based index of this request on its connection
        self.local_port = conn.record.local_port
        self.received_at = time.monotonic()
        self.body_len = None
        self.body_sha256 = None
        self.body_crc32 = None
        self.chunked = False
        self.trailers = []
        self.sent_bytes = None
        self.sent_crc32 = None
        self.outcome = None  # e.g. "reset", "dropped", "closed-mid-body"
        self.done = threading.Event()

    def header(self, name):
        name = name.lower()
        for k, v in self.headers:
            if k.lower() == name:
                return v
        return None

    def header_all(self, name):
        name = name.lower()
        return [v for k, v in self.headers if k.lower() == name]

    def wants_close(self):
        tokens = ",".join(self.header_all("connection")).lower()
        tokens = [t.strip() for t in tokens.split(",")]
        if self.version == "HTTP/1.0":
            return "keep-alive" not in tokens
        return "close" in tokens

    def has_body(self):
        return self.header("transfer-encoding") is not None or \
            int(self.header("content-length") or 0) > 0

    def as_json(self, up):
        return {
            "method": self.method,
            "target": self.target,
            "path": self.path,
            "query": self.query,
            "version": self.version,
            "headers": [[k, v] for k, v in self.headers],
            "body_len": self.body_len,
            "body_sha256": self.body_sha256,
            "chunked": self.chunked,
            "trailers": [[k, v] for k, v in self.trailers],
            "conn_id": self.conn_id,
            "conn_req": self.conn_req,
            "upstream": up.name,
            "port": self.local_port,
        }


class ConnRecord:
    """What the upstream knows about one accepted connection."""

    def __init__(self, cid, peer, local_port):
        self.id = cid
        self.peer = peer
        self.local_port = local_port
        self.opened_at = time.monotonic()
        self.closed_at = None
        self.closed_by = None  # "peer" (EOF/reset from the gateway) or "us"
        self.requests = 0

    @property
    def open(self):
        return self.closed_at is None


class Conn:
    """A buffered server-side connection."""

    def __init__(self, sock, record):
        self.sock = sock
        self.record = record
        self.buf = bytearray()

    def _fill(self, n=262144):
        data = self.sock.recv(n)
        if not data:
            raise EOFError
        self.buf += data

    def read_until(self, delim, limit):
        start = 0
        while True:
            i = self.buf.find(delim, start)
            if i >= 0:
                out = bytes(self.buf[:i + len(delim)])
                del self.buf[:i + len(delim)]
                return out
            if len(self.buf) > limit:
                raise ProtocolError("line or head too long")
            start = max(0, len(self.buf) - len(delim) + 1)
            self._fill()

    def read_exact_into(self, n, sink):
        """Reads exactly n bytes, passing each piece to sink(memoryview)."""
        while n > 0:
            if self.buf:
                take = min(n, len(self.buf))
                sink(memoryview(bytes(self.buf[:take])))
                del self.buf[:take]
                n -= take
                continue
            data = self.sock.recv(min(n, 1 << 20))
            if not data:
                raise EOFError
            sink(memoryview(data))
            n -= len(data)

    def read_head(self):
        """Returns the next request, or None on a clean EOF between requests."""
        while not self.buf:
            try:
                self._fill()
            except EOFError:
                return None
        raw = self.read_until(b"\r\n\r\n", 1 << 20)
        lines = raw[:-4].split(b"\r\n")
        try:
            method, target, version = lines[0].decode("latin-1").split(" ", 2)
        except ValueError:
            raise ProtocolError("bad request line %r in head %r" % (lines[0], raw))
        headers = []
        for line in lines[1:]:
            name, sep, value = line.decode("latin-1").partition(":")
            if not sep:
                raise ProtocolError("bad header line %r in head %r" % (line, raw))
            headers.append((name, value.strip()))
        return Request(raw, method, target, version, headers, self)

    def consume_body(self, req, sink):
        """Reads the request body (Content-Length or chunked) into sink(memoryview)."""
        te = req.header("transfer-encoding")
        if te is not None:
            if te.lower().split(",")[-1].strip() != "chunked":
                raise ProtocolError("unsupported transfer-encoding %r" % te)
            req.chunked = True
            while True:
                line = self.read_until(b"\r\n", 4096)
                size = int(line.split(b";")[0].strip(), 16)
                if size == 0:
                    break
                self.read_exact_into(size, sink)
                if self.read_until(b"\r\n", 2) != b"\r\n":
                    raise ProtocolError("chunk not followed by CRLF")
            while True:  # trailers
                line = self.read_until(b"\r\n", 8192)
                if line == b"\r\n":
                    break
                name, _, value = line.decode("latin-1").partition(":")
                req.trailers.append((name, value.strip()))
            return
        n = int(req.header("content-length") or 0)
        self.read_exact_into(n, sink)

    def send(self, data):
        self.sock.sendall(data)


def build_head(status, headers, reason=None, version="HTTP/1.1"):
    reason = reason if reason is not None else REASONS.get(status, "Status")
    out = ["%s %d %s\r\n" % (version, status, reason)]
    for k, v in headers:
        out.append("%s: %s\r\n" % (k, v))
    out.append("\r\n")
    return "".join(out).encode("latin-1")


def _has(headers, name):
    return any(k.lower() == name.lower() for k, _ in headers)


def _body_allowed(req, status):
    return req.method != "HEAD" and status not in (204, 304) and not 100 <= status < 200


def _read_body_hashing(conn, req):
    sha = hashlib.sha256()
    count = [0]

    def sink(mv):
        sha.update(mv)
        count[0] += len(mv)

    conn.consume_body(req, sink)
    req.body_len = count[0]
    req.body_sha256 = sha.hexdigest()


def _drain(conn, req):
    if req.body_len is None:
        _read_body_hashing(conn, req)


# --------------------------------------------------------------------------- behaviours


class Echo:
    """Answers with a JSON description of the request as received."""

    def __init__(self, status=200, headers=(), chunked=False):
        self.status = status
        self.headers = list(headers)
        self.chunked = chunked

    def handle(self, up, conn, req):
        _drain(conn, req)
        body = json.dumps(req.as_json(up)).encode()
        headers = [("Content-Type", "application/json"), ("Server", "fake-upstream/1.0")]
        headers += self.headers
        if self.chunked:
            headers.append(("Transfer-Encoding", "chunked"))
            conn.send(build_head(self.status, headers))
            if _body_allowed(req, self.status):
                conn.send(b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
        else:
            headers.append(("Content-Length", str(len(body))))
            conn.send(build_head(self.status, headers) +
                      (body if _body_allowed(req, self.status) else b""))
        return True


class Fixed:
    """A fixed answer. Content-Length is added unless headers carry a framing header."""

    def __init__(self, status=200, headers=(), body=b"", reason=None, close=False):
        self.status = status
        self.headers = list(headers)
        self.body = body if isinstance(body, bytes) else body.encode()
        self.reason = reason
        self.close = close

    def handle(self, up, conn, req):
        _drain(conn, req)
        headers = list(self.headers)
        if not _has(headers, "server"):
            headers.append(("Server", "fake-upstream/1.0"))
        framed = _has(headers, "content-length") or _has(headers, "transfer-encoding")
        if not framed and self.status not in (204, 304) and not 100 <= self.status < 200:
            headers.append(("Content-Length", str(len(self.body))))
        if self.close and not _has(headers, "connection"):
            headers.append(("Connection", "close"))
        data = build_head(self.status, headers, self.reason)
        if _body_allowed(req, self.status):
            data += self.body
        conn.send(data)
        return not self.close


class Raw:
    """Sends exactly these bytes (after reading the request), then keeps or closes."""

    def __init__(self, data, close=True):
        self.data = data
        self.close = close

    def handle(self, up, conn, req):
        _drain(conn, req)
        conn.send(self.data)
        return not self.close


class Chunked:
    """A chunked answer made of the given chunks, with optional trailers."""

    def __init__(self, chunks, status=200, headers=(), trailers=(), gap=0.0):
        self.chunks = [c if isinstance(c, bytes) else c.encode() for c in chunks]
        self.status = status
        self.headers = list(headers)
        self.trailers = list(trailers)
        self.gap = gap

    def handle(self, up, conn, req):
        _drain(conn, req)
        headers = self.headers + [("Transfer-Encoding", "chunked"),
                                  ("Server", "fake-upstream/1.0")]
        conn.send(build_head(self.status, headers))
        if not _body_allowed(req, self.status):
            return True
        for c in self.chunks:
            conn.send(b"%x\r\n%s\r\n" % (len(c), c))
            if self.gap:
                time.sleep(self.gap)
        tail = b"0\r\n"
        for k, v in self.trailers:
            tail += ("%s: %s\r\n" % (k, v)).encode()
        conn.send(tail + b"\r\n")
        return True


class Delay:
    """Waits before sending anything, then delegates."""

    def __init__(self, seconds, then=None):
        self.seconds = seconds
        self.then = then or Echo()

    def handle(self, up, conn, req):
        _drain(conn, req)
        if up._stop.wait(self.seconds):
            return False
        return self.then.handle(up, conn, req)


class Drip:
    """Sends headers at once, then the body in small pieces with a pause between them."""

    def __init__(self, total, piece=100, interval=0.1, chunked=False):
        self.total = total
        self.piece = piece
        self.interval = interval
        self.chunked = chunked

    def handle(self, up, conn, req):
        _drain(conn, req)
        headers = [("Content-Type", "application/octet-stream"), ("Server", "fake-upstream/1.0")]
        headers.append(("Transfer-Encoding", "chunked") if self.chunked
                       else ("Content-Length", str(self.total)))
        conn.send(build_head(200, headers))
        sent = 0
        crc = 0
        for chunk in pattern_chunks(self.total, self.piece):
            if up._stop.wait(self.interval):
                return False
            crc = zlib.crc32(chunk, crc)
            conn.send(b"%x\r\n%s\r\n" % (len(chunk), chunk) if self.chunked else chunk)
            sent += len(chunk)
        if self.chunked:
            conn.send(b"0\r\n\r\n")
        req.sent_bytes, req.sent_crc32 = sent, crc
        return True


class CloseMidBody:
    """Announces `declared` bytes, sends `sent` of them, then closes (FIN)."""

    def __init__(self, declared=100000, sent=1000, chunked=False):
        self.declared = declared
        self.sent = sent
        self.chunked = chunked

    def handle(self, up, conn, req):
        _drain(conn, req)
        body = bytes(_PATTERN2[:self.sent])
        if self.chunked:
            head = build_head(200, [("Transfer-Encoding", "chunked")])
            conn.send(head + b"%x\r\n%s" % (self.declared, body))
        else:
            conn.send(build_head(200, [("Content-Length", str(self.declared))]) + body)
        req.outcome = "closed-mid-body"
        return False


class Reset:
    """Reads the request, then closes with SO_LINGER 0 (an RST) without answering."""

    def handle(self, up, conn, req):
        _drain(conn, req)
        conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        req.outcome = "reset"
        return False


class CloseWithoutResponse:
    """Reads the request, then closes (FIN) without answering."""

    def handle(self, up, conn, req):
        _drain(conn, req)
        req.outcome = "dropped"
        return False


class Download:
    """Streams `total` bytes of PATTERN (Content-Length or chunked), recording the CRC sent."""

    def __init__(self, total, chunked=False, piece=PATTERN_LEN):
        self.total = total
        self.chunked = chunked
        self.piece = piece

    def handle(self, up, conn, req):
        _drain(conn, req)
        headers = [("Content-Type", "application/octet-stream"), ("Server", "fake-upstream/1.0")]
        headers.append(("Transfer-Encoding", "chunked") if self.chunked
                       else ("Content-Length", str(self.total)))
        conn.send(build_head(200, headers))
        if req.method == "HEAD":
            return True
        crc = 0
        sent = 0
        for chunk in pattern_chunks(self.total, self.piece):
            crc = zlib.crc32(chunk, crc)
            if self.chunked:
                conn.send(b"%x\r\n" % len(chunk))
                conn.send(chunk)
                conn.send(b"\r\n")
            else:
                conn.send(chunk)
            sent += len(chunk)
            req.sent_bytes = sent
        if self.chunked:
            conn.send(b"0\r\n\r\n")
        req.sent_crc32 = crc
        return True


class UploadCount:
    """Reads the body as it streams in, answering its length and CRC-32 as JSON.

    With pause_at, stops reading for pause_for seconds once that many bytes arrived (to
    make the gateway hold back the client: backpressure).
    """

    def __init__(self, pause_at=None, pause_for=0.0):
        self.pause_at = pause_at
        self.pause_for = pause_for

    def handle(self, up, conn, req):
        state = {"n": 0, "crc": 0, "paused": False}

        def sink(mv):
            state["n"] += len(mv)
            state["crc"] = zlib.crc32(mv, state["crc"])
            req.body_len = state["n"]
            if self.pause_at is not None and not state["paused"] and \
                    state["n"] >= self.pause_at:
                state["paused"] = True
                up._stop.wait(self.pause_for)

        conn.consume_body(req, sink)
        req.body_len = state["n"]
        req.body_crc32 = state["crc"]
        body = json.dumps({"body_len": state["n"], "crc32": state["crc"],
                           "chunked": req.chunked, "headers": req.headers}).encode()
        conn.send(build_head(200, [("Content-Type", "application/json"),
                                   ("Content-Length", str(len(body)))]) + body)
        return True


class IdleClose:
    """Answers (keep-alive) via `then`, then closes the connection once idle `after` seconds."""

    def __init__(self, after=0.1, then=None):
        self.after = after
        self.then = then or Echo()

    def handle(self, up, conn, req):
        keep = self.then.handle(up, conn, req)
        return float(self.after) if keep else False


class DropOnReuse:
    """On a connection's second and later requests, closes without answering."""

    def __init__(self, then=None, reset=False):
        self.then = then or Echo()
        self.reset = reset

    def handle(self, up, conn, req):
        if req.conn_req > 1:
            _drain(conn, req)
            if self.reset:
                conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                     struct.pack("ii", 1, 0))
            req.outcome = "dropped"
            return False
        return self.then.handle(up, conn, req)


class Func:
    """Calls fn(up, conn, req) -> keep; for one-off behaviours inside a test."""

    def __init__(self, fn):
        self.fn = fn

    def handle(self, up, conn, req):
        return self.fn(up, conn, req)


# Lower-case aliases read better in tests: up.route("/x", delay(1.0)).
echo, fixed, raw, chunked, delay, drip = Echo, Fixed, Raw, Chunked, Delay, Drip
close_mid_body, reset, close_without_response = CloseMidBody, Reset, CloseWithoutResponse
download, upload_count, idle_close, drop_on_reuse, func = (
    Download, UploadCount, IdleClose, DropOnReuse, Func)


# --------------------------------------------------------------------------- the server


class FakeUpstream:
    """A threaded HTTP/1.1 server on 127.0.0.1; one thread per connection."""

    def __init__(self, name="up", host="127.0.0.1", port=0, default=None):
        self.name = name
        self.host = host
        self.default = default or Echo()
        self.routes = {}
        self.requests = []
        self.connections = []
        self.errors = []
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._stop = threading.Event()
        self._threads = []
        self._socks = set()
        self._listeners = []
        self.port = self.add_listener(port)

    # ---- scripting

    def route(self, path, behaviour):
        """Exact path, or a prefix when `path` ends with '*'."""
        self.routes[path] = behaviour
        return self

    def _lookup(self, path):
        b = self.routes.get(path)
        if b is not None:
            return b
        best = None
        for key, beh in self.routes.items():
            if key.endswith("*") and path.startswith(key[:-1]):
                if best is None or len(key) > len(best[0]):
                    best = (key, beh)
        return best[1] if best else self.default

    # ---- lifecycle

    def add_listener(self, port=0):
        """Listens on one more port (same behaviours); returns it. Echo reports `port`."""
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        ls.bind((self.host, port))
        ls.listen(1024)
        ls.settimeout(0.2)
        self._listeners.append(ls)
        t = threading.Thread(target=self._accept_loop, args=(ls,), daemon=True,
                             name="fake-up-%s-accept" % self.name)
        t.start()
        self._threads.append(t)
        return ls.getsockname()[1]

    @property
    def addr(self):
        return "%s:%d" % (self.host, self.port)

    def stop(self):
        self._stop.set()
        for ls in self._listeners:
            try:
                ls.close()
            except OSError:
                pass
        with self._lock:
            socks = list(self._socks)
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for t in list(self._threads):
            t.join(timeout=5)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def _accept_loop(self, ls):
        local_port = ls.getsockname()[1]
        while not self._stop.is_set():
            try:
                s, peer = ls.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                rec = ConnRecord(len(self.connections) + 1, peer, local_port)
                self.connections.append(rec)
                self._socks.add(s)
                self._cond.notify_all()
            t = threading.Thread(target=self._serve, args=(s, rec), daemon=True,
                                 name="fake-up-%s-conn%d" % (self.name, rec.id))
            t.start()
            with self._lock:
                self._threads = [x for x in self._threads if x.is_alive()] + [t]

    def _serve(self, s, rec):
        conn = Conn(s, rec)
        closed_by = "us"
        idle_after = None
        try:
            while not self._stop.is_set():
                if idle_after is not None and not conn.buf:
                    r, _, _ = select.select([s], [], [], idle_after)
                    if not r:
                        break  # idle long enough: close from our side
                req = conn.read_head()
                if req is None:
                    closed_by = "peer"
                    break
                with self._lock:
                    rec.requests += 1
                    req.conn_req = rec.requests
                    self.requests.append(req)
                    self._cond.notify_all()
                if req.header("expect") and req.header("expect").lower() == "100-continue":
                    conn.send(b"HTTP/1.1 100 Continue\r\n\r\n")
                try:
                    keep = self._lookup(req.path).handle(self, conn, req)
                finally:
                    req.done.set()
                if keep is False or req.wants_close():
                    break
                idle_after = keep if isinstance(keep, float) else None
        except (EOFError, ConnectionError):
            closed_by = "peer"
        except (OSError, ProtocolError, ValueError) as e:
            if not self._stop.is_set():
                self.errors.append("conn %d: %r" % (rec.id, e))
        finally:
            try:
                s.close()
            except OSError:
                pass
            with self._lock:
                self._socks.discard(s)
                rec.closed_at = time.monotonic()
                rec.closed_by = closed_by
                self._cond.notify_all()

    # ---- assertions

    def reset_stats(self):
        with self._lock:
            self.requests = []
            self.connections = [c for c in self.connections if c.open]

    def requests_for(self, path):
        with self._lock:
            return [r for r in self.requests if r.path == path]

    def conn_ids_for(self, path):
        return sorted({r.conn_id for r in self.requests_for(path)})

    def open_connections(self):
        with self._lock:
            return [c for c in self.connections if c.open]

    def wait_for(self, predicate, timeout=5.0):
        """Waits until predicate(self) is true (re-checked on every event); returns it."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                ok = predicate(self)
                if ok:
                    return ok
                left = deadline - time.monotonic()
                if left <= 0:
                    return ok
                self._cond.wait(min(left, 0.1))
