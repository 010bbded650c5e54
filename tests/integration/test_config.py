"""Issue 2, point 6: config.yaml + standalone apisix.yaml — env substitution, #END, change
detection within a second, whole-file rejection with a precise message, snapshot swaps."""

import threading
import time

import pytest
import yaml

from fake_upstream import delay, fixed
from harness import Client, get, route


def _routes_text(gw, items_yaml, generation, extra=""):
    """A hand-written apisix.yaml: routes (zero-indented items) + the probe, then #END."""
    return "routes:\n" + items_yaml + gw.probe_items_yaml(generation) + extra + "#END\n"


def _write_generation(gw, make_text, atomic=True):
    gw.generation += 1
    gw.write_apisix_text(make_text(gw.generation), atomic=atomic)
    return gw.generation


ENV_ROUTES = """\
- id: env1
  uri: ${{SLUICE_T_URI}}
  upstream:
    type: roundrobin
    nodes:
    - host: 127.0.0.1
      port: ${{SLUICE_T_PORT}}
      weight: 1
- id: env2
  uri: ${{SLUICE_T_UNSET_XYZ:=/env-default}}
  upstream:
    type: roundrobin
    nodes:
    - host: 127.0.0.1
      port: ${{SLUICE_T_PORT:=1}}
      weight: 1
"""


def test_env_substitution(make_gateway, upstream):
    gw = make_gateway(start=False, env={"SLUICE_T_URI": "/from-env",
                                        "SLUICE_T_PORT": str(upstream.port)})
    gw.write_config()
    gw.generation = 1
    gw.write_apisix_text(_routes_text(gw, ENV_ROUTES, 1))
    gw.start(write=False)
    r = get(gw.port, "/from-env")
    assert r.status == 200 and r.json()["path"] == "/from-env"
    r = get(gw.port, "/env-default")
    assert r.status == 200, "default of an unset variable not used"
    assert get(gw.port, "/${{SLUICE_T_URI}}").status == 404


def test_change_is_live_within_a_second(make_gateway, upstream):
    gw = make_gateway(routes=[route("/a", upstream)])
    worst = 0.0
    for i in range(3):
        took = gw.update_routes([route("/a", upstream), route("/b%d" % i, upstream)])
        worst = max(worst, took)
        assert get(gw.port, "/b%d" % i).status == 200
    assert worst < 1.5, "a change took %.2fs to go live (limit: 1 s)" % worst


def test_in_place_rewrite_is_picked_up(make_gateway, upstream):
    gw = make_gateway(routes=[route("/a", upstream)])
    took = gw.update_routes([route("/a", upstream), route("/inplace", upstream)], atomic=False)
    assert took < 1.5
    assert get(gw.port, "/inplace").status == 200


def test_routes_added_removed_and_modified(make_gateway, make_upstream):
    a, b = make_upstream("a"), make_upstream("b")
    gw = make_gateway(routes=[route("/keep", a), route("/gone", a), route("/mod", a, rid="mod")])
    assert get(gw.port, "/gone").status == 200
    assert get(gw.port, "/mod").json()["upstream"] == "a"
    gw.update_routes([route("/keep", a), route("/mod", b, rid="mod"), route("/added", b)])
    assert get(gw.port, "/gone").status == 404
    assert get(gw.port, "/mod").json()["upstream"] == "b"
    assert get(gw.port, "/added").json()["upstream"] == "b"
    assert get(gw.port, "/keep").json()["upstream"] == "a"


def test_upstream_object_change_moves_traffic(make_gateway, make_upstream):
    a, b = make_upstream("a"), make_upstream("b")
    ups = lambda u: [{"id": "u1", "type": "roundrobin", "nodes": {u.addr: 1}}]
    r = {"id": "r1", "uri": "/via-id", "upstream_id": "u1"}
    gw = make_gateway(routes=[r], upstreams=ups(a))
    assert get(gw.port, "/via-id").json()["upstream"] == "a"
    gw.update_routes([r], upstreams=ups(b))
    assert get(gw.port, "/via-id").json()["upstream"] == "b"


def test_service_change_moves_traffic(make_gateway, make_upstream):
    a, b = make_upstream("a"), make_upstream("b")
    svc = lambda u: [{"id": "s1", "upstream": {"type": "roundrobin", "nodes": {u.addr: 1}}}]
    r = {"id": "r1", "uri": "/via-svc", "service_id": "s1"}
    gw = make_gateway(routes=[r], services=svc(a))
    assert get(gw.port, "/via-svc").json()["upstream"] == "a"
    gw.update_routes([r], services=svc(b))
    assert get(gw.port, "/via-svc").json()["upstream"] == "b"


def test_keepalive_connection_survives_a_reload(make_gateway, upstream):
    gw = make_gateway(routes=[route("/a", upstream)])
    with Client(gw.port) as c:
        assert c.get("/a").status == 200
        gw.update_routes([route("/a", upstream), route("/b", upstream)])
        assert c.get("/b").status == 200
        assert c.get("/a").status == 200


def test_in_flight_request_finishes_on_its_snapshot(make_gateway, upstream):
    upstream.route("/slow", delay(1.5, fixed(200, body=b"old snapshot")))
    gw = make_gateway(routes=[route("/slow", upstream), route("/other", upstream)])
    out = {}
    t = threading.Thread(target=lambda: out.setdefault("r", get(gw.port, "/slow", timeout=10)))
    t.start()
    assert upstream.wait_for(lambda u: u.requests_for("/slow"), timeout=5)
    gw.update_routes([route("/other", upstream)])  # /slow and its upstream are gone
    t.join(10)
    assert out["r"].status == 200 and out["r"].body == b"old snapshot"
    assert get(gw.port, "/slow").status == 404


