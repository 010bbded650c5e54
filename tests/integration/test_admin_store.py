"""Issue 3, point 4: the embedded store — a SQLite database in sluice.data_dir (default
`data` beside config.yaml); data survives a restart and a kill -9 at any moment; revisions
(createdIndex / modifiedIndex) only grow, across restarts too; ?ttl expiry removes an object
from the Admin API and from routing."""

import os
import random
import threading
import time

import pytest

from harness import (OMIT, AdminClient, Client, admin_route, admin_upstream, get, sorted_list,
                     wait_until)

DEAD = "127.0.0.1:1"


def _ok(res):
    assert res.status in (200, 201), res
    return res


def _lists(gw, kinds):
    out = {}
    for k in kinds:
        r = gw.admin("GET", "/" + k)
        assert r.status == 200, r
        out[k] = sorted_list(r.json)
    return out


def _max_index(lists):
    return max((item["modifiedIndex"] for lst in lists.values() for item in lst["list"]),
               default=0)


def _sqlite_files(d):
    found = []
    for root, _, files in os.walk(d):
        for f in files:
            p = os.path.join(root, f)
            with open(p, "rb") as fh:
                if fh.read(16) == b"SQLite format 3\x00":
                    found.append(p)
    return found


KINDS = ["routes", "upstreams", "services", "consumers", "global_rules", "plugin_configs",
         "consumer_groups", "stream_routes"]


def _fill(gw, up):
    _ok(gw.admin("PUT", "/upstreams/u1", admin_upstream(up)))
    _ok(gw.admin("PUT", "/services/s1", {"upstream_id": "u1"}))
    _ok(gw.admin("PUT", "/routes/direct", admin_route("/direct", up, labels={"k": "v"})))
    _ok(gw.admin("PUT", "/routes/by-upstream", {"uri": "/by-upstream", "upstream_id": "u1"}))
    _ok(gw.admin("PUT", "/routes/by-service", {"uri": "/by-service", "service_id": "s1"}))
    _ok(gw.admin("POST", "/routes", admin_route("/posted", up)))
    _ok(gw.admin("PATCH", "/routes/direct", {"desc": "patched"}))
    _ok(gw.admin("PUT", "/consumer_groups/g1", {"plugins": {}}))
    _ok(gw.admin("PUT", "/consumers", {"username": "jack", "group_id": "g1"}))
    _ok(gw.admin("PUT", "/global_rules/1", {"plugins": {}}))
    _ok(gw.admin("PUT", "/plugin_configs/1", {"plugins": {}}))
    _ok(gw.admin("PUT", "/stream_routes/1", {"server_port": 9100,
                                             "upstream": admin_upstream(DEAD)}))
    _ok(gw.admin("PUT", "/routes/gone", admin_route("/gone", up)))
    _ok(gw.admin("DELETE", "/routes/gone"))


def _serves(gw, paths):
    for p in paths:
        r = get(gw.port, p)
        assert r.status == 200, "%s after restart: %r" % (p, r)


@pytest.mark.parametrize("how", ["sigterm", "kill9"])
def test_everything_survives_restart(make_gateway, upstream, how):
    gw = make_gateway(admin=True, workers=2)
    _fill(gw, upstream)
    before = _lists(gw, KINDS)
    if how == "sigterm":
        assert gw.restart() == 0, "SIGTERM exit code"
    else:
        gw.kill9()
        gw.start()
    after = _lists(gw, KINDS)
    assert after == before, "the store differs after a %s restart" % how
    _serves(gw, ["/direct", "/by-upstream", "/by-service", "/posted"])
    assert get(gw.port, "/gone").status == 404
    r = _ok(gw.admin("PUT", "/routes/new", admin_route("/new", upstream)))
    assert r.status == 201
    new = gw.admin("GET", "/routes/new").json
    assert new["createdIndex"] > _max_index(before), \
        "revision went back after restart: %r <= %r" % (new["createdIndex"], _max_index(before))


def test_indexes_monotonic_across_restarts(make_gateway):
    gw = make_gateway(admin=True)
    _ok(gw.admin("PUT", "/routes/a", admin_route("/a", DEAD)))
    a1 = gw.admin("GET", "/routes/a").json
    seen = [a1["modifiedIndex"]]
    for round_ in range(3):
        if round_ % 2:
            gw.kill9()
            gw.start()
        else:
            gw.restart()
        a = gw.admin("GET", "/routes/a").json
        assert a["createdIndex"] == a1["createdIndex"], "createdIndex changed: %r" % a
        _ok(gw.admin("PUT", "/routes/a", admin_route("/a%d" % round_, DEAD)))
        a = gw.admin("GET", "/routes/a").json
        assert a["createdIndex"] == a1["createdIndex"]
        _ok(gw.admin("PUT", "/routes/b%d" % round_, admin_route("/b", DEAD)))
        b = gw.admin("GET", "/routes/b%d" % round_).json
        seen += [a["modifiedIndex"], b["createdIndex"]]
    assert seen == sorted(seen) and len(set(seen)) == len(seen), \
        "revisions not strictly increasing across restarts: %r" % seen


