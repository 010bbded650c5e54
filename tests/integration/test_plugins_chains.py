"""Where a request's plugins come from: a service's plugins apply to its routes, plugin_configs
merge in (route > plugin_config > service), global rules run for every request (matched or
not) before the route's plugins; `_meta.disable`, `_meta.filter`, `_meta.error_response`;
the same objects in a standalone apisix.yaml."""

import json

import yaml

from harness import (NOT_FOUND_BODY, admin_route, admin_upstream, expect_error, get, route,
                     sample_value, scrape, wait_until)

LC_ERR = "failed to check the configuration of plugin limit-count err: "


def lc(count, **kw):
    c = {"count": count, "time_window": 60}
    c.update(kw)
    return c


def _quota(r):
    return (r.status, r.header("x-ratelimit-limit"), r.header("x-ratelimit-remaining"))


def _ok(res):
    assert res.status in (200, 201), res
    return res


# --------------------------------------------------------------------------- services


def test_service_plugins_apply_to_its_routes(make_gateway, upstream):
    gw = make_gateway(admin=True, workers=2)
    _ok(gw.admin("PUT", "/services/s1", {"plugins": {"limit-count": lc(1)},
                                         "upstream": admin_upstream(upstream)}))
    _ok(gw.admin("PUT", "/routes/1", {"uri": "/svc", "service_id": "s1"}))
    got = [get(gw.port, "/svc") for _ in range(2)]
    assert [_quota(r) for r in got] == [(200, "1", "0"), (503, "1", "0")], got
    assert json.loads(got[0].body)["path"] == "/svc"


def test_route_conf_wins_over_the_service(make_gateway, upstream):
    gw = make_gateway(admin=True)
    _ok(gw.admin("PUT", "/services/s1", {"plugins": {"limit-count": lc(1)}}))
    _ok(gw.admin("PUT", "/routes/1", admin_route("/r", upstream, service_id="s1",
                                                 plugins={"limit-count": lc(3)})))
    got = [get(gw.port, "/r") for _ in range(4)]
    assert [_quota(r) for r in got] == [(200, "3", "2"), (200, "3", "1"), (200, "3", "0"),
                                        (503, "3", "0")], got


def test_service_edit_is_live(make_gateway, upstream):
    gw = make_gateway(admin=True)
    _ok(gw.admin("PUT", "/services/s1", {"upstream": admin_upstream(upstream)}))
    _ok(gw.admin("PUT", "/routes/1", {"uri": "/e", "service_id": "s1"}))
    r = get(gw.port, "/e")
    assert r.status == 200 and r.header("x-ratelimit-limit") is None, r
    _ok(gw.admin("PATCH", "/services/s1", {"plugins": {"limit-count": lc(1)}}))
    assert [_quota(get(gw.port, "/e")) for _ in range(2)] == [(200, "1", "0"), (503, "1", "0")]
    _ok(gw.admin("PATCH", "/services/s1", {"plugins": {"limit-count": None}}))
    r = get(gw.port, "/e")
    assert r.status == 200 and r.header("x-ratelimit-limit") is None, \
        "plugin removed from the service still runs: %r" % r


# --------------------------------------------------------------------------- plugin_configs


def test_plugin_config_plugins_apply(make_gateway, upstream):
    gw = make_gateway(admin=True, workers=2)
    _ok(gw.admin("PUT", "/plugin_configs/pc1", {"plugins": {"limit-count": lc(2)}}))
    _ok(gw.admin("PUT", "/routes/1", admin_route("/pc", upstream, plugin_config_id="pc1")))
    got = [get(gw.port, "/pc") for _ in range(3)]
    assert [_quota(r) for r in got] == [(200, "2", "1"), (200, "2", "0"), (503, "2", "0")], got


def test_precedence_route_over_plugin_config_over_service(make_gateway, upstream):
    gw = make_gateway(admin=True)
    _ok(gw.admin("PUT", "/services/s1", {"plugins": {"limit-count": lc(1)},
                                         "upstream": admin_upstream(upstream)}))
    _ok(gw.admin("PUT", "/plugin_configs/pc", {"plugins": {"limit-count": lc(5)}}))
    _ok(gw.admin("PUT", "/routes/svc", {"uri": "/svc", "service_id": "s1"}))
    _ok(gw.admin("PUT", "/routes/pc", {"uri": "/pc", "service_id": "s1",
                                       "plugin_config_id": "pc"}))
    _ok(gw.admin("PUT", "/routes/own", {"uri": "/own", "service_id": "s1",
                                        "plugin_config_id": "pc",
                                        "plugins": {"limit-count": lc(7)}}))
    assert _quota(get(gw.port, "/svc")) == (200, "1", "0")
    assert _quota(get(gw.port, "/pc")) == (200, "5", "4"), "plugin_config must beat service"
    assert _quota(get(gw.port, "/own")) == (200, "7", "6"), "route must beat plugin_config"


