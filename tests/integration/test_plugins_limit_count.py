"""limit-count, local policy: the fixed window, the X-RateLimit-* headers, rejected_code and
rejected_msg, keys (remote_addr, var, var_combination, constant), groups, node-wide counting
over several workers, counters kept across unrelated route edits and reset by conf changes,
the standalone file, and the published benchmark route."""

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from harness import Client, admin_route, get, get_from, route, sample_value, scrape


def _put(gw, rid, uri, up, conf, **extra):
    r = gw.admin("PUT", "/routes/%s" % rid, admin_route(uri, up, plugins={"limit-count": conf},
                                                        **extra))
    assert r.status in (200, 201), r
    return r


def _quota(r):
    return (r.status, r.header("x-ratelimit-limit"), r.header("x-ratelimit-remaining"))


def test_count_2_gives_200_200_503_503_with_headers(make_gateway, upstream):
    gw = make_gateway(admin=True, workers=2)
    _put(gw, 1, "/hello", upstream, {"count": 2, "time_window": 60})
    got = [get(gw.port, "/hello") for _ in range(4)]
    assert [_quota(r) for r in got] == [(200, "2", "1"), (200, "2", "0"),
                                        (503, "2", "0"), (503, "2", "0")], got
    resets = [int(r.header("x-ratelimit-reset")) for r in got]
    assert 59 <= resets[0] <= 60, resets
    assert all(0 <= x <= 60 for x in resets), resets
    assert resets == sorted(resets, reverse=True), "reset grows within a window: %r" % resets
    assert json.loads(got[0].body)["path"] == "/hello", "200s must be the upstream's answers"
    assert len(upstream.requests_for("/hello")) == 2, "rejected requests reached the upstream"


def test_rejected_code_and_msg(make_gateway, upstream):
    gw = make_gateway(admin=True)
    _put(gw, 1, "/r", upstream, {"count": 1, "time_window": 60, "rejected_code": 429,
                                 "rejected_msg": "Requests are too frequent, try later."})
    assert get(gw.port, "/r").status == 200
    r = get(gw.port, "/r")
    assert r.status == 429, r
    assert json.loads(r.body) == {"error_msg": "Requests are too frequent, try later."}, r
    assert _quota(r) == (429, "1", "0"), r


def test_show_limit_quota_header_false(make_gateway, upstream):
    gw = make_gateway(admin=True)
    _put(gw, 1, "/q", upstream, {"count": 1, "time_window": 60,
                                 "show_limit_quota_header": False})
    got = [get(gw.port, "/q") for _ in range(2)]
    assert [r.status for r in got] == [200, 503], got
    for r in got:
        for h in ("x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"):
            assert r.header(h) is None, "%s sent with show_limit_quota_header false: %r" % (h, r)


def test_window_starts_at_the_first_request(make_gateway, upstream):
    gw = make_gateway(admin=True)
    _put(gw, 1, "/w", upstream, {"count": 1, "time_window": 2})
    assert _quota(get(gw.port, "/w")) == (200, "1", "0")
    # Taken once the answer is here: the window started before this, however long the
    # request took on a loaded machine, so 1 s later at most 1 s of it is left.
    t0 = time.monotonic()
    time.sleep(max(0.0, t0 + 1.0 - time.monotonic()))
    r = get(gw.port, "/w")
    assert r.status == 503, r
    assert int(r.header("x-ratelimit-reset")) <= 1, "1 s into a 2 s window: %r" % r
    time.sleep(max(0.0, t0 + 2.2 - time.monotonic()))
    r = get(gw.port, "/w")
    assert _quota(r) == (200, "1", "0"), "a new window did not start after 2.2 s: %r" % r
    assert get(gw.port, "/w").status == 503


def test_local_policy_is_node_wide_across_workers(make_gateway, upstream):
    gw = make_gateway(admin=True, workers=4)
    _put(gw, 1, "/nw", upstream, {"count": 100, "time_window": 60})

    def one(_):
        return get(gw.port, "/nw", timeout=20).status  # a fresh connection each time

    with ThreadPoolExecutor(16) as ex:
        statuses = list(ex.map(one, range(400)))
    assert statuses.count(200) == 100 and statuses.count(503) == 300, \
        "expected exactly 100 admitted: %d x 200, %d x 503, others %r" % (
            statuses.count(200), statuses.count(503),
            [s for s in statuses if s not in (200, 503)])
    assert len(upstream.requests_for("/nw")) == 100


def test_keep_alive_connections_share_the_counter(make_gateway, upstream):
    gw = make_gateway(admin=True, workers=4)
    _put(gw, 1, "/ka", upstream, {"count": 20, "time_window": 60})
    results = []
    lock = threading.Lock()

    def worker():
        with Client(gw.port) as c:
            for _ in range(10):
                s = c.get("/ka").status
                with lock:
                    results.append(s)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert len(results) == 80
    assert results.count(200) == 20 and results.count(503) == 60, results


