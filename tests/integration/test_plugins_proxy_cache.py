"""Issue 24: proxy-cache. APISIX's documented examples (docs/en/latest/plugins/proxy-cache.md,
the route bodies as published, only ports and upstreams replaced), then the behaviour behind
them: hit/miss/expired/bypass/no_cache, cache_method, cache_http_status, PURGE, the memory
zone's bound, the disk zone across a restart, a corrupted file and an unwritable disk served
from the upstream with a log line, 50 concurrent misses sending one upstream request, and a
big object streamed through the disk cache with the gateway's RSS far below its size."""

import json
import os
import time
import zlib
from concurrent.futures import ThreadPoolExecutor

import pytest

from fake_upstream import Delay, Echo, Fixed, download
from harness import (Client, admin_route, build_request, free_port, get, http, iter_body,
                     read_head, wait_until)

STREAM_BYTES = int(os.environ.get("SLUICE_STREAM_BYTES", str(1 << 30)))


def _zones(tmp_path, cache_ttl="2s", disk_size="1G", memory_size="50m", disk_path=None):
    return {"apisix": {"proxy_cache": {
        "cache_ttl": cache_ttl,
        "zones": [
            {"name": "disk_cache_one", "memory_size": "50m", "disk_size": disk_size,
             "disk_path": disk_path or str(tmp_path / "disk_cache_one"), "cache_levels": "1:2"},
            {"name": "memory_cache", "memory_size": memory_size},
        ]}}}


def _gw(make_gateway, tmp_path, **zones):
    return make_gateway(admin=True, config=_zones(tmp_path, **zones))


def _put(gw, rid, uri, up, conf, **extra):
    r = gw.admin("PUT", "/routes/%s" % rid,
                 admin_route(uri, up, plugins={"proxy-cache": conf}, **extra))
    assert r.status in (200, 201), r
    return r


def _status(r):
    return r.header("apisix-cache-status")


# --------------------------------------------------------------- APISIX's documented examples

def test_doc_cache_data_on_disk(make_gateway, upstream, tmp_path):
    gw = _gw(make_gateway, tmp_path)
    r = gw.admin("PUT", "/routes", {
        "id": "proxy-cache-route",
        "uri": "/anything",
        "plugins": {"proxy-cache": {"cache_strategy": "disk"}},
        "upstream": {"type": "roundrobin", "nodes": {upstream.addr: 1}}})
    assert r.status in (200, 201), r
    first = get(gw.port, "/anything")
    assert (first.status, _status(first)) == (200, "MISS"), first
    second = get(gw.port, "/anything")
    assert (second.status, _status(second)) == (200, "HIT"), second
    assert second.body == first.body
    time.sleep(2.2)  # config.yaml's cache_ttl here: 2s (APISIX's default 10s)
    third = get(gw.port, "/anything")
    assert (third.status, _status(third)) == (200, "EXPIRED"), third
    assert len(upstream.requests_for("/anything")) == 2


def test_doc_cache_data_in_memory(make_gateway, upstream, tmp_path):
    gw = _gw(make_gateway, tmp_path)
    r = gw.admin("PUT", "/routes", {
        "id": "proxy-cache-route",
        "uri": "/anything",
        "plugins": {"proxy-cache": {"cache_strategy": "memory", "cache_zone": "memory_cache",
                                    "cache_ttl": 10}},
        "upstream": {"type": "roundrobin", "nodes": {upstream.addr: 1}}})
    assert r.status in (200, 201), r
    assert _status(get(gw.port, "/anything")) == "MISS"
    hit = get(gw.port, "/anything")
    assert (hit.status, _status(hit)) == (200, "HIT"), hit
    assert hit.header("age") is not None
    assert len(upstream.requests_for("/anything")) == 1


def test_doc_cache_responses_conditionally(make_gateway, upstream, tmp_path):
    # The page's `-H "no_cache: 1"` needs nginx's underscores_in_headers on (APISIX's
    # config-default turns it on; Sluice keeps nginx's off unless told).
    cfg = _zones(tmp_path)
    cfg["nginx_config"] = {"http": {"underscores_in_headers": "on"}}
    gw = make_gateway(admin=True, config=cfg)
    r = gw.admin("PUT", "/routes", {
        "id": "proxy-cache-route",
        "uri": "/anything",
        "plugins": {"proxy-cache": {"no_cache": ["$arg_no_cache", "$http_no_cache"]}},
        "upstream": {"type": "roundrobin", "nodes": {upstream.addr: 1}}})
    assert r.status in (200, 201), r
    got = [_status(get(gw.port, "/anything?no_cache=1")) for _ in range(3)]
    # The page shows EXPIRED every time (nginx keeps the key it fetched without storing);
    # Sluice says MISS the first time, when it has never seen the key.
    assert got == ["MISS", "EXPIRED", "EXPIRED"], got
    got = [_status(get(gw.port, "/anything?no_cache=0")) for _ in range(3)]
    assert got == ["MISS", "HIT", "HIT"], got
    got = [_status(get(gw.port, "/anything", headers=[("no_cache", "1")])) for _ in range(2)]
    assert got == ["MISS", "EXPIRED"], got


