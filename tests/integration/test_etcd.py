"""The etcd configuration provider (deployment.role_traditional.config_provider: etcd)
against a real etcd 3.4 cluster (etcd_cluster.EtcdCluster, fixtures `etcd` and `etcd3`).

The test_fixture_* tests need only etcd; every other test runs build/sluice on etcd.

Behaviour this file pins down where COMPAT.md does not say (docs/etcd.md, where it says
something, wins and is followed here; the rest are this file's choices: align or argue):

 1. Keys and values are APISIX's: `<prefix>/<kind>/<id>` holding exactly the object the
    Admin API answered as "value" (with "id", create_time and update_time). GET one answers
    createdIndex/modifiedIndex = the key's etcd create_revision/mod_revision.
 2. A change in etcd serves on every node within 1 s (target 100 ms; the time is printed);
    the node that wrote through its Admin API serves it before the 2xx leaves (docs/etcd.md).
 3. Objects written straight into etcd are not reference-checked: a route naming a missing
    upstream_id serves as soon as that upstream appears; an upstream change moves the routes
    that reference it.
 4. `init_dir` placeholders (`<prefix>/routes/`) are skipped silently: no error line, not
    listed by the Admin API.
 5. The prefix is a directory: a node on "/gw2" sees `/gw2/...` only, not `/apisix/...`
    and not `/gw2x/...`; its gen_id is `/gw2/gen_id`; its Admin API answers the full etcd
    key ("key":"/gw2/routes/e"), as APISIX's core.etcd does.
 6. POST ids: "%020d" of the mod_revision of `<prefix>/gen_id` after the POST bumped it
    (APISIX's core.etcd.push); ids grow strictly.
 7. PATCH is a txn comparing mod_revision (docs/etcd.md): of concurrent PATCHes through two
    nodes, every 200 is in etcd (none lost). A PATCH that lost the compare-and-swap is merged
    again onto the newer value by the node (docs/etcd.md), so all of them answer 200, as on
    the embedded store (test_admin_patch.py); a 409 would be
    {"error_msg":"conflict: the object changed while this request was handled"} and would
    have changed nothing.
 8. `?ttl=N` puts the key with a lease of N s; the object is gone from etcd and from every
    node within N + 3 s.
 9. An invalid value (not JSON, or failing the schema) is logged on a line that names the
    full key and says what is wrong (error/invalid/failed/...), and skipped: the last valid
    version keeps serving, other keys keep updating, and a later valid value is taken.
10. etcd unreachable: the last config keeps serving (no failed request), the gauge
    `apisix_etcd_reachable` drops to 0 within 10 s, Admin API writes answer 503 with a JSON
    error_msg within etcd.timeout + 3 s that names no etcd address; back to 1 within 10 s of
    etcd returning, with the watch resumed.
11. A watch answered with compact_revision, or an etcd whose revision went backwards or whose
    cluster_id changed (wiped/restored), triggers a full re-read that is swapped in as one
    unit: routes that did not change never stop serving, two routes changed together are
    never seen half-updated, deleted routes 404, and later changes are followed again. A
    key that turned invalid meanwhile keeps its previous version across the re-read.
12. Unlike APISIX, a node starts without etcd: from the snapshot it persisted in its
    data_dir (validated; a corrupt one is refused with a log line naming the snapshot and the
    node starts empty), or empty (404 everywhere, Admin API 503) when it has none; it takes
    etcd's config as soon as etcd answers.
13. `sluice config dump` ends with a `#END` line; kinds with no items may be left out or be
    empty arrays. `sluice config load` exits 1 naming the invalid item's id and writes nothing
    (etcd's revision is unchanged); load keeps create_time/update_time; --replace makes
    every kind FILE lists hold exactly FILE's resources of that kind (`services: []` empties
    services); kinds FILE does not mention are left alone (docs/etcd.md).
"""

import itertools
import json
import os
import re
import subprocess
import threading
import time

import pytest
import yaml

import harness
from harness import (admin_route, admin_upstream, get, parse_samples, scrape, start_wrk,
                     upstream_nodes, wait_until)

ETCD_TIMEOUT = 3          # deployment.etcd.timeout given to every gateway
CONFLICT = {"error_msg": "conflict: the object changed while this request was handled"}
PROPAGATION_LIMIT = 1.0   # seconds for a change to serve on every node
CONVERGE = 15.0           # seconds for a resync (reconnect, compaction, wipe)
ERROR_WORDS = (r"(?:error|invalid|fail|bad|cannot|can't|unable|pars|reject|refus|skip|ignor|"
               r"malformed|corrupt|checksum)")


# --------------------------------------------------------------------------- helpers


def etcd_config(urls, prefix="/apisix", timeout=ETCD_TIMEOUT):
    return {"deployment": {"role_traditional": {"config_provider": "etcd"},
                           "etcd": {"host": list(urls), "prefix": prefix,
                                    "timeout": timeout}}}


def etcd_gateway(make_gateway, urls, prefix="/apisix", workers=1, **kw):
    """A traditional node with the Admin API on etcd (urls: a cluster's client URLs)."""
    return make_gateway(admin=True, workers=workers, config=etcd_config(urls, prefix), **kw)


def fetch(gw, path):
    """GET on a fresh connection; None when the request fails on the wire."""
    try:
        return get(gw.port, path, timeout=3)
    except (OSError, EOFError, ValueError):
        return None


def upstream_name(resp):
    """The FakeUpstream that answered (its echo body names it), or None."""
    if resp is None or resp.status != 200:
        return None
    try:
        return json.loads(resp.body).get("upstream")
    except ValueError:
        return None


def serving(gw, path, status=200, up=None):
    r = fetch(gw, path)
    if r is None or r.status != status:
        return False
    return up is None or upstream_name(r) == up.name


def wait_serving(gws, path, status=200, up=None, timeout=5.0, what=""):
    """Polls every gateway until `path` answers `status` (from upstream `up` when given) on
    all of them; returns the seconds it took. Fails with the last answers otherwise."""
    gws = gws if isinstance(gws, (list, tuple)) else [gws]
    t0 = time.monotonic()
    pending = list(gws)
    while pending:
        pending = [g for g in pending if not serving(g, path, status, up)]
        if not pending:
            break
        if time.monotonic() - t0 > timeout:
            last = [(g.port, fetch(g, path)) for g in pending]
            raise AssertionError("%s%s did not answer %d%s within %.1fs on %s: %r" % (
                what + ": " if what else "", path, status,
                " from %s" % up.name if up else "", timeout, [p for p, _ in last], last))
        time.sleep(0.01)
    return time.monotonic() - t0


def assert_status(gws, path, status, up=None, what=""):
    gws = gws if isinstance(gws, (list, tuple)) else [gws]
    for g in gws:
        r = fetch(g, path)
        assert r is not None and r.status == status, \
            "%s%s on port %d: expected %d, got %r" % (what + ": " if what else "", path, g.port,
                                                       status, r)
        if up is not None:
            assert upstream_name(r) == up.name, \
                "%s%s served by %r, expected %s" % (what + ": " if what else "", path,
                                                   upstream_name(r), up.name)


def eroute(rid, uri, *ups, **extra):
    """A route as APISIX stores it in etcd (the id inside the value too)."""
    r = {"id": rid, "uri": uri}
    if ups:
        r["upstream"] = {"type": "roundrobin", "nodes": upstream_nodes(*ups)}
    r.update(extra)
    return r


_barriers = itertools.count(1)


def barrier(cluster, gws, up, prefix="/apisix", endpoints=None):
    """Writes a new route into etcd and waits until every gateway serves it: etcd delivers
    events in revision order, so every earlier write has been applied by then."""
    n = next(_barriers)
    rid = "zz-barrier-%d" % n
    cluster.put("%s/routes/%s" % (prefix, rid), eroute(rid, "/__barrier/%d" % n, up),
                endpoints=endpoints)
    wait_serving(gws, "/__barrier/%d" % n, timeout=CONVERGE, what="barrier route")


