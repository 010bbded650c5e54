"""Issue 8, points 1 and 2: hostile and malformed HTTP/1.1 against the real gateway.

Two tables, each case run against one gateway (1 worker) in front of a recording upstream
(hostile_upstream.RecordingUpstream, route `/*`):

* REQUEST_CASES: raw bytes a client sends. Each case is sent three ways: in one write
  ("whole"), byte by byte ("split"), and head first, the rest only once the upstream has the
  head ("pause", so that a bad body arrives after the head was forwarded). Each asserts
  (a) the statuses the client gets, in order, read by a strict parser that also checks the
  gateway's framing; (b) that the gateway then closed the connection promptly with a FIN (not
  a reset, not the 2 s linger timeout) and that the final response says `Connection: close`;
  and (c) what the upstream received: nothing at all; exactly the listed requests, canonically
  framed (the upstream's parser refuses chunk extensions, trailers, non-canonical sizes, CL+TE
  or a missing Host); or, for a body that goes bad after the head, at most one incomplete
  request whose body is a prefix of what the client's valid chunks carried. A request the
  upstream should never have seen (a smuggled one) shows up as an extra request and fails.

* RESPONSE_CASES: raw bytes the upstream answers with. A bad head must reach the client as the
  gateway's own 502; a body that goes bad after a good head must leave the client with a
  truncated message and a closed connection, never a complete (forged) one; and a good
  response must arrive with regenerated framing (clean chunks, no extensions or trailers, one
  Content-Length). Whenever the client connection survives, a follow-up request on it must get
  the genuine answer: bytes an upstream sent beyond its message never become a response.
"""

import collections
import time

import pytest

from harness import Gateway, get, route
from hostile_upstream import CLOSE, RecordingUpstream
from hostile_wire import connect, exchange, final_responses, parse_responses, read_to_end, \
    read_until_response, Outcome

SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "runtime error:", "ERROR: LeakSanitizer")
FIN_WITHIN = 1.5  # seconds from the last byte sent to the gateway's FIN (its linger is 2 s)


# --------------------------------------------------------------------------- fixtures


class Rig:
    def __init__(self, gw, up):
        self.gw = gw
        self.up = up
        self.barriers = 0


def _start_rig(tmp_path_factory, name):
    up = RecordingUpstream(name)
    gw = Gateway(tmp_path_factory.mktemp(name), routes=[route("/*", up, rid="all")], workers=1)
    try:
        gw.start()
    except Exception:
        up.stop()
        raise
    return Rig(gw, up)


def _stop_rig(rig):
    alive = rig.gw.alive()
    rc = rig.gw.stop()
    rig.up.stop()
    log = rig.gw.log_text()
    print("\n--- sluice log (%s, exit %s) ---\n%s" % (rig.gw.dir, rc,
                                                     "\n".join(log.splitlines()[-60:])))
    problems = [m for m in SANITIZER_MARKERS if m in log]
    assert not problems, "sanitizer report in the gateway's log: %s" % problems
    assert not alive or rc == 0, "gateway exited with %r on SIGTERM" % (rc,)


@pytest.fixture(scope="module")
def req_rig(tmp_path_factory):
    rig = _start_rig(tmp_path_factory, "hostile-req")
    yield rig
    _stop_rig(rig)