def test_default_data_dir_is_beside_the_config(make_gateway, upstream):
    gw = make_gateway(admin=True, data_dir=OMIT)
    assert "data_dir" not in gw.config_dict().get("sluice", {}), \
        "the test must leave sluice.data_dir out"
    _ok(gw.admin("PUT", "/routes/1", admin_route("/d", upstream)))
    data = os.path.join(os.path.dirname(gw.config_path), "data")
    assert os.path.isdir(data), "no `data` directory beside config.yaml"
    assert _sqlite_files(data), "no SQLite database under %s: %r" % (data, os.listdir(data))
    cwd_data = os.path.join(gw.dir, "cwd", "data")
    assert not os.path.exists(cwd_data), "data_dir resolved against the working directory"
    gw.restart()
    assert get(gw.port, "/d").status == 200


def test_configured_data_dir_holds_a_sqlite_database(make_gateway, upstream, tmp_path):
    d = tmp_path / "elsewhere" / "store"
    d.mkdir(parents=True)
    gw = make_gateway(admin=True, data_dir=str(d))
    _ok(gw.admin("PUT", "/routes/1", admin_route("/c", upstream)))
    assert _sqlite_files(str(d)), "no SQLite database in the configured data_dir %s" % d
    assert not os.path.exists(os.path.join(gw.dir, "data")), "wrote the default dir too"
    # Another gateway on the same data_dir (after this one stopped) sees the route.
    gw.stop()
    gw2 = make_gateway(admin=True, data_dir=str(d))
    assert gw2.admin("GET", "/routes/1").status == 200
    assert get(gw2.port, "/c").status == 200


@pytest.mark.parametrize("absent", ["role-and-provider", "provider"])
def test_embedded_is_the_default_provider(make_gateway, upstream, absent):
    """With deployment.role and/or role_traditional.config_provider left out, the node is a
    traditional one with the embedded store."""
    gw = make_gateway(start=False, admin=True)
    cfg = gw.config_dict()
    del cfg["deployment"]["role_traditional"]
    if absent == "role-and-provider":
        del cfg["deployment"]["role"]
    gw.write_config(cfg)
    gw.start(write=False)
    _ok(gw.admin("PUT", "/routes/1", admin_route("/default", upstream)))
    assert get(gw.port, "/default").status == 200
    assert _sqlite_files(gw.data_dir), "no SQLite database in %s" % gw.data_dir


# --------------------------------------------------------------------------- kill -9


def _writer(gw, up, counter, acked, deleted, inflight, errors):
    """PUTs routes k<n> as fast as it can (DELETE of an older one now and then), recording
    each acknowledged change; stops at the first error (the kill)."""
    c = AdminClient(gw.admin_port, key=gw.admin_key, timeout=5)
    try:
        while True:
            counter[0] += 1
            n = counter[0]
            rid = "k%d" % n
            inflight[:] = [rid]
            r = c.request("PUT", "/routes/" + rid, admin_route("/k/%d" % n, up))
            if r.status != 201:
                errors.append(("PUT", rid, r))
                return
            acked.append(rid)
            if n % 5 == 0 and len(acked) > 2:
                victim = acked[-3]
                inflight[:] = [rid, victim]
                r = c.request("DELETE", "/routes/" + victim)
                if r.status != 200:
                    errors.append(("DELETE", victim, r))
                    return
                acked.remove(victim)
                deleted.append(victim)
            inflight[:] = []
    except (OSError, EOFError, ValueError) as e:
        errors.append(("wire", repr(e)))  # expected: the gateway was killed mid-request
    finally:
        c.close()


