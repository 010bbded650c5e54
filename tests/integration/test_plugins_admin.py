"""Plugins through the Admin API: the read-only plugin endpoints (list, schema), the enabled
set from config.yaml `plugins:`, `PUT /apisix/admin/plugins/reload`, unknown plugins and the
validation of plugin confs on every kind that holds plugins; reload under wrk load."""

import time

import pytest

from harness import (NOT_FOUND_BODY, admin_route, admin_upstream, expect_error, get,
                     start_wrk)

# Highest priority first (23000 ... 500).
BUILTINS = ["real-ip", "request-id", "zipkin", "opentelemetry", "fault-injection", "cors", "ip-restriction",
            "ua-restriction", "referer-restriction", "request-validation", "multi-auth",
            "hmac-auth", "basic-auth", "jwt-auth", "key-auth", "consumer-restriction",
            "proxy-cache", "proxy-mirror", "proxy-rewrite", "api-breaker", "limit-conn",
            "limit-count", "limit-req", "brotli", "gzip", "traffic-split", "redirect",
            "response-rewrite", "public-api", "prometheus", "http-logger", "tcp-logger",
            "syslog", "udp-logger", "file-logger"]
LC_ERR = "failed to check the configuration of plugin limit-count err: "
PROM_ERR = "failed to check the configuration of plugin prometheus err: "
LC = {"count": 2, "time_window": 60}


def _lc(**kw):
    c = dict(LC)
    c.update(kw)
    return c


# --------------------------------------------------------------------------- read-only endpoints


def test_plugins_list_is_the_builtins_in_priority_order(admin_gw):
    r = admin_gw.admin("GET", "/plugins/list")
    assert r.status == 200, r
    assert r.json == BUILTINS, r
    assert r.header("content-type").startswith("application/json"), r.headers
    # a viewer may read it; no key may not
    assert admin_gw.admin("GET", "/plugins/list", key=admin_gw.viewer_key).json == BUILTINS
    assert admin_gw.admin("GET", "/plugins/list", key=None).status == 401
    # 2.x-era command: the Admin API on the proxy port
    r = admin_gw.admin("GET", "/plugins/list", port=admin_gw.port)
    assert r.status == 200 and r.json == BUILTINS, r


def test_plugin_schema_limit_count(admin_gw):
    r = admin_gw.admin("GET", "/plugins/limit-count")
    assert r.status == 200, r
    schema = r.json
    assert isinstance(schema, dict) and isinstance(schema.get("properties"), dict), \
        "expected a JSON schema object with properties, got %r" % (r,)
    assert isinstance(schema.get("required"), list), "schema has no required list: %r" % r
    assert {"count", "time_window"} <= set(schema["required"]), schema["required"]
    for prop in ("count", "time_window", "key", "key_type", "rejected_code", "rejected_msg",
                 "policy", "allow_degradation", "show_limit_quota_header", "group"):
        assert prop in schema["properties"], "limit-count schema lacks %r: %r" % (prop, schema)


def test_plugin_schema_prometheus(admin_gw):
    r = admin_gw.admin("GET", "/plugins/prometheus")
    assert r.status == 200, r
    assert isinstance(r.json, dict) and isinstance(r.json.get("properties"), dict), \
        "expected a JSON schema object with properties, got %r" % (r,)


@pytest.mark.parametrize("name", ["no-such-plugin", "openid-connect", "limit-counts"])
def test_plugin_schema_unknown_is_404(admin_gw, name):
    r = admin_gw.admin("GET", "/plugins/" + name)
    expect_error(r, 404)


# --------------------------------------------------------------------------- unknown plugins


@pytest.mark.parametrize("kind", ["routes", "services", "plugin_configs", "global_rules"])
def test_unknown_plugin_refused_on_every_kind(admin_gw, upstream, kind):
    plugins = {"limit-count": LC, "no-such-plugin": {}}
    body = {"routes": admin_route("/u", upstream, plugins=plugins),
            "services": {"plugins": plugins, "upstream": admin_upstream(upstream)},
            "plugin_configs": {"plugins": plugins},
            "global_rules": {"plugins": plugins}}[kind]
    expect_error(admin_gw.admin("PUT", "/%s/x1" % kind, body), 400,
                 "unknown plugin [no-such-plugin]")
    assert admin_gw.admin("GET", "/%s/x1" % kind).status == 404, "the refused object was stored"