def test_plugins_from_all_levels_merge(make_gateway, upstream):
    """Different plugins at different levels all run: limit-count from the plugin_config,
    prometheus from the service."""
    gw = make_gateway(admin=True)
    _ok(gw.admin("PUT", "/services/s1", {"plugins": {"prometheus": {}}}))
    _ok(gw.admin("PUT", "/plugin_configs/pc", {"plugins": {"limit-count": lc(2)}}))
    _ok(gw.admin("PUT", "/routes/1", admin_route("/m", upstream, service_id="s1",
                                                 plugin_config_id="pc")))
    assert [_quota(get(gw.port, "/m")) for _ in range(3)] == [
        (200, "2", "1"), (200, "2", "0"), (503, "2", "0")]
    line = ('apisix_http_status{code="200",route="1",matched_uri="/m",matched_host="",'
            'service="s1",consumer="",node="127.0.0.1"}')
    # 2 x 200 (the 503 has node=""); polled: a request is recorded in its log phase
    ok = wait_until(lambda: sample_value(scrape(gw).body.decode(), line) == 2, timeout=3)
    assert ok, "service's prometheus did not record the route:\n%s" % (
        scrape(gw).body.decode()[:3000])


def test_plugin_config_edit_is_live_and_refs_checked(make_gateway, upstream):
    gw = make_gateway(admin=True)
    _ok(gw.admin("PUT", "/plugin_configs/pc", {"plugins": {"limit-count": lc(2)}}))
    _ok(gw.admin("PUT", "/routes/1", admin_route("/e", upstream, plugin_config_id="pc")))
    assert _quota(get(gw.port, "/e")) == (200, "2", "1")
    _ok(gw.admin("PATCH", "/plugin_configs/pc/plugins/limit-count/count", 5))
    assert _quota(get(gw.port, "/e")) == (200, "5", "4"), "plugin_config edit not live"
    expect_error(gw.admin("PATCH", "/plugin_configs/pc/plugins/limit-count/count", 0), 400,
                 LC_ERR)
    assert gw.admin("GET", "/plugin_configs/pc").json["value"]["plugins"]["limit-count"][
        "count"] == 5


# --------------------------------------------------------------------------- global rules


def test_global_limit_count_applies_to_unmatched_requests(make_gateway, upstream):
    gw = make_gateway(admin=True, workers=2)
    _ok(gw.admin("PUT", "/global_rules/1", {"plugins": {"limit-count": lc(2)}}))
    got = [get(gw.port, "/nowhere") for _ in range(3)]
    assert [r.status for r in got] == [404, 404, 503], got
    assert got[0].body == NOT_FOUND_BODY and got[1].body == NOT_FOUND_BODY, got
    assert [_quota(r) for r in got] == [(404, "2", "1"), (404, "2", "0"), (503, "2", "0")], got
    _ok(gw.admin("DELETE", "/global_rules/1"))
    r = get(gw.port, "/nowhere")
    assert r.status == 404 and r.body == NOT_FOUND_BODY and \
        r.header("x-ratelimit-limit") is None, "deleted global rule still runs: %r" % r


def test_global_rule_counts_across_routes_and_before_the_route(make_gateway, upstream):
    gw = make_gateway(admin=True)
    _ok(gw.admin("PUT", "/routes/1", admin_route("/a", upstream,
                                                 plugins={"limit-count": lc(10)})))
    _ok(gw.admin("PUT", "/routes/2", admin_route("/b", upstream)))
    _ok(gw.admin("PUT", "/global_rules/g", {"plugins": {"limit-count": lc(3, key_type="constant",
                                                                          key="all")}}))
    got = [get(gw.port, p) for p in ("/a", "/b", "/missing", "/a", "/b")]
    assert [r.status for r in got] == [200, 200, 404, 503, 503], got
    assert len(upstream.requests_for("/a")) == 1 and len(upstream.requests_for("/b")) == 1


def test_two_global_rules_both_run(make_gateway, upstream):
    gw = make_gateway(admin=True)
    _ok(gw.admin("PUT", "/routes/1", admin_route("/x", upstream)))
    _ok(gw.admin("PUT", "/global_rules/wide", {"plugins": {"limit-count": lc(5)}}))
    _ok(gw.admin("PUT", "/global_rules/narrow", {"plugins": {"limit-count": lc(
        1, key_type="var", key="http_x_user", _meta={"filter": [["http_x_user", "==", "z"]]})}}))
    assert get(gw.port, "/x", headers={"X-User": "z"}).status == 200
    assert get(gw.port, "/x", headers={"X-User": "z"}).status == 503
    assert get(gw.port, "/x", headers={"X-User": "y"}).status == 200


# --------------------------------------------------------------------------- _meta


