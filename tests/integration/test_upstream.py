"""Issue 2, point 4: the upstream side — keep-alive pools, retries of idempotent requests on a
pooled connection the upstream closed, smooth weighted round-robin, name resolution,
timeouts, pass_host and the 502/503/504 outcomes."""

import socket
import threading
import time

import pytest

from fake_upstream import (close_mid_body, close_without_response, delay, drip, drop_on_reuse,
                           fixed, idle_close, raw, reset)
from harness import Client, free_port, get, http, route


def _hdr(j, name):
    for k, v in j["headers"]:
        if k.lower() == name:
            return v
    return None


# --------------------------------------------------------------------------- keep-alive pool


def test_one_client_connection_reuses_one_upstream_connection(make_gateway, upstream):
    gw = make_gateway(routes=[route("/*", upstream)], workers=1)
    with Client(gw.port) as c:
        for i in range(20):
            assert c.get("/ka").status == 200
    assert len(upstream.requests_for("/ka")) == 20
    assert len(upstream.conn_ids_for("/ka")) == 1, upstream.conn_ids_for("/ka")


def test_pool_is_shared_by_sequential_client_connections(make_gateway, upstream):
    gw = make_gateway(routes=[route("/*", upstream)], workers=1)
    for i in range(10):
        assert get(gw.port, "/ka2").status == 200
    assert len(upstream.conn_ids_for("/ka2")) == 1, upstream.conn_ids_for("/ka2")


def test_keepalive_pool_requests_limit(make_gateway, upstream):
    r = route("/*", upstream)
    r["upstream"]["keepalive_pool"] = {"size": 10, "idle_timeout": 60, "requests": 5}
    gw = make_gateway(routes=[r], workers=1)
    for i in range(20):
        assert get(gw.port, "/lim").status == 200
    conns = upstream.conn_ids_for("/lim")
    assert len(conns) == 4, conns
    per_conn = [len([q for q in upstream.requests_for("/lim") if q.conn_id == cid])
                for cid in conns]
    assert per_conn == [5, 5, 5, 5]


def test_keepalive_pool_idle_timeout(make_gateway, upstream):
    r = route("/*", upstream)
    r["upstream"]["keepalive_pool"] = {"size": 10, "idle_timeout": 1, "requests": 1000}
    gw = make_gateway(routes=[r], workers=1)
    assert get(gw.port, "/idle").status == 200
    first = upstream.requests_for("/idle")[0].conn_id
    rec = [c for c in upstream.connections if c.id == first][0]
    assert upstream.wait_for(lambda u: not rec.open, timeout=4), \
        "the gateway kept an idle pooled connection past idle_timeout 1 s"
    assert rec.closed_by == "peer"
    assert get(gw.port, "/idle").status == 200
    assert len(upstream.conn_ids_for("/idle")) == 2


