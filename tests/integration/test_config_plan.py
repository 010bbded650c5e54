"""`sluice config diff`, `plan` and `apply`: what a file would change in the embedded store or
etcd (read without stopping the gateway), the semantic checks APISIX lacks (shadowed routes,
references to nothing, nodes that do not resolve, hosts without a certificate, plugin confs
naming what does not exist), and apply writing only what changes, refusing a plan with
errors."""

import json

import pytest
import yaml

import tls_kit
from harness import admin_route, get
from test_config_backup import dump
from test_etcd import etcd_config, sluice_cli


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return tls_kit.Certs.make(tmp_path_factory.mktemp("plan-certs"))


def write(tmp_path, name, doc):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False) + "#END\n")
    return path


def up(upstream):
    return {"type": "roundrobin", "nodes": {upstream.addr: 1}}


def lines(p):
    """stdout's change and finding lines."""
    return [l for l in p.stdout.splitlines() if l[:2] in ("+ ", "~ ", "- ")
            or l.startswith(("error: ", "warning: "))]


def test_diff_reads_a_running_gateways_store_and_changes_nothing(make_gateway, upstream,
                                                                 tmp_path):
    gw = make_gateway(admin=True)
    assert gw.admin("PUT", "/upstreams/u", up(upstream)).status == 201
    assert gw.admin("PUT", "/routes/1", {"uri": "/one", "upstream_id": "u"}).status == 201
    assert gw.admin("PUT", "/routes/2", {"uri": "/two", "upstream_id": "u"}).status == 201
    before, rev = dump(gw)
    f = write(tmp_path, "f.yaml", {
        "upstreams": [{"id": "u", **up(upstream)}],                     # the same
        "routes": [{"id": "1", "uri": "/one", "upstream_id": "u", "name": "renamed"},
                   {"id": "3", "uri": "/three", "upstream_id": "u"}]})  # 2 is left out
    p = sluice_cli("config", "diff", "-c", gw.config_path, f)
    assert p.returncode == 0, p
    assert p.stdout.splitlines()[0] == "%s against embedded at revision %d" % (f, rev)
    assert lines(p) == ["~ routes/1: name", "+ routes/3"]
    assert "2 change(s): 1 to add, 1 to change, 0 to delete" in p.stdout

    p = sluice_cli("config", "diff", "-c", gw.config_path, "--replace", f)
    assert lines(p) == ["~ routes/1: name", "+ routes/3", "- routes/2"], p.stdout
    after, rev_after = dump(gw)
    assert (after, rev_after) == (before, rev)
    assert get(gw.port, "/two").status == 200  # served as before


def test_diff_of_the_stores_own_dump_is_empty(make_gateway, upstream, tmp_path):
    gw = make_gateway(admin=True)
    assert gw.admin("PUT", "/routes/1", admin_route("/one", upstream)).status == 201
    assert gw.admin("PUT", "/consumers", {"username": "jack", "plugins": {
        "key-auth": {"key": "jack-key"}}}).status in (200, 201)
    p = sluice_cli("config", "dump", "-c", gw.config_path, "--show-secrets", "-o",
                   tmp_path / "d.yaml")
    assert p.returncode == 0, p
    p = sluice_cli("config", "diff", "-c", gw.config_path, "--replace", tmp_path / "d.yaml")
    assert p.returncode == 0, p
    assert lines(p) == [] and "0 change(s)" in p.stdout, p.stdout


def test_plan_finds_shadowed_routes_and_hosts_without_certificates(make_gateway, upstream,
                                                                  tmp_path, certs):
    gw = make_gateway(admin=True, start=False)
    gw.write_config()
    f = write(tmp_path, "f.yaml", {
        "upstreams": [{"id": "u", **up(upstream)}],
        "ssls": [{"id": "s1", **certs.ssl_body("a_rsa", ["a.test"])},
                 {"id": "s2", **certs.ssl_body("wild", ["*.w.test"])}],
        "routes": [
            {"id": "wide", "uri": "/api", "priority": 10, "upstream_id": "u"},
            {"id": "narrow", "uri": "/api", "methods": ["GET"], "hosts": ["a.test"],
             "upstream_id": "u"},
            {"id": "vars", "uri": "/api", "priority": 20, "vars": [["arg_x", "==", "1"]],
             "upstream_id": "u"},  # only some requests: shadows nothing
            {"id": "twin1", "uri": "/t", "upstream_id": "u"},
            {"id": "twin2", "uri": "/t", "upstream_id": "u"},
            {"id": "off", "uri": "/t", "priority": 9, "status": 0, "upstream_id": "u"},
            {"id": "nocert", "uri": "/n", "host": "b.test", "upstream_id": "u"},
            {"id": "wild", "uri": "/w", "host": "x.w.test", "upstream_id": "u"},
        ]})
    p = sluice_cli("config", "plan", "-c", gw.config_path, f)
    assert p.returncode == 0, p  # warnings only
    warnings = [l for l in lines(p) if l.startswith("warning: ")]
    assert warnings == [
        "warning: routes/narrow is shadowed by routes/wide: it matches every request "
        "routes/narrow matches, with a higher priority (10 > 0), so routes/narrow never serves",
        "warning: routes/twin1 and routes/twin2 match the same requests with the same priority "
        "(0): which one serves them is not defined",
        "warning: routes/nocert: host b.test has no certificate: no ssls object's snis "
        "cover it, so HTTPS requests for it fail the handshake",
    ], p.stdout
    assert "0 error(s), 3 warning(s)" in p.stdout


