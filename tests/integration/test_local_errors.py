"""What the gateway itself answers and logs when a request cannot reach an upstream, as APISIX
does (apisix/upstream.lua set_by_route, apisix/init.lua handle_upstream):

- an upstream with no nodes, or none whose host resolves: 503 "no valid upstream node"
  (APISIX drops nodes whose host does not resolve; the admin-api page's "502" is not what its
  code does);
- a route with no upstream on it or its service: 503 "missing upstream configuration in
  Route or Service";
- apisix.show_upstream_status_in_response_header: X-APISIX-Upstream-Status on every proxied
  response, not only on 5xx;
- an upstream failure is logged once per incident, naming the route, the upstream, the node
  and the reason; a node that does not resolve is warned about once per change, not on every
  Admin API write.

Names that must not resolve use the reserved .invalid domain; RES_OPTIONS bounds the lookup
where no DNS server answers."""

import re

from fake_upstream import fixed, reset
from harness import free_port, get, route

NO_DNS = {"RES_OPTIONS": "timeout:1 attempts:1"}


def test_an_upstream_without_nodes_answers_503(make_gateway):
    r = route("/*", rid="r")
    r["upstream"] = {"type": "roundrobin", "nodes": {}}
    gw = make_gateway(routes=[r])
    resp = get(gw.port, "/x")
    assert resp.status == 503, resp
    assert resp.json() == {"error_msg": "no valid upstream node"}


def test_an_upstream_whose_nodes_do_not_resolve_answers_503(make_gateway):
    r = route("/*", rid="r")
    r["upstream"] = {"type": "roundrobin", "nodes": {"no-such-host.invalid:80": 1}}
    gw = make_gateway(routes=[r], env=NO_DNS)
    resp = get(gw.port, "/x")
    assert resp.status == 503, resp
    assert resp.json() == {"error_msg": "no valid upstream node"}


def test_the_nodes_that_resolve_still_serve(make_gateway, make_upstream):
    up = make_upstream("good")
    r = route("/*", rid="r")
    r["upstream"] = {"type": "roundrobin", "nodes": {"no-such-host.invalid:80": 1,
                                                     "127.0.0.1:%d" % up.port: 1}}
    gw = make_gateway(routes=[r], env=NO_DNS)
    for _ in range(4):
        assert get(gw.port, "/x").status == 200


def test_a_route_without_an_upstream_answers_503(make_gateway):
    # APISIX's route schema wants an upstream, upstream_id, service_id or plugins beside uri.
    gw = make_gateway(routes=[route("/*", rid="r", plugins={"prometheus": {}})])
    resp = get(gw.port, "/x")
    assert resp.status == 503, resp
    assert resp.json() == {"error_msg": "missing upstream configuration in Route or Service"}


def test_a_route_whose_upstream_id_names_nothing_answers_502(make_gateway):
    # apisix/init.lua handle_upstream: no upstream by that id -> 502.
    gw = make_gateway(routes=[route("/*", rid="r", upstream_id="gone")])
    assert get(gw.port, "/x").status == 502
    assert "route r: upstream gone not found; requests get 502" in gw.log_text()


def test_a_route_whose_plugin_config_is_missing_answers_503_without_its_plugins(
        make_gateway, make_upstream):
    # apisix/init.lua: a plugin_config_id naming nothing is 503 before any plugin runs; the
    # route's own plugins (proxy-rewrite here) must not run either, nor the request go up.
    up = make_upstream("up")
    r = route("/*", up, rid="r", plugin_config_id="gone",
              plugins={"proxy-rewrite": {"uri": "/rewritten"}})
    gw = make_gateway(routes=[r])
    resp = get(gw.port, "/x")
    assert resp.status == 503, resp
    assert up.requests == []
    assert "route r: plugin_config gone not found; the route answers 503" in gw.log_text()