def test_other_top_level_sections_are_accepted(make_gateway, upstream):
    gw = make_gateway(routes=[route("/a", upstream)])
    gw.generation += 1
    extra = "consumers: []\nglobal_rules: []\nplugin_configs: []\n"
    gw.write_apisix_text(gw.apisix_text().replace("#END\n", extra + "#END\n"))
    assert gw.wait_probe(gw.generation, timeout=3), gw.log_tail()
    assert get(gw.port, "/a").status == 200


def test_end_marker_without_trailing_newline(make_gateway, upstream):
    gw = make_gateway(routes=[route("/a", upstream)])
    gw.routes = [route("/a", upstream), route("/noeol", upstream)]
    gw.generation += 1
    gw.write_apisix_text(gw.apisix_text().rstrip("\n"))
    assert gw.wait_probe(gw.generation, timeout=3), gw.log_tail()
    assert get(gw.port, "/noeol").status == 200


# --------------------------------------------------------------------------- rejections


def _good_items(up):
    return yaml.safe_dump([route("/old", up, rid="old"), route("/should-not-exist", up,
                                                                    rid="new")],
                          sort_keys=False)


def _bad_route_items(up, **fields):
    r = route("/bad", up, rid="bad-route-7")
    r.update(fields)
    return yaml.safe_dump([r], sort_keys=False)


# name -> (make_text(gw, up, generation), regexes the new log text must match)
BROKEN = {
    "yaml-syntax": (lambda gw, up, g: _routes_text(gw, _good_items(up), g,
                                                   extra="services: [unclosed\n"),
                    [r"(?i)yaml|parse|syntax"]),
    "missing-end": (lambda gw, up, g: _routes_text(gw, _good_items(up), g)
                    .replace("#END\n", ""),
                    [r"END"]),
    "unknown-route-field": (lambda gw, up, g: _routes_text(
        gw, _good_items(up) + _bad_route_items(up, urii="/typo"), g),
        [r"bad-route-7", r"urii"]),
    "bad-method": (lambda gw, up, g: _routes_text(
        gw, _good_items(up) + _bad_route_items(up, methods=["FETCH"]), g),
        [r"bad-route-7", r"methods"]),
    "no-uri": (lambda gw, up, g: _routes_text(
        gw, _good_items(up) + yaml.safe_dump([{"id": "bad-route-7", "upstream": {
            "type": "roundrobin", "nodes": {up.addr: 1}}}], sort_keys=False), g),
        [r"bad-route-7", r"uri"]),
    "bad-priority-type": (lambda gw, up, g: _routes_text(
        gw, _good_items(up) + _bad_route_items(up, priority="high"), g),
        [r"bad-route-7", r"priority"]),
    "bad-upstream-weight": (lambda gw, up, g: _routes_text(
        gw, _good_items(up), g, extra=yaml.safe_dump({"upstreams": [
            {"id": "bad-up-1", "type": "roundrobin", "nodes": {up.addr: "heavy"}}]})),
        [r"bad-up-1", r"nodes|weight"]),
    "ftp-upstream": (lambda gw, up, g: _routes_text(
        gw, _good_items(up), g, extra=yaml.safe_dump({"upstreams": [
            {"id": "ftp-up-1", "type": "roundrobin", "scheme": "ftp",
             "nodes": {up.addr: 1}}]})),
        [r"ftp-up-1", r"scheme"]),
    "unset-env-var": (lambda gw, up, g: _routes_text(
        gw, _good_items(up) + "- id: bad-route-7\n  uri: ${{SLUICE_T_SURELY_UNSET_9}}\n"
        "  upstream:\n    type: roundrobin\n    nodes:\n      \"%s\": 1\n" % up.addr, g),
        [r"SLUICE_T_SURELY_UNSET_9"]),
}


@pytest.mark.parametrize("name", list(BROKEN))
def test_broken_file_is_rejected_whole_and_old_config_serves(make_gateway, upstream, name):
    make_text, patterns = BROKEN[name]
    gw = make_gateway(routes=[route("/old", upstream, rid="old")])
    assert get(gw.port, "/old").status == 200
    before = gw.log_size()
    gen = _write_generation(gw, lambda g: make_text(gw, upstream, g))
    for rx in patterns:
        assert gw.wait_for_log(rx, timeout=3, start=before), \
            "no log line matching %r after writing a broken file:\n%s" % (
                rx, gw.log_text()[before:])
    time.sleep(0.3)
    assert get(gw.port, gw.probe_path(gen)).status == 404, "broken file went live"
    assert get(gw.port, "/should-not-exist").status == 404, "part of a broken file went live"
    assert get(gw.port, "/old").status == 200, "the previous config stopped serving"
    assert gw.alive()
    # A good file afterwards is accepted again.
    gw.update_routes([route("/old", upstream, rid="old"), route("/fixed", upstream)])
    assert get(gw.port, "/fixed").status == 200


def test_error_names_the_item_and_field(make_gateway, upstream):
    """The rejection message says which route and which field, in one line."""
    gw = make_gateway(routes=[route("/old", upstream, rid="old")])
    before = gw.log_size()
    _write_generation(gw, lambda g: _routes_text(
        gw, _good_items(upstream) + _bad_route_items(upstream, methods=["FETCH"]), g))
    assert gw.wait_for_log(r"bad-route-7", timeout=3, start=before), gw.log_text()[before:]
    lines = gw.log_text()[before:].splitlines()
    assert any("bad-route-7" in ln and "methods" in ln for ln in lines), \
        "route id and field not named on one line:\n%s" % "\n".join(lines)