def test_doc_retrieve_responses_from_cache_conditionally(make_gateway, upstream, tmp_path):
    gw = _gw(make_gateway, tmp_path)
    r = gw.admin("PUT", "/routes", {
        "id": "proxy-cache-route",
        "uri": "/anything",
        "plugins": {"proxy-cache": {"cache_bypass": ["$arg_bypass", "$http_bypass"]}},
        "upstream": {"type": "roundrobin", "nodes": {upstream.addr: 1}}})
    assert r.status in (200, 201), r
    r = get(gw.port, "/anything?bypass=1")
    assert (r.status, _status(r)) == (200, "BYPASS"), r
    r = get(gw.port, "/anything?bypass=0")
    assert (r.status, _status(r)) == (200, "MISS"), r
    r = get(gw.port, "/anything", headers=[("bypass", "1")])
    assert (r.status, _status(r)) == (200, "BYPASS"), r


def test_doc_cache_for_502_and_504(make_gateway, tmp_path):
    # The page's node is an unreachable address (a 504 after the connect timeout); here a port
    # nothing listens on gives the other status the page names, 502, at once.
    gw = _gw(make_gateway, tmp_path, cache_ttl="60s")
    r = gw.admin("PUT", "/routes", {
        "id": "proxy-cache-route",
        "uri": "/timeout",
        "plugins": {"proxy-cache": {}},
        "upstream": {"type": "roundrobin", "nodes": {"127.0.0.1:%d" % free_port(): 1}}})
    assert r.status in (200, 201), r
    got = [http(gw.port, "HEAD", "/timeout") for _ in range(4)]
    assert [(x.status, _status(x)) for x in got] == \
        [(502, "MISS"), (502, "HIT"), (502, "HIT"), (502, "HIT")], got
    body = get(gw.port, "/timeout")
    assert (body.status, _status(body)) == (502, "HIT") and b"502" in body.body, body


# --------------------------------------------------------------- behaviour


def test_a_plugins_own_502_is_not_stored(make_gateway, upstream, tmp_path):
    """Only an upstream's answer, or the gateway's after trying the upstream, fills an entry:
    a later plugin's refusal with 502 (limit-count here; api-breaker's break answer likewise)
    is not stored, and the next request after the refusal ends is an ordinary MISS."""
    gw = _gw(make_gateway, tmp_path, cache_ttl="60s")
    r = gw.admin("PUT", "/routes/1", admin_route("/lc/*", upstream, plugins={
        "proxy-cache": {},
        "limit-count": {"count": 1, "time_window": 2, "rejected_code": 502,
                        "key_type": "constant", "key": "all"}}))
    assert r.status in (200, 201), r
    assert _status(get(gw.port, "/lc/a")) == "MISS"  # counted: the window is now full
    refused = get(gw.port, "/lc/b")
    assert (refused.status, _status(refused)) == (502, "MISS"), refused
    time.sleep(2.2)  # the window ends
    again = get(gw.port, "/lc/b")
    assert (again.status, _status(again)) == (200, "MISS"), again
    assert len(upstream.requests_for("/lc/b")) == 1




@pytest.mark.parametrize("strategy", ["memory", "disk"])
def test_hit_miss_expired_and_purge(make_gateway, upstream, tmp_path, strategy):
    gw = _gw(make_gateway, tmp_path, cache_ttl="1s")
    conf = {"cache_strategy": strategy}
    if strategy == "memory":
        conf.update(cache_zone="memory_cache", cache_ttl=1)
    _put(gw, 1, "/p", upstream, conf)
    a = get(gw.port, "/p")
    b = get(gw.port, "/p")
    assert (_status(a), _status(b)) == ("MISS", "HIT"), (a, b)
    assert a.body == b.body and a.header("content-type") == b.header("content-type")
    assert b.header("content-length") == str(len(b.body))
    time.sleep(2.2)
    c = get(gw.port, "/p")
    # APISIX's memory strategy: the shared dict dropped the entry, a MISS; nginx: EXPIRED.
    assert _status(c) == ("MISS" if strategy == "memory" else "EXPIRED"), c
    purge = http(gw.port, "PURGE", "/p")
    assert purge.status == 200, purge
    assert http(gw.port, "PURGE", "/p").status == 404
    assert _status(get(gw.port, "/p")) == "MISS"
    assert len(upstream.requests_for("/p")) == 3


