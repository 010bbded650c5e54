"""Issue 2, point 3: the HTTP/1.1 server side — keep-alive, pipelining, framing, 100-continue,
bodiless responses, size limits, malformed input, hop-by-hop and X-Forwarded-* headers."""

import hashlib
import os
import socket
import subprocess
import time
import zlib

import pytest

from fake_upstream import chunked, delay, download, fixed, pattern_chunks, upload_count
from harness import Client, build_request, crc_of_body, curl, get, http, read_head, route


# --------------------------------------------------------------------------- keep-alive


def test_keepalive_serves_many_requests_on_one_connection(gw, upstream):
    with Client(gw.port) as c:
        for i in range(10):
            r = c.get("/k%d" % i)
            assert r.status == 200
            assert r.json()["path"] == "/k%d" % i
            assert (r.header("connection") or "").lower() != "close"


@pytest.mark.parametrize("host", ["127.0.0.1", "example.com", "example.com:8080"])
def test_keepalive_requests_reach_upstream_identically(make_gateway, upstream, host):
    """The n-th request on a client connection is forwarded exactly like the first."""
    gw = make_gateway(routes=[route("/*", upstream)], workers=1)
    with Client(gw.port) as c:
        statuses = [c.get("/same", host=host).status for _ in range(3)]
    heads = [q.raw_head for q in upstream.requests_for("/same")]
    assert upstream.errors == [], upstream.errors
    assert statuses == [200, 200, 200]
    assert len(heads) == 3 and heads[1] == heads[0] and heads[2] == heads[0], heads


def test_curl_reuses_the_connection(gw, upstream):
    p = subprocess.run(["curl", "-sSv", "--max-time", "10", "-o", os.devnull, gw.url("/one"),
                        "-o", os.devnull, gw.url("/two")], capture_output=True, text=True,
                       timeout=30)
    assert p.returncode == 0, p.stderr
    assert "Re-using existing connection" in p.stderr, p.stderr
    assert len(upstream.requests_for("/one")) == 1 and len(upstream.requests_for("/two")) == 1


def test_client_connection_close_is_honoured(gw):
    with Client(gw.port) as c:
        r = c.request("GET", "/x", headers=[("Connection", "close")])
        assert r.status == 200
        assert (r.header("connection") or "").lower() == "close"
        assert c.closed_by_peer()


def test_http10_client_without_keepalive_gets_close(gw):
    with Client(gw.port) as c:
        r = c.request("GET", "/x", version="HTTP/1.0")
        assert r.status == 200
        assert r.json()["path"] == "/x"
        assert c.closed_by_peer()


def test_http10_client_with_keepalive(gw):
    with Client(gw.port) as c:
        for _ in range(3):
            r = c.request("GET", "/x", version="HTTP/1.0", headers=[("Connection", "keep-alive")])
            assert r.status == 200
            assert r.framing == "length", "a keep-alive 1.0 response needs a Content-Length"


# --------------------------------------------------------------------------- pipelining


def test_pipelined_requests_are_answered_in_order(gw, upstream):
    upstream.route("/p1", delay(0.4))  # the first answer is the slowest
    body = b"x" * 5000
    batch = b"".join([
        build_request("GET", "/p1"),
        build_request("POST", "/p2", body=body),
        build_request("GET", "/p3?q=1"),
        build_request("HEAD", "/p4"),
        build_request("GET", "/p5"),
    ])
    with Client(gw.port) as c:
        c.send(batch)
        rs = [c.read_response(m) for m in ("GET", "POST", "GET", "HEAD", "GET")]
    assert [r.status for r in rs] == [200] * 5
    assert rs[0].json()["path"] == "/p1"
    assert rs[1].json()["path"] == "/p2"
    assert rs[1].json()["body_len"] == len(body)
    assert rs[2].json()["target"] == "/p3?q=1"
    assert rs[3].body == b""
    assert rs[4].json()["path"] == "/p5"


def test_pipelined_requests_sent_byte_by_byte(gw):
    batch = build_request("GET", "/b1") + build_request("GET", "/b2")
    with Client(gw.port) as c:
        for i in range(len(batch)):
            c.send(batch[i:i + 1])
        assert c.read_response().json()["path"] == "/b1"
        assert c.read_response().json()["path"] == "/b2"


