"""A recording, scriptable raw-socket upstream for the hostile-input tests (test_hostile.py).

Unlike fake_upstream.FakeUpstream it keeps every byte each connection received, parses what
the gateway sent with a *strict* parser that also insists on the gateway's canonical framing
(its regenerated chunk-size lines, `0\\r\\n\\r\\n` with no trailers, one Host, never both
Content-Length and Transfer-Encoding), and keeps parsing after a `Connection: close` answer so
that a smuggled second request on the same connection is recorded rather than ignored. On
the first thing its strict parser refuses it records the error, answers 400 with
`Connection: close` (as a strict server would, so nothing waits for a timeout) and then only
records bytes.

    up = RecordingUpstream()
    up.script["/r/x"] = [b"HTTP/1.1 200 OK\\r\\n...", 0.05, b"more", SHUT]
    ...
    up.stop()

A script is a list of actions run after a complete request: bytes are sent, a float sleeps,
SHUT half-closes (reading goes on) and CLOSE closes the socket. A callable script is called
as fn(req) and returns such a list. Paths without a script get DEFAULT_RESPONSE.
"""

import re
import socket
import threading
import time

SHUT = "shut"
CLOSE = "close"
REFUSED = (b"HTTP/1.1 400 Bad Request\r\nContent-Length: 16\r\nConnection: close\r\n\r\n"
           b"upstream-refused")