def test_head_is_served_from_a_get_entry(make_gateway, upstream, tmp_path):
    gw = _gw(make_gateway, tmp_path)
    _put(gw, 1, "/h", upstream, {"cache_strategy": "disk"})
    with Client(gw.port) as c:
        c.send(build_request("HEAD", "/h"))
        r = c.read_response(method="HEAD")
        assert (r.status, _status(r)) == (200, "MISS"), r
    assert upstream.requests_for("/h")[0].method == "GET"  # nginx's proxy_cache_convert_head
    g = get(gw.port, "/h")
    assert _status(g) == "HIT" and json.loads(g.body)["method"] == "GET", g
    with Client(gw.port) as c:  # a HEAD hit: the head, no body, the connection reusable
        c.send(build_request("HEAD", "/h"))
        r = c.read_response(method="HEAD")
        assert (r.status, _status(r), r.body) == (200, "HIT", b""), r
        assert r.header("content-length") == str(len(g.body)), r
        c.send(build_request("GET", "/h"))
        assert c.read_response().body == g.body


def test_cache_method_and_status(make_gateway, upstream, tmp_path):
    gw = _gw(make_gateway, tmp_path)
    upstream.route("/s500", Fixed(500, body=b"err"))
    upstream.route("/s404", Fixed(404, body=b"nf"))
    _put(gw, 1, "/s*", upstream, {"cache_strategy": "memory", "cache_zone": "memory_cache",
                                  "cache_method": ["POST"], "cache_http_status": [200, 404]})
    # GET is not a cached method here: APISIX's memory strategy answers MISS and stores nothing.
    assert [_status(get(gw.port, "/sget")) for _ in range(2)] == ["MISS", "MISS"]
    posts = [_status(http(gw.port, "POST", "/s404")) for _ in range(2)]
    assert posts == ["MISS", "HIT"], posts
    errs = [http(gw.port, "POST", "/s500") for _ in range(2)]
    assert [(r.status, _status(r)) for r in errs] == [(500, "MISS"), (500, "MISS")], errs


def test_cache_control_and_hide_cache_headers(make_gateway, upstream, tmp_path):
    gw = _gw(make_gateway, tmp_path)
    upstream.route("/cc", Fixed(200, headers=[("Cache-Control", "max-age=60"),
                                              ("Expires", "Thu, 01 Jan 2099 00:00:00 GMT")],
                                body=b"cc"))
    upstream.route("/nostore", Fixed(200, headers=[("Cache-Control", "no-store")], body=b"n"))
    _put(gw, 1, "/*", upstream, {"cache_strategy": "memory", "cache_zone": "memory_cache",
                                 "cache_control": True, "hide_cache_headers": True})
    a, b = get(gw.port, "/cc"), get(gw.port, "/cc")
    assert (_status(a), _status(b)) == ("MISS", "HIT")
    for r in (a, b):
        assert r.header("cache-control") is None and r.header("expires") is None, r
    r = get(gw.port, "/cc", headers=[("Cache-Control", "no-cache")])
    assert _status(r) == "BYPASS", r
    r = get(gw.port, "/cc", headers=[("Cache-Control", "min-fresh=600")])
    assert _status(r) == "STALE", r  # 60 s of freshness left, 600 asked
    assert [_status(get(gw.port, "/nostore")) for _ in range(2)] == ["MISS", "MISS"]


def test_memory_zone_stays_within_memory_size(make_gateway, upstream, tmp_path):
    gw = _gw(make_gateway, tmp_path, memory_size="64k")
    upstream.route("/m/*", Fixed(200, body=b"z" * 20000))
    _put(gw, 1, "/m/*", upstream, {"cache_strategy": "memory", "cache_zone": "memory_cache"})
    for i in range(6):  # 6 x 20 KB into 64 KiB: the first ones are evicted
        assert _status(get(gw.port, "/m/%d" % i)) == "MISS"
    assert _status(get(gw.port, "/m/5")) == "HIT"
    assert _status(get(gw.port, "/m/0")) == "MISS"
    upstream.route("/m/big", Fixed(200, body=b"b" * 100000))
    assert [_status(get(gw.port, "/m/big")) for _ in range(2)] == ["MISS", "MISS"]


