"""Upstream health checks (issue: upstream resilience, part 2): active http and tcp probes
take a failing node out within the thresholds and bring it back, passive checks take out a
node answering 500s, every node down still balances across all of them, the
apisix_upstream_status gauge, and the Admin API's refusal of passive-only checks."""

import shutil
import subprocess
import time

from fake_upstream import echo, fixed
from harness import free_port, get, parse_samples, route, scrape

INTERVAL = 1   # seconds between probes (healthy and unhealthy)
TIMEOUT = 1    # probe timeout
FAILURES = 2   # consecutive failures that take a node out
SUCCESSES = 2  # consecutive successes that bring it back


def _checks(kind="http", **active):
    a = {"type": kind, "timeout": TIMEOUT, "http_path": "/health",
         "healthy": {"interval": INTERVAL, "successes": SUCCESSES},
         "unhealthy": {"interval": INTERVAL, "http_failures": FAILURES,
                       "tcp_failures": FAILURES, "timeouts": FAILURES}}
    a.update(active)
    return {"active": a}


def _served_by(gw, path="/p", n=12):
    """Which fake upstreams answered n requests (by name); status != 200 counts as 'err'."""
    names = []
    for _ in range(n):
        r = get(gw.port, path)
        names.append(r.json()["upstream"] if r.status == 200 else "err%d" % r.status)
    return names


def _status(gw):
    """apisix_upstream_status as {(name, port): value}."""
    out = {}
    for name, labels, value in parse_samples(scrape(gw).body.decode()):
        if name == "apisix_upstream_status":
            d = dict(labels)
            out[(d["name"], int(d["port"]))] = value
    return out