def test_keepalive_pool_size_caps_idle_connections(make_gateway, upstream):
    upstream.route("/burst", delay(0.5))
    r = route("/*", upstream)
    r["upstream"]["keepalive_pool"] = {"size": 1, "idle_timeout": 60, "requests": 1000}
    gw = make_gateway(routes=[r], workers=1)
    threads = [threading.Thread(target=get, args=(gw.port, "/burst")) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(upstream.conn_ids_for("/burst")) == 3
    ok = upstream.wait_for(lambda u: len([c for c in u.open_connections()
                                         if c.id in u.conn_ids_for("/burst")]) <= 1, timeout=3)
    assert ok, "more than keepalive_pool.size=1 idle connections kept"


def test_upstream_closing_an_idle_pooled_connection_costs_no_error(make_gateway, upstream):
    upstream.route("/idle-close", idle_close(after=0.1))
    gw = make_gateway(routes=[route("/*", upstream)], workers=1)
    for i in range(5):
        r = get(gw.port, "/idle-close")
        assert r.status == 200, "request %d: %r" % (i, r)
        time.sleep(0.4)  # the upstream closes the pooled connection meanwhile
    assert len(upstream.conn_ids_for("/idle-close")) == 5


@pytest.mark.parametrize("rst", [False, True], ids=["fin", "rst"])
def test_pooled_connection_dropped_on_reuse_is_retried_for_get(make_gateway, upstream, rst):
    """The upstream closes a reused connection instead of answering: GET is retried once."""
    upstream.route("/reuse", drop_on_reuse(reset=rst))
    gw = make_gateway(routes=[route("/*", upstream)], workers=1)
    for i in range(5):
        r = get(gw.port, "/reuse")
        assert r.status == 200, "request %d: %r" % (i, r)
    dropped = [q for q in upstream.requests_for("/reuse") if q.outcome == "dropped"]
    assert dropped, "the gateway never reused a pooled connection (test proves nothing)"


# --------------------------------------------------------------------------- round-robin


def _sequence(port, n, path="/rr"):
    out = []
    for _ in range(n):
        r = get(port, path)
        assert r.status == 200, r
        out.append(r.json()["upstream"])
    return out


def _assert_smooth_1_2(seq, light):
    assert seq.count(light) == 10 and len(seq) == 30, seq
    for i in range(len(seq) - 2):
        assert seq[i:i + 3].count(light) == 1, "not smooth at %d: %s" % (i, "".join(
            "a" if s == light else "b" for s in seq))


def test_round_robin_weighted_map_form(make_gateway, make_upstream):
    a, b = make_upstream("a"), make_upstream("b")
    r = route("/rr", rid="rr")
    r["upstream"] = {"type": "roundrobin", "nodes": {a.addr: 1, b.addr: 2}}
    gw = make_gateway(routes=[r], workers=1)
    _assert_smooth_1_2(_sequence(gw.port, 30), "a")


def test_round_robin_weighted_list_form(make_gateway, make_upstream):
    a, b = make_upstream("a"), make_upstream("b")
    r = route("/rr", rid="rr")
    r["upstream"] = {"type": "roundrobin", "nodes": [
        {"host": "127.0.0.1", "port": a.port, "weight": 1},
        {"host": "127.0.0.1", "port": b.port, "weight": 2}]}
    gw = make_gateway(routes=[r], workers=1)
    _assert_smooth_1_2(_sequence(gw.port, 30), "a")


def test_round_robin_equal_weights(make_gateway, make_upstream):
    ups = [make_upstream(n) for n in "abc"]
    gw = make_gateway(routes=[route("/rr", *ups, rid="rr")], workers=1)
    seq = _sequence(gw.port, 30)
    assert sorted(seq.count(n) for n in "abc") == [10, 10, 10], seq
    for i in range(len(seq) - 2):
        assert len(set(seq[i:i + 3])) == 3, seq


def test_round_robin_is_per_request_not_per_connection(make_gateway, make_upstream):
    a, b = make_upstream("a"), make_upstream("b")
    gw = make_gateway(routes=[route("/rr", a, b, rid="rr")], workers=1)
    seq = [get(gw.port, "/rr").json()["upstream"] for _ in range(10)]
    assert seq.count("a") == 5 and seq.count("b") == 5, seq


def test_zero_weight_node_gets_nothing(make_gateway, make_upstream):
    a, b = make_upstream("a"), make_upstream("b")
    r = route("/rr", rid="rr")
    r["upstream"] = {"type": "roundrobin", "nodes": {a.addr: 1, b.addr: 0}}
    gw = make_gateway(routes=[r], workers=1)
    assert set(_sequence(gw.port, 10)) == {"a"}


def test_host_name_nodes_are_resolved(make_gateway, upstream):
    r = route("/dns", rid="dns")
    r["upstream"] = {"type": "roundrobin", "nodes": {"localhost:%d" % upstream.port: 1}}
    gw = make_gateway(routes=[r], workers=2)
    for _ in range(3):
        resp = get(gw.port, "/dns")
        assert resp.status == 200, resp
        assert resp.json()["upstream"] == "up"


# --------------------------------------------------------------------------- outcomes


def test_no_reachable_node_is_502(make_gateway):
    r = route("/dead", rid="dead")
    r["upstream"] = {"type": "roundrobin",
                     "nodes": {"127.0.0.1:%d" % free_port(): 1, "127.0.0.1:%d" % free_port(): 1}}
    gw = make_gateway(routes=[r])
    t0 = time.monotonic()
    assert get(gw.port, "/dead").status == 502
    assert time.monotonic() - t0 < 5


def test_a_dead_node_is_skipped_when_another_is_up(make_gateway, upstream):
    r = route("/half", rid="half")
    r["upstream"] = {"type": "roundrobin",
                     "nodes": {"127.0.0.1:%d" % free_port(): 1, upstream.addr: 1}}
    gw = make_gateway(routes=[r], workers=1)
    for i in range(6):
        assert get(gw.port, "/half").status == 200, "request %d" % i


def test_upstream_without_nodes_is_503(make_gateway):
    r = route("/empty", rid="empty")
    r["upstream"] = {"type": "roundrobin", "nodes": {}}
    gw = make_gateway(routes=[r])
    assert get(gw.port, "/empty").status == 503


@pytest.mark.parametrize("where", ["route", "upstream"])
def test_read_timeout_is_504(make_gateway, upstream, where):
    upstream.route("/slow", delay(5))
    r = route("/slow", upstream, rid="slow")
    t = {"connect": 1, "send": 1, "read": 0.5}
    if where == "route":
        r["timeout"] = t
    else:
        r["upstream"]["timeout"] = t
    gw = make_gateway(routes=[r])
    t0 = time.monotonic()
    resp = get(gw.port, "/slow")
    took = time.monotonic() - t0
    assert resp.status == 504, resp
    assert 0.4 <= took < 2.5, "answered after %.2fs with read timeout 0.5 s" % took


def test_read_timeout_is_per_read_not_total(make_gateway, upstream):
    upstream.route("/drip", drip(total=1000, piece=100, interval=0.2))
    r = route("/drip", upstream, rid="drip", timeout={"connect": 1, "send": 1, "read": 0.6})
    gw = make_gateway(routes=[r])
    resp = get(gw.port, "/drip")
    assert resp.status == 200
    assert len(resp.body) == 1000


def test_slow_headers_within_timeout(make_gateway, upstream):
    upstream.route("/late", delay(0.5, fixed(200, body=b"late")))
    r = route("/late", upstream, rid="late", timeout={"connect": 1, "send": 1, "read": 2})
    gw = make_gateway(routes=[r])
    assert get(gw.port, "/late").body == b"late"


@pytest.mark.parametrize("behaviour", [reset(), close_without_response(),
                                       raw(b"NOT HTTP AT ALL\r\n\r\n")],
                         ids=["reset", "close-without-response", "garbage"])
def test_upstream_failure_before_response_is_502(make_gateway, upstream, behaviour):
    upstream.route("/bad", behaviour)
    gw = make_gateway(routes=[route("/*", upstream)])
    with Client(gw.port) as c:
        r = c.get("/bad")
        assert r.status == 502, r
    assert get(gw.port, "/fine").status == 200


def test_upstream_close_mid_body_truncates_and_closes_client(make_gateway, upstream):
    upstream.route("/cut", close_mid_body(declared=100000, sent=1000))
    gw = make_gateway(routes=[route("/*", upstream)])
    with Client(gw.port) as c:
        c.send(b"GET /cut HTTP/1.1\r\nHost: a\r\n\r\n")
        head = c.read_head()
        assert head.status == 200
        got = b""
        c.sock.settimeout(5)
        try:
            while True:
                piece = c.reader.read_some()
                if not piece:
                    break
                got += piece
        except socket.timeout:
            pytest.fail("client connection left hanging (5 s) after the upstream cut the body "
                        "at %d bytes" % len(got))
        except ConnectionResetError:
            pass  # a reset is as good as a close here
        if head.header("content-length") is not None:
            assert len(got) < 100000
        else:  # chunked: the terminating 0-chunk must not be sent
            assert not got.endswith(b"0\r\n\r\n")
    assert get(gw.port, "/fine").status == 200


def test_curl_sees_a_truncated_body_as_an_error(make_gateway, upstream):
    from harness import curl
    upstream.route("/cut", close_mid_body(declared=100000, sent=1000))
    gw = make_gateway(routes=[route("/*", upstream)])
    r = curl(gw.url("/cut"))
    assert r.rc in (18, 56), r  # 18: partial file; 56: failure receiving (chunked cut)


@pytest.mark.parametrize("status", [200, 404, 500])
def test_an_empty_body_keeps_its_content_length(make_gateway, upstream, status):
    """An upstream's `Content-Length: 0` reaches the client as such: without it, a kept-alive
    client has no way to tell the (empty) body has ended and waits for the close."""
    upstream.route("/empty", fixed(status, body=b""))
    gw = make_gateway(routes=[route("/*", upstream)], workers=1)
    with Client(gw.port, timeout=3.0) as c:
        for _ in range(2):  # the second answer on the same connection proves the framing
            r = c.get("/empty")
            assert r.status == status and r.body == b""
            assert r.header("content-length") == "0", r
            assert r.header("transfer-encoding") is None


# --------------------------------------------------------------------------- pass_host


def test_pass_host_pass_is_the_default(make_gateway, upstream):
    gw = make_gateway(routes=[route("/*", upstream)])
    j = http(gw.port, "GET", "/h", host="example.com").json()
    assert _hdr(j, "host") == "example.com"


def test_pass_host_node(make_gateway, upstream):
    r = route("/*", upstream)
    r["upstream"]["pass_host"] = "node"
    gw = make_gateway(routes=[r])
    j = http(gw.port, "GET", "/h", host="example.com").json()
    assert _hdr(j, "host") == upstream.addr


def test_pass_host_node_with_host_name(make_gateway, upstream):
    r = route("/*", rid="n")
    r["upstream"] = {"type": "roundrobin", "pass_host": "node",
                     "nodes": {"localhost:%d" % upstream.port: 1}}
    gw = make_gateway(routes=[r])
    j = http(gw.port, "GET", "/h", host="example.com").json()
    assert _hdr(j, "host") == "localhost:%d" % upstream.port


def test_pass_host_rewrite(make_gateway, upstream):
    r = route("/*", upstream)
    r["upstream"].update({"pass_host": "rewrite", "upstream_host": "internal.svc"})
    gw = make_gateway(routes=[r])
    j = http(gw.port, "GET", "/h", host="example.com").json()
    assert _hdr(j, "host") == "internal.svc"
    assert (_hdr(j, "x-forwarded-host") or "").lower() == "example.com"


def test_route_uses_upstream_id(make_gateway, upstream):
    ups = [{"id": "u1", "type": "roundrobin", "nodes": {upstream.addr: 1}}]
    gw = make_gateway(routes=[{"id": "1", "uri": "/by-id", "upstream_id": "u1"}], upstreams=ups)
    assert get(gw.port, "/by-id").json()["path"] == "/by-id"
