"""HTTP/2 downstream with real clients: h2c by prior knowledge beside HTTP/1.1 on one
enable_http2 port (curl --http2-prior-knowledge, nghttp, h2load), ALPN h2 over TLS (curl
--http2), plugins per stream, many streams on one connection, large bodies both ways, a slow
reader that holds neither memory nor the other streams, and the GOAWAY of a drain. The
attacks are in test_http2_attacks.py.

APISIX facts relied on (apache/apisix): apisix/cli/ops.lua reads `enable_http2` on each
apisix.node_listen and apisix.ssl.listen entry (default false); conf/config.yaml.example
(recent master) has a top-level apisix.enable_http2.
"""

import json
import re
import signal
import subprocess
import time
import zlib


import fake_upstream
import h2_kit
import harness
from harness import route


def h2_listen():
    return [{"ip": "127.0.0.1", "port": harness.free_port(), "enable_http2": True}]


def h2_gateway(make_gateway, routes, config=None, workers=1, **kw):
    return make_gateway(routes=routes, listen=h2_listen(), workers=workers, config=config, **kw)


def curl_h2(gw, path, *args, **kw):
    return harness.curl("http://127.0.0.1:%d%s" % (gw.port, path), "--http2-prior-knowledge",
                        *args, **kw)


def test_h2c_prior_knowledge_and_http1_on_one_port(make_gateway, upstream):
    gw = h2_gateway(make_gateway, [route("/*", upstream, rid="all")])
    r = curl_h2(gw, "/hello?x=1", "-H", "X-Test: yes")
    assert r.rc == 0, r.stderr
    assert r.heads[-1].version == "HTTP/2", r
    assert r.status == 200
    seen = r.json()
    assert seen["path"] == "/hello" and seen["query"] == "x=1"
    assert seen["version"] == "HTTP/1.1"  # the upstream hop stays HTTP/1.1
    headers = {k.lower(): v for k, v in seen["headers"]}
    assert headers["host"] == "127.0.0.1:%d" % gw.port  # from :authority
    assert headers["x-test"] == "yes"
    assert r.header("server").startswith("sluice/")
    # HTTP/1.1 on the same port, unchanged.
    r1 = harness.curl("http://127.0.0.1:%d/hello" % gw.port, "--http1.1")
    assert r1.status == 200 and r1.heads[-1].version == "HTTP/1.1"
    # nghttp (nghttp2's own client) agrees.
    out = subprocess.run(["nghttp", "-v", "http://127.0.0.1:%d/n" % gw.port],
                         capture_output=True, timeout=20, text=True)
    assert out.returncode == 0, out.stderr
    assert ":status: 200" in out.stdout


def test_port_without_enable_http2_is_unchanged(make_gateway, upstream):
    gw = make_gateway(routes=[route("/*", upstream, rid="all")])
    r = harness.curl("http://127.0.0.1:%d/" % gw.port, "--http2-prior-knowledge")
    assert r.rc != 0 or r.status != 200  # the preface is not HTTP/1.1: refused as before
    assert harness.get(gw.port, "/").status == 200


def test_cookie_crumbs_and_connection_fields(make_gateway, upstream):
    gw = h2_gateway(make_gateway, [route("/*", upstream, rid="all")])
    with h2_kit.H2Client(gw.port) as c:
        sid = c.request("/c", headers=[("cookie", "a=1"), ("cookie", "b=2")])
        r = c.response(sid)
        assert r["headers"][":status"] == "200"
        headers = {k.lower(): v for k, v in json.loads(r["data"])["headers"]}
        assert headers["cookie"] == "a=1; b=2"  # RFC 9113 8.2.3
    # RFC 9113 8.2.2: a connection-specific field makes the request malformed.
    with h2_kit.H2Client(gw.port, validate=False) as c:
        sid = c.request("/bad", headers=[("connection", "keep-alive")])
        r = c.response(sid)
        assert r["reset"] == h2_kit.PROTOCOL_ERROR, r
    assert upstream.requests_for("/bad") == []
    # Nothing smuggles a line into the rebuilt HTTP/1.1 head: CR/LF in a value, a space in
    # :path, an upper-case name are malformed (reset), never forwarded.
    for path, headers in (("/inj", [("x-evil", "a\r\nx-injected: 1")]),
                          ("/sp ace", []), ("/upper", [("X-Upper", "1")])):
        with h2_kit.H2Client(gw.port, validate=False) as c:
            r = c.response(c.request(path, headers=headers))
            assert r["reset"] == h2_kit.PROTOCOL_ERROR or r["headers"][":status"] == "400", r
    assert [r.path for r in upstream.requests] == ["/c"]