def ok(res, *statuses):
    statuses = statuses or (200, 201)
    assert res.status in statuses, res
    return res


def admin_retry_503(gw, method, path, body=None, timeout=5.0):
    """An Admin API request repeated while it answers 503 (etcd electing a leader)."""
    deadline = time.monotonic() + timeout
    while True:
        r = gw.admin(method, path, body, timeout=ETCD_TIMEOUT + 10)
        if r.status != 503 or time.monotonic() > deadline:
            return r
        time.sleep(0.1)


def etcd_reachable(gw):
    """The value of apisix_etcd_reachable in the gateway's export (None: absent/failed)."""
    try:
        r = scrape(gw, timeout=3)
    except (OSError, EOFError, ValueError):
        return None
    if r.status != 200:
        return None
    for name, _, value in parse_samples(r.body.decode(errors="replace")):
        if name == "apisix_etcd_reachable":
            return value
    return None


def wait_reachable(gws, value, timeout):
    t0 = time.monotonic()
    for g in gws:
        got = wait_until(lambda: etcd_reachable(g) == value,
                         timeout=max(0.1, timeout - (time.monotonic() - t0)), interval=0.1)
        assert got, "apisix_etcd_reachable not %g within %.0fs on port %d (now %r)" % (
            value, timeout, g.port, etcd_reachable(g))
    return time.monotonic() - t0


def key_error_line(gw, key, start):
    """Waits for a log line (after byte `start`) that names `key` exactly (not a longer key)
    and has an error word; returns the line or None."""
    k = re.escape(key) + r"(?![A-Za-z0-9_.-])"
    rx = r"(?m)^.*(?:%s.*%s|%s.*%s).*$" % (k, ERROR_WORDS, ERROR_WORDS, k)
    m = gw.wait_for_log(rx, timeout=5.0, start=start)
    return m.group(0) if m else None


