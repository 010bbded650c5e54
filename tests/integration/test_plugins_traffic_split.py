"""traffic-split: APISIX's documented examples (canary by weight, blue-green by a header match,
upstream_id) against a real gateway, with the docs' public https hosts swapped for loopback
fake upstreams; the chosen upstream's own balancer, retries, timeouts and health checks; the
weighted shares over 1,000 requests exactly as smooth weighted round robin gives them; a
missing upstream_id answering 502 as APISIX does; and the Admin API's 400s."""

import time

import pytest

from fake_upstream import delay, fixed
from harness import Client, curl, expect_error, free_port, get

ERR = "failed to check the configuration of plugin traffic-split err: "


@pytest.fixture
def ts_gw(make_gateway):
    return make_gateway(admin=True, workers=2)


def _doc_put(gw, body_text, path="/apisix/admin/routes"):
    """The docs' `curl .../apisix/admin/routes -X PUT -d '...'`, verbatim but for the nodes."""
    r = curl(gw.url(path, port=gw.admin_port), "-X", "PUT",
             "-H", "X-API-KEY: %s" % gw.admin_key, "-d", body_text)
    assert r.rc == 0 and r.status in (200, 201), r
    return r


def _put_route(gw, conf, route_up=None, rid="ts", uri="/headers", **extra):
    body = {"uri": uri, "plugins": {"traffic-split": conf}}
    if route_up is not None:
        body["upstream"] = {"type": "roundrobin", "nodes": {route_up.addr: 1}}
    body.update(extra)
    r = gw.admin("PUT", "/routes/" + rid, body)
    assert r.status in (200, 201), r
    return r


def _who(gw, n, path="/headers", headers=()):
    out = []
    with Client(gw.port) as c:
        for _ in range(n):
            r = c.get(path, headers=list(headers))
            out.append(r.json()["upstream"] if r.status == 200 else "err%d" % r.status)
    return out


# --------------------------------------------------------------------------- the docs' examples


def test_doc_canary_release_by_weight(ts_gw, make_upstream):
    httpbin, mock = make_upstream("httpbin"), make_upstream("mock")
    _doc_put(ts_gw, """{
    "uri": "/headers",
    "id": "traffic-split-route",
    "plugins": {
      "traffic-split": {
        "rules": [
          {
            "weighted_upstreams": [
              {
                "upstream": {
                  "type": "roundrobin",
                  "pass_host": "node",
                  "nodes": {
                    "%s":1
                  }
                },
                "weight": 3
              },
              {
                "weight": 2
              }
            ]
          }
        ]
      }
    },
    "upstream": {
      "type": "roundrobin",
      "pass_host": "node",
      "nodes": {
        "%s":1
      }
    }
  }""" % (httpbin.addr, mock.addr))
    # "Send 10 consecutive requests": httpbin.org: 6, mock.api7.ai: 4.
    seen = _who(ts_gw, 10)
    assert seen.count("httpbin") == 6 and seen.count("mock") == 4, seen
    # pass_host node: each upstream got its own node's Host.
    assert httpbin.requests[-1].header("host") == httpbin.addr
    assert mock.requests[-1].header("host") == mock.addr


def test_doc_blue_green_by_header(ts_gw, make_upstream):
    green, blue = make_upstream("httpbin"), make_upstream("mock")
    _doc_put(ts_gw, """{
    "uri": "/headers",
    "id": "traffic-split-route",
    "plugins": {
      "traffic-split": {
        "rules": [
          {
            "match": [
              {
                "vars": [
                  ["http_release","==","new_release"]
                ]
              }
            ],
            "weighted_upstreams": [
              {
                "upstream": {
                  "type": "roundrobin",
                  "pass_host": "node",
                  "nodes": {
                    "%s":1
                  }
                }
              }
            ]
          }
        ]
      }
    },
    "upstream": {
      "type": "roundrobin",
      "pass_host": "node",
      "nodes": {
        "%s":1
      }
    }
  }""" % (green.addr, blue.addr))
    assert _who(ts_gw, 4, headers=[("release", "new_release")]) == ["httpbin"] * 4
    assert _who(ts_gw, 4) == ["mock"] * 4
    assert _who(ts_gw, 2, headers=[("release", "old")]) == ["mock"] * 2


