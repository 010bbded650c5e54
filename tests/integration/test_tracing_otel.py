"""opentelemetry against a real OTLP/HTTP receiver on loopback (otlp_receiver.py: python3-protobuf
decoding with opentelemetry-proto's field numbers): the server span and its client spans (one per
upstream try), their ids against the incoming and outgoing traceparent, attributes, the
samplers, trace_id_source, a malformed traceparent, a collector that is down, the Admin API's
400s and schema."""

import time

import pytest

from harness import free_port, get
from log_sinks import wait_for
from otlp_receiver import CLIENT, SERVER, STATUS_ERROR, OtlpReceiver

ERR = "failed to check the configuration of plugin opentelemetry err: "
PARENT_TRACE = "0af7651916cd43dd8448eb211c80319c"
PARENT_SPAN = "b7ad6b7169203331"


@pytest.fixture
def receiver():
    r = OtlpReceiver()
    yield r
    r.stop()


def otel_attr(port, **extra):
    attr = {"collector": {"address": "127.0.0.1:%d" % port, "request_timeout": 1},
            "batch_span_processor": {"inactive_timeout": 0.2, "batch_timeout": 0.5}}
    attr.update(extra)
    return {"plugin_attr": {"opentelemetry": attr}}


@pytest.fixture
def gw(make_gateway, receiver):
    return make_gateway(admin=True, workers=1, config=otel_attr(receiver.port))


def put_route(gw, nodes, conf, rid="1", uri="/hello", retries=None, plugins=None):
    up = {"nodes": {n: 1 for n in nodes}}
    if retries is not None:
        up["retries"] = retries
    p = {"opentelemetry": conf}
    p.update(plugins or {})
    r = gw.admin("PUT", "/routes/" + rid, {"uri": uri, "name": "r" + rid, "plugins": p,
                                           "upstream": up})
    assert r.status in (200, 201), r.json
    return r


ON = {"sampler": {"name": "always_on"}}


def header(resp_json, name):
    for k, v in resp_json["headers"]:
        if k.lower() == name:
            return v
    return None


def by_kind(spans, kind):
    return [s for s in spans if s["kind"] == kind]


def test_server_span_and_client_span(gw, upstream, receiver):
    put_route(gw, [upstream.addr], ON)
    t0 = time.time_ns()
    r = get(gw.port, "/hello?x=1", headers=[("User-Agent", "ua-1")])
    assert r.status == 200
    assert wait_for(lambda: len(receiver.spans()) == 2, timeout=5), receiver.spans()
    post = receiver.posts[0]
    assert post["line"] == "POST /v1/traces HTTP/1.1"
    assert post["headers"]["content-type"] == "application/x-protobuf"
    [server] = by_kind(receiver.spans(), SERVER)
    [client] = by_kind(receiver.spans(), CLIENT)
    assert server["name"] == "GET /hello"
    assert server["parent_span_id"] == ""  # a root span
    a = server["attrs"]
    assert a["http.method"] == "GET" and a["http.target"] == "/hello?x=1"
    assert a["net.host.name"] == "127.0.0.1" and a["http.scheme"] == "http"
    assert a["http.user_agent"] == "ua-1"
    assert a["apisix.route_id"] == "1" and a["apisix.route_name"] == "r1"
    assert a["http.route"] == "/hello"
    assert a["http.status_code"] == 200 and a["http.response.status_code"] == 200
    assert a["apisix.upstream_address"] == upstream.addr
    assert "apisix.service_id" not in a and "apisix.consumer_name" not in a
    assert server["status_code"] == 0
    assert server["resource"]["hostname"]
    assert server["scope"] == "opentelemetry-lua"
    # The client span: the try, child of the server span, inside it in time.
    assert client["trace_id"] == server["trace_id"] and len(server["trace_id"]) == 32
    assert client["parent_span_id"] == server["span_id"] and client["span_id"] != server["span_id"]
    assert client["attrs"]["net.peer.name"] == "127.0.0.1"
    assert client["attrs"]["net.peer.port"] == upstream.port
    assert client["attrs"]["http.status_code"] == 200
    assert client["attrs"]["apisix.upstream_try"] == 1
    assert t0 - 10**9 < server["start"] <= client["start"] <= client["end"] <= server["end"]
    assert server["end"] < time.time_ns() + 10**9
    # The upstream got a traceparent naming the server span, sampled.
    tp = header(r.json(), "traceparent")
    assert tp == "00-%s-%s-01" % (server["trace_id"], server["span_id"])


