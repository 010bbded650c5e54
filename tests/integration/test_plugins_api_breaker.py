"""api-breaker (issue 24): APISIX's documented example as published (docs/en/latest/plugins/
api-breaker.md, apache/apisix commit 1e9ce85f) with only the ports and the upstream address
replaced; node-wide state across 4 workers (the breaker trips after exactly `failures` failing
answers, whichever workers served them, and recovers after `successes`), the configured
answer with its headers, and a conf change starting a clean state."""

import time

import pytest

from fake_upstream import FakeUpstream, Fixed
from harness import OMIT, Gateway, admin_route, http
from test_apisix_docs import Doc, HttpbinEcho

ENABLE = """
curl "http://127.0.0.1:9180/apisix/admin/routes/1" \\
-H "X-API-KEY: $admin_key" -X PUT -d '
{
    "plugins": {
        "api-breaker": {
            "break_response_code": 502,
            "unhealthy": {
                "http_statuses": [500, 503],
                "failures": 3
            },
            "healthy": {
                "http_statuses": [200],
                "successes": 1
            }
        }
    },
    "upstream": {
        "type": "roundrobin",
        "nodes": {
            "127.0.0.1:1980": 1
        }
    },
    "uri": "/hello"
}'
"""

TRY = 'curl -i -X POST "http://127.0.0.1:9080/hello"'

DELETE = """
curl http://127.0.0.1:9180/apisix/admin/routes/1 \\
-H "X-API-KEY: $admin_key" -X PUT -d '
{
    "uri": "/hello",
    "upstream": {
        "type": "roundrobin",
        "nodes": {
            "127.0.0.1:1980": 1
        }
    }
}'
"""


@pytest.fixture
def doc(tmp_path):
    ups = [FakeUpstream(name=n, default=HttpbinEcho()) for n in ("node-1980", "b", "c")]
    gw = Gateway(tmp_path, admin=True, admin_keys=OMIT, workers=4)
    gw.start()
    yield Doc(gw, ups)
    gw.stop()
    for up in ups:
        up.stop()


def _served(up):
    return len(up.requests_for("/hello"))


def test_doc_example_trips_after_exactly_failures_on_4_workers_and_recovers(doc):
    up = doc.ups[0]
    assert doc.run(ENABLE).status in (200, 201)
    up.route("/hello", Fixed(500, body=b"boom"))
    # Each curl is a new connection: the 4 workers share the requests between them.
    got = [doc.run(TRY).status for _ in range(3)]
    assert got == [500, 500, 500], got
    tripped = time.monotonic()
    for _ in range(8):
        r = doc.run(TRY)
        assert r.status == 502, r
    assert _served(up) == 3, "the breaker let requests through after 3 failures"
    # The first break lasts 2 s (whole seconds: at most 3 s after the trip); then the
    # upstream is asked again, and one 200 (successes: 1) makes it healthy.
    up.route("/hello", Fixed(200, body=b"fine"))
    time.sleep(max(0.0, tripped + 3.2 - time.monotonic()))
    got = [doc.run(TRY) for _ in range(6)]
    assert [r.status for r in got] == [200] * 6, got
    assert got[0].body == b"fine"
    # Healthy again: the count starts over, 3 more failures to trip.
    up.route("/hello", Fixed(503, body=b"unavailable"))
    got = [doc.run(TRY).status for _ in range(4)]
    assert got == [503, 503, 503, 502], got


def test_doc_delete_plugin(doc):
    up = doc.ups[0]
    up.route("/hello", Fixed(500, body=b"boom"))
    assert doc.run(ENABLE).status in (200, 201)
    assert [doc.run(TRY).status for _ in range(4)] == [500, 500, 500, 502]
    assert doc.run(DELETE).status in (200, 201)
    assert doc.run(TRY).status == 500


def _put(gw, up, conf, uri="/b"):
    r = gw.admin("PUT", "/routes/1", admin_route(uri, up, plugins={"api-breaker": conf}))
    assert r.status in (200, 201), r