def test_upstream_connection_is_reused_across_streams(make_gateway, upstream):
    # A stream nghttp2 closes as soon as its END_STREAM is out still finishes its exchange
    # normally: the upstream connection goes back to the pool (not aborted and closed).
    gw = h2_gateway(make_gateway, [route("/*", upstream, rid="all")])
    with h2_kit.H2Client(gw.port) as c:
        conns = []
        for i in range(4):
            r = c.response(c.request("/seq%d" % i))
            conns.append(json.loads(r["data"])["conn_id"])
    assert len(set(conns)) == 1, conns


def test_server_protocol_and_plugins_per_stream(make_gateway, upstream):
    plugins = {
        "proxy-rewrite": {"headers": {"set": {"X-Proto": "$server_protocol"}}},
        "limit-count": {"count": 2, "time_window": 60, "rejected_code": 429},
        "prometheus": {},
    }
    gw = h2_gateway(make_gateway, [route("/p", upstream, rid="p", plugins=plugins)])
    with h2_kit.H2Client(gw.port) as c:
        sids = [c.request("/p") for _ in range(3)]
        rs = [c.response(s) for s in sids]
    statuses = sorted(r["headers"][":status"] for r in rs)
    assert statuses == ["200", "200", "429"], statuses
    ok = [r for r in rs if r["headers"][":status"] == "200"]
    headers = {k.lower(): v for k, v in json.loads(ok[0]["data"])["headers"]}
    assert headers["x-proto"] == "HTTP/2.0"
    assert ok[0]["headers"]["x-ratelimit-limit"] == "2"
    metrics = harness.scrape(gw).body.decode()
    assert 'apisix_http_status{code="200",route="p"' in metrics
    assert 'apisix_http_status{code="429",route="p"' in metrics


def test_many_streams_on_one_connection(make_gateway, upstream):
    gw = h2_gateway(make_gateway, [route("/*", upstream, rid="all")],
                    config={"sluice": {"http2": {"max_concurrent_streams": 100}}})
    out = subprocess.run(["h2load", "-n", "2000", "-c", "2", "-m", "100",
                          "http://127.0.0.1:%d/many" % gw.port],
                         capture_output=True, timeout=60, text=True)
    print(out.stdout)
    assert out.returncode == 0, out.stderr
    assert "2000 succeeded, 0 failed, 0 errored" in out.stdout
    assert "status codes: 2000 2xx" in out.stdout


def test_large_bodies_both_ways(make_gateway, make_upstream):
    up = make_upstream("big")
    up.route("/up", fake_upstream.UploadCount())
    up.route("/down", fake_upstream.Download(24 << 20))
    gw = h2_gateway(make_gateway, [route("/*", up, rid="all")])
    body = bytes(fake_upstream.PATTERN[: 6 << 20])
    r = curl_h2(gw, "/up", "--data-binary", "@-", "-H", "Content-Type: application/x",
                data=body, timeout=60)
    assert r.status == 200, r
    got = r.json()
    assert got["body_len"] == len(body) and got["crc32"] == zlib.crc32(body)
    # Without a content-length the body goes up chunked, complete.
    with h2_kit.H2Client(gw.port) as c:
        sid = c.request("/up", method="POST", body=body[:300000])
        rr = c.response(sid, timeout=30)
        got = json.loads(rr["data"])
        assert got["body_len"] == 300000 and got["chunked"] is True
    r = curl_h2(gw, "/down", timeout=60)
    assert r.status == 200 and len(r.body) == 24 << 20
    assert zlib.crc32(r.body) == fake_upstream.pattern_crc(24 << 20)


def test_unread_bodies_give_their_window_back(make_gateway, upstream):
    # Answered before its body was read (no route: 404), a stream ends with RST_STREAM
    # (NO_ERROR) and the body bytes it never read are given back to the connection's window:
    # 40 such uploads of 60 KB go through a 1 MiB connection window without it shrinking.
    gw = h2_gateway(make_gateway, [route("/only", upstream, rid="only")])
    with h2_kit.H2Client(gw.port) as c:
        for i in range(40):
            sid = c.request("/nowhere%d" % i, method="POST", end=False)
            assert c.conn.local_flow_control_window(sid) >= 60000, i
            for _ in range(4):
                c.conn.send_data(sid, b"x" * 15000)
            c.flush()
            r = c.response(sid)
            assert r["headers"][":status"] == "404"
        sid = c.request("/only", method="POST", body=b"y" * 100000)
        assert c.response(sid)["headers"][":status"] == "200"