def _wait(pred, limit, step=0.05):
    """Seconds until pred() holds, or None after `limit` seconds."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        if pred():
            return time.monotonic() - t0
        time.sleep(step)
    return None


def test_active_http_takes_a_failing_node_out_and_brings_it_back(make_gateway, make_upstream):
    a, b, c = (make_upstream(n) for n in "abc")
    r = route("/p", a, b, c, rid="hc")
    r["upstream"]["checks"] = _checks("http")
    gw = make_gateway(routes=[r], workers=2)
    assert set(_served_by(gw)) == {"a", "b", "c"}
    name = "/apisix/routes/hc"
    assert _status(gw) == {(name, a.port): 1, (name, b.port): 1, (name, c.port): 1}

    b.route("/health", fixed(500))  # b still serves /p, but its probes fail
    t0 = time.monotonic()
    limit = FAILURES * INTERVAL + TIMEOUT + 1
    gone = _wait(lambda: "b" not in _served_by(gw, n=6), limit)
    assert gone is not None, "b still gets requests %.1f s after its probes fail" % limit
    assert "b" not in _served_by(gw, n=20)
    assert _status(gw)[(name, b.port)] == 0
    assert _status(gw)[(name, a.port)] == 1
    assert time.monotonic() - t0 <= limit + 1
    assert "disable upstream node 127.0.0.1:%d" % b.port in gw.log_text()

    b.route("/health", echo())
    back = _wait(lambda: "b" in _served_by(gw, n=6), SUCCESSES * INTERVAL + 1)
    assert back is not None, "b gets no request %d s after its probes succeed again" % (
        SUCCESSES * INTERVAL + 1)
    assert _status(gw)[(name, b.port)] == 1
    assert "enable upstream node 127.0.0.1:%d" % b.port in gw.log_text()


def test_active_tcp_check_of_a_stopped_node(make_gateway, make_upstream):
    a, b, c = (make_upstream(n) for n in "abc")
    up = {"id": "u1", "type": "roundrobin",
          "nodes": {a.addr: 1, b.addr: 1, c.addr: 1}, "checks": _checks("tcp")}
    r = route("/p", rid="tcp", upstream_id="u1")
    gw = make_gateway(routes=[r], upstreams=[up], workers=1)
    name = "/apisix/upstreams/u1"
    assert _wait(lambda: _status(gw).get((name, b.port)) == 1, 2) is not None

    port = b.port
    b.stop()
    limit = FAILURES * INTERVAL + TIMEOUT + 1
    assert _wait(lambda: _status(gw)[(name, port)] == 0, limit) is not None, _status(gw)
    assert set(_served_by(gw, n=12)) == {"a", "c"}  # no request waits on the dead node

    text = scrape(gw).body.decode()
    assert "# HELP apisix_upstream_status Upstream status from health check\n" \
           "# TYPE apisix_upstream_status gauge\n" in text
    assert 'apisix_upstream_status{name="%s",ip="127.0.0.1",port="%d"} 0\n' % (name, port) in text
    promtool = shutil.which("promtool")
    if promtool:  # test_plugins_prometheus.py insists on it; here it is a bonus
        p = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True,
                           text=True, timeout=30)
        out = p.stdout + p.stderr  # lint about APISIX's own names is expected, errors are not
        assert "error" not in out.lower() and "apisix_upstream_status" not in out, out

    b2 = make_upstream("b", port=port)
    back = _wait(lambda: "b" in _served_by(gw, n=6), SUCCESSES * INTERVAL + 1)
    assert back is not None, "the restarted node gets no traffic"
    assert _status(gw)[(name, port)] == 1
    assert b2.port == port


def test_passive_checks_take_a_node_out_and_active_brings_it_back(make_gateway, make_upstream):
    a, b = make_upstream("a"), make_upstream("b")
    b.route("/p", fixed(500))  # real traffic fails on b; its probes of /health succeed
    r = route("/p", a, b, rid="passive")
    r["upstream"]["checks"] = _checks("http")
    r["upstream"]["checks"]["passive"] = {
        "unhealthy": {"http_statuses": [500], "http_failures": 2}}
    gw = make_gateway(routes=[r], workers=1)
    seen = _served_by(gw, n=4)  # round-robin: b answers two of these with 500
    assert seen.count("err500") == 2, seen
    # Out now, and kept out until SUCCESSES probes (>= 1 s apart) bring it back.
    assert _served_by(gw, n=10) == ["a"] * 10
    assert _status(gw)[("/apisix/routes/passive", b.port)] == 0
    back = _wait(lambda: "err500" in _served_by(gw, n=4), SUCCESSES * INTERVAL + 1.5)
    assert back is not None, "active checks never brought b back"
    assert "passive http failures" in gw.log_text()


def test_every_node_down_still_balances_across_all(make_gateway, make_upstream):
    pa, pb = free_port(), free_port()
    r = route("/p", rid="alldown")
    # Nodes are probed at once; an unhealthy one only again after 30 s.
    checks = _checks("tcp")
    checks["active"]["unhealthy"] = {"interval": 30, "tcp_failures": 1}
    r["upstream"] = {"type": "roundrobin", "checks": checks,
                     "nodes": {"127.0.0.1:%d" % pa: 1, "127.0.0.1:%d" % pb: 1}}
    gw = make_gateway(routes=[r], workers=1)
    name = "/apisix/routes/alldown"
    assert _wait(lambda: _status(gw) == {(name, pa): 0, (name, pb): 0}, 3) is not None
    assert get(gw.port, "/p").status == 502  # both tried, neither answers
    make_upstream("a", port=pa)
    # Still marked down (no probe for 30 s), yet the node gets the request.
    assert [get(gw.port, "/p").status for _ in range(4)] == [200] * 4
    assert _status(gw)[(name, pa)] == 0


def test_admin_refuses_passive_only_checks_and_keeps_checks_as_sent(make_gateway):
    gw = make_gateway(admin=True)
    res = gw.admin("PUT", "/upstreams/1", {
        "nodes": {"127.0.0.1:1980": 1}, "checks": {"passive": {"unhealthy": {"http_failures": 1}}}})
    assert res.status == 400, res.body
    assert res.json == {"error_msg": 'invalid configuration: property "checks" validation failed: '
                        'object matches none of the required: ["active"] or ["active","passive"]'}
    bad = gw.admin("PUT", "/upstreams/1", {
        "nodes": {"127.0.0.1:1980": 1}, "checks": {"active": {"healthy": {"successes": 0}}}})
    assert bad.status == 400
    assert "property \"successes\" validation failed: expected 0 to be at least 1" in \
        bad.json["error_msg"]
    checks = {"active": {"type": "tcp", "healthy": {"interval": 2}}}
    ok = gw.admin("PUT", "/upstreams/1", {"nodes": {"127.0.0.1:1980": 1}, "checks": checks})
    assert ok.status in (200, 201), ok.body
    got = gw.admin("GET", "/upstreams/1")
    assert got.json["value"]["checks"] == checks  # no defaults written into it


def test_silent_nodes_with_long_timeouts_do_not_delay_the_others(make_gateway, make_upstream):
    import socket
    silent = []
    for _ in range(4):  # the kernel accepts; nobody ever answers: each probe runs its timeout
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        silent.append(s)
    try:
        a, b = make_upstream("a"), make_upstream("b")
        b.route("/health", fixed(500))
        nodes = {"127.0.0.1:%d" % s.getsockname()[1]: 1 for s in silent}
        nodes.update({a.addr: 1, b.addr: 1})
        r = route("/p", rid="silent")
        r["upstream"] = {"type": "roundrobin", "nodes": nodes, "checks": _checks("http", timeout=5)}
        gw = make_gateway(routes=[r], workers=1)
        t0 = time.monotonic()
        key = ("/apisix/routes/silent", b.port)
        # b fails its 2 probes 1 s apart, while the silent nodes' probes wait out 5 s each.
        assert _wait(lambda: _status(gw).get(key) == 0, FAILURES * INTERVAL + 1.5) is not None
        assert time.monotonic() - t0 < 5, "b's probes waited for the silent nodes'"
        assert _status(gw)[("/apisix/routes/silent", a.port)] == 1
    finally:
        for s in silent:
            s.close()