def sluice_cli(*args, timeout=60):
    """Runs build/sluice with arguments; returns the CompletedProcess (text)."""
    return subprocess.run([harness.SLUICE_BIN] + [str(a) for a in args], capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def normalized(doc):
    """An apisix.yaml document as {kind: [items sorted by id]} without create/update times
    and without empty kinds."""
    out = {}
    for kind, items in (doc or {}).items():
        if not items:
            continue
        assert isinstance(items, list), "%s is not an array: %r" % (kind, items)
        clean = [{k: v for k, v in item.items() if k not in ("create_time", "update_time")}
                 for item in items]
        out[kind] = sorted(clean, key=lambda i: str(i.get("id", i.get("username"))))
    return out


def by_id(doc, kind):
    return {str(i.get("id")): i for i in (doc.get(kind) or [])}


def flip_snapshot_bytes(data_dir):
    """XORs 0xFF into the middle byte of every file whose name contains 'snapshot';
    returns their paths."""
    hit = []
    for root, _, files in os.walk(data_dir):
        for f in files:
            if "snapshot" not in f.lower():
                continue
            p = os.path.join(root, f)
            with open(p, "r+b") as fh:
                data = bytearray(fh.read())
                if not data:
                    continue
                data[len(data) // 2] ^= 0xFF
                fh.seek(0)
                fh.write(data)
            hit.append(p)
    return hit


# --------------------------------------------------------------------------- the fixture


def test_fixture_put_get(etcd):
    assert etcd.urls == ["http://127.0.0.1:%d" % etcd.client_ports[0]]
    r0 = etcd.revision()
    rev = etcd.put("/t/a", '{"x": "-1"}\n')
    assert rev == r0 + 1 == etcd.revision()
    assert etcd.get("/t/a") == '{"x": "-1"}\n', "value not stored byte for byte"
    assert etcd.get("/t/missing") is None
    kv = etcd.get_kv("/t/a")
    assert kv["create_revision"] == kv["mod_revision"] == rev and kv["lease"] == 0
    raw = etcd.get_json("/t/a")
    assert raw["header"]["revision"] == rev and len(raw["kvs"]) == 1
    etcd.put("/t/b", {"y": 1})
    assert etcd.get_value_json("/t/b") == {"y": 1}
    assert sorted(etcd.get_prefix("/t/")) == ["/t/a", "/t/b"]
    lease = etcd.lease_grant(30)
    etcd.put("/t/leased", "v", lease=lease)
    assert etcd.get_kv("/t/leased")["lease"] == lease
    assert etcd.delete("/t/", prefix=True) == 3
    p = etcd.ctl("get", "/t/a", "--print-value-only")
    assert p.returncode == 0 and p.stdout == ""
    # compaction: the old revision is gone for reads at it
    etcd.put("/t/c", "1")
    etcd.put("/t/c", "2")
    cur = etcd.revision()
    etcd.compact(cur)
    p = etcd.ctl("get", "/t/c", "--rev=%d" % (cur - 1))
    assert p.returncode != 0 and "compacted" in p.stderr, p


@pytest.mark.parametrize("members", [1, 3])
def test_fixture_kill_restart_keeps_data(tmp_path, members):
    from etcd_cluster import EtcdCluster
    c = EtcdCluster(tmp_path / "c", members=members)
    try:
        c.start()
        assert len(c.urls) == members == len(set(c.urls))
        c.put("/k", "v1")
        for i in range(members):
            pid = c.pid(i)
            c.kill_member(i)
            assert not c.alive(i)
            if members == 3:  # a quorum is left: writes keep working
                c.put("/k", "v-without-%d" % i)
            c.start_member(i)
            assert c.alive(i) and c.pid(i) != pid
            assert c.get("/k", endpoints=[i]) in ("v1", "v-without-%d" % i)
        rev = c.revision()
        c.stop_all()
        assert c.running() == []
        c.start_all()
        assert c.revision() == rev, "revision changed across a full restart"
        assert c.get("/k") == ("v1" if members == 1 else "v-without-%d" % (members - 1))
        if members == 3:
            c.move_leader(2)
            assert c.leader() == 2
    finally:
        c.close()
    assert not any(os.path.exists(c.data_dir(i)) for i in range(members))
    assert all(os.path.getsize(c.log_path(i)) > 0 for i in range(members))


def test_fixture_wipe_resets_revision(etcd):
    for i in range(10):
        etcd.put("/w/%d" % i, "x")
    assert etcd.revision() >= 11
    ports, cid = list(etcd.client_ports), etcd.cluster_id()
    etcd.wipe()
    assert etcd.client_ports == ports
    assert etcd.revision() == 1, "a wiped cluster starts again at revision 1"
    assert etcd.get_prefix("/w/") == {}
    assert etcd.cluster_id() != cid, "a wiped cluster is a new cluster"
    assert etcd.put("/w/new", "y") == 2


# --------------------------------------------------------------------------- keys and sync


def test_admin_put_is_apisix_key_and_serves_on_other_node(etcd, make_gateway, make_upstream):
    up = make_upstream("up1")
    a = etcd_gateway(make_gateway, etcd.urls)
    b = etcd_gateway(make_gateway, etcd.urls)
    res = ok(a.admin("PUT", "/routes/1", admin_route("/one", up, desc="d")), 201)
    t_put = time.monotonic()
    assert_status(a, "/one", 200, up, what="the writing node, right after its 201")
    took = wait_serving([b], "/one", up=up, timeout=PROPAGATION_LIMIT, what="PUT on node A")
    print("\nnode A PUT -> node B serving: %.1f ms (target 100 ms)" % (
        (time.monotonic() - t_put) * 1000))
    assert took <= PROPAGATION_LIMIT
    assert res.json["key"] == "/apisix/routes/1"

    kv = etcd.get_kv("/apisix/routes/1")
    assert kv is not None, "route not stored at /apisix/routes/1: %r" % etcd.get_prefix("/")
    stored = json.loads(kv["value"])
    assert stored["id"] == "1" and stored["uri"] == "/one" and stored["desc"] == "d"
    assert stored["upstream"]["nodes"] == {up.addr: 1}
    assert stored == res.json["value"], "etcd holds something else than the Admin API answered"
    assert isinstance(stored.get("create_time"), int) and isinstance(stored.get("update_time"),
                                                                     int)
    one = ok(b.admin("GET", "/routes/1"), 200).json
    assert one["value"] == stored
    assert one["createdIndex"] == kv["create_revision"]
    assert one["modifiedIndex"] == kv["mod_revision"]
    assert_status([a, b], "/one", 200, up)

    # an update through B serves on A, create_time kept
    up2 = make_upstream("up2")
    ok(b.admin("PUT", "/routes/1", admin_route("/one", up2)), 200)
    wait_serving([a, b], "/one", up=up2, timeout=PROPAGATION_LIMIT, what="PUT on node B")
    again = json.loads(etcd.get("/apisix/routes/1"))
    assert again["create_time"] == stored["create_time"]
    assert etcd.get_kv("/apisix/routes/1")["create_revision"] == kv["create_revision"]


def test_etcdctl_writes_serve_on_both_nodes_and_admin_delete(etcd, make_gateway,
                                                            make_upstream):
    up1, up2 = make_upstream("up1"), make_upstream("up2")
    a = etcd_gateway(make_gateway, etcd.urls)
    b = etcd_gateway(make_gateway, etcd.urls)
    etcd.put("/apisix/routes/r2", json.dumps(eroute("r2", "/r2", up1)))
    took = wait_serving([a, b], "/r2", up=up1, timeout=PROPAGATION_LIMIT, what="etcdctl put")
    print("\netcdctl put -> both nodes serving: %.1f ms" % (took * 1000))

    # upstreams and services by id
    etcd.put("/apisix/upstreams/u1",
             {"id": "u1", "type": "roundrobin", "nodes": upstream_nodes(up1)})
    etcd.put("/apisix/services/s1", {"id": "s1", "upstream_id": "u1"})
    etcd.put("/apisix/routes/r3", {"id": "r3", "uri": "/r3", "upstream_id": "u1"})
    etcd.put("/apisix/routes/r4", {"id": "r4", "uri": "/r4", "service_id": "s1"})
    for p in ("/r3", "/r4"):
        wait_serving([a, b], p, up=up1, timeout=PROPAGATION_LIMIT, what="by id")
    # a route written before the upstream it names
    etcd.put("/apisix/routes/r5", {"id": "r5", "uri": "/r5", "upstream_id": "u-late"})
    etcd.put("/apisix/upstreams/u-late",
             {"id": "u-late", "type": "roundrobin", "nodes": upstream_nodes(up2)})
    wait_serving([a, b], "/r5", up=up2, timeout=PROPAGATION_LIMIT, what="upstream after route")
    # changing the upstream moves the routes (direct and through the service) that use it
    etcd.put("/apisix/upstreams/u1",
             {"id": "u1", "type": "roundrobin", "nodes": upstream_nodes(up2)})
    for p in ("/r3", "/r4"):
        wait_serving([a, b], p, up=up2, timeout=PROPAGATION_LIMIT, what="upstream changed")
    # the Admin API sees etcdctl's objects
    lst = ok(a.admin("GET", "/routes"), 200).json
    assert sorted(i["value"]["id"] for i in lst["list"]) == ["r2", "r3", "r4", "r5"]

    # DELETE through node B removes it everywhere
    res = ok(b.admin("DELETE", "/routes/r2"), 200)
    assert res.json.get("key") == "/apisix/routes/r2"
    assert etcd.get("/apisix/routes/r2") is None
    wait_serving([a, b], "/r2", status=404, timeout=PROPAGATION_LIMIT, what="DELETE on B")
    # etcdctl del too
    etcd.delete("/apisix/routes/r3")
    wait_serving([a, b], "/r3", status=404, timeout=PROPAGATION_LIMIT, what="etcdctl del")
    assert_status([a, b], "/r4", 200, up2)


def test_init_dir_placeholders_are_skipped(etcd, make_gateway, upstream):
    for kind in ("routes", "upstreams", "services"):
        etcd.put("/apisix/%s/" % kind, "init_dir")
    etcd.put("/apisix/routes/1", eroute("1", "/ok", upstream))
    a = etcd_gateway(make_gateway, etcd.urls)  # initial read sees the placeholders
    wait_serving(a, "/ok", up=upstream, timeout=5)
    b = etcd_gateway(make_gateway, etcd.urls)
    wait_serving(b, "/ok", up=upstream, timeout=5)
    etcd.put("/apisix/plugin_configs/", "init_dir")  # and one seen by the watch
    etcd.put("/apisix/routes/", "init_dir")
    etcd.put("/apisix/routes/2", eroute("2", "/ok2", upstream))
    wait_serving([a, b], "/ok2", up=upstream, timeout=PROPAGATION_LIMIT)
    lst = ok(a.admin("GET", "/routes"), 200).json
    assert sorted(i["value"]["id"] for i in lst["list"]) == ["1", "2"], lst
    assert lst["total"] == 2
    dir_rx = re.compile(r"/apisix/\w+/(?=[\s\"',:;)\]]|$).*%s|%s.*/apisix/\w+/(?=[\s\"',:;)\]]|$)"
                        % (ERROR_WORDS, ERROR_WORDS), re.I)
    for g in (a, b):
        bad = [ln for ln in g.log_text().splitlines() if dir_rx.search(ln)
               or ("init_dir" in ln and re.search(ERROR_WORDS, ln, re.I))]
        assert not bad, "an init_dir placeholder was reported as an error: %r" % bad[:3]
    assert_status([a, b], "/ok", 200, upstream)


def test_custom_prefix_sees_only_its_keys(etcd, make_gateway, make_upstream):
    up = make_upstream("up1")
    g2 = etcd_gateway(make_gateway, etcd.urls, prefix="/gw2")
    std = etcd_gateway(make_gateway, etcd.urls)
    etcd.put("/gw2/routes/a", eroute("a", "/p-a", up))
    etcd.put("/apisix/routes/b", eroute("b", "/p-b", up))
    etcd.put("/gw2x/routes/c", eroute("c", "/p-c", up))
    etcd.put("/gw2routes/d", eroute("d", "/p-d", up))
    barrier(etcd, [g2], up, prefix="/gw2")
    barrier(etcd, [std], up)
    assert_status(g2, "/p-a", 200, up)
    for p in ("/p-b", "/p-c", "/p-d"):
        assert_status(g2, p, 404, what="foreign key")
    assert_status(std, "/p-b", 200, up)
    for p in ("/p-a", "/p-c", "/p-d"):
        assert_status(std, p, 404, what="foreign key")
    # the Admin API of the /gw2 node writes and lists under /gw2
    res = ok(g2.admin("PUT", "/routes/e", admin_route("/p-e", up)), 201)
    assert res.json["key"] == "/gw2/routes/e", "APISIX answers the etcd key, prefix included"
    assert json.loads(etcd.get("/gw2/routes/e"))["uri"] == "/p-e"
    assert etcd.get("/apisix/routes/e") is None
    lst = ok(g2.admin("GET", "/routes"), 200).json
    assert sorted(i["value"]["id"] for i in lst["list"] if not
                  i["value"]["id"].startswith("zz-barrier")) == ["a", "e"]
    posted = ok(g2.admin("POST", "/routes", admin_route("/p-f", up)), 201)
    pid = posted.json["value"]["id"]
    assert int(pid) == etcd.get_kv("/gw2/gen_id")["mod_revision"]
    assert etcd.get("/apisix/gen_id") is None
    wait_serving(g2, "/p-f", up=up, timeout=PROPAGATION_LIMIT)
    barrier(etcd, [std], up)
    assert_status(std, "/p-e", 404)
    assert_status(std, "/p-f", 404)


def test_post_generates_gen_id_revision_ids(etcd, make_gateway, upstream):
    a = etcd_gateway(make_gateway, etcd.urls)
    b = etcd_gateway(make_gateway, etcd.urls)
    ids = []
    for n, (writer, reader) in enumerate([(a, b), (b, a), (a, b), (b, a)]):
        res = ok(writer.admin("POST", "/routes", admin_route("/posted/%d" % n, upstream)), 201)
        rid = res.json["value"]["id"]
        assert isinstance(rid, str) and re.fullmatch(r"\d{20}", rid), rid
        assert res.json["key"] == "/apisix/routes/" + rid
        gen = etcd.get_kv("/apisix/gen_id")
        assert gen is not None, "no /apisix/gen_id key after a POST"
        assert rid == "%020d" % gen["mod_revision"], \
            "POST id %s is not gen_id's mod_revision %d" % (rid, gen["mod_revision"])
        kv = etcd.get_kv("/apisix/routes/" + rid)
        assert kv is not None and json.loads(kv["value"])["uri"] == "/posted/%d" % n
        wait_serving(reader, "/posted/%d" % n, up=upstream, timeout=PROPAGATION_LIMIT)
        ids.append(rid)
    assert ids == sorted(ids) and len(set(ids)) == len(ids), ids
    # upstreams and services POST the same way
    res = ok(a.admin("POST", "/upstreams", admin_upstream(upstream)), 201)
    uid = res.json["value"]["id"]
    assert uid == "%020d" % etcd.get_kv("/apisix/gen_id")["mod_revision"]
    assert etcd.get("/apisix/upstreams/" + uid) is not None


def test_patch_is_compare_and_swap(etcd, make_gateway, make_upstream):
    up1, up2 = make_upstream("up1"), make_upstream("up2")
    a = etcd_gateway(make_gateway, etcd.urls)
    b = etcd_gateway(make_gateway, etcd.urls)
    ok(a.admin("PUT", "/routes/p", admin_route("/p", up1, labels={"base": "0"}, desc="old")),
       201)
    wait_serving(b, "/p", up=up1, timeout=PROPAGATION_LIMIT)
    res = ok(b.admin("PATCH", "/routes/p",
                     {"desc": "patched", "upstream": {"nodes": {up2.addr: 1, up1.addr: None}}}),
             200)
    stored = json.loads(etcd.get("/apisix/routes/p"))
    assert stored == res.json["value"]
    assert stored["desc"] == "patched" and stored["uri"] == "/p"
    assert stored["labels"] == {"base": "0"}
    assert stored["upstream"]["nodes"] == {up2.addr: 1}, stored
    assert stored["upstream"]["type"] == "roundrobin"
    wait_serving([a, b], "/p", up=up2, timeout=PROPAGATION_LIMIT, what="PATCH on B")

    # concurrent PATCHes through both nodes lose nothing
    start_rev = etcd.get_kv("/apisix/routes/p")["mod_revision"]
    per_thread, failures = 6, []
    writers = [(a, 0), (a, 1), (b, 2), (b, 3)]
    gate = threading.Barrier(len(writers))

    acked, refused = set(), set()

    def work(g, t):
        try:
            with g.admin_client() as c:
                gate.wait(timeout=10)
                for j in range(per_thread):
                    label = "t%d_%d" % (t, j)
                    r = c.request("PATCH", "/routes/p", {"labels": {label: "v"}})
                    if r.status == 200:
                        acked.add(label)
                    elif r.status == 409 and r.json == CONFLICT:
                        refused.add(label)
                    else:
                        failures.append(r)
        except Exception as e:  # reported below
            failures.append(repr(e))

    ts = [threading.Thread(target=work, args=w) for w in writers]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    kv = etcd.get_kv("/apisix/routes/p")
    labels = json.loads(kv["value"])["labels"]
    # the compare-and-swap itself: no acknowledged PATCH is lost
    lost = sorted((acked | {"base"}) - set(labels))
    assert not lost, "%d PATCHes answered 200 but are not in etcd (no compare-and-swap?): %s" \
        % (len(lost), lost)
    assert not failures, "PATCHes answered neither 200 nor the 409 conflict: %r" % failures[:3]
    written = sorted(refused & set(labels))
    assert not written, "PATCHes answered 409 but were applied: %s" % written
    assert acked, "no concurrent PATCH succeeded"
    assert not refused, "%d PATCHes answered 409: the node did not merge them again" % len(
        refused)
    assert kv["mod_revision"] >= start_rev + len(acked)
    assert_status([a, b], "/p", 200, up2)
    print("\nconcurrent PATCHes: %d applied, %d conflicts (409)" % (len(acked), len(refused)))


def test_ttl_uses_an_etcd_lease(etcd, make_gateway, upstream):
    a = etcd_gateway(make_gateway, etcd.urls)
    b = etcd_gateway(make_gateway, etcd.urls)
    ok(a.admin("PUT", "/routes/keep", admin_route("/keep", upstream)), 201)
    t0 = time.monotonic()
    ok(a.admin("PUT", "/routes/t?ttl=2", admin_route("/ttl", upstream)), 201)
    raw = etcd.get_json("/apisix/routes/t")
    assert raw.get("kvs"), "route not in etcd"
    lease = int(raw["kvs"][0].get("lease", 0))
    assert lease != 0, "?ttl=2 stored the key without a lease: %r" % raw
    assert 0 < etcd.lease_ttl(lease) <= 2
    wait_serving([a, b], "/ttl", up=upstream, timeout=PROPAGATION_LIMIT)
    gone = wait_until(lambda: etcd.get("/apisix/routes/t") is None, timeout=5, interval=0.1)
    assert gone, "the leased key is still in etcd %.1fs after a 2 s ttl" % (time.monotonic() - t0)
    wait_serving([a, b], "/ttl", status=404, timeout=PROPAGATION_LIMIT, what="after expiry")
    assert time.monotonic() - t0 <= 2 + 3
    assert_status([a, b], "/keep", 200, upstream)
    assert ok(b.admin("GET", "/routes/t"), 404).status == 404

    # A PATCH keeps what is left of the lifetime (as on the embedded store); a PUT without
    # ?ttl makes the object permanent.
    ok(a.admin("PUT", "/routes/p?ttl=30", admin_route("/pttl", upstream)), 201)
    ok(b.admin("PATCH", "/routes/p", {"desc": "patched"}), 200)
    kv = etcd.get_kv("/apisix/routes/p")
    assert json.loads(kv["value"])["desc"] == "patched"
    assert kv["lease"] != 0, "PATCH dropped the key's lease"
    assert 25 <= etcd.lease_ttl(kv["lease"]) <= 30
    ok(a.admin("PUT", "/routes/p", admin_route("/pttl", upstream)), 200)
    assert etcd.get_kv("/apisix/routes/p")["lease"] == 0, "PUT without ?ttl kept a lease"


def test_invalid_values_are_skipped_and_logged(etcd, make_gateway, make_upstream):
    up1, up2 = make_upstream("up1"), make_upstream("up2")
    gw = etcd_gateway(make_gateway, etcd.urls)
    etcd.put("/apisix/routes/1", eroute("1", "/one", up1))
    etcd.put("/apisix/routes/2", eroute("2", "/two", up1))
    wait_serving(gw, "/one", up=up1, timeout=5)
    for n, garbage in enumerate(["not json", json.dumps({"id": "1", "uri": 5}),
                                 json.dumps({"id": "1", "uri": "/one", "upstream": {
                                     "nodes": upstream_nodes(up2), "type": "nope"}}),
                                 # a scheme no upstream speaks
                                 json.dumps({"id": "1", "uri": "/one", "upstream": {
                                     "nodes": upstream_nodes(up2), "scheme": "ftp"}}),
                                 "{\"id\": \"1\", \"uri\": \"/one\""]):
        start = gw.log_size()
        etcd.put("/apisix/routes/1", garbage)
        line = key_error_line(gw, "/apisix/routes/1", start)
        assert line, "no log line names /apisix/routes/1 with an error after %r" % garbage
        # other routes keep updating (and this orders us after the bad event)
        etcd.put("/apisix/routes/2", eroute("2", "/two", up1 if n % 2 else up2))
        wait_serving(gw, "/two", up=up1 if n % 2 else up2, timeout=PROPAGATION_LIMIT,
                     what="other route after garbage %d" % n)
        assert_status(gw, "/one", 200, up1, what="previous version after %r" % garbage)
    # a brand-new key holding garbage is simply absent
    start = gw.log_size()
    etcd.put("/apisix/routes/3", "[1,2")
    assert key_error_line(gw, "/apisix/routes/3", start)
    barrier(etcd, [gw], up1)
    assert_status(gw, "/three", 404)
    # a valid value replaces the garbage
    etcd.put("/apisix/routes/1", eroute("1", "/one", up2))
    wait_serving(gw, "/one", up=up2, timeout=PROPAGATION_LIMIT, what="valid value again")
    # and a restarted node (full read, no watch) also skips a bad value without failing
    etcd.put("/apisix/routes/4", "garbage")
    barrier(etcd, [gw], up1)
    start = gw.log_size()
    assert gw.restart() == 0
    assert gw.alive()
    assert_status(gw, "/one", 200, up2)
    assert_status(gw, "/two", 200)
    assert key_error_line(gw, "/apisix/routes/4", start), \
        "the initial read after a restart did not report the bad key"


# --------------------------------------------------------------------------- resilience


@pytest.mark.load
def test_cluster_failures_under_load(etcd3, make_gateway, make_upstream):
    up = make_upstream("up1")
    a = etcd_gateway(make_gateway, etcd3.urls)
    b = etcd_gateway(make_gateway, etcd3.urls)
    ok(a.admin("PUT", "/routes/load", admin_route("/load", up)), 201)
    wait_serving([a, b], "/load", up=up, timeout=PROPAGATION_LIMIT)
    wait_reachable([a, b], 1, timeout=10)
    etcd3.move_leader(0)  # the first URL the nodes know is also the leader
    wrks = [start_wrk(g.url("/load"), threads=1, conns=4, duration=120, timeout_s=2)
            for g in (a, b)]
    results = None
    try:
        time.sleep(1)
        # one member (the leader) down: a new route still goes in and serves
        etcd3.kill_member(0, wait_quorum=False)  # the nodes see the election too
        t0 = time.monotonic()
        r = admin_retry_503(a, "PUT", "/routes/k1", admin_route("/k1", up), timeout=8)
        assert r.status == 201, "PUT with one of 3 members down: %r" % r
        print("\nPUT answered %d %.2fs after the leader was killed" % (r.status,
                                                                       time.monotonic() - t0))
        wait_serving([a, b], "/k1", up=up, timeout=3, what="route PUT with one member down")

        # every member down: traffic keeps flowing, the gauge says so, writes get 503
        etcd3.kill_member(1)
        etcd3.kill_member(2)
        t_down = time.monotonic()
        wait_reachable([a, b], 0, timeout=10)
        for g in (a, b):
            t = time.monotonic()
            r = g.admin("PUT", "/routes/k-down", admin_route("/k-down", up),
                        timeout=ETCD_TIMEOUT + 10)
            took = time.monotonic() - t
            assert r.status == 503, "Admin API write with etcd down: %r" % r
            assert isinstance(r.error_msg, str) and r.body.endswith(b"\n"), r
            assert not any(str(port).encode() in r.body for port in etcd3.client_ports), \
                "the 503 names an etcd member: %r" % r
            assert took <= ETCD_TIMEOUT + 3, "503 took %.1fs" % took
        assert_status([a, b], "/k1", 200, up)
        assert_status([a, b], "/load", 200, up)
        left = 5 - (time.monotonic() - t_down)
        if left > 0:
            time.sleep(left)
        assert all(w.running() for w in wrks)

        # members back: reachable again, watches resumed
        etcd3.start_all()
        t_up = time.monotonic()
        wait_reachable([a, b], 1, timeout=10)
        print("apisix_etcd_reachable back to 1 %.2fs after the cluster was healthy"
              % (time.monotonic() - t_up))
        etcd3.put("/apisix/routes/k2", eroute("k2", "/k2", up))
        wait_serving([a, b], "/k2", up=up, timeout=5, what="etcdctl put after recovery")
        r = admin_retry_503(b, "PUT", "/routes/k3", admin_route("/k3", up), timeout=5)
        assert r.status == 201, r
        wait_serving([a, b], "/k3", up=up, timeout=PROPAGATION_LIMIT)
    finally:
        results = [w.stop() for w in wrks]
    for g, res in zip((a, b), results):
        errors = {k: res[k] for k in ("connect", "read", "write", "timeout")}
        print("wrk on port %d: %d requests, non2xx %d %s, errors %r"
              % (g.port, res["requests"], res["non2xx"], res["statuses"], errors))
        assert res["requests"] > 0
        assert res["non2xx"] == 0, "non-2xx answers: %s" % res["statuses"]
        assert not any(errors.values()), "socket errors: %r" % errors
        assert g.alive()


class _Poller(threading.Thread):
    """Polls paths in a loop: each round asks the pair in alternating order, then the
    `steady` paths. Records (round, path, status, upstream)."""

    def __init__(self, gw, pair, steady):
        super().__init__(daemon=True)
        self.gw, self.pair, self.steady = gw, pair, steady
        self.stop_event = threading.Event()
        self.rounds = []

    def run(self):
        n = 0
        while not self.stop_event.is_set():
            order = list(self.pair) if n % 2 == 0 else list(reversed(self.pair))
            row = []
            for p in order + list(self.steady):
                r = fetch(self.gw, p)
                row.append((p, r.status if r is not None else None, upstream_name(r)))
            self.rounds.append(row)
            n += 1

    def stop(self):
        self.stop_event.set()
        self.join(30)
        return self.rounds


def check_no_partial_set(rounds, old, new, pair, steady):
    """Every steady path answered 200 every time; the pair's paths answered 200 from old or
    new, and no round saw its first answer new and its second old."""
    assert rounds, "the poller made no request"
    for i, row in enumerate(rounds):
        for p, status, name in row:
            assert status == 200, "round %d: %s answered %r during the resync" % (i, p, status)
            if p in pair:
                assert name in (old, new), (i, row)
        (p1, _, n1), (p2, _, n2) = row[0], row[1]
        assert not (n1 == new and n2 == old), \
            "round %d saw a partial set: %s from %s, then %s from %s" % (i, p1, n1, p2, n2)


def test_compaction_while_disconnected_resyncs_exactly(etcd3, make_gateway, make_upstream):
    up1, up2 = make_upstream("up1"), make_upstream("up2")
    gw = etcd_gateway(make_gateway, [etcd3.urls[0]])
    m0 = [0]
    etcd3.put("/apisix/routes/keep", eroute("keep", "/keep", up1), endpoints=m0)
    etcd3.put("/apisix/routes/gone", eroute("gone", "/gone", up1), endpoints=m0)
    etcd3.put("/apisix/routes/changed", eroute("changed", "/changed", up1), endpoints=m0)
    etcd3.put("/apisix/upstreams/pair", {"id": "pair", "type": "roundrobin",
                                         "nodes": upstream_nodes(up1)}, endpoints=m0)
    etcd3.put("/apisix/routes/pa", eroute("pa", "/pa", up1), endpoints=m0)
    etcd3.put("/apisix/routes/pb", eroute("pb", "/pb", up1), endpoints=m0)
    for p in ("/keep", "/gone", "/changed", "/pa", "/pb"):
        wait_serving(gw, p, up=up1, timeout=5)

    etcd3.stop_member(0)
    m1 = [1]
    etcd3.delete("/apisix/routes/gone", endpoints=m1)
    etcd3.put("/apisix/routes/changed", eroute("changed", "/changed", up2), endpoints=m1)
    etcd3.put("/apisix/routes/new", eroute("new", "/new", up2), endpoints=m1)
    for i in range(10):  # churn: many revisions between the node's last one and now
        etcd3.put("/apisix/routes/churn", eroute("churn", "/churn/%d" % i, up1), endpoints=m1)
    etcd3.delete("/apisix/routes/churn", endpoints=m1)
    etcd3.put("/apisix/routes/pa", eroute("pa", "/pa", up2), endpoints=m1)
    etcd3.put("/apisix/routes/pb", eroute("pb", "/pb", up2), endpoints=m1)
    etcd3.put("/apisix/routes/keep", "not json", endpoints=m1)  # its old version must stay
    rev = etcd3.revision(endpoints=m1)
    etcd3.compact(rev, endpoints=m1)
    # nothing reached the node meanwhile
    assert_status(gw, "/gone", 200, up1)
    assert_status(gw, "/pa", 200, up1)

    log_start = gw.log_size()
    poller = _Poller(gw, ["/pa", "/pb"], ["/keep"])
    poller.start()
    try:
        time.sleep(0.3)
        etcd3.start_member(0)
        t0 = time.monotonic()
        wait_serving(gw, "/new", up=up2, timeout=CONVERGE, what="resync after compaction")
        print("\nresynced %.2fs after member 0 was healthy" % (time.monotonic() - t0))
        time.sleep(0.3)
    finally:
        rounds = poller.stop()
    print("%d polling rounds during the resync" % len(rounds))
    check_no_partial_set(rounds, up1.name, up2.name, ["/pa", "/pb"], ["/keep"])
    assert_status(gw, "/gone", 404, what="deleted while disconnected")
    assert_status(gw, "/changed", 200, up2)
    assert_status(gw, "/pa", 200, up2)
    assert_status(gw, "/pb", 200, up2)
    assert_status(gw, "/keep", 200, up1)
    assert key_error_line(gw, "/apisix/routes/keep", log_start), \
        "the invalid value met in the re-read was not logged"
    assert_status(gw, "/churn/9", 404)
    # and the watch works again from the new revision
    etcd3.put("/apisix/routes/after", eroute("after", "/after", up1), endpoints=m0)
    wait_serving(gw, "/after", up=up1, timeout=PROPAGATION_LIMIT)


def test_wiped_etcd_converges_to_new_set(etcd, make_gateway, make_upstream):
    up1, up2 = make_upstream("up1"), make_upstream("up2")
    gw = etcd_gateway(make_gateway, etcd.urls)
    etcd.put("/apisix/routes/w1", eroute("w1", "/w1", up1))
    etcd.put("/apisix/routes/w2", eroute("w2", "/w2", up1))
    etcd.put("/apisix/routes/same", eroute("same", "/same", up1))
    for i in range(15):  # the old revision ends well above the new cluster's
        etcd.put("/apisix/routes/w1", eroute("w1", "/w1", up1, desc=str(i)))
    wait_serving(gw, "/w1", up=up1, timeout=5)
    wait_serving(gw, "/same", up=up1, timeout=5)
    old_rev = etcd.revision()
    etcd.wipe()
    etcd.put("/apisix/routes/x1", eroute("x1", "/x1", up2))
    etcd.put("/apisix/routes/same", eroute("same", "/same", up2))
    assert etcd.revision() < old_rev
    wait_serving(gw, "/x1", up=up2, timeout=CONVERGE, what="route of the wiped, new etcd")
    wait_serving(gw, "/same", up=up2, timeout=5)
    assert_status(gw, "/w1", 404, what="route only the old etcd had")
    assert_status(gw, "/w2", 404, what="route only the old etcd had")
    lst = ok(gw.admin("GET", "/routes"), 200).json
    assert sorted(i["value"]["id"] for i in lst["list"]) == ["same", "x1"]
    # followed from then on, below the old revision too
    etcd.put("/apisix/routes/x2", eroute("x2", "/x2", up1))
    etcd.delete("/apisix/routes/x1")
    wait_serving(gw, "/x2", up=up1, timeout=PROPAGATION_LIMIT)
    wait_serving(gw, "/x1", status=404, timeout=PROPAGATION_LIMIT)
    ok(gw.admin("PUT", "/routes/x3", admin_route("/x3", up1)), 201)
    wait_serving(gw, "/x3", up=up1, timeout=PROPAGATION_LIMIT)


# --------------------------------------------------------------------------- etcd down at start


def test_start_with_etcd_down_serves_snapshot(etcd, make_gateway, make_upstream):
    up1, up2 = make_upstream("up1"), make_upstream("up2")
    gw = etcd_gateway(make_gateway, etcd.urls)
    ok(gw.admin("PUT", "/upstreams/u1", admin_upstream(up1)), 201)
    ok(gw.admin("PUT", "/routes/s1", {"uri": "/s1", "upstream_id": "u1"}), 201)
    ok(gw.admin("PUT", "/routes/s2", admin_route("/s2", up1)), 201)
    wait_serving(gw, "/s1", up=up1, timeout=PROPAGATION_LIMIT)
    wait_serving(gw, "/s2", up=up1, timeout=PROPAGATION_LIMIT)
    assert gw.stop() == 0

    # (a) etcd down: the node starts from what it persisted
    etcd.stop_all()
    gw.start()
    assert_status(gw, "/s1", 200, up1, what="persisted route, etcd down")
    assert_status(gw, "/s2", 200, up1, what="persisted route, etcd down")
    assert_status(gw, "/nope", 404)
    r = gw.admin("PUT", "/routes/s9", admin_route("/s9", up1), timeout=ETCD_TIMEOUT + 10)
    assert r.status == 503, "Admin API write with etcd down: %r" % r
    wait_reachable([gw], 0, timeout=10)

    # (b) etcd back: changes are followed
    etcd.start_all()
    etcd.put("/apisix/routes/s3", eroute("s3", "/s3", up2))
    etcd.delete("/apisix/routes/s2")
    wait_serving(gw, "/s3", up=up2, timeout=CONVERGE, what="etcd back after a cold start")
    wait_serving(gw, "/s2", status=404, timeout=5)
    assert_status(gw, "/s1", 200, up1)
    wait_reachable([gw], 1, timeout=10)
    assert gw.stop() == 0

    # (c) a corrupted snapshot is refused, not served
    etcd.stop_all()
    flipped = flip_snapshot_bytes(gw.data_dir)
    assert flipped, "no file named *snapshot* in %s: %r" % (gw.data_dir,
                                                           os.listdir(gw.data_dir))
    start = gw.log_size()
    gw.start()
    for p in ("/s1", "/s3"):
        assert_status(gw, p, 404, what="route from a corrupted snapshot")
    m = gw.wait_for_log(r"(?m)^.*(?:snapshot.*%s|%s.*snapshot).*$" % (ERROR_WORDS, ERROR_WORDS),
                        timeout=3, start=start)
    assert m, "no log line says the snapshot was refused"
    print("\nrefusal logged: %s" % m.group(0))
    etcd.start_all()
    wait_serving(gw, "/s1", up=up1, timeout=CONVERGE, what="etcd back after a corrupt snapshot")
    wait_serving(gw, "/s3", up=up2, timeout=5)


def test_new_node_with_etcd_down(etcd, make_gateway, upstream):
    etcd.put("/apisix/routes/n1", eroute("n1", "/n1", upstream))
    etcd.stop_all()
    gw = etcd_gateway(make_gateway, etcd.urls)
    for p in ("/", "/n1", "/anything/else"):
        r = fetch(gw, p)
        assert r is not None and r.status == 404 and r.body == harness.NOT_FOUND_BODY, (p, r)
    r = gw.admin("PUT", "/routes/n2", admin_route("/n2", upstream), timeout=ETCD_TIMEOUT + 10)
    assert r.status == 503 and isinstance(r.error_msg, str), r
    assert str(etcd.client_ports[0]).encode() not in r.body, "the 503 names etcd: %r" % r
    etcd.start_all()
    took = wait_serving(gw, "/n1", up=upstream, timeout=CONVERGE, what="etcd came up")
    print("\nconfig picked up %.2fs after etcd was healthy" % took)
    r = admin_retry_503(gw, "PUT", "/routes/n2", admin_route("/n2", upstream), timeout=5)
    assert r.status == 201, r
    wait_serving(gw, "/n2", up=upstream, timeout=PROPAGATION_LIMIT)


# --------------------------------------------------------------------------- dump and load


def test_config_dump_and_load_round_trip(etcd, make_gateway, make_upstream, tmp_path):
    up1, up2 = make_upstream("up1"), make_upstream("up2")
    emb = make_gateway(admin=True)
    ok(emb.admin("PUT", "/upstreams/u1", admin_upstream(up1)), 201)
    ok(emb.admin("PUT", "/services/s1", {"upstream_id": "u1", "desc": "svc"}), 201)
    ok(emb.admin("PUT", "/routes/r1", {"uri": "/d1", "upstream_id": "u1", "name": "one"}), 201)
    ok(emb.admin("PUT", "/routes/r2", {"uri": "/d2", "service_id": "s1",
                                       "methods": ["GET", "POST"]}), 201)
    ok(emb.admin("PUT", "/routes/r3", admin_route("/d3", up2, labels={"team": "a"},
                                                  priority=3)), 201)
    for p, up in (("/d1", up1), ("/d2", up1), ("/d3", up2)):
        assert_status(emb, p, 200, up)
    assert emb.stop() == 0

    # dump --from embedded, to a file and to stdout
    dump1_path = tmp_path / "dump1.yaml"
    p = sluice_cli("config", "dump", "-c", emb.config_path, "--from", "embedded",
                   "-o", dump1_path)
    assert p.returncode == 0, p
    text = dump1_path.read_text()
    assert [ln for ln in text.splitlines() if ln.strip()][-1].strip() == "#END", text[-200:]
    dump1 = yaml.safe_load(text)
    p = sluice_cli("config", "dump", "-c", emb.config_path, "--from", "embedded")
    assert p.returncode == 0, p
    assert normalized(yaml.safe_load(p.stdout)) == normalized(dump1)
    assert sorted(by_id(dump1, "routes")) == ["r1", "r2", "r3"]
    assert sorted(by_id(dump1, "services")) == ["s1"]
    assert sorted(by_id(dump1, "upstreams")) == ["u1"]
    assert by_id(dump1, "routes")["r1"]["uri"] == "/d1"
    assert by_id(dump1, "routes")["r1"]["upstream_id"] == "u1"
    assert by_id(dump1, "routes")["r3"]["upstream"]["nodes"] == {up2.addr: 1}

    # load --to etcd, then an etcd gateway serves the same routes
    gw = etcd_gateway(make_gateway, etcd.urls, start=False)
    gw.write_config()
    p = sluice_cli("config", "load", "-c", gw.config_path, "--to", "etcd", dump1_path)
    assert p.returncode == 0, p
    for key in ("/apisix/routes/r1", "/apisix/routes/r2", "/apisix/routes/r3",
                "/apisix/services/s1", "/apisix/upstreams/u1"):
        v = etcd.get(key)
        assert v is not None, "load did not write %s" % key
        assert json.loads(v)["id"] == key.rsplit("/", 1)[1]
    gw.start()
    for p_, up in (("/d1", up1), ("/d2", up1), ("/d3", up2)):
        wait_serving(gw, p_, up=up, timeout=5)

    # dump --from etcd gives the same resources
    p = sluice_cli("config", "dump", "-c", gw.config_path, "--from", "etcd")
    assert p.returncode == 0, p
    assert p.stdout.rstrip().splitlines()[-1].strip() == "#END"
    dump2 = yaml.safe_load(p.stdout)
    assert normalized(dump2) == normalized(dump1)
    for kind in ("routes", "services", "upstreams"):
        for rid, item in by_id(dump1, kind).items():
            got = by_id(dump2, kind)[rid]
            assert (got.get("create_time"), got.get("update_time")) == \
                (item.get("create_time"), item.get("update_time")), \
                "load did not keep %s/%s's times" % (kind, rid)

    # one invalid item: nothing written, exit 1, the item named
    bad = dict(dump1)
    bad["routes"] = list(dump1["routes"]) + [
        {"id": "r4", "uri": "/d4", "upstream_id": "u1"},
        {"id": "r5-bad", "uri": 5, "upstream_id": "u1"}]
    bad["upstreams"] = [dict(by_id(dump1, "upstreams")["u1"], nodes={up2.addr: 1})]
    bad_path = tmp_path / "bad.yaml"
    bad_path.write_text(yaml.safe_dump(bad, sort_keys=False) + "#END\n")
    rev = etcd.revision()
    before = etcd.get_prefix("/apisix/")
    p = sluice_cli("config", "load", "-c", gw.config_path, "--to", "etcd", bad_path)
    assert p.returncode == 1, p
    assert "r5-bad" in p.stdout + p.stderr, "the message does not name the bad item: %r" % p
    assert etcd.revision() == rev, "load wrote to etcd although an item was invalid"
    assert etcd.get_prefix("/apisix/") == before
    barrier(etcd, [gw], up1)
    assert_status(gw, "/d4", 404)
    assert_status(gw, "/d1", 200, up1)

    # --replace: every kind the file lists ends up holding exactly the file's resources of
    # that kind; kinds it does not mention (services here) are left alone
    repl = {"routes": [by_id(dump1, "routes")["r1"],
                       {"id": "r6", "uri": "/d6", "upstream_id": "u1"}],
            "upstreams": [by_id(dump1, "upstreams")["u1"]]}
    repl_path = tmp_path / "replace.yaml"
    repl_path.write_text(yaml.safe_dump(repl, sort_keys=False) + "#END\n")
    p = sluice_cli("config", "load", "-c", gw.config_path, "--to", "etcd", "--replace",
                   repl_path)
    assert p.returncode == 0, p
    stored = {k for k, v in etcd.get_prefix("/apisix/").items() if k != "/apisix/gen_id"}
    assert stored == {"/apisix/routes/r1", "/apisix/routes/r6", "/apisix/upstreams/u1",
                      "/apisix/services/s1"}, "after --replace etcd holds %s" % sorted(stored)
    wait_serving(gw, "/d6", up=up1, timeout=PROPAGATION_LIMIT)
    for p_ in ("/d2", "/d3"):
        wait_serving(gw, p_, status=404, timeout=PROPAGATION_LIMIT, what="--replace")
    assert_status(gw, "/d1", 200, up1)
    # an empty list names a kind to empty
    empty_path = tmp_path / "empty-services.yaml"
    empty_path.write_text("services: []\n#END\n")
    p = sluice_cli("config", "load", "-c", gw.config_path, "--to", "etcd", "--replace",
                   empty_path)
    assert p.returncode == 0, p
    stored = {k for k, v in etcd.get_prefix("/apisix/").items() if k != "/apisix/gen_id"}
    assert stored == {"/apisix/routes/r1", "/apisix/routes/r6", "/apisix/upstreams/u1"}, \
        "after --replace with services: [] etcd holds %s" % sorted(stored)


def _etcd_put_many(url, items):
    """Puts (key, value) pairs through etcd's JSON gateway on one keep-alive connection
    (thousands of etcdctl processes would take a minute)."""
    import base64
    import http.client
    from urllib.parse import urlparse
    u = urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    try:
        for key, value in items:
            key = key if isinstance(key, bytes) else key.encode()
            value = value if isinstance(value, bytes) else value.encode()
            body = json.dumps({"key": base64.b64encode(key).decode(),
                               "value": base64.b64encode(value).decode()})
            conn.request("POST", "/v3/kv/put", body, {"Content-Type": "application/json"})
            resp = conn.getresponse()
            data = resp.read()
            assert resp.status == 200, data
    finally:
        conn.close()


def test_full_read_in_pages_at_one_revision(etcd, make_gateway, upstream):
    """More keys than one page of the initial read (1,000): every one is served, and the
    watch starts right after the read's revision (a write made just after the start serves)."""
    n = 2345
    items = [("/apisix/routes/p%05d" % i, json.dumps(eroute("p%05d" % i, "/page/%d" % i,
                                                            upstream)))
             for i in range(n)]
    _etcd_put_many(etcd.urls[0], items)
    rev = etcd.revision()
    gw = etcd_gateway(make_gateway, etcd.urls)
    line = gw.wait_for_log(r"read (\d+) resource\(s\) under /apisix/ at revision (\d+)",
                           timeout=5)
    assert line and int(line.group(1)) == n and int(line.group(2)) == rev, gw.log_tail()
    for i in (0, 999, 1000, 1001, 1999, 2000, n - 1):
        assert_status(gw, "/page/%d" % i, 200, upstream)
    assert_status(gw, "/page/%d" % n, 404)
    etcd.put("/apisix/routes/after", json.dumps(eroute("after", "/page/after", upstream)))
    wait_serving(gw, "/page/after", up=upstream, timeout=PROPAGATION_LIMIT)


def _etcd_watchers(url):
    """etcd's own count of open watchers and watch streams (its /metrics)."""
    import urllib.request
    with urllib.request.urlopen(url + "/metrics", timeout=5) as r:
        text = r.read().decode()
    out = {}
    for name in ("etcd_debugging_mvcc_watcher_total", "etcd_debugging_mvcc_watch_stream_total"):
        m = re.search(r"^%s (\S+)$" % name, text, re.M)
        assert m, "etcd's /metrics has no %s" % name
        out[name] = float(m.group(1))
    return out["etcd_debugging_mvcc_watcher_total"], out["etcd_debugging_mvcc_watch_stream_total"]


def test_one_watch_per_process(etcd, make_gateway, upstream):
    """However many workers, and after Admin API writes, a node holds ONE watch on etcd."""
    assert _etcd_watchers(etcd.urls[0]) == (0, 0)
    a = etcd_gateway(make_gateway, etcd.urls, workers=3)
    for i in range(5):
        ok(a.admin("PUT", "/routes/w%d" % i, admin_route("/w%d" % i, upstream)), 201)
    wait_serving(a, "/w4", up=upstream, timeout=PROPAGATION_LIMIT)
    assert wait_until(lambda: _etcd_watchers(etcd.urls[0]) == (1, 1), timeout=5), \
        _etcd_watchers(etcd.urls[0])
    etcd_gateway(make_gateway, etcd.urls, workers=2)
    assert wait_until(lambda: _etcd_watchers(etcd.urls[0]) == (2, 2), timeout=5), \
        _etcd_watchers(etcd.urls[0])


def test_data_plane_node_on_etcd(etcd, make_gateway, upstream):
    """deployment.role: data_plane with role_data_plane.config_provider: etcd serves what a
    traditional node writes, and has no Admin API (APISIX's decoupled deployment)."""
    cp = etcd_gateway(make_gateway, etcd.urls)
    dp = make_gateway(probe=False, config={
        "deployment": {"role": "data_plane",
                       "role_data_plane": {"config_provider": "etcd"},
                       "etcd": {"host": list(etcd.urls), "timeout": ETCD_TIMEOUT}}})
    ok(cp.admin("PUT", "/routes/dp", admin_route("/dp", upstream)), 201)
    wait_serving(dp, "/dp", up=upstream, timeout=PROPAGATION_LIMIT)
    assert "(admin)" not in dp.log_text()
    assert "(admin)" in cp.log_text(), cp.log_text()  # the line the check above looks for
    # The proxy port's /apisix/admin path is no Admin API either.
    r = fetch(dp, "/apisix/admin/routes")
    assert r is not None and r.status == 404, r


def test_hostile_values_written_straight_into_etcd(etcd, make_gateway, upstream):
    """What the Admin API refuses is refused when it comes from etcd too, per object: a key
    that is not UTF-8, a route whose vars do not compile or whose remote_addrs do not parse.
    The node neither dies nor stops applying the rest."""
    gw = etcd_gateway(make_gateway, etcd.urls)
    etcd.put("/apisix/routes/ok", json.dumps(eroute("ok", "/ok", upstream)))
    wait_serving(gw, "/ok", up=upstream, timeout=PROPAGATION_LIMIT)
    start = gw.log_size()
    _etcd_put_many(etcd.urls[0], [
        (b"/apisix/consumers/\xff\xfe", b'{"username":"x"}'),
        ("/apisix/routes/badvars", json.dumps(eroute("badvars", "/badvars", upstream,
                                                     vars=[["arg_a", "~~", "(["]]))),
        ("/apisix/routes/badaddr", json.dumps(eroute("badaddr", "/badaddr", upstream,
                                                     remote_addrs=["1.2.3.4/99"]))),
    ])
    etcd.put("/apisix/routes/after", json.dumps(eroute("after", "/after", upstream)))
    wait_serving(gw, "/after", up=upstream, timeout=PROPAGATION_LIMIT,
                 what="a valid route after hostile ones")
    assert gw.alive()
    log = gw.log_text()[start:]
    assert "not valid UTF-8" in log, log[-2000:]
    assert re.search(r"/apisix/routes/badvars at revision \d+ skipped", log), log[-2000:]
    assert re.search(r"/apisix/routes/badaddr at revision \d+ skipped", log), log[-2000:]
    assert_status(gw, "/badvars", 404)
    assert_status(gw, "/badaddr", 404)
    assert_status(gw, "/ok", 200, upstream)
    # The Admin API lists consumers without tripping over the key it cannot show.
    r = gw.admin("GET", "/consumers")
    assert r.status == 200, r.body
    # And a restart (the initial read, then the persisted snapshot) gets the same.
    gw.restart()
    wait_serving(gw, "/after", up=upstream, timeout=5)
    assert_status(gw, "/badvars", 404)


def test_config_load_refuses_what_would_not_serve(etcd, make_gateway, tmp_path, upstream):
    gw = etcd_gateway(make_gateway, etcd.urls, start=False)
    gw.write_config()
    path = tmp_path / "bad-vars.yaml"
    path.write_text(yaml.safe_dump({"routes": [
        {"id": "v1", "uri": "/v1", "upstream": {"type": "roundrobin",
                                                "nodes": {upstream.addr: 1}},
         "vars": [["arg_a", "~~", "(["]]}]}) + "#END\n")
    rev = etcd.revision()
    p = sluice_cli("config", "load", "-c", gw.config_path, "--to", "etcd", path)
    assert p.returncode == 1, p
    assert "v1" in p.stderr and "vars" in p.stderr, p.stderr
    assert etcd.revision() == rev