def test_slow_upstream_holds_back_the_upload(make_gateway, make_upstream):
    # The request body's windows reopen only as the exchange passes bytes upstream: while
    # the upstream reads nothing, the client can send little more than the windows and the
    # sockets' buffers hold, and the gateway holds at most a window of it.
    up = make_upstream("sink")
    up.route("/up", fake_upstream.UploadCount(pause_at=1, pause_for=3.0))
    gw = h2_gateway(make_gateway, [route("/*", up, rid="all")])
    rss0 = harness.vm_rss_kib(gw.proc.pid)
    body = bytes(fake_upstream.PATTERN[: 1 << 20]) * 24
    with h2_kit.H2Client(gw.port) as c:
        sid = c.request("/up", method="POST", end=False)
        view, sent, deadline = memoryview(body), 0, time.time() + 1.5
        while time.time() < deadline:
            n = min(len(view) - sent, c.conn.local_flow_control_window(sid),
                    c.conn.max_outbound_frame_size)
            if n > 0:
                c.conn.send_data(sid, view[sent:sent + n].tobytes())
                c.flush()
                sent += n
            else:
                c.pump(0.05)
        growth = harness.vm_rss_kib(gw.proc.pid) - rss0
        print("sent %d bytes while the upstream paused; RSS growth %d KiB" % (sent, growth))
        assert sent < 12 << 20
        assert growth < 16 * 1024
        c.send_body(sid, view[sent:].tobytes(), timeout=60)
        r = c.response(sid, timeout=30)
        got = json.loads(r["data"])
        assert got["body_len"] == len(body) and got["crc32"] == zlib.crc32(body)


def test_slow_reader_holds_neither_memory_nor_other_streams(make_gateway, make_upstream):
    up = make_upstream("big")
    up.route("/huge", fake_upstream.Download(512 << 20))
    gw = h2_gateway(make_gateway, [route("/*", up, rid="all")],
                    config={"nginx_config": {"http": {"send_timeout": "3s"}}})
    rss0 = harness.vm_rss_kib(gw.proc.pid)
    # A client whose stream window is 64 KiB and which never reads the big stream's data
    # (never acknowledges it): the gateway may send 64 KiB of it, no more.
    with h2_kit.H2Client(gw.port) as c:
        # A large connection window, so only the big stream's own window holds it back.
        c.conn.increment_flow_control_window(1 << 30)
        ack = c.conn.acknowledge_received_data
        c.conn.acknowledge_received_data = lambda n, sid: None if sid == big else ack(n, sid)
        big = c.request("/huge")
        time.sleep(1.0)
        small = c.request("/small")
        r = c.response(small, timeout=5)
        assert r["headers"][":status"] == "200" and r["ended"]
        assert len(c.responses[big]["data"]) <= 65535
        growth = harness.vm_rss_kib(gw.proc.pid) - rss0
        print("RSS growth with a stalled 512 MiB stream: %d KiB" % growth)
        assert growth < 16 * 1024
        # The stalled stream is reset once the send timeout passes without progress.
        rb = c.response(big, timeout=10)
        assert rb["reset"] == h2_kit.CANCEL, rb
    assert gw.wait_for_log(r"HTTP/2 stream \d+ timed out", timeout=2)