def test_global_rules_do_not_run_for_a_route_answered_for_a_missing_reference(make_gateway,
                                                                               make_upstream):
    # apisix/init.lua answers a missing plugin_config (503) or service (404) before
    # run_global_rules: a global limit-count neither counts nor refuses those requests.
    up = make_upstream("up")
    gw = make_gateway(admin=True)
    limit = {"limit-count": {"count": 1, "time_window": 60, "rejected_code": 429}}
    assert gw.admin("PUT", "/global_rules/g", {"plugins": limit}).status == 201
    assert gw.admin("PUT", "/plugin_configs/pc", {"plugins": {}}).status == 201
    assert gw.admin("PUT", "/services/s", {"upstream": {"nodes": {up.addr: 1}}}).status == 201
    assert gw.admin("PUT", "/routes/pc", {"uri": "/pc", "plugin_config_id": "pc",
                                          "upstream": {"nodes": {up.addr: 1}}}).status == 201
    assert gw.admin("PUT", "/routes/s", {"uri": "/s", "service_id": "s"}).status == 201
    assert gw.admin("DELETE", "/plugin_configs/pc?force=true").status == 200
    assert gw.admin("DELETE", "/services/s?force=true").status == 200
    gw.wait_for_log(r"plugin_config pc not found; the route answers 503")
    for _ in range(3):
        assert get(gw.port, "/pc").status == 503
        assert get(gw.port, "/s").status == 404
    assert up.requests == []


def _two_nodes(first, second):
    r = route("/*", rid="r")
    r["upstream"] = {"type": "roundrobin", "nodes": [
        {"host": "127.0.0.1", "port": first, "weight": 100},
        {"host": "127.0.0.1", "port": second, "weight": 1}]}
    return r


def test_show_upstream_status_puts_the_header_on_every_response(make_gateway, make_upstream):
    bad, good = make_upstream("bad"), make_upstream("good")
    bad.route("/x", reset())
    good.route("/x", fixed(200, body=b"ok"))
    bad.route("/y", fixed(404, body=b"no"))
    cfg = {"apisix": {"show_upstream_status_in_response_header": True}}
    gw = make_gateway(routes=[_two_nodes(bad.port, good.port)], config=cfg)
    resp = get(gw.port, "/x")  # the first node resets, the second answers
    assert resp.status == 200 and resp.header("x-apisix-upstream-status") == "502, 200"
    resp = get(gw.port, "/y")  # an upstream's 4xx
    assert resp.status == 404 and resp.header("x-apisix-upstream-status") == "404"
    assert "not supported yet" not in gw.log_text()  # the key is known, not ignored


def test_without_the_option_a_success_has_no_status_header(make_gateway, make_upstream):
    good = make_upstream("good")
    gw = make_gateway(routes=[route("/*", good, rid="r")])
    assert get(gw.port, "/x").header("x-apisix-upstream-status") is None


def test_an_upstream_failure_is_logged_once_per_incident_with_its_context(make_gateway):
    dead = free_port()
    r = route("/*", rid="orders")
    r["upstream"] = {"type": "roundrobin", "nodes": {"127.0.0.1:%d" % dead: 1}}
    gw = make_gateway(routes=[r], workers=1)
    for _ in range(30):
        assert get(gw.port, "/x").status == 502
    lines = [l for l in gw.log_text().splitlines() if "upstream failure: route orders" in l]
    assert len(lines) == 1, lines
    assert re.search(r"upstream failure: route orders, the inline upstream of route orders, "
                     r"node 127\.0\.0\.1:%d: connect failed: Connection refused "
                     r"\(client 127\.0\.0\.1\)" % dead, lines[0]), lines[0]


def test_an_unresolvable_node_is_warned_about_once_per_change(make_gateway, make_upstream):
    good = make_upstream("good")
    gw = make_gateway(admin=True, env=NO_DNS)
    body = {"type": "roundrobin", "nodes": {"no-such-host.invalid:80": 1}}
    assert gw.admin("PUT", "/upstreams/u1", body).status in (200, 201)
    for i in range(4):  # writes that do not touch the upstream
        r = {"uri": "/r%d" % i, "upstream_id": "u1"}
        assert gw.admin("PUT", "/routes/%d" % i, r).status in (200, 201)
    gw.wait_for_log(r"configuration \d+ published: 4 route")
    warned = re.findall(r"node no-such-host\.invalid does not resolve", gw.log_text())
    assert len(warned) == 1, gw.log_tail()
    body["nodes"] = {"127.0.0.1:%d" % good.port: 1}
    assert gw.admin("PUT", "/upstreams/u1", body).status == 200
    gw.wait_for_log(r"no longer so: upstream u1: node no-such-host\.invalid does not resolve")
    assert get(gw.port, "/r1").status == 200
