"""`sluice config rollback REVISION`: the embedded store back to what it held at a revision,
bit for bit (the stored text of every object, times and sealed secrets included), from the
store's history; itself a change a later rollback undoes."""

import re

from harness import admin_route, get
from test_config_backup import dump
from test_etcd import etcd_config, sluice_cli


def stored(gw):
    """The store's objects exactly as stored (sealed secrets as ciphertext), and its revision."""
    return dump(gw)


def test_rollback_restores_a_revision_bit_for_bit(make_gateway, upstream):
    gw = make_gateway(admin=True)
    assert gw.admin("PUT", "/upstreams/u", {"type": "roundrobin",
                                            "nodes": {upstream.addr: 1}}).status == 201
    assert gw.admin("PUT", "/routes/1", {"uri": "/one", "upstream_id": "u"}).status == 201
    assert gw.admin("PUT", "/routes/2", {"uri": "/two", "upstream_id": "u"}).status == 201
    assert gw.admin("PUT", "/consumers", {"username": "jack", "plugins": {
        "key-auth": {"key": "jack-key"}}}).status in (200, 201)
    then, rev = stored(gw)

    assert gw.admin("PUT", "/routes/1", {"uri": "/uno", "upstream_id": "u"}).status == 200
    assert gw.admin("DELETE", "/routes/2").status == 200
    assert gw.admin("PUT", "/routes/3", admin_route("/three", upstream)).status == 201
    assert gw.admin("PATCH", "/upstreams/u", {"retries": 2}).status == 200
    assert gw.admin("PUT", "/consumers", {"username": "jack", "plugins": {
        "key-auth": {"key": "other-key"}}}).status == 200
    changed, rev_changed = stored(gw)
    assert changed != then
    gw.stop()

    p = sluice_cli("config", "rollback", "-c", gw.config_path, "--dry-run", rev)
    assert p.returncode == 0, p
    assert sorted(p.stdout.splitlines()[:-1]) == sorted([
        "~ /apisix/routes/1", "+ /apisix/routes/2", "- /apisix/routes/3",
        "~ /apisix/upstreams/u", "~ /apisix/consumers/jack"]), p.stdout
    assert p.stdout.splitlines()[-1] == \
        "5 change(s) to go back from revision %d to revision %d" % (rev_changed, rev)

    p = sluice_cli("config", "rollback", "-c", gw.config_path, rev)
    assert p.returncode == 0, p
    m = re.search(r"held at revision %d, as revision (\d+)" % rev, p.stderr)
    assert m, p.stderr
    gw.start()
    back, rev_back = stored(gw)
    assert back == then  # every object's stored text, times and ciphertext included
    assert rev_back == int(m.group(1)) == rev_changed + 5
    assert get(gw.port, "/two").status == 200 and get(gw.port, "/one").status == 200
    assert get(gw.port, "/three").status == 404
    r = get(gw.port, "/one", headers={"apikey": "jack-key"})
    assert r.status == 200

    # The rollback is itself a change: rolled back, the later state is there again.
    gw.stop()
    p = sluice_cli("config", "rollback", "-c", gw.config_path, rev_changed)
    assert p.returncode == 0, p
    gw.start()
    assert stored(gw)[0] == changed


def test_rollback_refusals(make_gateway, upstream):
    gw = make_gateway(admin=True)
    assert gw.admin("PUT", "/routes/1", admin_route("/one", upstream)).status == 201
    p = sluice_cli("config", "rollback", "-c", gw.config_path, 0)
    assert p.returncode == 1 and "stop it first" in p.stderr, p  # the gateway holds the store
    _, rev = stored(gw)
    gw.stop()
    p = sluice_cli("config", "rollback", "-c", gw.config_path, rev + 1)
    assert p.returncode == 1, p
    assert "revision %d is not one of this store's (it is at revision %d)" % (rev + 1, rev) \
        in p.stderr, p.stderr
    p = sluice_cli("config", "rollback", "-c", gw.config_path, "yesterday")
    assert p.returncode == 2 and "expected a revision" in p.stderr, p
    p = sluice_cli("config", "rollback", "-c", gw.config_path, rev)
    assert p.returncode == 0 and "0 change(s)" in p.stdout, p


def test_rollback_is_for_the_embedded_store(etcd, make_gateway):
    gw = make_gateway(admin=True, config=etcd_config(etcd.urls), start=False)
    gw.write_config()
    p = sluice_cli("config", "rollback", "-c", gw.config_path, 1)
    assert p.returncode == 2 and "etcdctl get --rev" in p.stderr, p