def test_doc_upstream_id_with_match_on_args_and_headers(ts_gw, make_upstream):
    # The docs' "matching rules with several vars" shape, upstream objects named by id.
    u1, u2, route_up = make_upstream("u1"), make_upstream("u2"), make_upstream("route")
    for uid, up in (("1", u1), ("2", u2)):
        r = ts_gw.admin("PUT", "/upstreams/" + uid,
                        {"type": "roundrobin", "nodes": {up.addr: 1}})
        assert r.status in (200, 201), r
    _put_route(ts_gw, {"rules": [{
        "match": [{"vars": [["arg_name", "==", "jack"], ["http_user-id", ">", "23"],
                            ["http_apisix-key", "~~", "[a-z]+"]]}],
        "weighted_upstreams": [{"upstream_id": "1", "weight": 3},
                               {"upstream_id": 2, "weight": 2}, {"weight": 5}]}]}, route_up,
        uri="/index.html")
    hdrs = [("user-id", "30"), ("apisix-key", "hello")]
    seen = _who(ts_gw, 10, path="/index.html?name=jack", headers=hdrs)
    assert sorted(seen) == sorted(["u1"] * 3 + ["u2"] * 2 + ["route"] * 5), seen
    # One var fails: the route's upstream, every time.
    assert _who(ts_gw, 5, path="/index.html?name=jack", headers=[("user-id", "3")]) == \
        ["route"] * 5


def test_inline_upstream_balances_over_its_nodes(ts_gw, make_upstream):
    a, b, route_up = make_upstream("a"), make_upstream("b"), make_upstream("route")
    _put_route(ts_gw, {"rules": [{"weighted_upstreams": [
        {"upstream": {"type": "roundrobin", "nodes": {a.addr: 1, b.addr: 1}}, "weight": 1}]}]},
        route_up)
    seen = _who(ts_gw, 8)
    assert sorted(seen) == ["a"] * 4 + ["b"] * 4, seen


def test_weighted_shares_over_1000_requests(ts_gw, make_upstream):
    u1, inl, route_up = make_upstream("u1"), make_upstream("inline"), make_upstream("route")
    r = ts_gw.admin("PUT", "/upstreams/u1", {"nodes": {u1.addr: 1}})
    assert r.status in (200, 201), r
    _put_route(ts_gw, {"rules": [{"weighted_upstreams": [
        {"upstream_id": "u1", "weight": 10},
        {"upstream": {"nodes": {inl.addr: 1}}, "weight": 20},
        {"weight": 70}]}]}, route_up)
    seen = _who(ts_gw, 1000)
    # Smooth weighted round robin, one schedule for the node (two workers): exact per cycle.
    assert (seen.count("u1"), seen.count("inline"), seen.count("route")) == (100, 200, 700)


# --------------------------------------------------------------------------- the chosen upstream


def test_the_split_upstreams_retries_apply(ts_gw, make_upstream):
    alive, route_up = make_upstream("alive"), make_upstream("route")
    dead = "127.0.0.1:%d" % free_port()
    for uid, retries in (("r1", 1), ("r0", 0)):
        r = ts_gw.admin("PUT", "/upstreams/" + uid,
                        {"nodes": {dead: 1, alive.addr: 1}, "retries": retries})
        assert r.status in (200, 201), r
    _put_route(ts_gw, {"rules": [{"weighted_upstreams": [{"upstream_id": "r1"}]}]}, route_up)
    assert _who(ts_gw, 10) == ["alive"] * 10  # the dead node's tries go on to the next
    _put_route(ts_gw, {"rules": [{"weighted_upstreams": [{"upstream_id": "r0"}]}]}, route_up)
    seen = _who(ts_gw, 10)
    assert "err502" in seen and "route" not in seen, seen


def test_the_split_upstreams_health_checks_apply(ts_gw, make_upstream):
    a, b, route_up = make_upstream("a"), make_upstream("b"), make_upstream("route")
    b.route("/health", fixed(500))
    checks = {"active": {"type": "http", "timeout": 1, "http_path": "/health",
                         "healthy": {"interval": 1, "successes": 2},
                         "unhealthy": {"interval": 1, "http_failures": 1}}}
    _put_route(ts_gw, {"rules": [{"weighted_upstreams": [
        {"upstream": {"nodes": {a.addr: 1, b.addr: 1}, "checks": checks}}]}]}, route_up)
    deadline = time.monotonic() + 6
    while time.monotonic() < deadline:
        if _who(ts_gw, 6) == ["a"] * 6:
            break
        time.sleep(0.2)
    assert _who(ts_gw, 10) == ["a"] * 10


def test_the_split_upstreams_timeout_applies(ts_gw, make_upstream):
    slow, route_up = make_upstream("slow"), make_upstream("route")
    slow.route("/headers", delay(3))
    _put_route(ts_gw, {"rules": [{"weighted_upstreams": [
        {"upstream": {"nodes": {slow.addr: 1}, "timeout": {"connect": 1, "send": 1,
                                                             "read": 1}}}]}]},
        route_up)
    t0 = time.monotonic()
    r = get(ts_gw.port, "/headers")
    took = time.monotonic() - t0
    assert r.status == 504, r
    assert took < 2.5, took
    # A route's own timeout wins over the chosen upstream's (APISIX's set_balancer_opts).
    _put_route(ts_gw, {"rules": [{"weighted_upstreams": [
        {"upstream": {"nodes": {slow.addr: 1}, "timeout": {"connect": 1, "send": 1,
                                                             "read": 1}}}]}]},
        route_up, timeout={"connect": 10, "send": 10, "read": 10})
    assert get(ts_gw.port, "/headers").status == 200