@pytest.mark.parametrize("enabled,refused", [
    (["limit-count"], "prometheus"),
    (["prometheus"], "limit-count"),
    ([], "limit-count"),
])
def test_config_plugins_is_the_enabled_set(make_gateway, upstream, enabled, refused):
    gw = make_gateway(admin=True, config={"plugins": enabled})
    r = gw.admin("GET", "/plugins/list")
    assert r.status == 200 and r.json == enabled, r
    expect_error(gw.admin("PUT", "/routes/1", admin_route("/a", upstream,
                                                          plugins={refused: {} if refused ==
                                                                   "prometheus" else LC})),
                 400, "unknown plugin [%s]" % refused)
    for name in enabled:
        conf = LC if name == "limit-count" else {}
        r = gw.admin("PUT", "/routes/r-" + name, admin_route("/" + name, upstream,
                                                             plugins={name: conf}))
        assert r.status == 201, r
        assert get(gw.port, "/" + name).status == 200


# --------------------------------------------------------------------------- validation


BAD_LIMIT_COUNT = [
    ({"time_window": 60}, LC_ERR + 'property "count" is required'),
    ({"count": 0, "time_window": 60},
     LC_ERR + 'property "count" validation failed: expected 0 to be greater than 0'),
    ({"count": -1, "time_window": 60},
     LC_ERR + 'property "count" validation failed: expected -1 to be greater than 0'),
    ({"count": 2}, LC_ERR + 'property "time_window" is required'),
    ({"count": 2, "time_window": 0},
     LC_ERR + 'property "time_window" validation failed: expected 0 to be greater than 0'),
    ({"count": "two", "time_window": 60}, LC_ERR),
    ({"count": 2, "time_window": 1.5}, LC_ERR),
    (_lc(key_type="header"), LC_ERR),
    (_lc(rejected_code=99), LC_ERR),
    (_lc(rejected_code=600), LC_ERR),
    (_lc(rejected_msg=""), LC_ERR),
    (_lc(policy="memcached"), LC_ERR),
    (_lc(policy="redis"), LC_ERR),  # no redis_host
    (_lc(policy="redis-cluster"), LC_ERR),  # no redis_cluster_nodes
    (_lc(policy="redis-cluster", redis_cluster_nodes=["127.0.0.1:7000"]), LC_ERR),  # no name
    (_lc(policy="redis-cluster", redis_cluster_nodes=[], redis_cluster_name="c"), LC_ERR),
    (_lc(show_limit_quota_header="yes"), LC_ERR),
    (_lc(allow_degradation="no"), LC_ERR),
    (_lc(policy="redis", redis_host="127.0.0.1", redis_port=0), LC_ERR),
    (_lc(policy="redis", redis_host="127.0.0.1", redis_timeout=0), LC_ERR),
]


@pytest.mark.parametrize("conf,prefix", BAD_LIMIT_COUNT,
                         ids=["%d" % i for i in range(len(BAD_LIMIT_COUNT))])
def test_bad_limit_count_conf_is_400(admin_gw, upstream, conf, prefix):
    r = admin_gw.admin("PUT", "/routes/bad", admin_route("/bad", upstream,
                                                         plugins={"limit-count": conf}))
    expect_error(r, 400, prefix)
    assert admin_gw.admin("GET", "/routes/bad").status == 404