def test_counter_survives_unrelated_edits_and_resets_on_conf_change(make_gateway, upstream):
    gw = make_gateway(admin=True, workers=2)
    conf = {"count": 3, "time_window": 60}
    _put(gw, 1, "/e", upstream, conf, desc="first")
    assert _quota(get(gw.port, "/e")) == (200, "3", "2")
    r = gw.admin("PATCH", "/routes/1", {"desc": "second"})
    assert r.status == 200, r
    assert _quota(get(gw.port, "/e")) == (200, "3", "1"), "PATCH desc reset the counter"
    r = gw.admin("PATCH", "/routes/1", {"name": "renamed", "labels": {"k": "v"}})
    assert r.status == 200, r
    _put(gw, 1, "/e", upstream, conf, desc="third")  # a whole PUT, same plugin conf
    assert _quota(get(gw.port, "/e")) == (200, "3", "0"), "an edit reset the counter"
    assert _quota(get(gw.port, "/e")) == (503, "3", "0")
    r = gw.admin("PATCH", "/routes/1/plugins/limit-count/count", 4)
    assert r.status == 200, r
    assert _quota(get(gw.port, "/e")) == (200, "4", "3"), "a conf change kept the old counter"
    assert _quota(get(gw.port, "/e")) == (200, "4", "2")


def test_each_route_has_its_own_counter(make_gateway, upstream):
    gw = make_gateway(admin=True)
    conf = {"count": 1, "time_window": 60}
    _put(gw, 1, "/one", upstream, conf)
    _put(gw, 2, "/two", upstream, conf)
    assert [get(gw.port, p).status for p in ("/one", "/two", "/one", "/two")] == \
        [200, 200, 503, 503]


def test_group_shares_one_counter_between_routes(make_gateway, upstream):
    gw = make_gateway(admin=True, workers=2)
    conf = {"count": 3, "time_window": 60, "group": "shared"}
    _put(gw, 1, "/g1", upstream, conf)
    _put(gw, 2, "/g2", upstream, conf)
    got = [get(gw.port, p) for p in ("/g1", "/g2", "/g1", "/g2", "/g1")]
    assert [_quota(r) for r in got] == [(200, "3", "2"), (200, "3", "1"), (200, "3", "0"),
                                        (503, "3", "0"), (503, "3", "0")], got


def test_default_key_is_remote_addr(make_gateway, upstream):
    gw = make_gateway(admin=True)
    _put(gw, 1, "/ip", upstream, {"count": 1, "time_window": 60})
    assert get_from("127.0.0.1", gw.port, "/ip").status == 200
    assert get_from("127.0.0.1", gw.port, "/ip").status == 503
    r = get_from("127.0.0.2", gw.port, "/ip")
    assert _quota(r) == (200, "1", "0"), "another client address shares the counter: %r" % r
    assert get_from("127.0.0.2", gw.port, "/ip").status == 503


def test_key_type_var_counts_per_header_value(make_gateway, upstream):
    gw = make_gateway(admin=True, workers=2)
    _put(gw, 1, "/v", upstream, {"count": 2, "time_window": 60, "key_type": "var",
                                 "key": "http_x_user"})

    def as_(user):
        return get(gw.port, "/v", headers={"X-User": user}).status

    assert [as_("alice"), as_("alice"), as_("alice")] == [200, 200, 503]
    assert [as_("bob"), as_("bob"), as_("bob")] == [200, 200, 503]
    assert as_("carol") == 200


def test_key_var_missing_falls_back_to_remote_addr(make_gateway, upstream):
    """APISIX: "The value of the configured key is empty, use client IP instead"."""
    gw = make_gateway(admin=True)
    _put(gw, 1, "/fb", upstream, {"count": 1, "time_window": 60, "key_type": "var",
                                  "key": "http_x_user"})
    assert get_from("127.0.0.1", gw.port, "/fb").status == 200
    assert get_from("127.0.0.1", gw.port, "/fb").status == 503
    assert get_from("127.0.0.2", gw.port, "/fb").status == 200, \
        "requests without the header must be counted per client address"
    assert get_from("127.0.0.1", gw.port, "/fb", headers={"X-User": "u"}).status == 200


def test_key_type_var_combination(make_gateway, upstream):
    gw = make_gateway(admin=True)
    _put(gw, 1, "/vc", upstream, {"count": 1, "time_window": 60,
                                  "key_type": "var_combination",
                                  "key": "$http_x_a $http_x_b"})

    def with_(a, b):
        return get(gw.port, "/vc", headers={"X-A": a, "X-B": b}).status

    assert [with_("1", "1"), with_("1", "1")] == [200, 503]
    assert [with_("1", "2"), with_("1", "2")] == [200, 503]
    assert [with_("2", "1"), with_("2", "1")] == [200, 503]


