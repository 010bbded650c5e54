"""Issue 21, an APISIX user's first hour: starting the gateway. An apisix.yaml written as
APISIX's stand-alone docs show it (items without `id`), what the log says at a first start
with a broken file, warnings that name only kinds that are really not served, a config.yaml
that sets deployment.etcd without naming a provider, and the lines that say the gateway is up.
"""

import os
import re

from harness import admin_route, free_port, get, wait_until


def _start_with_text(make_gateway, text, check_exit=True, wait=True, **kw):
    """A standalone gateway serving exactly `text` as apisix.yaml (no probe route)."""
    gw = make_gateway(start=False, probe=False, check_exit=check_exit, **kw)
    gw.write_config()
    gw.write_apisix_text(text)
    gw.start(write=False, wait=wait)
    return gw


def _startup_lines(gw):
    """The log lines that announce the gateway, without their timestamp and pid. They follow
    the first accepted connection closely (the sockets listen before the workers run): wait
    for the last of them."""
    gw.wait_for_log(r"config provider: ", timeout=5)
    out = []
    for ln in gw.log_text().splitlines():
        m = re.match(r"^\S+ \S+ \[(\w+)\] \d+: (.*)$", ln)
        if m and (m.group(2).startswith("listening on ")
                  or m.group(2).startswith("config provider: ")):
            out.append((m.group(1), m.group(2)))
    return out


# --------------------------------------------------------------------------- item 1


def test_standalone_items_without_id_are_served(make_gateway, upstream):
    """APISIX's stand-alone docs write routes without `id`; APISIX names them by position
    (`routes#1`, core/config_yaml.lua) and serves them."""
    text = (
        "routes:\n"
        "  -\n"
        "    uri: /hello\n"
        "    upstream_id: 1\n"
        "  -\n"
        "    uri: /inline\n"
        "    upstream:\n"
        "      type: roundrobin\n"
        "      nodes:\n"
        "        \"%s\": 1\n"
        "upstreams:\n"
        "  -\n"
        "    id: 1\n"
        "    nodes:\n"
        "      \"%s\": 1\n"
        "    type: roundrobin\n"
        "#END\n" % (upstream.addr, upstream.addr))
    gw = _start_with_text(make_gateway, text)
    assert wait_until(lambda: get(gw.port, "/hello").status == 200, timeout=5), \
        gw.log_tail()
    r = get(gw.port, "/inline")
    assert r.status == 200 and r.json()["path"] == "/inline", r
    assert "missing id" not in gw.log_text()


def test_positional_ids_stay_apart_from_given_ones(make_gateway, upstream):
    """Two id-less routes and one with an id all serve; a later edit that drops the first
    route renumbers the rest, as APISIX does, and still serves them."""
    def item(uri, rid=None):
        head = "  - id: %s\n    uri: %s\n" % (rid, uri) if rid else "  - uri: %s\n" % uri
        return head + ("    upstream:\n      type: roundrobin\n      nodes:\n"
                       "        \"%s\": 1\n" % upstream.addr)
    gw = _start_with_text(make_gateway, "routes:\n" + item("/p1") + item("/p2")
                          + item("/p3", rid="given") + "#END\n")
    for path in ("/p1", "/p2", "/p3"):
        assert get(gw.port, path).status == 200, path
    gw.write_apisix_text("routes:\n" + item("/p2") + "#END\n")
    assert wait_until(lambda: get(gw.port, "/p1").status == 404, timeout=5), gw.log_tail()
    assert get(gw.port, "/p2").status == 200


def test_first_start_with_a_broken_file_says_nothing_is_served(make_gateway):
    gw = _start_with_text(make_gateway, "routes:\n  - id: 1\n    uri: 5\n#END\n",
                          check_exit=False, wait=False)
    gw.wait_exit(10)
    assert gw.exit_code not in (0, None)
    log = gw.log_text()
    assert "still serving the previous configuration" not in log, log
    rejected = [ln for ln in log.splitlines() if "rejected" in ln]
    assert len(rejected) == 1, log
    assert "nothing is served" in rejected[0] and 'property "uri"' in rejected[0], log


# --------------------------------------------------------------------------- item 2