@pytest.mark.parametrize("rounds", [3])
def test_kill9_loses_no_acknowledged_write(make_gateway, upstream, rounds):
    gw = make_gateway(admin=True, workers=2)
    rnd = random.Random()
    acked, deleted, counter = [], [], [0]
    for round_ in range(rounds):
        errors, inflight = [], []
        t = threading.Thread(target=_writer,
                             args=(gw, upstream, counter, acked, deleted, inflight, errors))
        t.start()
        at = rnd.uniform(0.2, 1.0)
        time.sleep(at)  # a random moment: this sleep is the point of the test
        gw.kill9()
        t.join(15)
        assert not t.is_alive(), "writer hung after the kill"
        assert all(e[0] == "wire" for e in errors), "a write failed before the kill: %r" % errors
        maybe = set(inflight)  # the request in flight at the kill may or may not have landed
        gw.start()
        lst = gw.admin("GET", "/routes").json
        have = {item["value"]["id"] for item in lst["list"]}
        lost = [r for r in acked if r not in have and r not in maybe]
        back = [r for r in deleted if r in have and r not in maybe]
        print("round %d: killed after %.2fs, %d acknowledged routes, %d deletes" % (
            round_, at, len(acked), len(deleted)))
        assert len(acked) > 0, "no write was acknowledged in %.2fs" % at
        assert not lost, "%d acknowledged routes lost by kill -9: %r" % (len(lost), lost[:10])
        assert not back, "acknowledged deletes undone by kill -9: %r" % back[:10]
        acked[:] = [r for r in acked if r in have]
        deleted[:] = [r for r in deleted if r not in have]
        idx = [item["modifiedIndex"] for item in lst["list"]]
        with Client(gw.port) as c:
            for rid in acked:
                n = rid[1:]
                r = c.get("/k/%s" % n)
                assert r.status == 200 and r.json()["path"] == "/k/%s" % n, \
                    "route %s not served after kill -9: %r" % (rid, r)
        r = _ok(gw.admin("PUT", "/routes/probe%d" % round_, admin_route("/probe", DEAD)))
        assert gw.admin("GET", "/routes/probe%d" % round_).json["createdIndex"] > max(idx), \
            "revision reused after kill -9"
        _ok(gw.admin("DELETE", "/routes/probe%d" % round_))


# --------------------------------------------------------------------------- ttl


def test_ttl_expiry_removes_route_from_api_and_routing(admin_gw, upstream):
    t0 = time.monotonic()
    r = admin_gw.admin("PUT", "/routes/short?ttl=2", admin_route("/short", upstream))
    assert r.status == 201, r
    _ok(admin_gw.admin("PUT", "/routes/long", admin_route("/long", upstream)))
    assert admin_gw.admin("GET", "/routes/short").status == 200
    assert get(admin_gw.port, "/short").status == 200
    gone = wait_until(lambda: admin_gw.admin("GET", "/routes/short").status == 404, timeout=8)
    took = time.monotonic() - t0
    assert gone, "a ?ttl=2 route still in the Admin API after %.1fs" % took
    assert took >= 1.0, "a ?ttl=2 route expired after only %.2fs" % took
    assert wait_until(lambda: get(admin_gw.port, "/short").status == 404, timeout=2), \
        "an expired route still routes"
    lst = admin_gw.admin("GET", "/routes").json
    assert [i["value"]["id"] for i in lst["list"]] == ["long"], lst
    assert get(admin_gw.port, "/long").status == 200


def test_ttl_on_post_and_put_over_existing(admin_gw, upstream):
    r = _ok(admin_gw.admin("POST", "/routes?ttl=1", admin_route("/posted", upstream)))
    posted = r.json["key"].rsplit("/", 1)[1]
    _ok(admin_gw.admin("PUT", "/routes/x", admin_route("/x", upstream)))
    _ok(admin_gw.admin("PUT", "/routes/x?ttl=1", admin_route("/x", upstream)))
    assert wait_until(lambda: admin_gw.admin("GET", "/routes/" + posted).status == 404,
                      timeout=6), "POST ?ttl=1 did not expire"
    assert wait_until(lambda: admin_gw.admin("GET", "/routes/x").status == 404, timeout=6), \
        "PUT ?ttl=1 over an existing route did not expire"
    assert wait_until(lambda: get(admin_gw.port, "/x").status == 404, timeout=2)


def test_ttl_survives_restart(make_gateway, upstream):
    gw = make_gateway(admin=True)
    _ok(gw.admin("PUT", "/routes/t?ttl=3", admin_route("/t", upstream)))
    gw.restart()
    t = time.monotonic()
    # Unless the restart took the whole ttl, the route is there right after it...
    if gw.admin("GET", "/routes/t").status == 200:
        assert get(gw.port, "/t").status == 200
    # ...and it still expires: a restart does not make it permanent.
    assert wait_until(lambda: gw.admin("GET", "/routes/t").status == 404, timeout=8), \
        "a ?ttl=3 route outlived its ttl across a restart (%.1fs after it)" % (
            time.monotonic() - t)
    assert wait_until(lambda: get(gw.port, "/t").status == 404, timeout=2)