def test_disk_cache_survives_a_restart(make_gateway, upstream, tmp_path):
    gw = _gw(make_gateway, tmp_path, cache_ttl="60s")
    _put(gw, 1, "/d", upstream, {})
    a = get(gw.port, "/d")
    assert _status(a) == "MISS"
    gw.restart()
    b = get(gw.port, "/d")
    assert (_status(b), b.body) == ("HIT", a.body), b
    assert len(upstream.requests_for("/d")) == 1


def _files(root):
    out = []
    for d, _, names in os.walk(root):
        if os.path.basename(d) != "tmp":
            out += [os.path.join(d, n) for n in names]
    return out


def test_corrupted_file_is_a_miss_with_a_log_line(make_gateway, upstream, tmp_path):
    gw = _gw(make_gateway, tmp_path, cache_ttl="60s")
    _put(gw, 1, "/c", upstream, {})
    a = get(gw.port, "/c")
    assert _status(get(gw.port, "/c")) == "HIT"
    files = _files(tmp_path / "disk_cache_one")
    assert len(files) == 1, files
    with open(files[0], "r+b") as f:
        f.seek(-5, os.SEEK_END)
        f.write(b"XXXXX")
    b = get(gw.port, "/c")
    assert (b.status, _status(b)) == (200, "MISS"), b
    assert json.loads(b.body)["path"] == json.loads(a.body)["path"]
    assert wait_until(lambda: "is corrupt" in gw.log_text()), gw.log_text()[-2000:]
    assert _status(get(gw.port, "/c")) == "HIT"  # stored again