def test_good_limit_count_confs_are_accepted(admin_gw, upstream):
    good = [
        LC,
        _lc(key="http_x_user", key_type="var", rejected_code=429, rejected_msg="slow"),
        _lc(key="$remote_addr $http_x_user", key_type="var_combination"),
        _lc(key="anything", key_type="constant", show_limit_quota_header=False),
        _lc(policy="redis", redis_host="127.0.0.1", redis_port=6379, redis_password="pw",
            redis_database=1, redis_timeout=1000, allow_degradation=True),
        _lc(policy="redis-cluster", redis_cluster_nodes=["127.0.0.1:7000", "127.0.0.1:7001"],
            redis_cluster_name="c1"),
        _lc(group="g1"),
        {"count": 2000000000000, "time_window": 60, "rejected_code": 503,
         "key": "remote_addr"},
    ]
    for i, conf in enumerate(good):
        r = admin_gw.admin("PUT", "/routes/g%d" % i,
                           admin_route("/g/%d" % i, upstream, plugins={"limit-count": conf}))
        assert r.status == 201, "conf %r refused: %r" % (conf, r)
        assert r.json["value"]["plugins"]["limit-count"]["count"] == conf["count"], r


def test_bad_prometheus_conf_is_400(admin_gw, upstream):
    r = admin_gw.admin("PUT", "/routes/p", admin_route("/p", upstream,
                                                       plugins={"prometheus":
                                                                {"prefer_name": "yes"}}))
    expect_error(r, 400, PROM_ERR)


@pytest.mark.parametrize("kind", ["services", "plugin_configs", "global_rules"])
def test_plugin_conf_validated_on_every_kind(admin_gw, upstream, kind):
    plugins = {"limit-count": {"time_window": 60}}
    body = {"services": {"plugins": plugins, "upstream": admin_upstream(upstream)},
            "plugin_configs": {"plugins": plugins},
            "global_rules": {"plugins": plugins}}[kind]
    expect_error(admin_gw.admin("PUT", "/%s/k" % kind, body), 400,
                 LC_ERR + 'property "count" is required')
    assert admin_gw.admin("GET", "/%s/k" % kind).status == 404


def test_patch_to_a_bad_conf_is_400_and_changes_nothing(admin_gw, upstream):
    r = admin_gw.admin("PUT", "/routes/1", admin_route("/p", upstream,
                                                       plugins={"limit-count": LC}))
    assert r.status == 201, r
    before = admin_gw.admin("GET", "/routes/1").json["value"]
    expect_error(admin_gw.admin("PATCH", "/routes/1/plugins/limit-count/count", 0), 400,
                 LC_ERR + 'property "count" validation failed: expected 0 to be greater than 0')
    expect_error(admin_gw.admin("PATCH", "/routes/1", {"plugins": {"limit-count": {
        "count": None}}}), 400, LC_ERR + 'property "count" is required')
    expect_error(admin_gw.admin("PATCH", "/routes/1", {"plugins": {"nope": {}}}), 400,
                 "unknown plugin [nope]")
    assert admin_gw.admin("GET", "/routes/1").json["value"] == before
    r = get(admin_gw.port, "/p")
    assert r.status == 200 and r.header("x-ratelimit-limit") == "2", r


# --------------------------------------------------------------------------- reload


def _reload(gw):
    r = gw.admin("PUT", "/plugins/reload")
    assert r.status == 200, r
    assert r.body in (b"done", b"done\n"), r
    return r


def test_reload_answers_done_and_needs_the_admin_role(admin_gw):
    _reload(admin_gw)
    r = admin_gw.admin("PUT", "/plugins/reload", key=admin_gw.viewer_key)
    assert r.status in (401, 403), r
    r = admin_gw.admin("PUT", "/plugins/reload", key=None)
    assert r.status == 401, r