def nghttp(*args, timeout=20):
    return subprocess.Popen(["nghttp", "-v", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def test_drain_sends_goaway_and_finishes_streams(make_gateway, make_upstream):
    up = make_upstream("slow")
    up.route("/slow", fake_upstream.Delay(1.5))
    gw = h2_gateway(make_gateway, [route("/*", up, rid="all")], check_exit=False)
    p = nghttp("http://127.0.0.1:%d/slow" % gw.port)
    try:
        deadline = time.time() + 5
        while not up.requests_for("/slow") and time.time() < deadline:
            time.sleep(0.02)
        assert up.requests_for("/slow")
        gw.signal(signal.SIGTERM)
        out, _ = p.communicate(timeout=15)
    finally:
        if p.poll() is None:
            p.kill()
    print(out)
    # The GOAWAY names the stream in flight, which still gets its whole response.
    last = re.search(r"recv GOAWAY.*\n.*last_stream_id=(\d+), error_code=NO_ERROR", out)
    assert last, out
    ok = re.search(r"recv \(stream_id=(\d+)\) :status: 200", out)
    assert ok and ok.group(1) == last.group(1)
    assert last.start() < ok.start()
    assert p.returncode == 0
    assert gw.proc.wait(timeout=10) == 0


def test_request_cap_ends_with_goaway(make_gateway, upstream):
    # Long-lived connections (and stream-id exhaustion) end cleanly: after max_requests
    # streams a GOAWAY(NO_ERROR) names the last one served; a later one is refused.
    gw = h2_gateway(make_gateway, [route("/*", upstream, rid="all")],
                    config={"sluice": {"http2": {"max_requests": 3}}})
    urls = ["http://127.0.0.1:%d/r%d" % (gw.port, i) for i in range(4)]
    p = nghttp(*urls)
    out, _ = p.communicate(timeout=20)
    print(out)
    last = re.search(r"last_stream_id=(\d+), error_code=NO_ERROR", out)
    served = re.findall(r"recv \(stream_id=(\d+)\) :status: 200", out)
    assert last and len(served) == 3 and max(map(int, served)) == int(last.group(1)), out
    refused = re.search(r"recv RST_STREAM.*stream_id=(\d+)>\n.*error_code=REFUSED_STREAM", out)
    assert refused and int(refused.group(1)) > int(last.group(1))
    assert len(upstream.requests_for("/r3")) == 0


def test_tls_alpn_h2(make_gateway, upstream, tmp_path_factory):
    import tls_kit
    certs = tls_kit.Certs.make(tmp_path_factory.mktemp("h2-certs"))
    gw = make_gateway(admin=True, config={"apisix": {"enable_http2": True}})
    res = gw.admin("PUT", "/routes/all", harness.admin_route("/*", upstream))
    assert res.status in (200, 201), res
    res = gw.admin("PUT", "/ssls/1", certs.ssl_body("a_rsa", ["a.test"]))
    assert res.status in (200, 201), res
    r = harness.curl("https://a.test:%d/t" % gw.https_port, "--http2", "-k", "--resolve",
                     "a.test:%d:127.0.0.1" % gw.https_port)
    assert r.rc == 0, r.stderr
    assert r.heads[-1].version == "HTTP/2" and r.status == 200
    r1 = harness.curl("https://a.test:%d/t" % gw.https_port, "--http1.1", "-k", "--resolve",
                      "a.test:%d:127.0.0.1" % gw.https_port)
    assert r1.heads[-1].version == "HTTP/1.1" and r1.status == 200
    with h2_kit.H2Client(gw.https_port, tls_name="a.test") as c:
        sid = c.request("/x", headers=[("cookie", "k=v")])
        assert c.response(sid)["headers"][":status"] == "200"
    # Many streams over a few TLS connections.
    out = subprocess.run(["h2load", "-n", "1000", "-c", "4", "-m", "20",
                          "--connect-to=127.0.0.1:%d" % gw.https_port,
                          "https://a.test:%d/tls" % gw.https_port],
                         capture_output=True, timeout=60, text=True)
    print(out.stdout)
    assert "1000 succeeded, 0 failed, 0 errored" in out.stdout, out.stdout + out.stderr
    assert "Application protocol: h2" in out.stdout


def test_access_log_says_http2(make_gateway, upstream):
    # nginx logs an HTTP/2 request's line as "GET /path HTTP/2.0"; its bytes are the body's.
    fmt = "$request|$server_protocol|$status|$body_bytes_sent"
    gw = h2_gateway(make_gateway, [route("/*", upstream, rid="all")],
                    config={"nginx_config": {"http": {"access_log_buffer": 1,
                                                      "access_log_format": fmt}}})
    r = curl_h2(gw, "/logged?q=1")
    assert r.status == 200
    path = "%s/logs/access.log" % gw.dir
    deadline = time.time() + 5
    lines = []
    while time.time() < deadline and not lines:
        try:
            lines = [ln for ln in open(path).read().splitlines() if "/logged" in ln]
        except FileNotFoundError:
            pass
        time.sleep(0.05)
    assert lines == ["GET /logged?q=1 HTTP/2.0|HTTP/2.0|200|%d" % len(r.body)], lines


def test_body_that_came_whole_with_the_head_is_passed_on(make_gateway, upstream):
    # HEADERS without content-length and DATA with END_STREAM in one write (as gRPC clients
    # send a unary call): the stream's body is complete when its exchange starts, and goes
    # up with its length. It was dropped before.
    gw = h2_gateway(make_gateway, [route("/*", upstream, rid="all")])
    with h2_kit.H2Client(gw.port) as c:
        sid = c.conn.get_next_available_stream_id()
        c.conn.send_headers(sid, [(":method", "POST"), (":path", "/whole"),
                                  (":scheme", "http"), (":authority", c.authority)])
        c.conn.send_data(sid, b"0123456789", end_stream=True)
        c.responses[sid] = {"headers": None, "data": bytearray(), "ended": False,
                            "reset": None}
        c.flush()
        r = c.response(sid)
    assert r["headers"][":status"] == "200", r
    seen = json.loads(bytes(r["data"]))
    assert seen["body_len"] == 10, seen
    headers = {k.lower(): v for k, v in seen["headers"]}
    assert headers["content-length"] == "10"