def test_served_kinds_are_not_called_unserved(make_gateway, upstream):
    """global_rules and plugin_configs are served: no warning says otherwise. A kind that is
    not served (protos) is named once, with the file's name in front once."""
    text = (
        "routes:\n"
        "  - id: r1\n"
        "    uri: /g\n"
        "    plugin_config_id: pc1\n"
        "    upstream:\n"
        "      nodes:\n"
        "        \"%s\": 1\n"
        "plugin_configs:\n"
        "  - id: pc1\n"
        "    plugins:\n"
        "      proxy-rewrite:\n"
        "        headers:\n"
        "          set:\n"
        "            X-From-Pc: pc1\n"
        "global_rules:\n"
        "  - id: g1\n"
        "    plugins:\n"
        "      response-rewrite:\n"
        "        headers:\n"
        "          set:\n"
        "            X-Global: g1\n"
        "protos:\n"
        "  - id: p1\n"
        "    content: syntax = \"proto3\";\n"
        "#END\n" % upstream.addr)
    gw = _start_with_text(make_gateway, text, log_level="warn")
    r = get(gw.port, "/g")
    assert r.status == 200, r
    sent = {k.lower(): v for k, v in r.json()["headers"]}
    assert sent.get("x-from-pc") == "pc1", r.body       # the plugin_config is served
    assert r.header("x-global") == "g1", r.headers      # the global rule is served
    log = gw.log_text()
    not_served = [ln for ln in log.splitlines() if "not served" in ln]
    assert not any("global_rules" in ln or "plugin_configs" in ln for ln in not_served), log
    assert len(not_served) == 1 and "protos (1 items)" in not_served[0], log
    assert "%s: protos" % gw.apisix_path in not_served[0], not_served
    assert "apisix.yaml: apisix.yaml" not in log and \
        not_served[0].count("apisix.yaml") == 1, not_served


# --------------------------------------------------------------------------- item 3


def test_etcd_settings_without_a_provider_use_etcd(etcd, make_gateway, upstream):
    """A typical APISIX 3.x config.yaml: deployment.etcd given, no config_provider (APISIX's
    default is etcd). The routes in etcd serve; the log names etcd as the provider."""
    gw = make_gateway(admin=True, start=False)
    cfg = gw.config_dict()
    del cfg["deployment"]["role_traditional"]
    cfg["deployment"]["etcd"] = {"host": list(etcd.urls), "prefix": "/apisix", "timeout": 3}
    gw.write_config(cfg)
    etcd.put("/apisix/routes/1", admin_route("/from-etcd", upstream))
    gw.start(write=False)
    assert wait_until(lambda: get(gw.port, "/from-etcd").status == 200, timeout=5), \
        gw.log_tail()
    assert not os.path.exists(os.path.join(gw.data_dir, "sluice.db")), \
        "the embedded store was opened"
    lines = [t for _, t in _startup_lines(gw) if t.startswith("config provider: ")]
    assert lines == ["config provider: etcd (%s, prefix /apisix), 1 route loaded"
                     % etcd.urls[0]], gw.log_tail()


# --------------------------------------------------------------------------- item 4


def test_log_says_where_it_listens_and_what_it_serves(make_gateway, upstream):
    """At the default level (warn), once per start and not once per worker: each listener
    and the configuration source with its route count."""
    gw = make_gateway(admin=True, workers=2, log_level="warn")
    prom = gw.prometheus_port
    want = [
        ("notice", "listening on 0.0.0.0:%d (http)" % gw.port),
        ("notice", "listening on 127.0.0.1:%d (https)" % gw.https_port),
        ("notice", "listening on 127.0.0.1:%d (admin)" % gw.admin_port),
        ("notice", "listening on 127.0.0.1:%d (prometheus)" % prom),
        ("notice", "config provider: embedded (sqlite %s/sluice.db), 0 routes loaded"
         % gw.data_dir),
    ]
    assert _startup_lines(gw) == want, gw.log_text()
    for i in range(3):
        r = gw.admin("PUT", "/routes/%d" % i, admin_route("/r%d" % i, upstream))
        assert r.status in (200, 201), r
    before = gw.log_size()
    gw.restart()
    gw.wait_for_log(r"config provider: ", timeout=5, start=before)
    lines = [ln for ln in gw.log_text()[before:].splitlines() if "config provider:" in ln]
    assert len(lines) == 1 and lines[0].endswith(
        "config provider: embedded (sqlite %s/sluice.db), 3 routes loaded" % gw.data_dir), lines


def test_standalone_log_names_the_file_and_its_routes(make_gateway, upstream):
    text = ("routes:\n  - uri: /a\n    upstream:\n      nodes:\n        \"%s\": 1\n#END\n"
            % upstream.addr)
    gw = _start_with_text(make_gateway, text, log_level="warn",
                          listen=[{"ip": "127.0.0.1", "port": free_port()}])
    assert _startup_lines(gw) == [
        ("notice", "listening on 127.0.0.1:%d (http)" % gw.port),
        ("notice", "listening on 127.0.0.1:%d (https)" % gw.https_port),
        ("notice", "listening on 127.0.0.1:%d (prometheus)" % gw.prometheus_port),
        ("notice", "config provider: yaml (%s), 1 route loaded" % gw.apisix_path),
    ], gw.log_text()


def test_a_stricter_level_hides_the_startup_lines(make_gateway, upstream):
    gw = make_gateway(admin=True, log_level="error")
    assert _startup_lines(gw) == [], gw.log_text()
