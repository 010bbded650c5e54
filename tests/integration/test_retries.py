"""Retries: which failures move a request to the next node, which never do, retries and
retry_timeout, and the X-APISIX-Upstream-Status header that lists every try's status when the
last one is a 5xx (APISIX sets it from nginx's $upstream_status).

Each failure is made by a scriptable fake upstream (refuse, accept and hang, reset
mid-headers, reset mid-body, slow drip, broken framing, close an idle keep-alive connection),
and each test asserts what the client gets and what each node received."""

import socket
import struct
import time

import pytest

from fake_upstream import (close_mid_body, close_without_response, delay, drip, fixed, func,
                           idle_close, raw, reset)
from harness import Client, free_port, get, http, route, start_wrk


def two_nodes(first, second, rid, **up):
    """A route whose upstream tries `first` then `second` (weights make the order fixed)."""
    r = route("/*", rid=rid)
    r["upstream"] = {"type": "roundrobin", "nodes": [
        {"host": "127.0.0.1", "port": first, "weight": 100},
        {"host": "127.0.0.1", "port": second, "weight": 1}], **up}
    return r


def status_header(resp):
    return resp.header("x-apisix-upstream-status")


def reset_mid_headers(up, conn, req):
    """Sends half a response head, then an RST."""
    conn.send(b"HTTP/1.1 200 OK\r\nContent-Le")
    conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    return False


@pytest.mark.parametrize("behaviour,tried_status", [
    (reset(), "502"),
    (close_without_response(), "502"),
    (func(reset_mid_headers), "502"),
    (delay(5), "504"),  # accept and hang past the read timeout
], ids=["reset", "close-without-response", "reset-mid-headers", "hang"])
def test_get_moves_to_the_next_node_before_any_response_byte(make_gateway, make_upstream,
                                                             behaviour, tried_status):
    bad, good = make_upstream("bad"), make_upstream("good")
    bad.route("/x", behaviour)
    good.route("/x", fixed(200, body=b"from good"))
    r = two_nodes(bad.port, good.port, "r", timeout={"connect": 1, "send": 1, "read": 0.5})
    gw = make_gateway(routes=[r], workers=1)
    resp = get(gw.port, "/x")
    assert resp.status == 200 and resp.body == b"from good"
    assert status_header(resp) is None  # the last try succeeded
    assert len(bad.requests_for("/x")) == 1 and len(good.requests_for("/x")) == 1


def test_refused_node_then_good_node(make_gateway, make_upstream):
    good = make_upstream("good")
    gw = make_gateway(routes=[two_nodes(free_port(), good.port, "r")], workers=1)
    for _ in range(5):
        assert get(gw.port, "/x").status == 200
    assert len(good.requests) == 5


def test_every_try_failing_lists_each_status(make_gateway, make_upstream):
    """Connect refused (502), then a hang (504): the client gets the last, 504, and the
    header names both tries in order."""
    hang = make_upstream("hang")
    hang.route("/x", delay(5))
    r = two_nodes(free_port(), hang.port, "r", timeout={"connect": 1, "send": 1, "read": 0.5})
    gw = make_gateway(routes=[r], workers=1)
    resp = get(gw.port, "/x")
    assert resp.status == 504
    assert status_header(resp) == "502, 504"


def test_an_upstream_5xx_is_relayed_not_retried_and_named_in_the_header(make_gateway,
                                                                       make_upstream):
    a, b = make_upstream("a"), make_upstream("b")
    a.route("/x", fixed(500, body=b"a broke"))
    gw = make_gateway(routes=[two_nodes(a.port, b.port, "r")], workers=1)
    resp = get(gw.port, "/x")
    assert resp.status == 500 and resp.body == b"a broke"
    assert status_header(resp) == "500"
    assert b.requests == []  # nginx's default: a 5xx is an answer, not an error


