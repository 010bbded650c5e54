"""zipkin against a real Zipkin v2 receiver on loopback (an HTTP sink decoding the JSON array):
apisix.request / apisix.proxy / apisix.response_span as APISIX's span_version 2 makes them, a
CLIENT span per upstream try (Sluice's), B3 in (single `b3` header and X-B3-*) and out (the
X-B3-* headers naming apisix.proxy), sample_ratio and an incoming decision, malformed B3, a
collector that is down, and the Admin API's 400s."""

import json
import time

import pytest

from harness import free_port, get
from log_sinks import HttpSink, wait_for

ERR = "failed to check the configuration of plugin zipkin err: "
TRACE = "463ac35c9f6413ad48485a3953bb6124"
SPAN = "a2fb4a1d1a96d312"


@pytest.fixture
def receiver():
    r = HttpSink()
    yield r
    r.stop()


@pytest.fixture
def gw(make_gateway):
    return make_gateway(admin=True, workers=1)


def spans(receiver):
    out = []
    for b in receiver.bodies():
        arr = json.loads(b)
        assert isinstance(arr, list)
        out.extend(arr)
    return out


def put_route(gw, nodes, receiver_port, rid="1", uri="/hello", retries=None, **conf):
    zk = {"endpoint": "http://127.0.0.1:%d/api/v2/spans" % receiver_port, "sample_ratio": 1}
    zk.update(conf)
    up = {"nodes": {n: 1 for n in nodes}}
    if retries is not None:
        up["retries"] = retries
    r = gw.admin("PUT", "/routes/" + rid, {"uri": uri, "plugins": {"zipkin": zk},
                                           "upstream": up})
    assert r.status in (200, 201), r.json
    return r


def header(resp_json, name):
    for k, v in resp_json["headers"]:
        if k.lower() == name:
            return v
    return None


def flush(gw):
    """The reporter waits 5 s of quiet (APISIX's inactive_timeout): stop the gateway, which
    sends what it holds."""
    gw.stop()


def named(all_spans, name):
    return [s for s in all_spans if s["name"] == name]


def test_spans_and_b3_out(gw, upstream, receiver):
    put_route(gw, [upstream.addr], receiver.port)
    t0 = time.time() * 1e6
    r = get(gw.port, "/hello?q=1")
    assert r.status == 200
    flush(gw)
    assert wait_for(lambda: len(spans(receiver)) == 4, timeout=5), spans(receiver)
    post = receiver.posts[0]
    assert post["line"] == "POST /api/v2/spans HTTP/1.1"
    assert post["headers"]["content-type"] == "application/json"
    all_spans = spans(receiver)
    [req] = named(all_spans, "apisix.request")
    [proxy] = named(all_spans, "apisix.proxy")
    [resp] = named(all_spans, "apisix.response_span")
    [client] = named(all_spans, "apisix.upstream")
    assert req["kind"] == "SERVER" and "parentId" not in req
    assert len(req["traceId"]) == 32
    assert {s["traceId"] for s in all_spans} == {req["traceId"]}
    assert proxy["parentId"] == req["id"] and resp["parentId"] == req["id"]
    assert client["parentId"] == proxy["id"] and client["kind"] == "CLIENT"
    assert req["tags"]["component"] == "apisix"
    assert req["tags"]["http.method"] == "GET" and req["tags"]["http.url"] == "/hello?q=1"
    assert req["tags"]["http.status_code"] == "200"
    assert req["remoteEndpoint"] == {"ipv4": "127.0.0.1"}
    assert req["localEndpoint"] == {"serviceName": "APISIX", "port": gw.port}
    assert client["remoteEndpoint"] == {"ipv4": "127.0.0.1", "port": upstream.port}
    assert client["tags"]["http.status_code"] == "200"
    for s in all_spans:
        assert isinstance(s["timestamp"], int) and isinstance(s["duration"], int)
        assert abs(s["timestamp"] - t0) < 30e6
    assert req["timestamp"] <= proxy["timestamp"] <= client["timestamp"]
    assert client["timestamp"] + client["duration"] <= req["timestamp"] + req["duration"]
    assert proxy["timestamp"] + proxy["duration"] <= resp["timestamp"] + 1
    # B3 out: the upstream's parent is apisix.proxy.
    h = r.json()
    assert header(h, "x-b3-traceid") == req["traceId"]
    assert header(h, "x-b3-spanid") == proxy["id"]
    assert header(h, "x-b3-parentspanid") == req["id"]
    assert header(h, "x-b3-sampled") == "1"


