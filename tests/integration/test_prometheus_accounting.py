"""Sluice's own accounting families of the prometheus plugin on the real gateway:
sluice_route_cpu_seconds_total{route,service,consumer} (the worker's CPU time on the requests)
and sluice_route_bytes_total{route,service,consumer,direction} (bytes from and to the client).

- bytes equal the access log's $request_length and $bytes_sent for the same requests;
- a route doing more work (gzip of a large body) gets proportionally more CPU than a light one;
- the routes' CPU sums to the worker thread's own CPU time (/proc/<pid>/task/<tid>/stat)
  within 25%;
- plugin_attr.prometheus.route_accounting: false leaves the CPU family out.
"""

import os
import time

from fake_upstream import Fixed
from harness import Client, admin_route, curl, free_port, get, parse_samples, scrape

LOG_FORMAT = "$route_id $request_length $bytes_sent"
CONFIG = {"nginx_config": {"http": {"access_log_buffer": 1, "access_log_format": LOG_FORMAT}}}
# Compressible but not trivially: gzip has real work to do on every request.
BIG = b"".join(b"<p>line %07d of the heavy page, %s</p>\n" % (i, b"x" * (i % 53))
               for i in range(6000))


def _text(gw):
    r = scrape(gw)
    assert r.status == 200, r
    return r.body.decode()


def _family(text, name, **want):
    """{route: value} of the samples of `name` carrying the labels in `want`."""
    out = {}
    for n, lb, v in parse_samples(text):
        d = dict(lb)
        if n == name and all(d.get(k) == w for k, w in want.items()):
            out[d["route"]] = out.get(d["route"], 0) + v
    return out


def _wait_requests(gw, route, count, timeout=5.0):
    deadline = time.monotonic() + timeout
    while True:
        text = _text(gw)
        got = sum(v for n, lb, v in parse_samples(text)
                  if n == "apisix_http_status" and ("route", route) in lb)
        if got >= count or time.monotonic() > deadline:
            return text
        time.sleep(0.05)


def _setup(gw, upstream):
    upstream.route("/big", Fixed(headers=[("Content-Type", "text/html")], body=BIG))
    upstream.route("/small", Fixed(headers=[("Content-Type", "text/plain")], body=b"ok"))
    for rid, uri, plugins in (("heavy", "/big", {"gzip": {}}), ("light", "/small", {})):
        plugins = dict(plugins, prometheus={})
        r = gw.admin("PUT", "/routes/%s" % rid, admin_route(uri, upstream, plugins=plugins))
        assert r.status == 201, r


def _load(gw, path, n, headers=()):
    with Client(gw.port) as c:
        for _ in range(n):
            r = c.get(path, headers=list(headers))
            assert r.status == 200, r


def _thread_cpu(pid):
    """{tid: utime+stime in clock ticks} of the process's threads."""
    out = {}
    for tid in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        out[tid] = int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    return out