def test_a_retried_then_5xx_answer_lists_both(make_gateway, make_upstream):
    a, b = make_upstream("a"), make_upstream("b")
    a.route("/x", reset())
    b.route("/x", fixed(503, body=b"busy"))
    gw = make_gateway(routes=[two_nodes(a.port, b.port, "r")], workers=1)
    resp = get(gw.port, "/x")
    assert resp.status == 503 and status_header(resp) == "502, 503"


def test_success_carries_no_status_header(make_gateway, make_upstream):
    a = make_upstream("a")
    gw = make_gateway(routes=[route("/*", a)], workers=1)
    assert status_header(get(gw.port, "/x")) is None


def test_single_node_failure_is_502_with_the_header(make_gateway, make_upstream):
    a = make_upstream("a")
    a.route("/x", reset())
    gw = make_gateway(routes=[route("/*", a)], workers=1)
    resp = get(gw.port, "/x")
    assert resp.status == 502 and status_header(resp) == "502"


@pytest.mark.parametrize("method", ["POST", "PATCH"])
def test_non_idempotent_request_that_reached_an_upstream_is_never_sent_again(
        make_gateway, make_upstream, method):
    a, b = make_upstream("a"), make_upstream("b")
    a.route("/x", reset())
    gw = make_gateway(routes=[two_nodes(a.port, b.port, "r")], workers=1)
    resp = http(gw.port, method, "/x", body=b'{"order": 1}')
    assert resp.status == 502 and status_header(resp) == "502"
    assert len(a.requests_for("/x")) == 1
    assert b.requests == []  # the order was not placed twice


def test_non_idempotent_request_moves_on_when_the_connect_failed(make_gateway, make_upstream):
    """Nothing reached the refused node, so the POST may go to the next one."""
    b = make_upstream("b")
    gw = make_gateway(routes=[two_nodes(free_port(), b.port, "r")], workers=1)
    resp = http(gw.port, "POST", "/x", body=b"once")
    assert resp.status == 200 and len(b.requests_for("/x")) == 1


def test_a_put_whose_body_was_streamed_is_not_resent(make_gateway, make_upstream):
    """PUT is idempotent, but its body has left the gateway's buffer for the first node:
    there is nothing to send again."""
    a, b = make_upstream("a"), make_upstream("b")
    a.route("/x", reset())
    gw = make_gateway(routes=[two_nodes(a.port, b.port, "r")], workers=1)
    resp = http(gw.port, "PUT", "/x", body=b"x" * 1000)
    assert resp.status == 502
    assert b.requests == []


def rst_mid_body(up, conn, req):
    """Announces 100,000 bytes, sends 1,000, then an RST."""
    conn.send(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"z" * 1000)
    time.sleep(0.05)  # let the gateway relay the head and the first bytes
    conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    return False


@pytest.mark.parametrize("behaviour", [close_mid_body(declared=100000, sent=1000),
                                       func(rst_mid_body)], ids=["fin", "rst"])
def test_a_reset_mid_body_is_not_retried(make_gateway, make_upstream, behaviour):
    """Once response bytes reached the client, the request is not tried elsewhere; the client
    connection is closed so it sees the truncation."""
    a, b = make_upstream("a"), make_upstream("b")
    a.route("/x", behaviour)
    gw = make_gateway(routes=[two_nodes(a.port, b.port, "r")], workers=1)
    with Client(gw.port) as c:
        c.send(b"GET /x HTTP/1.1\r\nHost: a\r\n\r\n")
        head = c.read_head()
        assert head.status == 200
        c.sock.settimeout(5)
        got = b""
        while True:
            chunk = c.sock.recv(65536)
            if not chunk:
                break
            got += chunk
        assert len(got) < 100000
    assert b.requests == []