DEFAULT_RESPONSE = [b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok", SHUT]

_TOKEN = rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_REQUEST_LINE = re.compile(rb"(" + _TOKEN + rb") (/[\x21-\x7e\x80-\xff]*|\*) HTTP/1\.1")
_FIELD = re.compile(rb"(" + _TOKEN + rb"): ([\x21-\x7e\x80-\xff](?:[\x20-\x7e\x80-\xff\t]*"
                    rb"[\x21-\x7e\x80-\xff])?)?")
# What the gateway writes when it re-frames a body: lower-case hex, no leading zeros, no ext.
_CHUNK_LINE = re.compile(rb"(0|[1-9a-f][0-9a-f]{0,15})\r\n")


class UpRequest:
    """One request as the upstream received it (possibly incomplete)."""

    def __init__(self, raw_head, method, target, headers):
        self.raw_head = raw_head
        self.method = method
        self.target = target
        self.path = target.split("?", 1)[0]
        self.headers = headers  # [(name, value)] as str, in order
        self.body = b""          # decoded body received so far
        self.chunked = False
        self.complete = False    # head and whole body received

    def header_all(self, name):
        return [v for k, v in self.headers if k.lower() == name.lower()]

    def header(self, name):
        vals = self.header_all(name)
        return vals[0] if vals else None

    def __repr__(self):
        return "<UpRequest %s %s chunked=%s complete=%s body=%r head=%r>" % (
            self.method, self.target, self.chunked, self.complete, self.body[:80],
            self.raw_head[:300])


class UpConn:
    def __init__(self, cid):
        self.id = cid
        self.raw = bytearray()
        self.requests = []
        self.errors = []       # the gateway sent something a strict parser refuses
        self.closed = False
        self.leftover = b""    # bytes after the last parsed request that never formed one

    def __repr__(self):
        return "<UpConn %d closed=%s raw=%r errors=%r>" % (
            self.id, self.closed, bytes(self.raw[:400]), self.errors)


class _Incomplete(Exception):
    pass


class _Bad(Exception):
    pass


def _parse_request(buf, pos):
    """Parses one request at buf[pos:]. Returns (req, end) with end None while incomplete.

    Raises _Incomplete when not even the head is there, _Bad on anything non-canonical.
    """
    end = buf.find(b"\r\n\r\n", pos)
    if end < 0:
        raise _Incomplete()
    raw_head = bytes(buf[pos:end + 4])
    lines = raw_head[:-4].split(b"\r\n")
    m = _REQUEST_LINE.fullmatch(lines[0])
    if not m:
        raise _Bad("request line %r" % lines[0][:200])
    headers = []
    for line in lines[1:]:
        f = _FIELD.fullmatch(line)
        if not f:
            raise _Bad("field line %r" % line[:200])
        headers.append((f.group(1).decode("latin-1"), (f.group(2) or b"").decode("latin-1")))
    req = UpRequest(raw_head, m.group(1).decode("latin-1"), m.group(2).decode("latin-1"),
                    headers)
    hosts = req.header_all("host")
    if len(hosts) != 1:
        raise _Bad("%d Host fields in %r" % (len(hosts), raw_head[:300]))
    te, cl = req.header_all("transfer-encoding"), req.header_all("content-length")
    if te and cl:
        raise _Bad("both Transfer-Encoding and Content-Length in %r" % raw_head[:300])
    p = end + 4
    if te:
        if te != ["chunked"]:
            raise _Bad("Transfer-Encoding %r" % te)
        req.chunked = True
        body = bytearray()
        while True:
            nl = buf.find(b"\r\n", p)
            if nl < 0:
                if len(buf) - p > 18 or not re.fullmatch(rb"[0-9a-f]*\r?", bytes(buf[p:])):
                    raise _Bad("chunk-size line %r" % bytes(buf[p:p + 40]))
                break
            m = _CHUNK_LINE.fullmatch(bytes(buf[p:nl + 2]))
            if not m:
                raise _Bad("chunk-size line %r" % bytes(buf[p:nl + 2][:40]))
            size = int(m.group(1), 16)
            if size == 0:
                tail = bytes(buf[nl + 2:nl + 4])
                if tail != b"\r\n"[:len(tail)]:
                    raise _Bad("last chunk followed by %r (trailers forwarded?)" % tail)
                if len(tail) == 2:
                    req.body = bytes(body)
                    req.complete = True
                    return req, nl + 4
                break
            data_end = nl + 2 + size
            body += buf[nl + 2:min(data_end, len(buf))]
            if len(buf) < data_end + 2:
                crlf = bytes(buf[data_end:data_end + 2])
                if crlf != b"\r\n"[:len(crlf)]:
                    raise _Bad("chunk data not followed by CRLF")
                break
            if buf[data_end:data_end + 2] != b"\r\n":
                raise _Bad("chunk data not followed by CRLF")
            p = data_end + 2
        req.body = bytes(body)
        return req, None
    n = 0
    if cl:
        if len(cl) != 1 or not re.fullmatch(r"[0-9]+", cl[0]):
            raise _Bad("Content-Length %r" % cl)
        n = int(cl[0])
    req.body = bytes(buf[p:p + n])
    if len(buf) - p >= n:
        req.complete = True
        return req, p + n
    return req, None


class RecordingUpstream:
    def __init__(self, name="rec"):
        self.name = name
        self.script = {}
        self.conns = []
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._stop = threading.Event()
        self._threads = []
        self._socks = set()
        self._ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._ls.bind(("127.0.0.1", 0))
        self._ls.listen(256)
        self._ls.settimeout(0.1)
        self.port = self._ls.getsockname()[1]
        t = threading.Thread(target=self._accept_loop, daemon=True, name="rec-up-accept")
        t.start()
        self._threads.append(t)

    @property
    def addr(self):
        return "127.0.0.1:%d" % self.port

    # ---- state

    def mark(self):
        with self._lock:
            return len(self.conns)

    def conns_since(self, mark):
        with self._lock:
            return list(self.conns[mark:])

    def wait(self, predicate, timeout=5.0):
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                ok = predicate()
                if ok or time.monotonic() >= deadline:
                    return ok
                self._cond.wait(0.05)

    # ---- serving

    def _accept_loop(self):
        while not self._stop.is_set():
            try:
                s, _ = self._ls.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                conn = UpConn(len(self.conns) + 1)
                self.conns.append(conn)
                self._socks.add(s)
                self._cond.notify_all()
            t = threading.Thread(target=self._serve, args=(s, conn), daemon=True,
                                 name="rec-up-%d" % conn.id)
            t.start()
            self._threads.append(t)

    def _actions_for(self, req):
        script = self.script.get(req.path)
        if script is None:
            for key, val in self.script.items():
                if key.endswith("*") and req.path.startswith(key[:-1]):
                    script = val
                    break
        if script is None:
            return DEFAULT_RESPONSE
        return script(req) if callable(script) else script

    def _serve(self, s, conn):
        pos = 0          # start of the request being parsed
        current = None   # the UpRequest being received (recorded as soon as its head is in)
        broken = False   # after a strict-parse error, only record bytes
        try:
            while not self._stop.is_set():
                try:
                    data = s.recv(65536)
                except (ConnectionError, OSError):
                    data = b""
                with self._lock:
                    if data:
                        conn.raw += data
                    self._cond.notify_all()
                if not data:
                    break
                while not broken:
                    try:
                        req, end = _parse_request(conn.raw, pos)
                    except _Incomplete:
                        break
                    except _Bad as e:
                        with self._lock:
                            conn.errors.append(str(e))
                        broken = True
                        # Answer like a strict server would, so nothing waits for a timeout.
                        s.sendall(REFUSED)
                        s.shutdown(socket.SHUT_WR)
                        break
                    with self._lock:
                        if current is None:
                            current = req
                            conn.requests.append(req)
                        else:  # refresh the partial record in place
                            current.body, current.complete = req.body, req.complete
                        self._cond.notify_all()
                    if end is None:
                        break
                    pos, current = end, None
                    for act in self._actions_for(req):
                        if isinstance(act, (bytes, bytearray)):
                            s.sendall(act)
                        elif isinstance(act, (int, float)):
                            time.sleep(act)
                        elif act == SHUT:
                            s.shutdown(socket.SHUT_WR)
                        elif act == CLOSE:
                            raise StopIteration
        except StopIteration:
            pass
        except OSError:
            pass
        finally:
            with self._lock:
                conn.leftover = bytes(conn.raw[pos:]) if current is None else b""
                conn.closed = True
                self._socks.discard(s)
                self._cond.notify_all()
            try:
                s.close()
            except OSError:
                pass

    def stop(self):
        self._stop.set()
        try:
            self._ls.close()
        except OSError:
            pass
        with self._lock:
            socks = list(self._socks)
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        for t in self._threads:
            t.join(timeout=3)
