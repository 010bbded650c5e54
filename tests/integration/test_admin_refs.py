"""Issue 3, points 1 and 3 (references): a route, service or consumer naming a missing
upstream, service, plugin config or consumer group is refused with 400; deleting an object
still in use is refused with 400 unless ?force=true; references are followed by the data
plane."""

import pytest

from harness import admin_route, admin_upstream, expect_error, get

DEAD = "127.0.0.1:1"
UPSTREAM_404 = "failed to fetch upstream info by upstream id [nope], response code: 404"


def _ok(res):
    assert res.status in (200, 201), res
    return res


def _total(gw, kind):
    r = gw.admin("GET", "/" + kind)
    assert r.status == 200, r
    return r.json["total"]


# --------------------------------------------------------------------------- dangling refs


def test_route_with_missing_upstream_id(admin_gw):
    r = admin_gw.admin("PUT", "/routes/1", {"uri": "/x", "upstream_id": "nope"})
    expect_error(r, 400)
    assert r.json == {"error_msg": UPSTREAM_404}, r
    r = admin_gw.admin("POST", "/routes", {"uri": "/x", "upstream_id": "nope"})
    expect_error(r, 400, UPSTREAM_404)
    assert _total(admin_gw, "routes") == 0


def test_service_with_missing_upstream_id(admin_gw):
    r = admin_gw.admin("PUT", "/services/s1", {"upstream_id": "nope"})
    expect_error(r, 400, UPSTREAM_404)
    assert _total(admin_gw, "services") == 0


@pytest.mark.parametrize("field,prefix", [
    ("service_id", "failed to fetch service info by service id [nope]"),
    ("plugin_config_id", "failed to fetch plugin config info by plugin config id [nope]"),
])
def test_route_with_missing_reference(admin_gw, field, prefix):
    body = {"uri": "/x", field: "nope"}
    if field == "plugin_config_id":
        body["upstream"] = admin_upstream(DEAD)
    r = admin_gw.admin("PUT", "/routes/1", body)
    expect_error(r, 400, prefix, contains="404")
    assert _total(admin_gw, "routes") == 0


def test_consumer_with_missing_group(admin_gw):
    r = admin_gw.admin("PUT", "/consumers", {"username": "jack", "group_id": "nope"})
    expect_error(r, 400, "failed to fetch consumer group info by consumer group id [nope]",
                 contains="404")
    assert _total(admin_gw, "consumers") == 0


def test_patch_cannot_introduce_a_dangling_reference(admin_gw):
    _ok(admin_gw.admin("PUT", "/routes/1", admin_route("/x", DEAD)))
    before = admin_gw.admin("GET", "/routes/1").json
    r = admin_gw.admin("PATCH", "/routes/1", {"upstream": None, "upstream_id": "nope"})
    expect_error(r, 400, UPSTREAM_404)
    assert admin_gw.admin("GET", "/routes/1").json == before


def test_references_to_existing_objects_are_accepted(admin_gw):
    _ok(admin_gw.admin("PUT", "/upstreams/u1", admin_upstream(DEAD)))
    _ok(admin_gw.admin("PUT", "/upstreams/5", admin_upstream(DEAD)))
    _ok(admin_gw.admin("PUT", "/services/s1", {"upstream_id": "u1"}))
    _ok(admin_gw.admin("PUT", "/plugin_configs/pc1", {"plugins": {}}))
    _ok(admin_gw.admin("PUT", "/consumer_groups/g1", {"plugins": {}}))
    _ok(admin_gw.admin("PUT", "/routes/1", {"uri": "/a", "upstream_id": "u1"}))
    _ok(admin_gw.admin("PUT", "/routes/2", {"uri": "/b", "service_id": "s1"}))
    _ok(admin_gw.admin("PUT", "/routes/3", {"uri": "/c", "upstream_id": "u1",
                                            "plugin_config_id": "pc1"}))
    _ok(admin_gw.admin("PUT", "/routes/4", {"uri": "/d", "upstream_id": 5}))
    _ok(admin_gw.admin("PUT", "/consumers", {"username": "jack", "group_id": "g1"}))
    assert _total(admin_gw, "routes") == 4


# --------------------------------------------------------------------------- delete in use


def test_delete_upstream_in_use_by_route(admin_gw, upstream):
    _ok(admin_gw.admin("PUT", "/upstreams/u1", admin_upstream(upstream)))
    _ok(admin_gw.admin("PUT", "/routes/1", {"uri": "/in-use", "upstream_id": "u1"}))
    r = admin_gw.admin("DELETE", "/upstreams/u1")
    expect_error(r, 400)
    assert r.json == {"error_msg":
                      "can not delete this upstream, route [1] is still using it now"}, r
    assert admin_gw.admin("GET", "/upstreams/u1").status == 200, "refused DELETE deleted it"
    assert get(admin_gw.port, "/in-use").status == 200
    r = admin_gw.admin("DELETE", "/upstreams/u1?force=true")
    assert r.status == 200 and r.json["key"] == "/apisix/upstreams/u1", r
    assert admin_gw.admin("GET", "/upstreams/u1").status == 404
    # The route now names nothing: an error answer, not the old upstream, not a crash.
    r = get(admin_gw.port, "/in-use")
    assert 500 <= r.status < 600, "route to a force-deleted upstream answered %r" % r
    assert admin_gw.alive()