def test_reload_applies_a_new_enabled_set(make_gateway, upstream):
    gw = make_gateway(admin=True, workers=2, config={"plugins": list(BUILTINS)})
    route1 = admin_route("/hello", upstream, plugins={
        "limit-count": {"count": 1000, "time_window": 60}, "prometheus": {}})
    assert gw.admin("PUT", "/routes/1", route1).status == 201
    r = get(gw.port, "/hello")
    assert r.status == 200 and r.header("x-ratelimit-remaining") == "999", r

    cfg = gw.config_dict()
    cfg["plugins"] = ["limit-count"]
    gw.write_config(cfg)
    _reload(gw)
    r = gw.admin("GET", "/plugins/list")
    assert r.json == ["limit-count"], "reload did not apply the new plugins list: %r" % r
    expect_error(gw.admin("PUT", "/routes/2", admin_route("/two", upstream,
                                                          plugins={"prometheus": {}})),
                 400, "unknown plugin [prometheus]")
    expect_error(gw.admin("PUT", "/global_rules/1", {"plugins": {"prometheus": {}}}),
                 400, "unknown plugin [prometheus]")
    # the stored route that still names prometheus serves, with its limit-count
    for _ in range(4):
        r = get(gw.port, "/hello")
        assert r.status == 200, r
        assert r.header("x-ratelimit-limit") == "1000", r
    assert gw.admin("GET", "/routes/1").status == 200  # still stored and readable

    # back to "absent = all built-ins"
    cfg.pop("plugins")
    gw.write_config(cfg)
    _reload(gw)
    assert gw.admin("GET", "/plugins/list").json == BUILTINS
    r = gw.admin("PUT", "/routes/2", admin_route("/two", upstream, plugins={"prometheus": {}}))
    assert r.status == 201, r
    assert get(gw.port, "/two").status == 200


def test_reload_disabling_limit_count_stops_limiting(make_gateway, upstream):
    gw = make_gateway(admin=True, workers=2)
    assert gw.admin("PUT", "/routes/1", admin_route("/l", upstream, plugins={
        "limit-count": {"count": 1, "time_window": 60}})).status == 201
    assert [get(gw.port, "/l").status for _ in range(2)] == [200, 503]
    cfg = gw.config_dict()
    cfg["plugins"] = ["prometheus"]
    gw.write_config(cfg)
    _reload(gw)
    for _ in range(3):
        r = get(gw.port, "/l")
        assert r.status == 200, "a disabled plugin still runs on a stored route: %r" % r
        assert r.header("x-ratelimit-limit") is None, r
    assert get(gw.port, "/nope").body == NOT_FOUND_BODY


# --------------------------------------------------------------------------- under load


@pytest.mark.load
def test_reload_and_route_updates_under_load_fail_nothing(make_gateway, upstream):
    gw = make_gateway(admin=True, workers=2)
    body = {"uri": "/hello",
            "plugins": {"limit-count": {"count": 2000000000000, "time_window": 60,
                                        "rejected_code": 503, "key": "remote_addr"},
                        "prometheus": {}},
            "upstream": {"type": "roundrobin", "nodes": {upstream.addr: 1}}}
    assert gw.admin("PUT", "/routes/1", body).status == 201
    assert get(gw.port, "/hello").status == 200
    wrk = start_wrk(gw.url("/hello"), threads=2, conns=16, duration=120)
    reloads = puts = 0
    try:
        assert upstream.wait_for(lambda u: len(u.requests) > 50, timeout=5), "wrk sent nothing"
        cfg = gw.config_dict()
        with gw.admin_client() as c:
            t_end = time.monotonic() + 4.0
            i = 0
            while time.monotonic() < t_end:
                i += 1
                if i % 3 == 0:
                    gw.write_config(cfg)
                    r = c.request("PUT", "/plugins/reload")
                    assert r.status == 200, r
                    reloads += 1
                b = dict(body, desc="update %d" % i)
                if i % 2:
                    b["plugins"] = dict(body["plugins"],
                                        **{"limit-count": dict(body["plugins"]["limit-count"],
                                                               count=2000000000000 + i)})
                r = c.request("PUT", "/routes/1", b)
                assert r.status == 200, r
                puts += 1
                time.sleep(0.05)
        assert wrk.running(), "wrk ended early"
    finally:
        result = wrk.stop()
    print(result["output"])
    print("%d reloads, %d route PUTs under load" % (reloads, puts))
    assert reloads >= 5 and puts >= 15, (reloads, puts)
    assert result["requests"] > 200, "wrk barely ran: %r" % result
    assert result["non2xx"] == 0, "non-2xx answers during reloads: %s" % result["statuses"]
    errors = {k: result[k] for k in ("connect", "read", "write", "timeout")}
    assert not any(errors.values()), "socket errors during reloads: %r" % errors