def test_broken_framing_is_502_and_not_retried(make_gateway, make_upstream):
    a, b = make_upstream("a"), make_upstream("b")
    a.route("/x", raw(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"))
    gw = make_gateway(routes=[two_nodes(a.port, b.port, "r")], workers=1)
    resp = get(gw.port, "/x")
    assert resp.status == 502 and status_header(resp) == "502"
    assert b.requests == []


def test_slow_drip_within_the_read_timeout_is_not_a_failure(make_gateway, make_upstream):
    a, b = make_upstream("a"), make_upstream("b")
    a.route("/x", drip(total=600, piece=100, interval=0.2))
    r = two_nodes(a.port, b.port, "r", timeout={"connect": 1, "send": 1, "read": 1})
    gw = make_gateway(routes=[r], workers=1)
    resp = get(gw.port, "/x")
    assert resp.status == 200 and len(resp.body) == 600
    assert b.requests == []


def test_retries_zero_means_one_try(make_gateway, make_upstream):
    a, b = make_upstream("a"), make_upstream("b")
    a.route("/x", reset())
    gw = make_gateway(routes=[two_nodes(a.port, b.port, "r", retries=0)], workers=1)
    assert get(gw.port, "/x").status == 502
    assert b.requests == []


def test_default_retries_is_nodes_minus_one(make_gateway, make_upstream):
    ups = [make_upstream("u%d" % i) for i in range(4)]
    for u in ups:
        u.route("/x", reset())
    r = route("/*", *ups, rid="r")
    gw = make_gateway(routes=[r], workers=1)
    resp = get(gw.port, "/x")
    assert resp.status == 502
    assert status_header(resp) == "502, 502, 502, 502"
    assert [len(u.requests_for("/x")) for u in ups] == [1, 1, 1, 1]


def test_retry_timeout_stops_further_tries(make_gateway, make_upstream):
    """Three hanging nodes with a 0.5 s read timeout; retry_timeout 0.8 s allows the second
    try (started at 0.5 s) but not a third (it would start at 1.0 s)."""
    ups = [make_upstream("h%d" % i) for i in range(3)]
    for u in ups:
        u.route("/x", delay(5))
    r = route("/*", *ups, rid="r")
    r["upstream"]["retry_timeout"] = 0.8
    r["upstream"]["timeout"] = {"connect": 1, "send": 1, "read": 0.5}
    gw = make_gateway(routes=[r], workers=1)
    t0 = time.monotonic()
    resp = get(gw.port, "/x")
    took = time.monotonic() - t0
    assert resp.status == 504 and status_header(resp) == "504, 504"
    assert 0.9 <= took < 1.8, took
    assert sum(len(u.requests_for("/x")) for u in ups) == 2


def test_idle_keepalive_closed_by_the_upstream_costs_no_error(make_gateway, make_upstream):
    """The pooled connection's close is noticed (or not) before reuse; either way the client
    sees only 200s (the reconnect to the same node is not counted as a try)."""
    a = make_upstream("a")
    a.route("/x", idle_close(after=0.2, then=fixed(200, body=b"ok")))
    gw = make_gateway(routes=[route("/*", a)], workers=1)
    for _ in range(4):
        resp = get(gw.port, "/x")
        assert resp.status == 200 and status_header(resp) is None
        time.sleep(0.3)


def test_one_node_of_three_killed_under_load_fails_no_idempotent_request(make_gateway,
                                                                         make_upstream):
    ups = [make_upstream("n%d" % i) for i in range(3)]
    r = route("/*", *ups, rid="r")
    r["upstream"]["timeout"] = {"connect": 1, "send": 1, "read": 2}
    gw = make_gateway(routes=[r], workers=2)
    w = start_wrk("http://127.0.0.1:%d/load" % gw.port, threads=2, conns=16, duration=30)
    try:
        time.sleep(1.0)
        ups[1].stop()  # its listener and every open connection close
        time.sleep(1.5)
    finally:
        res = w.stop()
    assert res["requests"] > 100
    assert res["non2xx"] == 0 and res["connect"] == res["read"] == res["write"] == 0 and \
        res["timeout"] == 0, res["output"]
    served = [len(u.requests_for("/load")) for u in ups]
    assert served[0] > 0 and served[2] > 0