def test_delete_upstream_after_route_is_gone(admin_gw):
    _ok(admin_gw.admin("PUT", "/upstreams/u1", admin_upstream(DEAD)))
    _ok(admin_gw.admin("PUT", "/routes/1", {"uri": "/a", "upstream_id": "u1"}))
    expect_error(admin_gw.admin("DELETE", "/upstreams/u1"), 400)
    _ok(admin_gw.admin("PATCH", "/routes/1", {"upstream_id": None,
                                              "upstream": admin_upstream(DEAD)}))
    assert admin_gw.admin("DELETE", "/upstreams/u1").status == 200


def test_integer_reference_blocks_delete(admin_gw):
    _ok(admin_gw.admin("PUT", "/upstreams/5", admin_upstream(DEAD)))
    _ok(admin_gw.admin("PUT", "/routes/r5", {"uri": "/a", "upstream_id": 5}))
    expect_error(admin_gw.admin("DELETE", "/upstreams/5"), 400,
                 "can not delete this upstream, route [r5] is still using it now")


# (setup requests, the DELETE path, expected error prefix, words it must contain)
IN_USE = {
    "upstream-by-service": (
        [("/upstreams/u1", admin_upstream(DEAD)), ("/services/s1", {"upstream_id": "u1"})],
        "/upstreams/u1", "can not delete this upstream", ["service [s1]"]),
    "service-by-route": (
        [("/services/s1", {"upstream": admin_upstream(DEAD)}),
         ("/routes/1", {"uri": "/a", "service_id": "s1"})],
        "/services/s1", "can not delete this service", ["route [1]"]),
    "plugin-config-by-route": (
        [("/plugin_configs/pc1", {"plugins": {}}),
         ("/routes/1", admin_route("/a", DEAD, plugin_config_id="pc1"))],
        "/plugin_configs/pc1", "can not delete this plugin config", ["route [1]"]),
    "consumer-group-by-consumer": (
        [("/consumer_groups/g1", {"plugins": {}}),
         ("/consumers", {"username": "jack", "group_id": "g1"})],
        "/consumer_groups/g1", "can not delete this consumer group", ["consumer [jack]"]),
}


@pytest.mark.parametrize("case", list(IN_USE))
def test_delete_in_use_refused_unless_forced(admin_gw, case):
    setup, path, prefix, words = IN_USE[case]
    for p, body in setup:
        _ok(admin_gw.admin("PUT", p, body))
    r = admin_gw.admin("DELETE", path)
    expect_error(r, 400, prefix, contains=words)
    assert admin_gw.admin("GET", path).status == 200, "a refused DELETE deleted it"
    r = admin_gw.admin("DELETE", path + "?force=true")
    assert r.status == 200, r
    assert r.json["key"] == "/apisix" + path, r  # (the whole shape: test_admin_api)
    assert admin_gw.admin("GET", path).status == 404


def test_force_false_is_not_force(admin_gw):
    _ok(admin_gw.admin("PUT", "/upstreams/u1", admin_upstream(DEAD)))
    _ok(admin_gw.admin("PUT", "/routes/1", {"uri": "/a", "upstream_id": "u1"}))
    expect_error(admin_gw.admin("DELETE", "/upstreams/u1?force=false"), 400,
                 "can not delete this upstream")
    assert admin_gw.admin("GET", "/upstreams/u1").status == 200


# --------------------------------------------------------------------------- data plane


def test_route_follows_its_upstream_object(admin_gw, make_upstream):
    a, b = make_upstream("a"), make_upstream("b")
    _ok(admin_gw.admin("PUT", "/upstreams/u1", admin_upstream(a)))
    _ok(admin_gw.admin("PUT", "/routes/1", {"uri": "/via-id", "upstream_id": "u1"}))
    assert get(admin_gw.port, "/via-id").json()["upstream"] == "a"
    _ok(admin_gw.admin("PUT", "/upstreams/u1", admin_upstream(b)))
    assert get(admin_gw.port, "/via-id").json()["upstream"] == "b"
    _ok(admin_gw.admin("PATCH", "/upstreams/u1/nodes", {a.addr: 1}))
    assert get(admin_gw.port, "/via-id").json()["upstream"] == "a"


def test_route_inherits_from_its_service(admin_gw, make_upstream):
    a, b, c = make_upstream("a"), make_upstream("b"), make_upstream("c")
    _ok(admin_gw.admin("PUT", "/upstreams/ub", admin_upstream(b)))
    _ok(admin_gw.admin("PUT", "/services/s1", {"upstream": admin_upstream(a)}))
    _ok(admin_gw.admin("PUT", "/routes/1", {"uri": "/svc", "service_id": "s1"}))
    _ok(admin_gw.admin("PUT", "/routes/2", dict(admin_route("/own", c), service_id="s1")))
    assert get(admin_gw.port, "/svc").json()["upstream"] == "a"
    assert get(admin_gw.port, "/own").json()["upstream"] == "c", "route's upstream must win"
    _ok(admin_gw.admin("PUT", "/services/s1", {"upstream_id": "ub"}))
    assert get(admin_gw.port, "/svc").json()["upstream"] == "b"
    assert get(admin_gw.port, "/own").json()["upstream"] == "c"