def test_break_response_body_and_headers(make_gateway, make_upstream):
    up = make_upstream("u")
    up.route("/b", Fixed(500))
    gw = make_gateway(admin=True, workers=2)
    _put(gw, up, {"break_response_code": 599, "break_response_body": "breaker is open",
                  "break_response_headers": [{"key": "X-Client", "value": "$remote_addr"}],
                  "unhealthy": {"failures": 2}})
    assert [http(gw.port, "GET", "/b").status for _ in range(2)] == [500, 500]
    r = http(gw.port, "GET", "/b")
    assert r.status == 599 and r.body == b"breaker is open", r
    assert r.header("x-client") == "127.0.0.1", r


def test_a_conf_change_starts_clean(make_gateway, make_upstream):
    up = make_upstream("u")
    up.route("/b", Fixed(500))
    gw = make_gateway(admin=True)
    _put(gw, up, {"break_response_code": 502, "unhealthy": {"failures": 1}})
    assert [http(gw.port, "GET", "/b").status for _ in range(2)] == [500, 502]
    _put(gw, up, {"break_response_code": 503, "unhealthy": {"failures": 1}})
    assert [http(gw.port, "GET", "/b").status for _ in range(2)] == [500, 503]


def test_a_dead_upstream_counts_as_502(make_gateway, make_upstream):
    # nginx's $upstream_status is 502 when no connection could be made; APISIX counts it.
    gw = make_gateway(admin=True)
    r = gw.admin("PUT", "/routes/1", {
        "uri": "/d", "upstream": {"type": "roundrobin",
                                  "nodes": {"127.0.0.1:%d" % gw.dead_port: 1}},
        "plugins": {"api-breaker": {"break_response_code": 599, "break_response_body": "open",
                                    "unhealthy": {"http_statuses": [502], "failures": 2}}}})
    assert r.status in (200, 201), r
    got = [http(gw.port, "GET", "/d") for _ in range(3)]
    assert [r.status for r in got] == [502, 502, 599], got


@pytest.mark.parametrize("conf,text", [
    ({}, 'property "break_response_code" is required'),
    ({"break_response_code": 502, "unhealthy": {"http_statuses": [499]}},
     'property "unhealthy" validation failed: property "http_statuses" validation failed: '
     'failed to validate item 1: expected 499 to be at least 500'),
    ({"break_response_code": 502, "max_breaker_sec": 2},
     'property "max_breaker_sec" validation failed: expected 2 to be at least 3'),
])
def test_schema_refusals(make_gateway, upstream, conf, text):
    gw = make_gateway(admin=True)
    r = gw.admin("PUT", "/routes/1", admin_route("/b", upstream, plugins={"api-breaker": conf}))
    assert r.status == 400, r
    assert r.json["error_msg"] == \
        "failed to check the configuration of plugin api-breaker err: " + text, r


def test_on_a_plugin_config(make_gateway, make_upstream):
    up = make_upstream("u")
    up.route("/pc", Fixed(502, body=b"bad gateway upstream"))
    gw = make_gateway(admin=True, workers=2)
    r = gw.admin("PUT", "/plugin_configs/pc", {"plugins": {"api-breaker": {
        "break_response_code": 503, "break_response_body": "open",
        "unhealthy": {"http_statuses": [502], "failures": 2}}}})
    assert r.status in (200, 201), r
    r = gw.admin("PUT", "/routes/1", admin_route("/pc", up, plugin_config_id="pc"))
    assert r.status in (200, 201), r
    got = [http(gw.port, "GET", "/pc") for _ in range(3)]
    assert [r.status for r in got] == [502, 502, 503], got
    assert got[2].body == b"open", got


def test_state_is_per_uri_within_a_route(make_gateway, make_upstream):
    # APISIX keys the breaker by host + uri: one broken path of a prefix route leaves the
    # others alone; a global rule's instance keeps a state of its own.
    up = make_upstream("u")
    up.route("/p/bad", Fixed(500, body=b"boom"))
    up.route("/p/good", Fixed(200, body=b"fine"))
    gw = make_gateway(admin=True, workers=2)
    r = gw.admin("PUT", "/global_rules/1", {"plugins": {"api-breaker": {
        "break_response_code": 598, "unhealthy": {"failures": 5}}}})
    assert r.status in (200, 201), r
    _put(gw, up, {"break_response_code": 599, "unhealthy": {"failures": 2}}, uri="/p/*")
    assert [http(gw.port, "GET", "/p/bad").status for _ in range(3)] == [500, 500, 599]
    assert http(gw.port, "GET", "/p/good").status == 200
    assert http(gw.port, "GET", "/p/bad", host="localhost").status == 500