def test_unwritable_disk_serves_from_upstream_with_a_log_line(make_gateway, upstream, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    gw = _gw(make_gateway, tmp_path, disk_path=str(blocker / "cache"))
    _put(gw, 1, "/u", upstream, {})
    got = [get(gw.port, "/u") for _ in range(2)]
    assert [(r.status, _status(r)) for r in got] == [(200, "MISS"), (200, "MISS")], got
    assert wait_until(lambda: "the response is not cached" in gw.log_text())


def test_tiny_disk_size_serves_from_upstream_with_a_log_line(make_gateway, upstream, tmp_path):
    gw = _gw(make_gateway, tmp_path, disk_size="4k")
    upstream.route("/t", Fixed(200, body=b"q" * 20000))
    _put(gw, 1, "/t", upstream, {})
    got = [get(gw.port, "/t") for _ in range(2)]
    assert [(r.status, len(r.body)) for r in got] == [(200, 20000), (200, 20000)], got
    assert [_status(r) for r in got] == ["MISS", "MISS"]
    assert wait_until(lambda: "over the zone's disk_size" in gw.log_text())


@pytest.mark.parametrize("strategy", ["memory", "disk"])
def test_stampede_sends_one_upstream_request(make_gateway, make_upstream, tmp_path, strategy):
    up = make_upstream("slow")
    up.route("/st", Delay(0.8, Echo()))
    gw = make_gateway(admin=True, workers=2, config=_zones(tmp_path, cache_ttl="60s"))
    conf = {"cache_strategy": strategy}
    if strategy == "memory":
        conf["cache_zone"] = "memory_cache"
    _put(gw, 1, "/st", up, conf)
    with ThreadPoolExecutor(50) as pool:
        got = list(pool.map(lambda _: get(gw.port, "/st", timeout=20), range(50)))
    assert all(r.status == 200 for r in got), [r.status for r in got]
    assert len({r.body for r in got}) == 1, "every request must get the one fetched body"
    assert len(up.requests_for("/st")) == 1
    statuses = sorted(_status(r) for r in got)
    assert statuses.count("MISS") == 1 and statuses.count("HIT") == 49, statuses


def test_stampede_on_an_uncacheable_answer_goes_upstream(make_gateway, make_upstream, tmp_path):
    up = make_upstream("slow")
    up.route("/un", Delay(0.3, Fixed(200, headers=[("Cache-Control", "no-store")], body=b"u")))
    gw = make_gateway(admin=True, workers=2, config=_zones(tmp_path))
    _put(gw, 1, "/un", up, {"cache_strategy": "memory", "cache_zone": "memory_cache"})
    with ThreadPoolExecutor(10) as pool:
        got = list(pool.map(lambda _: get(gw.port, "/un", timeout=20), range(10)))
    assert [r.body for r in got] == [b"u"] * 10
    assert len(up.requests_for("/un")) >= 2  # the waiters went upstream themselves


def test_a_waiter_gives_up_after_5_s(make_gateway, make_upstream, tmp_path):
    # nginx's proxy_cache_lock_timeout (5 s): a request waiting on a slow fetch of its key
    # goes upstream itself.
    up = make_upstream("slow")
    up.route("/lk", Delay(5.8, Echo()))
    gw = make_gateway(admin=True, config=_zones(tmp_path))
    _put(gw, 1, "/lk", up, {"cache_strategy": "memory", "cache_zone": "memory_cache"})
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(get, gw.port, "/lk", timeout=30)
        time.sleep(0.3)
        t0 = time.monotonic()
        second = pool.submit(get, gw.port, "/lk", timeout=30).result()
        took = time.monotonic() - t0
        assert first.result().status == 200
    assert second.status == 200 and _status(second) == "MISS", second
    assert took > 10, "the waiter went upstream after its 5 s and waited 5.8 s more"
    assert len(up.requests_for("/lk")) == 2
    assert wait_until(lambda: "the fetch in flight took over 5000 ms" in gw.log_text())


def test_plugin_check_texts(make_gateway, upstream, tmp_path):
    gw = _gw(make_gateway, tmp_path)
    r = gw.admin("PUT", "/routes/1", admin_route("/x", upstream, plugins={
        "proxy-cache": {"cache_zone": "nope"}}))
    assert r.status == 400, r
    assert r.json["error_msg"].endswith("proxy-cache err: cache_zone nope not found"), r
    r = gw.admin("PUT", "/routes/1", admin_route("/x", upstream, plugins={
        "proxy-cache": {"cache_strategy": "memory"}}))
    assert r.json["error_msg"].endswith(
        "invalid or empty cache_zone for cache_strategy: memory"), r


@pytest.mark.streaming
def test_big_object_streams_through_the_disk_cache(make_gateway, upstream, tmp_path):
    gw = _gw(make_gateway, tmp_path, cache_ttl="600s", disk_size="4G")
    upstream.route("/big", download(STREAM_BYTES))
    _put(gw, 1, "/big", upstream, {})
    get(gw.port, "/warm")  # first request: pools, lazy allocations
    hwm0 = gw.vm_hwm_kib()
    for want in ("MISS", "HIT"):
        with Client(gw.port, timeout=120) as c:
            c.send(build_request("GET", "/big"))
            resp = read_head(c.reader)
            assert (resp.status, _status(resp)) == (200, want), resp
            n, crc, paused = 0, 0, False
            for piece in iter_body(c.reader, resp):
                n += len(piece)
                crc = zlib.crc32(piece, crc)
                if not paused and n >= STREAM_BYTES // 4:
                    paused = True
                    time.sleep(1.0)  # a stalled reader: the hit must not read ahead whole
        req = upstream.requests_for("/big")[0]
        assert n == STREAM_BYTES and crc == req.sent_crc32
    assert len(upstream.requests_for("/big")) == 1
    growth = gw.vm_hwm_kib() - hwm0
    print("gateway VmHWM grew by %d KiB over a miss and a hit of %d MiB" % (growth,
                                                                          STREAM_BYTES >> 20))
    assert growth < 64 * 1024 and growth * 1024 < STREAM_BYTES // 4, \
        "gateway peak RSS grew by %d KiB for a %d-byte object" % (growth, STREAM_BYTES)


def test_on_a_service_and_a_global_rule(make_gateway, upstream, tmp_path):
    gw = _gw(make_gateway, tmp_path)
    mem = {"cache_strategy": "memory", "cache_zone": "memory_cache"}
    r = gw.admin("PUT", "/services/s1", {"plugins": {"proxy-cache": mem},
                                         "upstream": admin_route("/", upstream)["upstream"]})
    assert r.status in (200, 201), r
    assert gw.admin("PUT", "/routes/1", {"uri": "/svc", "service_id": "s1"}).status in (200, 201)
    assert [_status(get(gw.port, "/svc")) for _ in range(2)] == ["MISS", "HIT"]
    r = gw.admin("PUT", "/global_rules/1", {"plugins": {"proxy-cache": dict(
        mem, cache_key=["global-", "$uri"])}})
    assert r.status in (200, 201), r
    assert gw.admin("PUT", "/routes/2", admin_route("/g", upstream)).status in (200, 201)
    assert [_status(get(gw.port, "/g")) for _ in range(2)] == ["MISS", "HIT"]
    # The route's own instance and the global one: the first to run (the global rule's) acts.
    assert [_status(get(gw.port, "/svc?x=1")) for _ in range(2)] == ["MISS", "HIT"]
    assert len(upstream.requests_for("/g")) == 1