def test_incoming_traceparent_is_the_parent(gw, upstream, receiver):
    put_route(gw, [upstream.addr], ON)
    r = get(gw.port, "/hello", headers=[("traceparent", "00-%s-%s-01" % (PARENT_TRACE, PARENT_SPAN)),
                                        ("tracestate", "vendor=x,other=y")])
    assert r.status == 200
    assert wait_for(lambda: len(receiver.spans()) == 2, timeout=5)
    [server] = by_kind(receiver.spans(), SERVER)
    [client] = by_kind(receiver.spans(), CLIENT)
    assert server["trace_id"] == PARENT_TRACE == client["trace_id"]
    assert server["parent_span_id"] == PARENT_SPAN
    assert server["trace_state"] == "vendor=x,other=y"
    assert header(r.json(), "traceparent") == "00-%s-%s-01" % (PARENT_TRACE, server["span_id"])
    assert header(r.json(), "tracestate") == "vendor=x,other=y"  # passed through


@pytest.mark.parametrize("bad", ["00-xyz", "00-%s-%s-01" % ("0" * 32, PARENT_SPAN),
                                 "00-%s-%s-01" % (PARENT_TRACE, "0" * 16),
                                 "zz-%s-%s-01" % (PARENT_TRACE, PARENT_SPAN), "", "q" * 55])
def test_malformed_traceparent_starts_a_new_trace(gw, upstream, receiver, bad):
    put_route(gw, [upstream.addr], ON)
    r = get(gw.port, "/hello", headers=[("traceparent", bad)])
    assert r.status == 200
    assert wait_for(lambda: len(receiver.spans()) == 2, timeout=5)
    [server] = by_kind(receiver.spans(), SERVER)
    assert server["parent_span_id"] == "" and server["trace_id"] != PARENT_TRACE
    assert header(r.json(), "traceparent") == "00-%s-%s-01" % (server["trace_id"],
                                                               server["span_id"])


def sampled_routes(gw, up, receiver, conf, requests):
    """Route 1 with `conf`, route 2 always_on as the marker that batches flow: `requests`
    (header lists) go to route 1, then one to route 2; returns route 1's server spans and the
    traceparents its upstream got."""
    put_route(gw, [up.addr], conf)
    put_route(gw, [up.addr], ON, rid="2", uri="/marker")
    sent = []
    for headers in requests:
        r = get(gw.port, "/hello", headers=headers)
        assert r.status == 200
        sent.append(header(r.json(), "traceparent"))
    assert get(gw.port, "/marker").status == 200
    assert wait_for(lambda: any(s["name"] == "GET /marker" for s in receiver.spans()), timeout=5)
    time.sleep(0.3)  # anything of route 1 was pushed before the marker, same worker
    return [s for s in by_kind(receiver.spans(), SERVER) if s["name"] == "GET /hello"], sent


def test_always_off_sends_nothing(gw, upstream, receiver):
    spans, sent = sampled_routes(gw, upstream, receiver, {"sampler": {"name": "always_off"}},
                                 [[]] * 3)
    assert spans == []
    assert all(tp.endswith("-00") for tp in sent), sent  # propagated, not sampled
    assert len({tp.split("-")[1] for tp in sent}) == 3


def test_default_sampler_is_always_off(gw, upstream, receiver):
    spans, _ = sampled_routes(gw, upstream, receiver, {}, [[]] * 2)
    assert spans == []


@pytest.mark.parametrize("fraction,want", [(0, 0), (1, 4)])
def test_trace_id_ratio(gw, upstream, receiver, fraction, want):
    conf = {"sampler": {"name": "trace_id_ratio", "options": {"fraction": fraction}}}
    spans, _ = sampled_routes(gw, upstream, receiver, conf, [[]] * 4)
    assert len(spans) == want


def test_parent_base_honours_the_parent(gw, upstream, receiver):
    conf = {"sampler": {"name": "parent_base", "options": {"root": {"name": "always_off"}}}}
    yes = "00-%s-%s-01" % (PARENT_TRACE, PARENT_SPAN)
    no = "00-%s-%s-00" % ("1" * 32, PARENT_SPAN)
    spans, sent = sampled_routes(gw, upstream, receiver, conf,
                                 [[("traceparent", yes)], [("traceparent", no)], []])
    assert [s["trace_id"] for s in spans] == [PARENT_TRACE]
    assert sent[1].startswith("00-" + "1" * 32) and sent[1].endswith("-00")
    assert sent[2].endswith("-00")  # no parent: the root sampler (always_off) decides


def test_parent_base_root_always_on(gw, upstream, receiver):
    conf = {"sampler": {"name": "parent_base", "options": {"root": {"name": "always_on"}}}}
    no = "00-%s-%s-00" % ("1" * 32, PARENT_SPAN)
    spans, _ = sampled_routes(gw, upstream, receiver, conf, [[("traceparent", no)], []])
    assert len(spans) == 1 and spans[0]["parent_span_id"] == ""