# --------------------------------------------------------------------------- bodies


def test_content_length_request_body(gw, tmp_path):
    data = os.urandom(300_000)
    f = tmp_path / "body.bin"
    f.write_bytes(data)
    r = curl(gw.url("/upload"), "--data-binary", "@%s" % f, "-H", "Expect:")
    assert r.status == 200, r
    j = r.json()
    assert j["method"] == "POST"
    assert j["body_len"] == len(data)
    assert j["body_sha256"] == hashlib.sha256(data).hexdigest()
    assert dict((k.lower(), v) for k, v in j["headers"])["content-length"] == str(len(data))


def test_chunked_request_body_reaches_upstream_chunked(gw):
    parts = [b"a" * 10, os.urandom(70000), b"tail"]
    with Client(gw.port) as c:
        c.send(build_request("POST", "/chunked-up", headers=[("Transfer-Encoding", "chunked")]))
        for p in parts:
            c.send(b"%x\r\n%s\r\n" % (len(p), p))
            time.sleep(0.05)
        c.send(b"0\r\n\r\n")
        r = c.read_response("POST")
    assert r.status == 200
    j = r.json()
    assert j["chunked"] is True, "upstream did not receive a chunked body: %r" % j["headers"]
    assert j["body_len"] == sum(map(len, parts))
    assert j["body_sha256"] == hashlib.sha256(b"".join(parts)).hexdigest()
    names = [k.lower() for k, _ in j["headers"]]
    assert "content-length" not in names


def test_curl_chunked_upload(gw, tmp_path):
    data = os.urandom(200_000)
    f = tmp_path / "b"
    f.write_bytes(data)
    r = curl(gw.url("/up"), "-H", "Transfer-Encoding: chunked", "-H", "Expect:",
             "--data-binary", "@%s" % f)
    assert r.status == 200, r
    assert r.json()["chunked"] is True
    assert r.json()["body_sha256"] == hashlib.sha256(data).hexdigest()


def test_chunked_response_reaches_http11_client_chunked(gw, upstream):
    pieces = [b"hello ", b"chunked ", os.urandom(50000), b" world"]
    upstream.route("/chunks", chunked(pieces, gap=0.02))
    with Client(gw.port) as c:
        r = c.get("/chunks")
        assert r.status == 200
        assert r.framing == "chunked", r.headers
        assert r.header("content-length") is None
        assert r.body == b"".join(pieces)
        assert c.get("/after").status == 200  # the connection is still in sync


def test_chunked_response_to_http10_client_is_unchunked(gw, upstream):
    pieces = [b"abc", b"defgh", b"ij"]
    upstream.route("/chunks10", chunked(pieces))
    with Client(gw.port) as c:
        r = c.request("GET", "/chunks10", version="HTTP/1.0")
        assert r.status == 200
        assert r.framing in ("length", "close")
        assert r.body == b"abcdefghij"


def test_content_length_response_keeps_its_length(gw, upstream):
    body = os.urandom(123_457)
    upstream.route("/fixed", fixed(200, [("Content-Type", "application/octet-stream")], body))
    with Client(gw.port) as c:
        r = c.get("/fixed")
        assert r.framing == "length"
        assert r.header("content-length") == str(len(body))
        assert r.body == body


@pytest.mark.parametrize("chunked_down", [False, True], ids=["length", "chunked"])
def test_medium_download_streams_intact(gw, upstream, chunked_down):
    total = 20 << 20
    upstream.route("/dl", download(total, chunked=chunked_down))
    with Client(gw.port, timeout=30) as c:
        c.send(build_request("GET", "/dl"))
        resp = read_head(c.reader)
        n, crc = crc_of_body(c.reader, resp)
    req = upstream.requests_for("/dl")[0]
    assert req.done.wait(10)
    assert n == total
    assert crc == req.sent_crc32


