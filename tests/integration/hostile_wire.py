"""Client side of the hostile-input tests: send raw bytes, read until the gateway closes, and
parse what came back with a strict parser that also checks the gateway's own framing.

The gateway never copies framing: every response it writes must have a clean status line,
`Name: value` fields, at most one Content-Length, never Content-Length with
Transfer-Encoding, and chunk-size lines in lower-case hex with no extensions and no trailers.
Anything else is a WireError.
"""

import re
import socket
import time

_TOKEN = rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_STATUS_LINE = re.compile(rb"HTTP/1\.1 ([1-5][0-9][0-9]) ([\x20-\x7e\t\x80-\xff]*)")
_FIELD = re.compile(rb"(" + _TOKEN + rb"): ([\x21-\x7e\x80-\xff](?:[\x20-\x7e\x80-\xff\t]*"
                    rb"[\x21-\x7e\x80-\xff])?)?")
_CHUNK_LINE = re.compile(rb"(0|[1-9a-f][0-9a-f]{0,15})\r\n")


PAUSE = 0.05


class WireError(AssertionError):
    pass


class WireResponse:
    def __init__(self, status, reason, headers, raw_head):
        self.status = status
        self.reason = reason
        self.headers = headers  # [(name, value)] str
        self.raw_head = raw_head
        self.body = b""
        self.framing = None     # "none" | "length" | "chunked" | "close"
        self.complete = False
        self.raw = b""          # head and body bytes exactly as received

    def header_all(self, name):
        return [v for k, v in self.headers if k.lower() == name.lower()]

    def header(self, name):
        vals = self.header_all(name)
        return vals[0] if vals else None

    def connection_close(self):
        return any(t.strip().lower() == "close"
                   for v in self.header_all("connection") for t in v.split(","))

    def __repr__(self):
        return "<WireResponse %s complete=%s framing=%s head=%r body=%r>" % (
            self.status, self.complete, self.framing, self.raw_head[:300], self.body[:120])


def _parse_head(raw_head):
    lines = raw_head[:-4].split(b"\r\n")
    m = _STATUS_LINE.fullmatch(lines[0])
    if not m:
        raise WireError("bad status line from the gateway: %r" % lines[0][:200])
    headers = []
    for line in lines[1:]:
        f = _FIELD.fullmatch(line)
        if not f:
            raise WireError("bad field line from the gateway: %r in %r" % (line[:200], raw_head))
        headers.append((f.group(1).decode("latin-1"), (f.group(2) or b"").decode("latin-1")))
    return WireResponse(int(m.group(1)), m.group(2).decode("latin-1"), headers, raw_head)


def parse_responses(data, methods=(), eof=True):
    """Splits the bytes a client received into responses (1xx included).

    methods[i] is the method of the i-th request (for HEAD); missing ones are GET. The last
    response may be incomplete (complete=False). Returns (responses, leftover) where leftover
    is a trailing fragment that is not even a whole head.
    """
    out = []
    pos = 0
    i = 0
    data = bytes(data)
    while pos < len(data):
        end = data.find(b"\r\n\r\n", pos)
        if end < 0:
            return out, data[pos:]
        resp = _parse_head(data[pos:end + 4])
        p = end + 4
        method = methods[i] if i < len(methods) else "GET"
        te, cl = resp.header_all("transfer-encoding"), resp.header_all("content-length")
        if te and cl:
            raise WireError("gateway sent Content-Length and Transfer-Encoding: %r" % resp.raw_head)
        if len(cl) > 1:
            raise WireError("gateway sent %d Content-Length fields: %r" % (len(cl), resp.raw_head))
        if te and te != ["chunked"]:
            raise WireError("gateway sent Transfer-Encoding %r" % te)
        if 100 <= resp.status < 200 or resp.status in (204, 304) or method == "HEAD":
            resp.framing = "none"
            resp.complete = True
        elif te:
            resp.framing = "chunked"
            body = bytearray()
            q = p
            while True:
                nl = data.find(b"\r\n", q)
                if nl < 0:
                    if len(data) - q > 18 or not re.fullmatch(rb"[0-9a-f]*\r?", data[q:]):
                        raise WireError("bad chunk-size line from the gateway: %r" % data[q:q + 40])
                    q = len(data)
                    break
                m = _CHUNK_LINE.fullmatch(data[q:nl + 2])
                if not m:
                    raise WireError("bad chunk-size line from the gateway: %r"
                                    % data[q:nl + 2][:60])
                size = int(m.group(1), 16)
                if size == 0:
                    tail = data[nl + 2:nl + 4]
                    if tail != b"\r\n"[:len(tail)]:
                        raise WireError("gateway sent a trailer or junk after the last chunk: %r"
                                        % data[nl + 2:nl + 60])
                    if len(tail) == 2:
                        resp.complete = True
                        q = nl + 4
                    else:
                        q = len(data)
                    break
                dend = nl + 2 + size
                body += data[nl + 2:min(dend, len(data))]
                if len(data) < dend + 2:
                    crlf = data[dend:dend + 2]
                    if crlf != b"\r\n"[:len(crlf)]:
                        raise WireError("gateway chunk data not followed by CRLF")
                    q = len(data)
                    break
                if data[dend:dend + 2] != b"\r\n":
                    raise WireError("gateway chunk data not followed by CRLF")
                q = dend + 2
            resp.body = bytes(body)
            p = q
        elif cl:
            if not re.fullmatch(r"[0-9]+", cl[0]):
                raise WireError("gateway sent Content-Length %r" % cl[0])
            n = int(cl[0])
            resp.framing = "length"
            resp.body = data[p:p + n]
            resp.complete = len(data) - p >= n
            p = min(len(data), p + n)
        else:
            resp.framing = "close"
            resp.body = data[p:]
            resp.complete = eof
            p = len(data)
        resp.raw = data[pos:p]
        out.append(resp)
        if not 100 <= resp.status < 200:
            i += 1
        pos = p
        if not resp.complete:
            break
    return out, b""