def test_retry_gives_a_client_span_per_try(gw, upstream, receiver):
    dead = "127.0.0.1:%d" % free_port()
    put_route(gw, [dead, upstream.addr], ON, retries=1)
    for _ in range(4):
        assert get(gw.port, "/hello").status == 200
    assert wait_for(lambda: len(by_kind(receiver.spans(), SERVER)) == 4, timeout=5)
    spans = receiver.spans()
    two = []
    for server in by_kind(spans, SERVER):
        tries = sorted((s for s in by_kind(spans, CLIENT) if s["parent_span_id"] == server["span_id"]),
                       key=lambda s: s["attrs"]["apisix.upstream_try"])
        if len(tries) == 2:
            two.append((server, tries))
    assert two, "round robin starts half the requests on the dead node"
    server, (first, second) = two[0]
    assert first["attrs"]["net.peer.port"] == int(dead.split(":")[1])
    assert first["attrs"]["http.status_code"] == 502
    assert first["status_code"] == STATUS_ERROR
    assert first["status_message"] == "upstream response status: 502"
    assert second["attrs"]["net.peer.port"] == upstream.port
    assert second["attrs"]["http.status_code"] == 200 and second["status_code"] == 0
    assert first["end"] <= second["start"]
    assert server["attrs"]["http.status_code"] == 200
    assert server["attrs"]["apisix.upstream_address"] == upstream.addr


def test_upstream_5xx_marks_the_server_span(gw, make_upstream, receiver):
    from fake_upstream import Fixed
    up = make_upstream(default=Fixed(503, body="no"))
    put_route(gw, [up.addr], ON)
    assert get(gw.port, "/hello").status == 503
    assert wait_for(lambda: len(receiver.spans()) == 2, timeout=5)
    [server] = by_kind(receiver.spans(), SERVER)
    assert server["status_code"] == STATUS_ERROR
    assert server["status_message"] == "upstream response status: 503"
    assert server["attrs"]["http.status_code"] == 503


def test_additional_attributes_service_and_consumer(gw, upstream, receiver):
    r = gw.admin("PUT", "/services/s1", {"name": "svc"})
    assert r.status in (200, 201), r.json
    r = gw.admin("PUT", "/consumers", {"username": "jack", "plugins": {"key-auth": {"key": "k1"}}})
    assert r.status in (200, 201), r.json
    conf = {"sampler": {"name": "always_on"},
            "additional_attributes": ["arg_a", "http_x_one", "nope_var"],
            "additional_header_prefix_attributes": ["X-Pre-*", "x-exact"]}
    r = gw.admin("PUT", "/routes/1", {"uri": "/hello", "service_id": "s1",
                                      "plugins": {"opentelemetry": conf, "key-auth": {}},
                                      "upstream": {"nodes": {upstream.addr: 1}}})
    assert r.status in (200, 201), r.json
    r = get(gw.port, "/hello?a=7", headers=[("apikey", "k1"), ("X-One", "1"), ("X-Pre-A", "pa"),
                                            ("x-pre-b", "pb"), ("X-Exact", "e"), ("X-Other", "o")])
    assert r.status == 200
    assert wait_for(lambda: len(receiver.spans()) == 2, timeout=5)
    [server] = by_kind(receiver.spans(), SERVER)
    a = server["attrs"]
    assert a["arg_a"] == "7" and a["http_x_one"] == "1" and "nope_var" not in a
    assert a["x-pre-a"] == "pa" and a["x-pre-b"] == "pb" and a["x-exact"] == "e"
    assert "x-other" not in a
    assert a["apisix.service_id"] == "s1" and a["apisix.service_name"] == "svc"
    assert a["apisix.consumer_name"] == "jack"


def test_resource_and_request_headers(make_gateway, upstream, receiver):
    gw = make_gateway(admin=True, workers=1, config=otel_attr(
        receiver.port, resource={"service.name": "edge", "env": "prod", "n": 2, "b": True},
        collector={"address": "http://127.0.0.1:%d" % receiver.port,
                   "request_headers": {"X-Token": "t1"}}))
    put_route(gw, [upstream.addr], ON)
    assert get(gw.port, "/hello").status == 200
    assert wait_for(lambda: len(receiver.spans()) == 2, timeout=8)
    res = receiver.spans()[0]["resource"]
    assert res["service.name"] == "edge" and res["env"] == "prod"
    assert res["n"] == 2.0 and res["b"] is True and res["hostname"]
    assert receiver.posts[0]["headers"]["x-token"] == "t1"