@pytest.fixture(scope="module")
def resp_rig(tmp_path_factory):
    rig = _start_rig(tmp_path_factory, "hostile-resp")
    rig.up.script["/good"] = [b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ngood"]
    yield rig
    _stop_rig(rig)


# --------------------------------------------------------------------------- upstream expectations


class Nothing:
    """The upstream received not one byte."""

    def check(self, conns, mode):
        got = [c for c in conns if c.raw]
        assert not got, "the upstream received bytes for a rejected request: %r" % got

    def __repr__(self):
        return "Nothing()"


class Req:
    def __init__(self, method, target, body=b"", chunked=False, host=None, absent=(),
                 present=()):
        self.method, self.target, self.body, self.chunked = method, target, body, chunked
        self.host = host
        self.absent = absent      # header names the upstream must not see
        self.present = present    # (name, value) pairs it must see

    def check(self, r):
        assert (r.method, r.target) == (self.method, self.target), r
        assert r.complete, "incomplete request at the upstream: %r" % r
        assert r.body == self.body, r
        assert r.chunked == self.chunked, r
        if self.host is not None:
            assert r.header_all("host") == [self.host], r
        for name in self.absent:
            assert not r.header_all(name), "%s forwarded: %r" % (name, r)
        for name, value in self.present:
            assert r.header_all(name) == [value], "%s: %r" % (name, r)


class Forwarded:
    """The upstream received exactly these complete requests, canonically framed."""

    def __init__(self, *reqs):
        self.reqs = reqs

    def check(self, conns, mode):
        for c in conns:
            assert not c.errors, "the gateway sent the upstream something malformed: %r" % c
            assert not c.leftover, "unparsed bytes at the upstream: %r" % c
        got = [r for c in conns for r in c.requests]
        assert len(got) == len(self.reqs), "upstream got %d requests, expected %d: %r" % (
            len(got), len(self.reqs), got)
        for want, r in zip(self.reqs, got):
            want.check(r)

    def __repr__(self):
        return "Forwarded(%s)" % ", ".join("%s %s" % (r.method, r.target) for r in self.reqs)


class Prefix:
    """The body went bad after the head: at most the head and a prefix of the valid data.

    Never a complete request (no last-chunk, no full Content-Length body), never a second one.
    In "pause" mode the head went out before the body arrived, so it must be there.
    """

    def __init__(self, legit, method="POST", target="/t", chunked=True):
        self.legit, self.method, self.target, self.chunked = legit, method, target, chunked

    def check(self, conns, mode):
        for c in conns:
            assert not c.errors, "the gateway sent the upstream something malformed: %r" % c
            assert not c.leftover, "unparsed bytes at the upstream: %r" % c
        got = [r for c in conns for r in c.requests]
        if mode == "pause":
            assert got, "the head was not forwarded before the body was sent"
        assert len(got) <= 1, "more than one request reached the upstream: %r" % got
        for r in got:
            assert (r.method, r.target, r.chunked) == (self.method, self.target, self.chunked), r
            assert not r.complete, "a request with a bad body reached the upstream whole: %r" % r
            assert self.legit.startswith(r.body), \
                "upstream body %r is not a prefix of the valid data %r" % (r.body, self.legit)

    def __repr__(self):
        return "Prefix(%r)" % self.legit


NOTHING = Nothing()


# --------------------------------------------------------------------------- request cases

Case = collections.namedtuple("Case", "name raw statuses upstream half_close")


def case(name, raw, statuses, upstream=NOTHING, half_close=False):
    if isinstance(statuses, int):
        statuses = [statuses]
    return Case(name, raw, list(statuses), upstream, half_close)


P = b"POST /t HTTP/1.1\r\nHost: h\r\n"
G = b"GET /t HTTP/1.1\r\nHost: h\r\n"
TE = b"Transfer-Encoding: chunked\r\n"
CH = P + TE + b"\r\n"                   # a chunked request whose body follows
CLOSE_HDR = b"Connection: close\r\n"
CHC = P + TE + CLOSE_HDR + b"\r\n"     # the same, asking the gateway to close afterwards
SMUGGLED = b"GET /smuggled HTTP/1.1\r\nHost: h\r\n\r\n"
BODY = b"5\r\nhello\r\n0\r\n\r\n"
GET_T = Forwarded(Req("GET", "/t"))
LONG_TARGET = b"/" + b"a" * (8000 - len(b"GET / HTTP/1.1"))


def _fields(n, size):
    return b"".join(b"X-F%03d: %s\r\n" % (i, b"v" * size) for i in range(n))


REQUEST_CASES = [
    # ---- Content-Length with Transfer-Encoding, TE.TE variants: request smuggling
    case("cl-te", P + b"Content-Length: 6\r\n" + TE + b"\r\n0\r\n\r\nX", 400),
    case("te-cl", P + TE + b"Content-Length: 3\r\n\r\n8\r\nSMUGGLED\r\n0\r\n\r\n", 400),
    case("cl-te-smuggle", P + b"Content-Length: 5\r\n" + TE + b"\r\n0\r\n\r\n" + SMUGGLED, 400),
    case("te-cl-smuggle", P + TE + b"Content-Length: 4\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (
        len(SMUGGLED), SMUGGLED), 400),
    case("cl-te-http10", b"POST /t HTTP/1.0\r\nContent-Length: 5\r\n" + TE + b"\r\nhello", 400),
    case("te-xchunked", P + b"Transfer-Encoding: xchunked\r\n\r\n" + BODY, 501),
    case("te-space-before-colon", P + b"Transfer-Encoding : chunked\r\n\r\n" + BODY, 400),
    case("te-obs-fold-value", P + b"Transfer-Encoding:\r\n chunked\r\n\r\n" + BODY, 400),
    case("te-obs-fold-line", P + b"X-Pad: a\r\n Transfer-Encoding: chunked\r\n\r\n" + BODY, 400),
    case("te-tab-fold-line", P + b"X-Pad: a\r\n\tTransfer-Encoding: chunked\r\n\r\n" + BODY, 400),
    case("te-after-bare-lf", P + b"X-Pad: a\nTransfer-Encoding: chunked\r\n\r\n" + BODY, 400),
    case("te-on-lf-line", P + b"\nTransfer-Encoding: chunked\r\n\r\n" + BODY, 400),
    case("te-twice", P + TE + TE + b"\r\n" + BODY, 400),
    case("te-chunked-chunked", P + b"Transfer-Encoding: chunked, chunked\r\n\r\n" + BODY, 400),
    case("te-chunked-identity", P + b"Transfer-Encoding: chunked, identity\r\n\r\n" + BODY, 400),
    case("te-chunked-then-identity-line",
         P + TE + b"Transfer-Encoding: identity\r\n\r\n" + BODY, 400),
    case("te-identity", P + b"Transfer-Encoding: identity\r\n\r\n" + BODY, 501),
    case("te-gzip-chunked", P + b"Transfer-Encoding: gzip, chunked\r\n\r\n" + BODY, 501),
    case("te-xchunked-then-chunked-line",
         P + b"Transfer-Encoding: xchunked\r\n" + TE + b"\r\n" + BODY, 501),
    case("te-trailing-comma", P + b"Transfer-Encoding: chunked,\r\n\r\n" + BODY, 400),
    case("te-leading-comma", P + b"Transfer-Encoding: ,chunked\r\n\r\n" + BODY, 400),
    case("te-quoted", P + b'Transfer-Encoding: "chunked"\r\n\r\n' + BODY, 400),
    case("te-nul", P + b"Transfer-Encoding: chunked\x00\r\n\r\n" + BODY, 400),
    case("te-vtab", P + b"Transfer-Encoding: chunked\x0b\r\n\r\n" + BODY, 400),
    case("te-empty", P + b"Transfer-Encoding:\r\n\r\n" + BODY, 400),
    case("te-http10", b"POST /t HTTP/1.0\r\nHost: h\r\n" + TE + b"\r\n" + BODY, 400),
    # Transfer_Encoding is a different (legal) field name: no body, and what follows the head
    # is the next request, which is garbage.
    case("te-underscore-is-not-te", P + b"Transfer_Encoding: chunked\r\n\r\n" + BODY, [200, 400],
         Forwarded(Req("POST", "/t"))),
    # ---- Content-Length
    case("cl-duplicate-equal", P + b"Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello", 400),
    case("cl-duplicate-differ", P + b"Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", 400),
    case("cl-duplicate-case", P + b"Content-Length: 5\r\ncontent-length: 5\r\n\r\nhello", 400),
    case("cl-list", P + b"Content-Length: 5, 5\r\n\r\nhello", 400),
    case("cl-plus", P + b"Content-Length: +5\r\n\r\nhello", 400),
    case("cl-minus", P + b"Content-Length: -5\r\n\r\nhello", 400),
    case("cl-hex", P + b"Content-Length: 0x5\r\n\r\nhello", 400),
    case("cl-overflow", P + b"Content-Length: 99999999999999999999\r\n\r\nhello", 400),
    case("cl-2pow63", P + b"Content-Length: 9223372036854775808\r\n\r\nhello", 400),
    case("cl-inner-space", P + b"Content-Length: 1 0\r\n\r\nhello", 400),
    case("cl-empty", P + b"Content-Length:\r\n\r\nhello", 400),
    case("cl-space-before-colon", P + b"Content-Length : 5\r\n\r\nhello", 400),
    case("cl-nul", P + b"Content-Length: 5\x00\r\n\r\nhello", 400),
    case("cl-body-then-garbage", P + b"Content-Length: 5\r\n\r\nhelloXGARBAGE\r\n\r\n", [200, 400],
         Forwarded(Req("POST", "/t", b"hello"))),
    case("cl-body-then-bad-request",
         P + b"Content-Length: 5\r\n\r\nhelloGET /smuggled HTTP/1.1\r\nHost: h\r\n" +
         b"Content-Length: 1\r\nContent-Length: 1\r\n\r\nX", [200, 400],
         Forwarded(Req("POST", "/t", b"hello"))),
    # ---- chunked bodies that go bad after the head (the head may have been forwarded)
    case("chunk-size-0x", CH + b"0x5\r\nhello\r\n0\r\n\r\n", 400, Prefix(b"")),
    case("chunk-size-trailing-space", CH + b"5 \r\nhello\r\n0\r\n\r\n", 400, Prefix(b"")),
    case("chunk-size-leading-space", CH + b" 5\r\nhello\r\n0\r\n\r\n", 400, Prefix(b"")),
    case("chunk-size-minus", CH + b"-5\r\nhello\r\n0\r\n\r\n", 400, Prefix(b"")),
    case("chunk-size-plus", CH + b"+5\r\nhello\r\n0\r\n\r\n", 400, Prefix(b"")),
    case("chunk-size-17-digits", CH + b"10000000000000005\r\nhello\r\n0\r\n\r\n", 400, Prefix(b"")),
    case("chunk-size-too-large", CH + b"ffffffffffffffff\r\nhello\r\n0\r\n\r\n", 400, Prefix(b"")),
    case("chunk-size-missing", CH + b"\r\nhello\r\n0\r\n\r\n", 400, Prefix(b"")),
    case("chunk-size-not-hex", CH + b"g\r\nhello\r\n0\r\n\r\n", 400, Prefix(b"")),
    case("chunk-size-bare-lf", CH + b"5\nhello\r\n0\r\n\r\n", 400, Prefix(b"")),
    case("chunk-data-longer-than-size", CH + b"3\r\nhello\r\n0\r\n\r\n", 400, Prefix(b"hel")),
    case("chunk-data-without-crlf", CH + b"5\r\nhelloXX0\r\n\r\n", 400, Prefix(b"hello")),
    case("chunk-data-bare-cr", CH + b"5\r\nhello\r0\r\n\r\n", 400, Prefix(b"hello")),
    case("chunk-second-size-0x", CH + b"5\r\nhello\r\n0x3\r\nabc\r\n0\r\n\r\n", 400,
         Prefix(b"hello")),
    case("chunk-ext-bare-lf", CH + b"5;a\nhello\r\n0\r\n\r\n", 400, Prefix(b"")),
    case("chunk-ext-bare-cr", CH + b"5;a\rb\r\nhello\r\n0\r\n\r\n", 400, Prefix(b"")),
    case("chunk-ext-nul", CH + b"5;a\x00b\r\nhello\r\n0\r\n\r\n", 400, Prefix(b"")),
    case("chunk-ext-quoted-ctl", CH + b'5;a="x\x01"\r\nhello\r\n0\r\n\r\n', 400, Prefix(b"")),
    case("chunk-ext-line-too-long", CH + b"5;" + b"a" * 5000 + b"\r\nhello\r\n0\r\n\r\n", 400,
         Prefix(b"")),
    case("trailer-obs-fold", CH + b"5\r\nhello\r\n0\r\nX-T: a\r\n b\r\n\r\n", 400,
         Prefix(b"hello")),
    case("trailer-bare-lf", CH + b"5\r\nhello\r\n0\r\nX-T: a\n\r\n", 400, Prefix(b"hello")),
    case("trailer-is-a-request-line", CH + b"5\r\nhello\r\n0\r\n" + SMUGGLED, 400,
         Prefix(b"hello")),
    case("chunked-eof-mid-chunk", CH + b"5\r\nhel", [], Prefix(b"hello"), half_close=True),
    case("cl-eof-mid-body", P + b"Content-Length: 10\r\n\r\nabc", [],
         Prefix(b"abcdefghij", chunked=False), half_close=True),
    # ---- framing that is fine (controls): regenerated, never copied
    case("chunk-leading-zeros-ok", CHC + b"0005\r\nhello\r\n0000\r\n\r\n", 200,
         Forwarded(Req("POST", "/t", b"hello", chunked=True))),
    case("chunk-ext-ok", CHC + b'5;name=value;q="a \\" b"\r\nhello\r\n0;x\r\n\r\n',
         200, Forwarded(Req("POST", "/t", b"hello", chunked=True))),
    case("chunk-trailers-dropped", CHC + b"5\r\nhello\r\n0\r\nX-Trailer: v\r\n\r\n",
         200, Forwarded(Req("POST", "/t", b"hello", chunked=True, absent=("x-trailer",)))),
    case("chunk-uppercase-hex-ok", CHC + b"A\r\n0123456789\r\n0\r\n\r\n", 200,
         Forwarded(Req("POST", "/t", b"0123456789", chunked=True))),
    case("te-uppercase-ok", P + b"Transfer-Encoding: CHUNKED\r\n" + CLOSE_HDR + b"\r\n" + BODY, 200,
         Forwarded(Req("POST", "/t", b"hello", chunked=True))),
    case("te-tab-ows-ok", P + b"Transfer-Encoding:\tchunked\t\r\n" + CLOSE_HDR + b"\r\n" + BODY,
         200,
         Forwarded(Req("POST", "/t", b"hello", chunked=True))),
    # ---- head syntax
    case("obs-fold", G + b"X-A: a\r\n b\r\n\r\n", 400),
    case("first-field-space-led", b"GET /t HTTP/1.1\r\n Host: h\r\n\r\n", 400),
    case("first-field-tab-led", b"GET /t HTTP/1.1\r\n\tHost: h\r\n\r\n", 400),
    case("space-before-colon", b"GET /t HTTP/1.1\r\nHost : h\r\n\r\n", 400),
    case("tab-before-colon", G + b"X-A\t: a\r\n\r\n", 400),
    case("space-in-name", G + b"X A: a\r\n\r\n", 400),
    # nginx's ignore_invalid_headers (on by default): a visible non-token character drops the
    # line, which then frames nothing and never reaches the upstream.
    case("bad-char-in-name", G + b"X[A]: a\r\n" + CLOSE_HDR + b"\r\n", 200,
         Forwarded(Req("GET", "/t", absent=("x[a]",)))),
    case("quoted-te-name-is-not-te", P + b"\"Transfer-Encoding\": chunked\r\n" + CLOSE_HDR +
         b"\r\n", 200, Forwarded(Req("POST", "/t", absent=("\"transfer-encoding\"",)))),
    case("empty-name", G + b": a\r\n\r\n", 400),
    case("no-colon", G + b"X-A\r\n\r\n", 400),
    case("nul-in-name", G + b"X\x00A: a\r\n\r\n", 400),
    case("nul-in-value", G + b"X-A: a\x00b\r\n\r\n", 400),
    case("del-in-value", G + b"X-A: a\x7fb\r\n\r\n", 400),
    case("ctl-in-value", G + b"X-A: a\x01b\r\n\r\n", 400),
    case("bare-cr-in-value", G + b"X-A: a\rGET /smuggled HTTP/1.1\r\n\r\n", 400),
    case("bare-lf-everywhere", b"GET /t HTTP/1.1\nHost: h\n\n", 400),
    case("bare-lf-request-line", b"GET /t HTTP/1.1\nHost: h\r\n\r\n", 400),
    case("bare-lf-end-of-head", G + b"\n", 400),
    case("missing-host", b"GET /t HTTP/1.1\r\nX-A: a\r\n\r\n", 400),
    case("duplicate-host-equal", G + b"Host: h\r\n\r\n", 400),
    case("duplicate-host-differ", G + b"Host: other\r\n\r\n", 400),
    case("host-userinfo", b"GET /t HTTP/1.1\r\nHost: user@h\r\n\r\n", 400),
    case("host-space", b"GET /t HTTP/1.1\r\nHost: h h\r\n\r\n", 400),
    case("host-slash", b"GET /t HTTP/1.1\r\nHost: h/x\r\n\r\n", 400),
    case("absolute-form-wins-over-host",
         b"GET http://real.example/p?q=1 HTTP/1.1\r\nHost: evil.example\r\n" + CLOSE_HDR + b"\r\n",
         200, Forwarded(Req("GET", "/p?q=1", host="real.example",
                            present=(("X-Forwarded-Host", "real.example"),)))),
    case("absolute-form-ftp", b"GET ftp://real.example/p HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    case("absolute-form-userinfo", b"GET http://u@real.example/p HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    case("asterisk-with-get", b"GET * HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    case("http09", b"GET /t\r\n\r\n", 400),
    case("http09-with-host", b"GET /t\r\nHost: h\r\n\r\n", 400),
    case("version-2.0", b"GET /t HTTP/2.0\r\nHost: h\r\n\r\n", 505),
    case("version-1.2", b"GET /t HTTP/1.2\r\nHost: h\r\n\r\n", 505),
    case("version-3.0", b"GET /t HTTP/3.0\r\nHost: h\r\n\r\n", 505),
    case("h2-preface", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505),
    case("version-1.10", b"GET /t HTTP/1.10\r\nHost: h\r\n\r\n", 400),
    case("version-lowercase", b"GET /t http/1.1\r\nHost: h\r\n\r\n", 400),
    case("version-trailing-space", b"GET /t HTTP/1.1 \r\nHost: h\r\n\r\n", 400),
    case("double-space", b"GET  /t HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    case("tab-separator", b"GET\t/t HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    case("method-bad-char", b"G(T /t HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    case("target-del", b"GET /a\x7fb HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    case("target-nul", b"GET /a\x00b HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    case("leading-space", b" GET /t HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    case("leading-bare-lf", b"\nGET /t HTTP/1.1\r\nHost: h\r\n\r\n", 400),
    case("tls-client-hello", b"\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03" + bytes(range(32)),
         400),
    case("leading-crlf-ok", b"\r\n\r\n" + G + CLOSE_HDR + b"\r\n", 200, GET_T),
    case("http10-without-host-ok", b"GET /t HTTP/1.0\r\n\r\n", 200, GET_T),
    case("keepalive-then-bad", G + b"\r\nGET /t HTTP/1.1\r\nHost : h\r\n\r\n", [200, 400], GET_T),
    # ---- sizes
    case("request-line-8000-ok", b"GET " + LONG_TARGET + b" HTTP/1.1\r\nHost: h\r\n" + CLOSE_HDR +
         b"\r\n", 200, Forwarded(Req("GET", LONG_TARGET.decode()))),
    case("request-line-8001", b"GET " + LONG_TARGET + b"a HTTP/1.1\r\nHost: h\r\n\r\n", 414),
    case("header-section-under-32k-ok", G + CLOSE_HDR + _fields(30, 1000) + b"\r\n", 200,
         Forwarded(Req("GET", "/t", present=(("X-F029", "v" * 1000),)))),
    case("header-section-over-32k", G + _fields(40, 1000) + b"\r\n", 431),
    case("too-many-fields", G + _fields(101, 1) + b"\r\n", 431),
    case("junk-after-rejection", b"GET /t HTTP/1.1\r\nHost : h\r\n\r\n" + b"\x00J" * 100000, 400),
]


def _barrier(rig):
    """A plain request through the gateway: it is alive, and (one worker) done with the case."""
    rig.barriers += 1
    path = "/__barrier/%d" % rig.barriers
    r = get(rig.gw.port, path, timeout=5)
    assert r.status == 200, "barrier request after the case got %r" % r
    return path


def _settle(rig, mark, barrier):
    """The upstream connections opened for the case (the barrier's excluded), once closed."""
    up = rig.up

    def done():
        conns = up.conns_since(mark)
        return any(r.path == barrier for c in conns for r in c.requests) and \
            all(c.closed for c in conns)

    settled = up.wait(done, timeout=5)
    conns = [c for c in up.conns_since(mark)
             if not any(r.path.startswith("/__barrier/") for r in c.requests)]
    return settled, conns


def _context(rig, log_at, out, conns):
    return "\nclient: %r\nupstream conns: %r\ngateway log:\n%s" % (
        out, conns, rig.gw.log_text()[log_at:][-3000:])


@pytest.mark.parametrize("mode", ["whole", "split", "pause"])
@pytest.mark.parametrize("c", REQUEST_CASES, ids=[c.name for c in REQUEST_CASES])
def test_hostile_request(req_rig, c, mode):
    rig = req_rig
    mark = rig.up.mark()
    log_at = rig.gw.log_size()
    pause = None
    if mode == "pause" and not isinstance(c.upstream, Nothing):
        # Where the head is to be forwarded, the rest waits until the upstream has it.
        def pause():
            rig.up.wait(lambda: any(cn.requests for cn in rig.up.conns_since(mark)), timeout=5)
    out = exchange(rig.gw.port, c.raw, mode=mode, half_close=c.half_close, pause=pause)
    barrier = _barrier(rig)
    settled, conns = _settle(rig, mark, barrier)
    ctx = _context(rig, log_at, out, conns)

    # The client: these statuses, each complete, nothing after them, then a prompt FIN.
    assert out.statuses() == c.statuses, "statuses %s, expected %s%s" % (
        out.statuses(), c.statuses, ctx)
    finals = final_responses(out.responses)
    assert all(r.complete for r in finals) and not out.leftover, "incomplete response" + ctx
    if finals:
        assert finals[-1].connection_close(), "last response lacks Connection: close" + ctx
        for r in finals:
            if r.status >= 400:
                assert r.body.startswith(b'{"error_msg":"%d ' % r.status), \
                    "rejection without the gateway's own error body" + ctx
    assert out.end == "eof", "connection not closed with a FIN (%s)%s" % (out.end, ctx)
    assert out.elapsed < FIN_WITHIN, "FIN only after %.2fs%s" % (out.elapsed, ctx)

    # The upstream: exactly what the case allows.
    assert settled, "upstream connections still open or barrier missing" + ctx
    try:
        c.upstream.check(conns, mode)
    except AssertionError as e:
        raise AssertionError(str(e) + ctx) from None


def test_request_table_size():
    assert len(REQUEST_CASES) >= 60
    names = [c.name for c in REQUEST_CASES]
    assert len(set(names)) == len(names), "duplicate case names"


# --------------------------------------------------------------------------- response cases

RCase = collections.namedtuple("RCase", "name script expect method pause")


class Bad:
    """The client gets the gateway's own 502 and its connection stays usable."""
    kind = "bad"


class Ok:
    """The client gets this response, with regenerated framing; the connection stays usable."""
    kind = "ok"

    def __init__(self, status, body, framing, check=None):
        self.status, self.body, self.framing, self.check = status, body, framing, check


class Truncated:
    """A good head, then a bad body: at most a prefix of the valid data, then a close."""
    kind = "truncated"

    def __init__(self, legit):
        self.legit = legit


BAD = Bad()


def rcase(name, script, expect, method="GET", pause=0.0):
    if isinstance(script, bytes):
        script = [script]
    return RCase(name, script, expect, method, pause)


OK_HEAD = b"HTTP/1.1 200 OK\r\n"
RTE = OK_HEAD + b"Transfer-Encoding: chunked\r\n\r\n"   # a chunked response; chunks follow
FORGED = b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nFORGED"


def _one_cl(r):
    assert r.header_all("content-length") == [str(len(r.body))], r


def _no_trailer_field(r):
    assert not r.header_all("trailer"), "Trailer announced, but trailers are dropped: %r" % r


RESPONSE_CASES = [
    # ---- bad heads: 502
    rcase("cl-te", OK_HEAD + b"Content-Length: 5\r\n" + TE + b"\r\n" + BODY, BAD),
    rcase("te-cl", OK_HEAD + TE + b"Content-Length: 5\r\n\r\n" + BODY, BAD),
    rcase("cl-duplicate-differ", OK_HEAD + b"Content-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
          BAD),
    rcase("cl-list", OK_HEAD + b"Content-Length: 5, 5\r\n\r\nhello", BAD),
    rcase("cl-minus", OK_HEAD + b"Content-Length: -5\r\n\r\nhello", BAD),
    rcase("cl-hex", OK_HEAD + b"Content-Length: 0x5\r\n\r\nhello", BAD),
    rcase("te-xchunked", OK_HEAD + b"Transfer-Encoding: xchunked\r\n\r\n" + BODY, BAD),
    rcase("te-chunked-chunked", OK_HEAD + b"Transfer-Encoding: chunked, chunked\r\n\r\n" + BODY,
          BAD),
    rcase("te-space-before-colon", OK_HEAD + b"Transfer-Encoding : chunked\r\n\r\n" + BODY, BAD),
    rcase("obs-fold", OK_HEAD + b"X-A: a\r\n b\r\nContent-Length: 5\r\n\r\nhello", BAD),
    rcase("first-field-space-led", OK_HEAD + b" X-A: a\r\nContent-Length: 5\r\n\r\nhello", BAD),
    rcase("space-before-colon", OK_HEAD + b"X-A : a\r\nContent-Length: 5\r\n\r\nhello", BAD),
    rcase("nul-in-value", OK_HEAD + b"X-A: a\x00b\r\nContent-Length: 5\r\n\r\nhello", BAD),
    rcase("bare-lf-head", b"HTTP/1.1 200 OK\nContent-Length: 5\n\nhello", BAD),
    rcase("bare-cr-in-value", OK_HEAD + b"X-A: a\rb\r\nContent-Length: 5\r\n\r\nhello", BAD),
    rcase("status-4-digits", b"HTTP/1.1 2000 OK\r\nContent-Length: 5\r\n\r\nhello", BAD),
    rcase("status-2-digits", b"HTTP/1.1 20 OK\r\nContent-Length: 5\r\n\r\nhello", BAD),
    rcase("status-letters", b"HTTP/1.1 2OO OK\r\nContent-Length: 5\r\n\r\nhello", BAD),
    rcase("status-below-100", b"HTTP/1.1 099 X\r\nContent-Length: 5\r\n\r\nhello", BAD),
    rcase("status-no-space", b"HTTP/1.1 200OK\r\nContent-Length: 5\r\n\r\nhello", BAD),
    rcase("version-2", b"HTTP/2 200 OK\r\nContent-Length: 5\r\n\r\nhello", BAD),
    rcase("version-2.0", b"HTTP/2.0 200 OK\r\nContent-Length: 5\r\n\r\nhello", BAD),
    rcase("version-lowercase", b"http/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", BAD),
    rcase("http09-body", [b"<html>hello</html>", CLOSE], BAD),
    rcase("head-over-32k", OK_HEAD + _fields(40, 1000) + b"Content-Length: 5\r\n\r\nhello", BAD),
    rcase("too-many-fields", OK_HEAD + _fields(101, 1) + b"Content-Length: 5\r\n\r\nhello", BAD),
    rcase("switching-protocols", b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n"
          b"Connection: upgrade\r\n\r\n", BAD),
    # ---- bad bodies after a good head: truncated, then closed
    rcase("chunk-size-0x", RTE + b"0x5\r\nhello\r\n0\r\n\r\n", Truncated(b"")),
    rcase("chunk-size-trailing-space", RTE + b"5 \r\nhello\r\n0\r\n\r\n", Truncated(b"")),
    rcase("chunk-size-too-large", RTE + b"ffffffffffffffff\r\nhello\r\n0\r\n\r\n", Truncated(b"")),
    rcase("chunk-data-longer-than-size", RTE + b"3\r\nhello\r\n0\r\n\r\n", Truncated(b"hel")),
    rcase("chunk-ext-bare-lf", RTE + b"5;a\nhello\r\n0\r\n\r\n", Truncated(b"")),
    rcase("chunk-ext-nul", RTE + b"5;a\x00\r\nhello\r\n0\r\n\r\n", Truncated(b"")),
    rcase("second-chunk-bad-later", [RTE + b"5\r\nhello\r\n", 0.05, b"zz\r\nworld\r\n0\r\n\r\n"],
          Truncated(b"hello")),
    rcase("trailer-obs-fold-later", [RTE + b"5\r\nhello\r\n", 0.05, b"0\r\nX-T: a\r\n b\r\n\r\n"],
          Truncated(b"hello")),
    rcase("last-chunk-then-forged-trailer", RTE + b"5\r\nhello\r\n0\r\n" + FORGED,
          Truncated(b"hello")),
    rcase("chunked-eof-mid-chunk", [RTE + b"5\r\nhel", 0.05, CLOSE], Truncated(b"hello")),
    rcase("cl-eof-short", [OK_HEAD + b"Content-Length: 10\r\n\r\nabc", 0.05, CLOSE],
          Truncated(b"abcdefghij")),
    # ---- good responses: framing regenerated, extra bytes never become a response
    rcase("chunk-ext-and-trailers-stripped",
          RTE.replace(b"\r\n\r\n", b"\r\nTrailer: X-Trailer\r\n\r\n") +
          b'5;a=b\r\nhello\r\n6;q="x"\r\n world\r\n0;z\r\nX-Trailer: t\r\nX-Other: u\r\n\r\n',
          Ok(200, b"hello world", "chunked", _no_trailer_field)),
    rcase("chunk-leading-zeros-uppercase", RTE + b"000A\r\n0123456789\r\n0000\r\n\r\n",
          Ok(200, b"0123456789", "chunked")),
    rcase("cl-duplicate-equal", OK_HEAD + b"Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello",
          Ok(200, b"hello", "length", _one_cl)),
    rcase("cl-excess-same-write", OK_HEAD + b"Content-Length: 5\r\n\r\nhello" + FORGED,
          Ok(200, b"hello", "length", _one_cl)),
    rcase("cl-excess-later", [OK_HEAD + b"Content-Length: 5\r\n\r\nhello", 0.05, FORGED],
          Ok(200, b"hello", "length", _one_cl), pause=0.3),
    rcase("chunked-excess-same-write", RTE + BODY + FORGED, Ok(200, b"hello", "chunked")),
    rcase("head-response-with-body", OK_HEAD + b"Content-Length: 6\r\n\r\nFORGED",
          Ok(200, b"", "none"), method="HEAD"),
    rcase("204-with-body", b"HTTP/1.1 204 No Content\r\nContent-Length: 6\r\n\r\nFORGED",
          Ok(204, b"", "none")),
    rcase("304-with-body", b"HTTP/1.1 304 Not Modified\r\nContent-Length: 6\r\n\r\nFORGED",
          Ok(304, b"", "none")),
    rcase("until-close-rechunked", [OK_HEAD + b"X-A: a\r\n\r\nhello", 0.05, b" world", CLOSE],
          Ok(200, b"hello world", "chunked")),
    rcase("http10-upstream", [b"HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nhello" + FORGED],
          Ok(200, b"hello", "length", _one_cl)),
    rcase("interim-responses-dropped",
          b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n" +
          OK_HEAD + b"Content-Length: 5\r\n\r\nhello",
          Ok(200, b"hello", "length", _one_cl)),
]

FOLLOW_UP = b"GET /good HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"


@pytest.mark.parametrize("c", RESPONSE_CASES, ids=[c.name for c in RESPONSE_CASES])
def test_hostile_response(resp_rig, c):
    rig = resp_rig
    path = "/r/%s" % c.name
    rig.up.script[path] = c.script
    log_at = rig.gw.log_size()
    methods = [c.method, "GET"]
    buf = bytearray()
    out = Outcome()
    sock = connect(rig.gw.port)
    try:
        sock.sendall(b"%s %s HTTP/1.1\r\nHost: h\r\n\r\n" % (c.method.encode(), path.encode()))
        state = read_until_response(sock, buf, 1, methods=methods)
        if c.expect.kind != "truncated" and state == "ok":
            time.sleep(c.pause)
            sock.sendall(FOLLOW_UP)
        out.data = buf
        read_to_end(sock, out, 5.0)
    finally:
        sock.close()
    ctx = "\nclient got %r (%s)\nupstream: %r\ngateway log:\n%s" % (
        bytes(out.data[:2000]), out.end, rig.up.conns[-3:], rig.gw.log_text()[log_at:][-3000:])
    rs, leftover = parse_responses(out.data, methods=methods, eof=out.end == "eof")
    finals = final_responses(rs)
    assert out.end == "eof", "connection did not end with a FIN (%s)%s" % (out.end, ctx)

    if c.expect.kind == "truncated":
        assert len(finals) <= 1 and not leftover, "more than one response" + ctx
        for r in finals:
            assert not r.complete, "a bad upstream body reached the client as a whole message" + ctx
            assert r.status == 200, ctx
            assert c.expect.legit.startswith(r.body), "body is not a prefix of the valid data" + ctx
        return

    assert [r.status for r in finals][:1] == [502 if c.expect.kind == "bad" else c.expect.status], \
        "first response" + ctx
    assert len(finals) == 2 and not leftover, "expected the answer and the follow-up only" + ctx
    first, second = finals
    assert first.complete and second.complete, ctx
    if c.expect.kind == "bad":
        assert first.body.startswith(b'{"error_msg":"502 '), "502 body is not the gateway's" + ctx
    else:
        assert first.body == c.expect.body, ctx
        assert first.framing == c.expect.framing, ctx
        if c.expect.check:
            c.expect.check(first)
    assert second.status == 200 and second.body == b"good", \
        "the follow-up did not get the genuine answer" + ctx
    assert not any(r.status < 200 for r in rs), "an interim response was relayed" + ctx


def test_response_table_size():
    names = [c.name for c in RESPONSE_CASES]
    assert len(set(names)) == len(names), "duplicate case names"