def test_key_type_constant_is_one_counter_for_all(make_gateway, upstream):
    gw = make_gateway(admin=True)
    _put(gw, 1, "/c", upstream, {"count": 2, "time_window": 60, "key_type": "constant",
                                 "key": "everyone"})
    got = [get_from("127.0.0.1", gw.port, "/c", headers={"X-User": "a"}),
           get_from("127.0.0.2", gw.port, "/c", headers={"X-User": "b"}),
           get_from("127.0.0.3", gw.port, "/c", headers={"X-User": "c"})]
    assert [_quota(r) for r in got] == [(200, "2", "1"), (200, "2", "0"), (503, "2", "0")], got


def test_standalone_file_route_with_limit_count(make_gateway, upstream):
    gw = make_gateway(workers=2, routes=[route("/file", upstream, rid="f", plugins={
        "limit-count": {"count": 2, "time_window": 60, "rejected_code": 429}})])
    got = [get(gw.port, "/file") for _ in range(3)]
    assert [_quota(r) for r in got] == [(200, "2", "1"), (200, "2", "0"), (429, "2", "0")], got


def test_benchmark_route_verbatim(make_gateway, upstream):
    """The route of the published benchmark articles (scenario 2), as they PUT it."""
    gw = make_gateway(admin=True, workers=1)
    text = ('{"uri":"/hello","plugins":{"limit-count":{"count":2000000000000,"time_window":60,'
            '"rejected_code":503,"key":"remote_addr"},"prometheus":{}},"upstream":{"type":'
            '"roundrobin","nodes":{"127.0.0.1:%d":1}}}' % upstream.port)
    r = gw.admin("PUT", "/routes/1", raw_body=text.encode())
    assert r.status == 201, r
    assert r.json["value"]["plugins"]["limit-count"]["count"] == 2000000000000, r
    got = [get(gw.port, "/hello") for _ in range(3)]
    assert [_quota(x) for x in got] == [(200, "2000000000000", "1999999999999"),
                                        (200, "2000000000000", "1999999999998"),
                                        (200, "2000000000000", "1999999999997")], got
    line = ('apisix_http_status{code="200",route="1",matched_uri="/hello",matched_host="",'
            'service="",consumer="",node="127.0.0.1"}')
    # A request is counted in its log phase, which may end just after the client has the
    # response: poll until the count is there, then assert it exact.
    deadline = time.monotonic() + 3
    while True:
        m = scrape(gw)
        assert m.status == 200, m
        value = sample_value(m.body.decode(), line)
        if (value or 0) >= 3 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert value == 3, m.body.decode()[:3000]


@pytest.mark.parametrize("method", ["POST", "HEAD", "DELETE"])
def test_every_method_is_counted(make_gateway, upstream, method):
    gw = make_gateway(admin=True)
    _put(gw, 1, "/m", upstream, {"count": 1, "time_window": 60})
    with Client(gw.port) as c:
        body = b"x" if method == "POST" else None
        assert c.request(method, "/m", body=body).status == 200
        r = c.request(method, "/m", body=body)
        assert r.status == 503 and r.header("x-ratelimit-remaining") == "0", r


def test_group_conf_mismatched_is_refused_and_the_group_is_one_counter(make_gateway, upstream):
    # APISIX's limit-count check_schema remembers the first conf of a group and refuses a
    # different one with "group conf mismatched" (apisix/plugins/limit-count/init.lua).
    gw = make_gateway(admin=True, workers=2)
    conf = {"count": 2, "time_window": 60, "group": "gm", "rejected_code": 429}
    _put(gw, 1, "/gm1", upstream, conf)
    r = gw.admin("PUT", "/routes/2", admin_route("/gm2", upstream, plugins={
        "limit-count": dict(conf, count=3)}))
    assert r.status == 400, r
    assert r.json["error_msg"] == ("failed to check the configuration of plugin limit-count "
                                   "err: group conf mismatched"), r
    # Defaults filled in compare equal (APISIX compares after the schema fills them).
    _put(gw, 2, "/gm2", upstream, dict(conf, key="remote_addr", policy="local"))
    got = [get(gw.port, p).status for p in ("/gm1", "/gm2", "/gm1", "/gm2")]
    assert got == [200, 200, 429, 429], got
    # On a service too: the same group is the same counter.
    r = gw.admin("PUT", "/services/s1", {"plugins": {"limit-count": conf}})
    assert r.status in (200, 201), r
    r = gw.admin("PUT", "/routes/3", admin_route("/gm3", upstream, service_id="s1"))
    assert r.status in (200, 201), r
    assert get(gw.port, "/gm3").status == 429
