"""Issue 3, point 1 (PATCH): recursive merge, arrays replaced whole, null deletes a key,
sub-path PATCH, re-validation of the result (a failure leaves the object as it was), and
atomicity against concurrent writers (no lost update)."""

import json
import threading

import pytest

from harness import AdminClient, admin_route, admin_upstream, expect_error, get, wait_until

DEAD = "127.0.0.1:1"


def _put(gw, path, body):
    r = gw.admin("PUT", path, body)
    assert r.status in (200, 201), r
    return r


def _get(gw, path):
    r = gw.admin("GET", path)
    assert r.status == 200, r
    return r.json


def test_merge_keeps_other_fields(admin_gw):
    _put(admin_gw, "/routes/1", admin_route("/m", DEAD, name="n", desc="old",
                                            labels={"a": "1"}))
    before = _get(admin_gw, "/routes/1")
    r = admin_gw.admin("PATCH", "/routes/1", {"desc": "new", "labels": {"b": "2"}})
    assert r.status == 200, r
    assert r.json["key"] == "/apisix/routes/1"
    v = r.value
    assert v["desc"] == "new"
    assert v["labels"] == {"a": "1", "b": "2"}, "objects must merge recursively: %r" % v
    assert v["name"] == "n" and v["uri"] == "/m"
    assert v["upstream"]["nodes"] == {DEAD: 1}
    assert v["create_time"] == before["value"]["create_time"], "PATCH changed create_time"
    assert v["update_time"] >= before["value"]["update_time"]
    after = _get(admin_gw, "/routes/1")
    assert after["value"] == v, "GET differs from the PATCH answer"
    assert after["createdIndex"] == before["createdIndex"]
    assert after["modifiedIndex"] > before["modifiedIndex"]


def test_arrays_are_replaced_whole(admin_gw):
    _put(admin_gw, "/routes/1", admin_route("/m", DEAD, methods=["GET", "POST"],
                                            hosts=["a.com", "b.com"]))
    r = admin_gw.admin("PATCH", "/routes/1", {"methods": ["PUT"], "hosts": ["c.com"]})
    assert r.status == 200, r
    assert r.value["methods"] == ["PUT"], r.value
    assert r.value["hosts"] == ["c.com"], r.value


def test_null_deletes_a_key(admin_gw):
    _put(admin_gw, "/routes/1", admin_route("/m", DEAD, desc="bye", labels={"a": "1",
                                                                           "b": "2"}))
    r = admin_gw.admin("PATCH", "/routes/1", {"desc": None, "labels": {"a": None}})
    assert r.status == 200, r
    assert "desc" not in r.value, r.value
    assert r.value["labels"] == {"b": "2"}, r.value
    assert "desc" not in _get(admin_gw, "/routes/1")["value"]


def test_nested_node_swap_moves_traffic(admin_gw, make_upstream):
    a, b = make_upstream("a"), make_upstream("b")
    _put(admin_gw, "/routes/1", admin_route("/swap", a))
    assert get(admin_gw.port, "/swap").json()["upstream"] == "a"
    r = admin_gw.admin("PATCH", "/routes/1", {"upstream": {"nodes": {a.addr: None,
                                                                     b.addr: 1}}})
    assert r.status == 200, r
    assert r.value["upstream"]["nodes"] == {b.addr: 1}, r.value
    assert r.value["upstream"]["type"] == "roundrobin", "a sibling key was lost"
    for _ in range(4):
        assert get(admin_gw.port, "/swap").json()["upstream"] == "b"


def test_sub_path_patch_replaces_that_value(admin_gw, make_upstream):
    a, b = make_upstream("a"), make_upstream("b")
    _put(admin_gw, "/routes/1", admin_route("/sub", a, methods=["GET"], desc="d"))
    r = admin_gw.admin("PATCH", "/routes/1/upstream/nodes", {b.addr: 1})
    assert r.status == 200, r
    assert r.value["upstream"]["nodes"] == {b.addr: 1}, \
        "a sub-path PATCH sets the value, it does not merge: %r" % r.value
    assert r.value["upstream"]["type"] == "roundrobin"
    assert r.value["methods"] == ["GET"] and r.value["desc"] == "d"
    assert get(admin_gw.port, "/sub").json()["upstream"] == "b"

    r = admin_gw.admin("PATCH", "/routes/1/methods", ["GET", "POST"])
    assert r.status == 200 and r.value["methods"] == ["GET", "POST"], r
    r = admin_gw.admin("PATCH", "/routes/1/desc", "a plain string")
    assert r.status == 200 and r.value["desc"] == "a plain string", r
    r = admin_gw.admin("PATCH", "/routes/1/labels", {"k": "v"})
    assert r.status == 200 and r.value["labels"] == {"k": "v"}, \
        "a missing key under a sub-path is created: %r" % r
    assert _get(admin_gw, "/routes/1")["value"] == r.value


def test_sub_path_patch_on_upstream_object(admin_gw):
    _put(admin_gw, "/upstreams/u1", admin_upstream(DEAD, retries=1))
    r = admin_gw.admin("PATCH", "/upstreams/u1/retries", 2)
    assert r.status == 200 and r.value["retries"] == 2, r
    assert r.value["nodes"] == {DEAD: 1}