def test_trace_id_from_request_id(make_gateway, upstream, receiver):
    gw = make_gateway(admin=True, workers=1,
                      config=otel_attr(receiver.port, trace_id_source="x-request-id"))
    put_route(gw, [upstream.addr], ON)
    rid = "5d41402abc4b2a76b9719d911017c592"
    assert get(gw.port, "/hello", headers=[("X-Request-Id", rid)]).status == 200
    assert get(gw.port, "/hello", headers=[("X-Request-Id", "not-hex")]).status == 200
    assert wait_for(lambda: len(by_kind(receiver.spans(), SERVER)) == 2, timeout=5)
    ids = sorted(s["trace_id"] for s in by_kind(receiver.spans(), SERVER))
    assert rid in ids
    other = [i for i in ids if i != rid]
    assert len(other) == 1 and len(other[0]) == 32  # not 32 hex digits: a random id


def test_collector_down_requests_stay_fast(make_gateway, upstream):
    # Something that accepts and never answers, then nothing at all: neither slows a request.
    gw = make_gateway(admin=True, workers=1, config=otel_attr(free_port()))
    put_route(gw, [upstream.addr], ON)
    for _ in range(30):
        t = time.monotonic()
        assert get(gw.port, "/hello").status == 200
        assert time.monotonic() - t < 0.5
    assert gw.alive()


@pytest.mark.parametrize("conf,msg", [
    ({"sampler": {"name": "sometimes"}},
     'property "sampler" validation failed: property "name" validation failed: '
     'matches none of the enum values'),
    ({"sampler": {"name": "trace_id_ratio", "options": {"fraction": "half"}}},
     'property "sampler" validation failed: property "options" validation failed: '
     'property "fraction" validation failed: wrong type: expected number, got string'),
    ({"additional_attributes": [""]},
     'property "additional_attributes" validation failed: failed to validate item 1: '
     'string too short, expected at least 1, got 0'),
])
def test_admin_schema_errors(gw, upstream, conf, msg):
    r = gw.admin("PUT", "/routes/1", {"uri": "/hello", "plugins": {"opentelemetry": conf},
                                      "upstream": {"nodes": {upstream.addr: 1}}})
    assert r.status == 400, r.json
    assert r.json["error_msg"] == ERR + msg, r.json


def test_admin_serves_the_schema(gw):
    r = gw.admin("GET", "/apisix/admin/plugins/opentelemetry")
    assert r.status == 200
    props = r.json["properties"]
    assert props["sampler"]["properties"]["name"]["enum"] == [
        "always_on", "always_off", "trace_id_ratio", "parent_base"]
    assert "additional_header_prefix_attributes" in props


@pytest.mark.parametrize("attr,key", [
    ({"batch_span_processor": {"drop_on_queue_full": False}},
     "plugin_attr.opentelemetry: batch_span_processor.drop_on_queue_full: false is not supported"),
    ({"trace_id_source": "uuid"},
     'plugin_attr.opentelemetry: property "trace_id_source" validation failed: '
     "matches none of the enum values"),
    ({"collector": {"address": "ftp://127.0.0.1:1"}},
     "plugin_attr.opentelemetry: collector.address"),
])
def test_bad_plugin_attr_refuses_the_start(make_gateway, attr, key):
    gw = make_gateway(start=False, config={"plugin_attr": {"opentelemetry": attr}})
    gw.start(wait=False)
    rc = gw.wait_exit(10)
    assert rc is not None and rc != 0, "started with %r:\n%s" % (attr, gw.log_tail())
    assert key in gw.log_text(), gw.log_tail()


def test_global_rule_traces_unrouted_requests(gw, upstream, receiver):
    r = gw.admin("PUT", "/global_rules/1", {"plugins": {"opentelemetry": ON}})
    assert r.status in (200, 201), r.json
    put_route(gw, [upstream.addr], {"sampler": {"name": "always_off"}})  # the rule's owns it
    assert get(gw.port, "/nowhere").status == 404
    assert get(gw.port, "/hello").status == 200
    assert wait_for(lambda: len(by_kind(receiver.spans(), SERVER)) == 2, timeout=5)
    spans = receiver.spans()
    unrouted = [s for s in by_kind(spans, SERVER) if s["name"] == "GET"]
    routed = [s for s in by_kind(spans, SERVER) if s["name"] == "GET /hello"]
    assert len(unrouted) == 1 and len(routed) == 1
    assert unrouted[0]["attrs"]["http.status_code"] == 404
    assert "apisix.route_id" not in unrouted[0]["attrs"]
    assert [c["parent_span_id"] for c in by_kind(spans, CLIENT)] == [routed[0]["span_id"]]


def test_plugin_metadata_is_refused_naming_plugin_attr(gw):
    r = gw.admin("PUT", "/plugin_metadata/opentelemetry",
                 {"collector": {"address": "127.0.0.1:4318"}})
    assert r.status == 400, r.json
    assert "plugin_attr.opentelemetry" in r.json["error_msg"], r.json
