"""Live backup and all-or-nothing restore: `sluice config dump` reads the embedded store while
the gateway runs and writes (one read transaction: the store as of one revision), and
`sluice config load` writes a file in one transaction (SQLite; one etcd Txn)."""

import re
import threading

import yaml

from harness import admin_route, get
from test_etcd import etcd_config, sluice_cli

WRITES = 1000


def dump(gw, *extra):
    p = sluice_cli("config", "dump", "-c", gw.config_path, "--from", "embedded", *extra)
    assert p.returncode == 0, p
    m = re.search(r"from embedded at revision (\d+) written", p.stderr)
    assert m, p.stderr
    return yaml.safe_load(p.stdout) or {}, int(m.group(1))


def route_ids(doc):
    return {r["id"] for r in doc.get("routes") or []}


def test_dump_during_1000_writes_is_the_store_at_one_revision(make_gateway, upstream, tmp_path):
    gw = make_gateway(admin=True, workers=2)
    assert gw.admin("PUT", "/upstreams/u", {"type": "roundrobin",
                                            "nodes": {upstream.addr: 1}}).status == 201
    failures, done = [], threading.Event()

    def write():
        try:
            for i in range(WRITES):
                r = gw.admin("PUT", "/routes/r%04d" % i, {"uri": "/r%d" % i, "upstream_id": "u"})
                if r.status != 201:
                    failures.append((i, r.status))
        finally:
            done.set()

    t = threading.Thread(target=write)
    t.start()
    dumps = []
    try:
        while not done.is_set():
            dumps.append(dump(gw))
    finally:
        t.join()
    assert failures == []
    dumps.append(dump(gw))
    assert len(dumps) >= 3, "the writes ended before a dump overlapped them"
    last_count, last_rev = -1, -1
    for doc, rev in dumps:
        ids = route_ids(doc)
        # Writes go one after another: a consistent state holds r0000..r(k-1), no gap.
        assert ids == {"r%04d" % i for i in range(len(ids))}, sorted(ids)[-5:]
        assert [u["id"] for u in doc["upstreams"]] == ["u"]
        assert len(ids) >= last_count and rev >= last_rev
        last_count, last_rev = len(ids), rev
    assert last_count == WRITES
    mid = [d for d in dumps if 0 < len(route_ids(d[0])) < WRITES]
    print("\n%d dumps during the writes, %d of them mid-way" % (len(dumps), len(mid)))

    # A mid-way dump restores into a new store exactly as it was read.
    doc, _ = mid[len(mid) // 2] if mid else dumps[-1]
    path = tmp_path / "backup.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False) + "#END\n")
    restored = make_gateway(admin=True, start=False)
    restored.write_config()
    p = sluice_cli("config", "load", "-c", restored.config_path, "--to", "embedded", path)
    assert p.returncode == 0, p
    restored.start()
    back, _ = dump(restored)
    assert route_ids(back) == route_ids(doc)
    n = len(route_ids(doc))
    assert get(restored.port, "/r%d" % (n - 1)).status == 200
    assert get(restored.port, "/r%d" % n).status == 404


def test_load_into_a_running_gateways_store_is_refused(make_gateway, upstream, tmp_path):
    gw = make_gateway(admin=True)
    assert gw.admin("PUT", "/routes/1", admin_route("/one", upstream)).status == 201
    path = tmp_path / "f.yaml"
    path.write_text(yaml.safe_dump({"routes": [{"id": "2", "uri": "/two", "upstream": {
        "type": "roundrobin", "nodes": {upstream.addr: 1}}}]}) + "#END\n")
    p = sluice_cli("config", "load", "-c", gw.config_path, "--to", "embedded", path)
    assert p.returncode == 1, p
    assert "stop it first" in p.stderr, p.stderr
    doc, _ = dump(gw)
    assert route_ids(doc) == {"1"}


def routes_file(tmp_path, name, n, upstream):
    path = tmp_path / name
    path.write_text(yaml.safe_dump({"routes": [
        {"id": "t%d" % i, "uri": "/t%d" % i,
         "upstream": {"type": "roundrobin", "nodes": {upstream.addr: 1}}}
        for i in range(n)]}) + "#END\n")
    return path


def test_etcd_load_is_one_txn_or_nothing(etcd, make_gateway, upstream, tmp_path):
    gw = make_gateway(admin=True, config=etcd_config(etcd.urls), start=False)
    gw.write_config()
    etcd.put("/apisix/routes/stale", '{"id":"stale","uri":"/stale","upstream":{"type":'
             '"roundrobin","nodes":{"%s":1}}}' % upstream.addr)
    p = sluice_cli("config", "load", "-c", gw.config_path, "--to", "etcd", "--replace",
                   routes_file(tmp_path, "ok.yaml", 100, upstream))
    assert p.returncode == 0, p
    kvs = [etcd.get_kv("/apisix/routes/t%d" % i) for i in range(100)]
    assert all(kvs), "a route is missing"
    assert len({kv["mod_revision"] for kv in kvs}) == 1, "the load took several revisions"
    assert etcd.get_kv("/apisix/routes/stale") is None
    assert etcd.revision() == kvs[0]["mod_revision"]  # the delete was in the same Txn

    # Over etcd's --max-txn-ops (128 by default): etcd refuses the Txn whole.
    rev = etcd.revision()
    p = sluice_cli("config", "load", "-c", gw.config_path, "--to", "etcd",
                   routes_file(tmp_path, "big.yaml", 200, upstream))
    assert p.returncode == 1, p
    assert "too many operations" in p.stderr and "nothing was written" in p.stderr, p.stderr
    assert etcd.revision() == rev
    assert etcd.get_kv("/apisix/routes/t150") is None