def test_plan_errors_refuse_apply_and_force_writes(make_gateway, upstream, tmp_path):
    gw = make_gateway(admin=True, start=False)
    gw.write_config()
    base = write(tmp_path, "base.yaml", {"upstreams": [{"id": "u", **up(upstream)}],
                                         "routes": [{"id": "1", "uri": "/one",
                                                     "upstream_id": "u"}]})
    assert sluice_cli("config", "load", "-c", gw.config_path, base).returncode == 0
    bad = write(tmp_path, "bad.yaml", {
        "upstreams": [{"id": "dns", "type": "roundrobin",
                       "nodes": {"no-such-host.invalid:80": 1}}],
        "consumers": [{"username": "jack", "plugins": {
            "key-auth": {"key": "$secret://vault/1/jack/key"}}}],
        "routes": [{"id": "2", "uri": "/two", "upstream_id": "missing"},
                   {"id": "3", "uri": "/three", "upstream_id": "u", "plugins": {
                       "consumer-restriction": {"whitelist": ["jack", "nobody"]}}}]})
    p = sluice_cli("config", "plan", "-c", gw.config_path, bad)
    assert p.returncode == 1, p
    assert lines(p)[-4:] == [
        'error: routes/2: upstream_id "missing" names no upstreams object',
        "error: consumers/jack: $secret://vault/1/jack/key names secrets/vault/1, which does "
        "not exist",
        "warning: upstreams/dns: node no-such-host.invalid does not resolve here "
        "(Name or service not known)",
        'warning: routes/3: consumer-restriction\'s whitelist names consumer_name "nobody", '
        "which does not exist",
    ], p.stdout
    before, rev = dump(gw)
    p = sluice_cli("config", "apply", "-c", gw.config_path, bad)
    assert p.returncode == 1 and "nothing was written" in p.stderr, p
    assert dump(gw) == (before, rev)

    # With the secret there the references hold; --force is needed for the missing upstream.
    good = yaml.safe_load(bad.read_text())
    good["secrets"] = [{"id": "vault/1", "uri": "http://127.0.0.1:8200", "prefix": "kv/apisix",
                        "token": "t"}]
    good["routes"][0]["upstream_id"] = "u"
    good = write(tmp_path, "good.yaml", good)
    p = sluice_cli("config", "plan", "-c", gw.config_path, good)
    assert p.returncode == 0 and "0 error(s), 2 warning(s)" in p.stdout, p.stdout
    p = sluice_cli("config", "apply", "-c", gw.config_path, "--force", bad)
    assert p.returncode == 0, p
    assert "4 resource(s) written to embedded" in p.stderr, p.stderr
    assert dump(gw)[0]["routes"][1]["upstream_id"] == "missing"


def test_apply_writes_only_changes_and_keeps_create_time(make_gateway, upstream, tmp_path):
    gw = make_gateway(admin=True, start=False)
    gw.write_config()
    base = {"upstreams": [{"id": "u", **up(upstream)}],
            "routes": [{"id": "1", "uri": "/one", "upstream_id": "u"},
                       {"id": "2", "uri": "/two", "upstream_id": "u"}]}
    assert sluice_cli("config", "load", "-c", gw.config_path,
                      write(tmp_path, "a.yaml", base)).returncode == 0
    gw.start()
    stored, _ = dump(gw)
    created = {r["id"]: r["create_time"] for r in stored["routes"]}
    gw.stop()

    p = sluice_cli("config", "apply", "-c", gw.config_path, write(tmp_path, "same.yaml", base))
    assert p.returncode == 0 and "nothing to change" in p.stderr, p
    base["routes"][1]["uri"] = "/deux"
    base["routes"].append({"id": "3", "uri": "/trois", "upstream_id": "u"})
    p = sluice_cli("config", "apply", "-c", gw.config_path, write(tmp_path, "b.yaml", base))
    assert p.returncode == 0, p
    assert lines(p) == ["~ routes/2: uri", "+ routes/3"], p.stdout
    assert "2 resource(s) written to embedded" in p.stderr, p.stderr
    gw.start()
    after, _ = dump(gw)
    routes = {r["id"]: r for r in after["routes"]}
    assert routes["2"]["uri"] == "/deux"
    assert routes["2"]["create_time"] == created["2"]
    assert routes["1"]["update_time"] == [r for r in stored["routes"] if r["id"] == "1"][0][
        "update_time"]  # not written again
    assert get(gw.port, "/deux").status == 200 and get(gw.port, "/trois").status == 200


def test_apply_to_a_running_gateways_store_is_refused(make_gateway, upstream, tmp_path):
    gw = make_gateway(admin=True)
    f = write(tmp_path, "f.yaml", {"routes": [{"id": "1", "uri": "/one", "upstream": up(upstream)}]})
    p = sluice_cli("config", "apply", "-c", gw.config_path, f)
    assert p.returncode == 1 and "stop it first" in p.stderr, p
    assert get(gw.port, "/one").status == 404


def test_diff_and_apply_against_etcd(etcd, make_gateway, upstream, tmp_path):
    gw = make_gateway(admin=True, config=etcd_config(etcd.urls, prefix="/plan"), start=False)
    gw.write_config()
    etcd.put("/plan/routes/old", json.dumps({"id": "old", "uri": "/old", "upstream": up(upstream)}))
    f = write(tmp_path, "f.yaml", {"routes": [{"id": "new", "uri": "/new",
                                               "upstream": up(upstream)}]})
    p = sluice_cli("config", "diff", "-c", gw.config_path, "--replace", f)
    assert p.returncode == 0, p
    assert p.stdout.splitlines()[0] == "%s against etcd" % f
    assert lines(p) == ["+ routes/new", "- routes/old"]
    p = sluice_cli("config", "apply", "-c", gw.config_path, "--replace", f)
    assert p.returncode == 0, p
    assert etcd.get_kv("/plan/routes/old") is None
    assert json.loads(etcd.get_kv("/plan/routes/new")["value"])["uri"] == "/new"