# (patch path, body, what the error must name)
INVALID_PATCHES = [
    ("/routes/1", {"methods": ["FETCH"]}, "methods"),
    ("/routes/1", {"uri": None}, "uri"),
    ("/routes/1", {"priority": "high"}, "priority"),
    ("/routes/1", {"urii": "/typo"}, "urii"),
    ("/routes/1", {"upstream": {"nodes": {DEAD: "heavy"}}}, None),
    ("/routes/1", {"upstream": None}, None),
    ("/routes/1", {"plugins": {"no-such-plugin": {}}}, "no-such-plugin"),
    ("/routes/1", {"id": "2"}, None),
    ("/routes/1/methods", ["FETCH"], "methods"),
    ("/routes/1/status", 7, "status"),
    ("/routes/1/uri/deeper", "x", None),
    ("/routes/1", [1, 2], None),
    ("/routes/1", "a string", None),
]


@pytest.mark.parametrize("path,body,names", INVALID_PATCHES,
                         ids=[json.dumps(c[:2])[:60] for c in INVALID_PATCHES])
def test_invalid_result_leaves_object_unchanged(admin_gw, upstream, path, body, names):
    _put(admin_gw, "/routes/1", admin_route("/keep", upstream, methods=["GET"], desc="d",
                                            labels={"a": "1"}))
    before = _get(admin_gw, "/routes/1")
    r = admin_gw.admin("PATCH", path, body)
    expect_error(r, 400, contains=[names] if names else ())
    after = _get(admin_gw, "/routes/1")
    assert after == before, "a rejected PATCH changed the object:\n%r\n%r" % (before, after)
    assert get(admin_gw.port, "/keep").status == 200, "the route stopped serving"


def test_malformed_patch_body(admin_gw):
    _put(admin_gw, "/routes/1", admin_route("/m", DEAD))
    before = _get(admin_gw, "/routes/1")
    expect_error(admin_gw.admin("PATCH", "/routes/1", raw_body=b'{"desc": '), 400,
                 "invalid request body")
    assert _get(admin_gw, "/routes/1") == before


def test_patch_with_ttl(admin_gw):
    _put(admin_gw, "/routes/1", admin_route("/m", DEAD))
    r = admin_gw.admin("PATCH", "/routes/1?ttl=1", {"desc": "short-lived"})
    assert r.status == 200, r
    assert wait_until(lambda: admin_gw.admin("GET", "/routes/1").status == 404, timeout=6), \
        "PATCH ?ttl=1 did not make the route expire"


# --------------------------------------------------------------------------- races


def test_concurrent_patches_lose_no_update(admin_gw, upstream):
    """Threads, each on its own connection, PATCH different label keys of one route at the
    same time; every label must be there at the end (a read-modify-write race loses some)."""
    threads_n, per_thread = 8, 12
    _put(admin_gw, "/routes/race", admin_route("/race", upstream, labels={"base": "0"}))
    start_index = _get(admin_gw, "/routes/race")["modifiedIndex"]
    barrier = threading.Barrier(threads_n)
    failures = []

    def worker(t):
        try:
            with AdminClient(admin_gw.admin_port, key=admin_gw.admin_key) as c:
                barrier.wait(timeout=10)
                for j in range(per_thread):
                    r = c.request("PATCH", "/routes/race",
                                  {"labels": {"t%d_%d" % (t, j): "v%d" % j}})
                    if r.status != 200:
                        failures.append(r)
        except Exception as e:  # reported below
            failures.append(repr(e))

    ts = [threading.Thread(target=worker, args=(t,)) for t in range(threads_n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert not failures, "PATCHes failed: %r" % failures[:5]
    final = _get(admin_gw, "/routes/race")
    labels = final["value"]["labels"]
    want = {"t%d_%d" % (t, j) for t in range(threads_n) for j in range(per_thread)} | {"base"}
    missing = sorted(want - set(labels))
    assert not missing, "%d of %d PATCHed labels lost: %s" % (len(missing), len(want),
                                                              missing[:20])
    assert final["modifiedIndex"] >= start_index + threads_n * per_thread, \
        "fewer revisions than PATCHes: %r -> %r" % (start_index, final["modifiedIndex"])
    assert get(admin_gw.port, "/race").status == 200


def test_concurrent_patch_and_sub_path_patch(admin_gw):
    """Whole-object and sub-path PATCHes interleaved from two threads keep both effects."""
    _put(admin_gw, "/routes/mix", admin_route("/mix", DEAD, labels={}))
    errors = []

    def whole():
        with AdminClient(admin_gw.admin_port, key=admin_gw.admin_key) as c:
            for i in range(20):
                r = c.request("PATCH", "/routes/mix", {"labels": {"w%d" % i: "1"}})
                if r.status != 200:
                    errors.append(r)

    def sub():
        with AdminClient(admin_gw.admin_port, key=admin_gw.admin_key) as c:
            for i in range(20):
                r = c.request("PATCH", "/routes/mix/desc", "d%d" % i)
                if r.status != 200:
                    errors.append(r)

    ts = [threading.Thread(target=whole), threading.Thread(target=sub)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    assert not errors, errors[:3]
    v = _get(admin_gw, "/routes/mix")["value"]
    assert v["desc"] == "d19", v
    missing = [i for i in range(20) if "w%d" % i not in v["labels"]]
    assert not missing, "labels lost to the sub-path writer: %r" % missing