def test_b3_multi_in(gw, upstream, receiver):
    put_route(gw, [upstream.addr], receiver.port, service_name="edge", server_addr="10.0.0.1")
    r = get(gw.port, "/hello", headers=[("X-B3-TraceId", TRACE), ("X-B3-SpanId", SPAN),
                                        ("X-B3-Sampled", "1")])
    assert r.status == 200
    flush(gw)
    assert wait_for(lambda: len(spans(receiver)) == 4, timeout=5)
    [req] = named(spans(receiver), "apisix.request")
    assert req["traceId"] == TRACE and req["parentId"] == SPAN
    assert req["localEndpoint"] == {"serviceName": "edge", "ipv4": "10.0.0.1", "port": gw.port}
    assert header(r.json(), "x-b3-traceid") == TRACE


def test_b3_single_in_64_bit(gw, upstream, receiver):
    put_route(gw, [upstream.addr], receiver.port)
    r = get(gw.port, "/hello", headers=[("b3", "48485a3953bb6124-%s-1-05e3ac9a4f6e3b90" % SPAN)])
    assert r.status == 200
    flush(gw)
    assert wait_for(lambda: len(spans(receiver)) == 4, timeout=5)
    [req] = named(spans(receiver), "apisix.request")
    assert req["traceId"] == "48485a3953bb6124" and req["parentId"] == SPAN
    h = r.json()
    assert header(h, "b3") is None  # not passed on, as APISIX
    assert header(h, "x-b3-traceid") == "48485a3953bb6124"


@pytest.mark.parametrize("headers", [
    [("X-B3-Sampled", "0")], [("b3", "0")], [("b3", "%s-%s-0" % (TRACE, SPAN))]])
def test_incoming_no_is_honoured_over_the_ratio(gw, upstream, receiver, headers):
    put_route(gw, [upstream.addr], receiver.port)
    r = get(gw.port, "/hello", headers=headers)
    assert r.status == 200
    assert header(r.json(), "x-b3-sampled") == "0"
    assert header(r.json(), "x-b3-spanid") in (None, SPAN)  # nothing of ours injected
    flush(gw)
    time.sleep(0.3)
    assert spans(receiver) == []


def test_incoming_yes_and_debug_beat_a_low_ratio(gw, upstream, receiver):
    put_route(gw, [upstream.addr], receiver.port, sample_ratio=0.00001)
    assert get(gw.port, "/hello").status == 200  # 1 in 100000: not sampled
    assert get(gw.port, "/hello", headers=[("X-B3-Sampled", "true")]).status == 200
    r = get(gw.port, "/hello", headers=[("X-B3-Flags", "1")])
    assert header(r.json(), "x-b3-flags") == "1" and header(r.json(), "x-b3-sampled") is None
    flush(gw)
    assert wait_for(lambda: len(named(spans(receiver), "apisix.request")) == 2, timeout=5)


@pytest.mark.parametrize("headers", [
    [("b3", "nonsense")], [("b3", "%s-zz" % TRACE)],
    [("X-B3-TraceId", "xyz"), ("X-B3-SpanId", SPAN)],
    [("X-B3-TraceId", TRACE), ("X-B3-SpanId", "0" * 16)]])