def test_meta_disable_turns_the_plugin_off(make_gateway, upstream):
    gw = make_gateway(admin=True)
    _ok(gw.admin("PUT", "/routes/1", admin_route("/d", upstream, plugins={
        "limit-count": lc(1, _meta={"disable": True})})))
    for _ in range(3):
        r = get(gw.port, "/d")
        assert r.status == 200 and r.header("x-ratelimit-limit") is None, r
    _ok(gw.admin("PATCH", "/routes/1/plugins/limit-count/_meta/disable", False))
    assert [get(gw.port, "/d").status for _ in range(2)] == [200, 503]


def test_meta_disable_on_the_route_hides_the_service_plugin(make_gateway, upstream):
    gw = make_gateway(admin=True)
    _ok(gw.admin("PUT", "/services/s1", {"plugins": {"limit-count": lc(1)},
                                         "upstream": admin_upstream(upstream)}))
    _ok(gw.admin("PUT", "/routes/1", {"uri": "/d", "service_id": "s1", "plugins": {
        "limit-count": lc(1, _meta={"disable": True})}}))
    for _ in range(3):
        r = get(gw.port, "/d")
        assert r.status == 200 and r.header("x-ratelimit-limit") is None, r


def test_meta_filter_runs_the_plugin_only_when_it_matches(make_gateway, upstream):
    gw = make_gateway(admin=True, workers=2)
    _ok(gw.admin("PUT", "/routes/1", admin_route("/f", upstream, plugins={
        "limit-count": lc(1, _meta={"filter": [["arg_limited", "==", "1"]]})})))
    for _ in range(3):
        r = get(gw.port, "/f")
        assert r.status == 200 and r.header("x-ratelimit-limit") is None, r
    assert _quota(get(gw.port, "/f?limited=1")) == (200, "1", "0")
    assert _quota(get(gw.port, "/f?limited=1")) == (503, "1", "0")
    assert get(gw.port, "/f?limited=2").status == 200
    assert get(gw.port, "/f").status == 200


def test_meta_error_response_replaces_the_rejection_body(make_gateway, upstream):
    gw = make_gateway(admin=True)
    _ok(gw.admin("PUT", "/routes/1", admin_route("/er", upstream, plugins={
        "limit-count": lc(1, rejected_code=429, rejected_msg="ignored",
                          _meta={"error_response": {"message": "custom rejection"}})})))
    assert get(gw.port, "/er").status == 200
    r = get(gw.port, "/er")
    assert r.status == 429, r
    assert json.loads(r.body) == {"message": "custom rejection"}, r


def test_bad_meta_is_400(make_gateway, upstream):
    gw = make_gateway(admin=True)
    for meta in ({"disable": "yes"}, {"filter": "arg_x == 1"}, {"filter": [["arg_x", "=~~", 1]]}):
        r = gw.admin("PUT", "/routes/1", admin_route("/b", upstream, plugins={
            "limit-count": lc(1, _meta=meta)}))
        assert r.status == 400 and isinstance(r.error_msg, str), (meta, r)
    assert gw.admin("GET", "/routes/1").status == 404


# --------------------------------------------------------------------------- standalone file


def test_standalone_file_services_plugin_configs_global_rules(make_gateway, upstream):
    gw = make_gateway(workers=2, routes=[route("/boot", upstream, rid="boot")])
    doc = {
        "routes": [
            {"id": "svc", "uri": "/svc", "service_id": "s1"},
            {"id": "pc", "uri": "/pc", "service_id": "s1", "plugin_config_id": "pc1"},
            gw.probe_route(gw.generation + 1),
        ],
        "services": [{"id": "s1", "plugins": {"limit-count": lc(1)},
                      "upstream": {"type": "roundrobin", "nodes": {upstream.addr: 1}}}],
        "plugin_configs": [{"id": "pc1", "plugins": {"limit-count": lc(2)}}],
        "global_rules": [{"id": "g1", "plugins": {"limit-count": lc(
            1, _meta={"filter": [["http_x_global", "==", "on"]]})}}],
    }
    gw.generation += 1
    gw.write_apisix_text(yaml.safe_dump(doc, sort_keys=False) + "#END\n")
    assert gw.wait_probe(gw.generation, 5), "the file was not applied:\n" + gw.log_tail()
    assert [_quota(get(gw.port, "/svc")) for _ in range(2)] == [(200, "1", "0"),
                                                               (503, "1", "0")]
    assert [_quota(get(gw.port, "/pc")) for _ in range(3)] == [
        (200, "2", "1"), (200, "2", "0"), (503, "2", "0")]
    hdr = {"X-Global": "on"}
    assert get(gw.port, "/nothing", headers=hdr).status == 404
    assert get(gw.port, "/nothing", headers=hdr).status == 503
    assert get(gw.port, "/nothing").status == 404