@pytest.mark.parametrize("chunked_up", [False, True], ids=["length", "chunked"])
def test_medium_upload_streams_intact(gw, upstream, chunked_up):
    total = 20 << 20
    upstream.route("/ul", upload_count())
    hdr = [("Transfer-Encoding", "chunked")] if chunked_up else [("Content-Length", str(total))]
    crc = 0
    with Client(gw.port, timeout=30) as c:
        c.send(build_request("PUT", "/ul", headers=hdr))
        for piece in pattern_chunks(total, 256 * 1024):
            crc = zlib.crc32(piece, crc)
            c.send(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked_up else piece)
        if chunked_up:
            c.send(b"0\r\n\r\n")
        r = c.read_response("PUT")
    assert r.status == 200, r
    assert r.json()["body_len"] == total
    assert r.json()["crc32"] == crc
    assert r.json()["chunked"] is chunked_up


# --------------------------------------------------------------------------- 100-continue


def test_expect_100_continue_answered_by_gateway(gw, upstream):
    body = b"hello world"
    with Client(gw.port, timeout=5) as c:
        c.send(build_request("POST", "/expect", headers=[
            ("Expect", "100-continue"), ("Content-Length", str(len(body)))]))
        # The body is withheld until the gateway says 100 Continue.
        interim = read_head(c.reader)
        assert interim.status == 100, interim
        assert interim.version == "HTTP/1.1"
        c.send(body)
        r = c.read_response("POST")
    assert r.status == 200
    j = r.json()
    assert j["body_len"] == len(body)
    names = [k.lower() for k, _ in j["headers"]]
    assert "expect" not in names, "Expect was forwarded upstream"


def test_expect_100_continue_with_curl(gw, tmp_path):
    data = os.urandom(100_000)
    f = tmp_path / "b"
    f.write_bytes(data)
    t0 = time.monotonic()
    r = curl(gw.url("/expect"), "-H", "Expect: 100-continue", "--expect100-timeout", "5",
             "--data-binary", "@%s" % f)
    took = time.monotonic() - t0
    assert r.status == 200, r
    assert [h.status for h in r.heads][:1] == [100], [h.status for h in r.heads]
    assert took < 4, "curl waited %.1fs for 100 Continue" % took
    assert r.json()["body_sha256"] == hashlib.sha256(data).hexdigest()


# --------------------------------------------------------------------------- bodiless


def test_head_response_has_no_body(gw, upstream):
    upstream.route("/h", fixed(200, [("Content-Type", "text/plain")], b"0123456789"))
    with Client(gw.port) as c:
        c.send(build_request("HEAD", "/h") + build_request("GET", "/h"))
        head = c.read_response("HEAD")
        assert head.status == 200
        assert head.body == b""
        assert head.header("content-length") in (None, "10")
        r = c.read_response("GET")  # would be garbled if HEAD carried a body
        assert r.status == 200 and r.body == b"0123456789"


@pytest.mark.parametrize("status", [204, 304])
def test_bodiless_statuses(gw, upstream, status):
    upstream.route("/nb", fixed(status, [("ETag", '"v1"')]))
    with Client(gw.port) as c:
        c.send(build_request("GET", "/nb") + build_request("GET", "/after"))
        r = c.read_response()
        assert r.status == status
        assert r.body == b""
        assert r.header("transfer-encoding") is None
        after = c.read_response()
        assert after.status == 200 and after.json()["path"] == "/after"


# --------------------------------------------------------------------------- limits


def test_request_line_over_8000_bytes_is_414(gw):
    with Client(gw.port) as c:
        r = c.get("/" + "a" * 9000)
        assert r.status == 414


def test_request_line_under_limit_is_served(gw):
    path = "/" + "a" * 7000
    r = get(gw.port, path)
    assert r.status == 200
    assert r.json()["path"] == path


def test_header_section_over_32k_is_431(gw):
    headers = [("X-Big-%d" % i, "v" * 1000) for i in range(40)]
    with Client(gw.port) as c:
        r = c.request("GET", "/x", headers=headers)
        assert r.status == 431


def test_header_section_under_limit_is_served(gw):
    headers = [("X-Big-%d" % i, "v" * 1000) for i in range(20)]
    r = http(gw.port, "GET", "/x", headers=headers)
    assert r.status == 200
    got = dict((k.lower(), v) for k, v in r.json()["headers"])
    assert got["x-big-19"] == "v" * 1000