def test_malformed_b3_starts_a_new_trace(gw, upstream, receiver, headers):
    put_route(gw, [upstream.addr], receiver.port)
    r = get(gw.port, "/hello", headers=headers)
    assert r.status == 200
    flush(gw)
    assert wait_for(lambda: len(spans(receiver)) == 4, timeout=5)
    [req] = named(spans(receiver), "apisix.request")
    assert "parentId" not in req and req["traceId"] != TRACE


def test_retry_gives_a_client_span_per_try(gw, upstream, receiver):
    dead = "127.0.0.1:%d" % free_port()
    put_route(gw, [dead, upstream.addr], receiver.port, retries=1)
    for _ in range(4):
        assert get(gw.port, "/hello").status == 200
    flush(gw)
    assert wait_for(lambda: len(named(spans(receiver), "apisix.request")) == 4, timeout=5)
    all_spans = spans(receiver)
    proxies = {p["id"]: p for p in named(all_spans, "apisix.proxy")}
    by_proxy = {}
    for c in named(all_spans, "apisix.upstream"):
        by_proxy.setdefault(c["parentId"], []).append(c)
    two = [sorted(v, key=lambda c: c["tags"]["apisix.upstream_try"]) for v in by_proxy.values()
           if len(v) == 2]
    assert two and set(by_proxy) <= set(proxies)
    first, second = two[0]
    assert first["remoteEndpoint"]["port"] == int(dead.split(":")[1])
    assert first["tags"]["http.status_code"] == "502"
    assert second["remoteEndpoint"]["port"] == upstream.port
    assert second["tags"]["http.status_code"] == "200"


def test_collector_down_requests_stay_fast(gw, upstream):
    put_route(gw, [upstream.addr], free_port())
    for _ in range(30):
        t = time.monotonic()
        assert get(gw.port, "/hello").status == 200
        assert time.monotonic() - t < 0.5


@pytest.mark.parametrize("conf,msg", [
    ({"sample_ratio": 1}, 'property "endpoint" is required'),
    ({"endpoint": "http://127.0.0.1:1/x"}, 'property "sample_ratio" is required'),
    ({"endpoint": "http://127.0.0.1:1/x", "sample_ratio": 0},
     'property "sample_ratio" validation failed: expected 0 to be at least 1e-05'),
    ({"endpoint": "http://127.0.0.1:1/x", "sample_ratio": 2},
     'property "sample_ratio" validation failed: expected 2 to be at most 1'),
    ({"endpoint": "http://127.0.0.1:1/x", "sample_ratio": 1, "server_addr": "host"},
     'property "server_addr" validation failed: failed to match pattern '
     '"^[0-9]{1,3}.[0-9]{1,3}.[0-9]{1,3}.[0-9]{1,3}$" with "host"'),
    ({"endpoint": "http://127.0.0.1:1/x", "sample_ratio": 1, "span_version": 3},
     'property "span_version" validation failed: matches none of the enum values'),
    ({"endpoint": "http://127.0.0.1:1/x", "sample_ratio": 1, "span_version": 1},
     "span_version 1 (the rewrite, access, proxy and body_filter spans) is not supported"),
    ({"endpoint": "127.0.0.1:9411", "sample_ratio": 1}, "endpoint: "),
])
def test_admin_schema_errors(gw, upstream, conf, msg):
    r = gw.admin("PUT", "/routes/1", {"uri": "/hello", "plugins": {"zipkin": conf},
                                      "upstream": {"nodes": {upstream.addr: 1}}})
    assert r.status == 400, r.json
    assert r.json["error_msg"].startswith(ERR + msg), r.json


def test_admin_serves_the_schema(gw):
    r = gw.admin("GET", "/apisix/admin/plugins/zipkin")
    assert r.status == 200
    assert r.json["required"] == ["endpoint", "sample_ratio"]
    assert r.json["properties"]["span_version"]["enum"] == [1, 2]