def test_a_missing_upstream_id_answers_502(ts_gw, make_upstream):
    route_up = make_upstream("route")
    _put_route(ts_gw, {"rules": [{"weighted_upstreams": [{"upstream_id": "nope"}]}]}, route_up)
    assert get(ts_gw.port, "/headers").status == 502
    assert ts_gw.wait_for_log("failed to find upstream by id: nope")
    # Once the upstream exists, the next snapshot's plugin finds it.
    r = ts_gw.admin("PUT", "/upstreams/nope", {"nodes": {route_up.addr: 1}})
    assert r.status in (200, 201), r
    assert get(ts_gw.port, "/headers").status == 200


def test_on_a_service_and_without_a_route_upstream(ts_gw, make_upstream):
    split = make_upstream("split")
    r = ts_gw.admin("PUT", "/services/s1", {"plugins": {"traffic-split": {"rules": [
        {"weighted_upstreams": [{"upstream": {"nodes": {split.addr: 1}}}]}]}}})
    assert r.status in (200, 201), r
    r = ts_gw.admin("PUT", "/routes/s", {"uri": "/svc", "service_id": "s1"})
    assert r.status in (200, 201), r
    assert _who(ts_gw, 3, path="/svc") == ["split"] * 3


# --------------------------------------------------------------------------- Admin API


@pytest.mark.parametrize("conf,msg", [
    ({"rules": [{"weighted_upstreams": []}]},
     'property "rules" validation failed: failed to validate item 1: property '
     '"weighted_upstreams" validation failed: expect array to have at least 1 items'),
    ({"rules": [{"weighted_upstreams": [{"weight": -1}]}]},
     'property "rules" validation failed: failed to validate item 1: property '
     '"weighted_upstreams" validation failed: failed to validate item 1: property "weight" '
     'validation failed: expected -1 to be at least 0'),
    ({"rules": [{"weighted_upstreams": [{"upstream": {"nodes": {"127.0.0.1:1": 1},
                                                      "type": "chash"}}]}]},
     'property "rules" validation failed: failed to validate item 1: property '
     '"weighted_upstreams" validation failed: failed to validate item 1: property "upstream" '
     'validation failed: missing key'),
    ({"rules": [{"match": [{"vars": [["arg_x", "<>", "1"]]}]}]},
     "failed to validate the 'vars' expression: "),
    ({"rule": []}, "additional properties forbidden, found rule"),
])
def test_admin_refuses_bad_confs(ts_gw, conf, msg):
    r = ts_gw.admin("PUT", "/routes/bad", {"uri": "/bad", "plugins": {"traffic-split": conf},
                                          "upstream": {"nodes": {"127.0.0.1:1980": 1}}})
    expect_error(r, 400, ERR + msg)


def test_on_a_global_rule_and_a_plugin_config(ts_gw, make_upstream):
    split, route_up, pc_up = make_upstream("split"), make_upstream("route"), make_upstream("pc")
    r = ts_gw.admin("PUT", "/routes/g", {"uri": "/g", "upstream": {"nodes": {route_up.addr: 1}}})
    assert r.status in (200, 201), r
    assert _who(ts_gw, 2, path="/g") == ["route"] * 2
    r = ts_gw.admin("PUT", "/global_rules/1", {"plugins": {"traffic-split": {"rules": [
        {"match": [{"vars": [["arg_canary", "==", "1"]]}],
         "weighted_upstreams": [{"upstream": {"nodes": {split.addr: 1}}}]}]}}})
    assert r.status in (200, 201), r
    assert _who(ts_gw, 2, path="/g?canary=1") == ["split"] * 2
    assert _who(ts_gw, 2, path="/g") == ["route"] * 2
    r = ts_gw.admin("DELETE", "/global_rules/1")
    assert r.status == 200, r
    r = ts_gw.admin("PUT", "/plugin_configs/pc", {"plugins": {"traffic-split": {"rules": [
        {"weighted_upstreams": [{"upstream": {"nodes": {pc_up.addr: 1}}}]}]}}})
    assert r.status in (200, 201), r
    r = ts_gw.admin("PUT", "/routes/g", {"uri": "/g", "plugin_config_id": "pc",
                                         "upstream": {"nodes": {route_up.addr: 1}}})
    assert r.status in (200, 201), r
    assert _who(ts_gw, 2, path="/g") == ["pc"] * 2