MALFORMED = {
    "no-version": b"GARBAGE\r\n\r\n",
    "header-without-colon": b"GET / HTTP/1.1\r\nHost: a\r\nNoColonHere\r\n\r\n",
    "space-before-colon": b"GET / HTTP/1.1\r\nHost : a\r\n\r\n",
    "bad-content-length": b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: abc\r\n\r\n",
    "negative-content-length": b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n",
    "conflicting-content-length":
        b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!",
    "bad-chunk-size":
        b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n",
    "te-not-ending-in-chunked": b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n",
    "missing-host-http11": b"GET / HTTP/1.1\r\nUser-Agent: t\r\n\r\n",
    "duplicate-host": b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
    "nul-in-target": b"GET /a\x00b HTTP/1.1\r\nHost: a\r\n\r\n",
}


@pytest.mark.parametrize("raw", list(MALFORMED.values()), ids=list(MALFORMED))
def test_malformed_request_gets_400_and_close(gw, raw):
    with Client(gw.port, timeout=5) as c:
        c.send(raw)
        r = c.read_response()
        if b"Transfer-Encoding: gzip" in raw:
            # RFC 9112 6.3 says 400; nginx answers 501 for a coding it does not implement.
            assert r.status in (400, 501), r
        else:
            assert r.status == 400, r
        assert (r.header("connection") or "").lower() == "close", r.headers
        assert c.closed_by_peer(timeout=3), "connection left open after a 400"


def test_content_length_and_chunked_together_is_not_smuggled(gw, upstream):
    """CL + TE: reject (400) or let chunked win; never forward both or split differently."""
    smuggle = (b"POST /cl-te HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n"
               b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
               b"GET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n")
    with Client(gw.port, timeout=5) as c:
        c.send(smuggle)
        r = c.read_response("POST")
    assert r.status in (200, 400), r
    for req in upstream.requests_for("/cl-te"):
        names = [k.lower() for k, _ in req.headers]
        assert not ("content-length" in names and "transfer-encoding" in names), req.headers
    if r.status == 400:
        assert not upstream.requests_for("/smuggled")


# --------------------------------------------------------------------------- headers


def _hdrs(j):
    return [(k.lower(), v) for k, v in j["headers"]]


def _get1(j, name):
    vals = [v for k, v in _hdrs(j) if k == name]
    assert len(vals) <= 1, "%s sent %d times: %r" % (name, len(vals), vals)
    return vals[0] if vals else None


def test_hop_by_hop_request_headers_are_not_forwarded(gw):
    r = http(gw.port, "GET", "/hop", headers=[
        ("Connection", "keep-alive, X-Hop-Custom"),
        ("X-Hop-Custom", "secret"),
        ("Keep-Alive", "timeout=5"),
        ("TE", "trailers"),
        ("Trailer", "X-Foo"),
        ("Upgrade", "foo/1"),
        ("Proxy-Connection", "keep-alive"),
        ("Proxy-Authorization", "Basic Zm9vOmJhcg=="),
        ("X-Keep", "yes"),
    ])
    assert r.status == 200
    names = {k for k, _ in _hdrs(r.json())}
    for h in ("keep-alive", "te", "trailer", "upgrade", "proxy-connection",
              "proxy-authorization", "x-hop-custom"):
        assert h not in names, "%s forwarded upstream: %r" % (h, r.json()["headers"])
    assert "x-keep" in names
    conn = (_get1(r.json(), "connection") or "").lower()
    assert conn in ("", "keep-alive", "close"), conn


def test_hop_by_hop_response_headers_are_not_forwarded(gw, upstream):
    upstream.route("/hop-resp", fixed(200, [
        ("Connection", "X-Up-Hop"),
        ("X-Up-Hop", "secret"),
        ("Keep-Alive", "timeout=99, max=7"),
        ("Proxy-Connection", "keep-alive"),
        ("Upgrade", "foo/1"),
        ("Trailer", "X-T"),
        ("X-Up-Keep", "yes"),
    ], b"body"))
    with Client(gw.port) as c:
        r = c.get("/hop-resp")
    assert r.status == 200 and r.body == b"body"
    assert r.header("x-up-hop") is None
    assert r.header("keep-alive") != "timeout=99, max=7"
    for h in ("proxy-connection", "upgrade", "trailer"):
        assert r.header(h) is None, (h, r.headers)
    assert "x-up-hop" not in (r.header("connection") or "").lower()
    assert r.header("x-up-keep") == "yes"