def test_bytes_equal_the_access_log(make_gateway, upstream):
    gw = make_gateway(admin=True, config=CONFIG)
    _setup(gw, upstream)
    n = 0
    with Client(gw.port) as c:
        for i in range(5):
            assert c.get("/big", headers=[("Accept-Encoding", "gzip")]).status == 200
            assert c.request("POST", "/small", body=b"y" * (1000 * i)).status == 200
            assert c.get("/small?pad=" + "p" * (i * 300)).status == 200
            # A chunked request body: $request_length counts its framing too.
            c.send(b"POST /small HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                   b"5\r\nhello\r\n%x\r\n%s\r\n0\r\n\r\n" % (100 * i + 1, b"z" * (100 * i + 1)))
            assert c.read_response("POST").status == 200
            n += 1
    text = _wait_requests(gw, "light", 3 * n)
    text = _wait_requests(gw, "heavy", n)
    log = os.path.join(gw.dir, "logs", "access.log")
    deadline = time.monotonic() + 5
    while True:
        with open(log) as f:
            lines = [line.split() for line in f.read().splitlines()]
        if len(lines) >= 4 * n or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    for route in ("heavy", "light"):
        ingress = sum(int(x[1]) for x in lines if x[0] == route)
        egress = sum(int(x[2]) for x in lines if x[0] == route)
        got_in = _family(text, "sluice_route_bytes_total", direction="ingress")[route]
        got_out = _family(text, "sluice_route_bytes_total", direction="egress")[route]
        assert (got_in, got_out) == (ingress, egress), (route, lines)
        assert _family(text, "apisix_bandwidth", type="egress")[route] == egress


def test_cpu_follows_the_work_and_sums_to_the_worker(make_gateway, upstream):
    gw = make_gateway(admin=True, workers=1, config=CONFIG)
    _setup(gw, upstream)
    _load(gw, "/small", 5)  # connections and cells made before the window
    _load(gw, "/big", 5, headers=[("Accept-Encoding", "gzip")])
    _wait_requests(gw, "heavy", 5)
    before_text, before_threads = _text(gw), _thread_cpu(gw.proc.pid)
    n = 300
    _load(gw, "/big", n, headers=[("Accept-Encoding", "gzip")])
    _load(gw, "/small", n)
    _wait_requests(gw, "light", n + 5)
    text = _wait_requests(gw, "heavy", n + 5)
    after_threads = _thread_cpu(gw.proc.pid)
    before = _family(before_text, "sluice_route_cpu_seconds_total")
    after = _family(text, "sluice_route_cpu_seconds_total")
    heavy = after["heavy"] - before["heavy"]
    light = after["light"] - before["light"]
    # Same number of requests; gzip of ~300 KB against a 2-byte body.
    assert heavy > 5 * light > 0, (heavy, light)
    ticks = os.sysconf("SC_CLK_TCK")
    worker = max(after_threads[t] - before_threads.get(t, 0) for t in after_threads) / ticks
    assert worker > 0.15, "too little work to compare: %.3f s" % worker
    ratio = (heavy + light) / worker
    print("heavy %.4f s, light %.4f s, worker thread %.3f s, ratio %.3f"
          % (heavy, light, worker, ratio))
    assert 0.75 <= ratio <= 1.25, "routes %.3f s, worker thread %.3f s" % (heavy + light, worker)


def test_consumer_label(make_gateway, upstream):
    gw = make_gateway(admin=True, config=CONFIG)
    r = gw.admin("PUT", "/consumers", {"username": "tom",
                                       "plugins": {"key-auth": {"key": "secret-key"}}})
    assert r.status in (200, 201), r
    r = gw.admin("PUT", "/routes/1", admin_route("/hello", upstream, plugins={
        "prometheus": {}, "key-auth": {}}))
    assert r.status == 201, r
    for _ in range(3):
        assert get(gw.port, "/hello", headers=[("apikey", "secret-key")]).status == 200
    text = _wait_requests(gw, "1", 3)
    cpu = [v for n, lb, v in parse_samples(text) if n == "sluice_route_cpu_seconds_total"
           and ("consumer", "tom") in lb and ("route", "1") in lb]
    assert len(cpu) == 1 and cpu[0] > 0, text[:3000]
    assert _family(text, "sluice_route_bytes_total", consumer="tom", direction="egress")["1"] > 0


def test_route_accounting_off(make_gateway, upstream):
    config = dict(CONFIG, plugin_attr={"prometheus": {"route_accounting": False}})
    gw = make_gateway(admin=True, config=config)
    _setup(gw, upstream)
    assert get(gw.port, "/small").status == 200
    text = _wait_requests(gw, "light", 1)
    assert "sluice_route_cpu_seconds_total" not in text
    assert _family(text, "sluice_route_bytes_total", direction="egress")["light"] > 0


def test_http2_streams_are_charged(make_gateway, upstream):
    listen = [{"ip": "127.0.0.1", "port": free_port(), "enable_http2": True}]
    gw = make_gateway(admin=True, listen=listen, config=CONFIG)
    _setup(gw, upstream)
    url = "http://127.0.0.1:%d/big" % gw.port
    for _ in range(3):
        r = curl(url, "--http2-prior-knowledge", "-H", "Accept-Encoding: gzip")
        assert r.rc == 0 and r.status == 200, r.stderr
    text = _wait_requests(gw, "heavy", 3)
    assert _family(text, "sluice_route_cpu_seconds_total")["heavy"] > 0, text[:3000]
    assert _family(text, "sluice_route_bytes_total", direction="egress")["heavy"] > 0