def final_responses(responses):
    return [r for r in responses if not 100 <= r.status < 200]


class Outcome:
    """What one raw exchange produced."""

    def __init__(self):
        self.data = bytearray()
        self.end = None          # "eof" | "reset" | "timeout"
        self.send_error = None
        self.elapsed = None      # seconds from the last byte sent to the end
        self.responses = []
        self.leftover = b""

    def statuses(self):
        return [r.status for r in final_responses(self.responses)]

    def __repr__(self):
        return "<Outcome end=%s after %.3fs send_error=%s statuses=%s data=%r>" % (
            self.end, self.elapsed or -1, self.send_error, self.statuses(),
            bytes(self.data[:600]))


def connect(port, timeout=5.0):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def send_pieces(sock, payload, mode, pause=None):
    """mode "whole": one sendall; "split": byte by byte up to 512 bytes, then 1 KiB pieces;
    "pause": the head, then pause() (or a short sleep), then the rest."""
    if mode == "whole":
        sock.sendall(payload)
        return
    if mode == "pause":
        end = payload.find(b"\r\n\r\n")
        end = len(payload) if end < 0 else end + 4
        sock.sendall(payload[:end])
        if end < len(payload):
            if pause:
                pause()
            else:
                time.sleep(PAUSE)
            sock.sendall(payload[end:])
        return
    i = 0
    while i < len(payload):
        step = 1 if i < 512 else 1024
        sock.sendall(payload[i:i + step])
        i += step


def read_to_end(sock, out, timeout):
    """Appends to out.data until EOF, reset or timeout; sets out.end."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            out.end = "timeout"
            return
        sock.settimeout(left)
        try:
            data = sock.recv(65536)
        except socket.timeout:
            out.end = "timeout"
            return
        except ConnectionResetError:
            out.end = "reset"
            return
        if not data:
            out.end = "eof"
            return
        out.data += data


def exchange(port, payload, mode="whole", half_close=False, timeout=5.0, methods=(), pause=None):
    """Sends payload, optionally half-closes, reads until the gateway closes; parses."""
    out = Outcome()
    sock = connect(port)
    try:
        try:
            send_pieces(sock, payload, mode, pause)
            if half_close:
                sock.shutdown(socket.SHUT_WR)
        except OSError as e:  # the gateway may have closed early; what it sent still counts
            out.send_error = repr(e)
        t0 = time.monotonic()
        read_to_end(sock, out, timeout)
        out.elapsed = time.monotonic() - t0
    finally:
        sock.close()
    out.responses, out.leftover = parse_responses(out.data, methods=methods,
                                                  eof=out.end == "eof")
    return out


def read_until_response(sock, buf, count, methods=(), timeout=5.0):
    """Reads into buf until `count` final responses are complete or the peer closes.

    Returns "ok", "eof", "reset" or "timeout".
    """
    deadline = time.monotonic() + timeout
    while True:
        rs, _ = parse_responses(buf, methods=methods, eof=False)
        done = [r for r in final_responses(rs) if r.complete]
        if len(done) >= count:
            return "ok"
        left = deadline - time.monotonic()
        if left <= 0:
            return "timeout"
        sock.settimeout(left)
        try:
            data = sock.recv(65536)
        except socket.timeout:
            return "timeout"
        except ConnectionResetError:
            return "reset"
        if not data:
            return "eof"
        buf += data