def test_x_forwarded_headers(gw):
    r = http(gw.port, "GET", "/xff", host="Example.com:8080")
    j = r.json()
    assert _get1(j, "x-real-ip") == "127.0.0.1"
    assert _get1(j, "x-forwarded-for") == "127.0.0.1"
    assert _get1(j, "x-forwarded-proto") == "http"
    assert (_get1(j, "x-forwarded-host") or "").lower() == "example.com"
    assert _get1(j, "x-forwarded-port") == str(gw.port)


def test_x_forwarded_for_is_appended(gw):
    r = http(gw.port, "GET", "/xff", headers=[("X-Forwarded-For", "1.2.3.4, 5.6.7.8")])
    assert _get1(r.json(), "x-forwarded-for") == "1.2.3.4, 5.6.7.8, 127.0.0.1"


def test_x_real_ip_is_not_spoofable(gw):
    r = http(gw.port, "GET", "/xff", headers=[("X-Real-IP", "9.9.9.9")])
    assert _get1(r.json(), "x-real-ip") == "127.0.0.1"


def test_x_forwarded_port_is_the_listener_that_accepted(make_gateway, upstream):
    from harness import free_port
    p1, p2 = free_port(), free_port()
    gw = make_gateway(routes=[route("/*", upstream)], listen=[p1, p2])
    for p in (p1, p2):
        assert _get1(get(p, "/port").json(), "x-forwarded-port") == str(p)


def test_server_header_is_sluice(gw, upstream):
    upstream.route("/srv", fixed(200, [("Server", "fake-upstream/1.0")], b"x"))
    with Client(gw.port) as c:
        r = c.get("/srv")
        assert r.header_all("server") and len(r.header_all("server")) == 1, r.headers
        assert r.header("server").lower().startswith("sluice/"), r.header("server")
        # The gateway's own answers carry it too.
        nf = c.get("/__no_such_route__", host="no-such-host.invalid")
        assert nf.header("server").lower().startswith("sluice/")


def test_request_target_and_headers_pass_through(gw):
    r = http(gw.port, "GET", "/q/a%20b?x=1&y=%2F&z", headers=[
        ("X-Dup", "one"), ("X-Dup", "two"), ("X-Mixed-Case", "Value With Spaces"),
        ("User-Agent", "sluice-tests")])
    j = r.json()
    assert j["target"] == "/q/a%20b?x=1&y=%2F&z"
    hs = _hdrs(j)
    assert [v for k, v in hs if k == "x-dup"] in (["one", "two"], ["one, two"])
    assert ("x-mixed-case", "Value With Spaces") in hs
    assert ("user-agent", "sluice-tests") in hs


def test_upstream_status_reason_and_body_pass_through(gw, upstream):
    upstream.route("/teapot", fixed(418, [("X-Why", "tea")], b"short and stout"))
    upstream.route("/boom", fixed(500, [], b"upstream broke"))
    r = get(gw.port, "/teapot")
    assert (r.status, r.header("x-why"), r.body) == (418, "tea", b"short and stout")
    r = get(gw.port, "/boom")
    assert (r.status, r.body) == (500, b"upstream broke")


def test_client_abort_mid_request_does_not_break_the_gateway(gw, upstream):
    """A client that disappears mid-body or mid-download leaves the gateway serving."""
    upstream.route("/dl", download(50 << 20))
    s = socket.create_connection(("127.0.0.1", gw.port))
    s.sendall(build_request("POST", "/abort", headers=[("Content-Length", "100000")]) + b"x" * 10)
    s.close()
    s = socket.create_connection(("127.0.0.1", gw.port))
    s.sendall(build_request("GET", "/dl"))
    s.recv(1000)
    s.close()
    for _ in range(5):
        assert get(gw.port, "/still-alive").status == 200
