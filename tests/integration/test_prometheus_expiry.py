"""plugin_attr.prometheus.metrics.<family>.expire (APISIX's key, seconds, 0 = never) on the real
gateway: a label set not recorded for `expire` seconds leaves the export (every family of it,
Sluice's accounting ones too), a later request starts it afresh, and its cells are reclaimed so
that max_label_sets admits new label sets again. Values that cannot take effect refuse the
start, naming the key."""

import time

import pytest

from harness import admin_route, get, parse_samples, scrape


def _text(gw):
    r = scrape(gw)
    assert r.status == 200, r
    return r.body.decode()


def _wait_for(gw, pred, timeout=3.0):
    """The exposition once pred(text) holds (requests are recorded in their log phase, which
    may end just after the client has its answer)."""
    deadline = time.monotonic() + timeout
    while True:
        text = _text(gw)
        if pred(text) or time.monotonic() > deadline:
            return text
        time.sleep(0.05)


def _status(text, route):
    return sum(v for name, lb, v in parse_samples(text)
               if name == "apisix_http_status" and ("route", route) in lb)


def _series_of(text, route):
    """The sample names that carry route=<route>."""
    return sorted({name for name, lb, v in parse_samples(text) if ("route", route) in lb})


def _dropped(text):
    return [v for name, lb, v in parse_samples(text)
            if name == "sluice_prometheus_dropped_samples_total"][0]


def _expire(seconds, **extra):
    fams = {f: {"expire": seconds} for f in ("http_status", "http_latency", "bandwidth")}
    return {"plugin_attr": {"prometheus": dict(metrics=fams, **extra)}}


def _routes(gw, upstream, *ids):
    for rid in ids:
        r = gw.admin("PUT", "/routes/%s" % rid,
                     admin_route("/r%s" % rid, upstream, plugins={"prometheus": {}}))
        assert r.status == 201, r


def test_idle_series_leave_and_come_back_fresh(make_gateway, upstream):
    gw = make_gateway(admin=True, config=_expire(1))
    _routes(gw, upstream, 1, 2)
    for _ in range(3):
        assert get(gw.port, "/r1").status == 200
    text = _wait_for(gw, lambda t: _status(t, "1") == 3)
    assert _status(text, "1") == 3, text[:3000]
    fams = _series_of(text, "1")
    for name in ("apisix_http_status", "apisix_http_latency_count", "apisix_bandwidth",
                 "sluice_route_bytes_total", "sluice_route_cpu_seconds_total"):
        assert name in fams, fams
    # Route 2 keeps being recorded while route 1 idles past its second.
    t0 = time.monotonic()
    while time.monotonic() - t0 < 1.3:
        assert get(gw.port, "/r2").status == 200
        time.sleep(0.1)
    text = _text(gw)
    assert _series_of(text, "1") == [], text[:3000]
    assert _status(text, "2") >= 10, text[:3000]
    assert get(gw.port, "/r1").status == 200
    text = _wait_for(gw, lambda t: _status(t, "1") >= 1)
    assert _status(text, "1") == 1, "a fresh series, not the old count: %s" % text[:3000]
    assert gw.alive()


def test_zero_never_expires(make_gateway, upstream):
    gw = make_gateway(admin=True, config=_expire(0))
    _routes(gw, upstream, 1)
    assert get(gw.port, "/r1").status == 200
    assert _status(_wait_for(gw, lambda t: _status(t, "1") == 1), "1") == 1
    time.sleep(1.2)
    assert _status(_text(gw), "1") == 1


def test_expired_cells_make_room_under_the_cap(make_gateway, upstream):
    # One worker, four label sets: a request to a new route needs two (status and route).
    gw = make_gateway(admin=True, workers=1, config=_expire(1, max_label_sets=4))
    _routes(gw, upstream, 1, 2, 3)
    for rid in (1, 2, 3):
        assert get(gw.port, "/r%d" % rid).status == 200
    text = _wait_for(gw, lambda t: _dropped(t) == 1)
    assert _dropped(text) == 1, text[:3000]
    assert _series_of(text, "3") == [], "no family, Sluice's included, past the cap"
    time.sleep(1.2)  # routes 1 and 2 expire; their cells go at the next request's sweep
    assert get(gw.port, "/r3").status == 200
    text = _wait_for(gw, lambda t: _status(t, "3") == 1)
    assert _status(text, "3") == 1, text[:3000]
    assert "sluice_route_cpu_seconds_total" in _series_of(text, "3")
    assert _dropped(text) == 1, "route 3 was admitted, not dropped"
    assert _series_of(text, "1") == [] and _series_of(text, "2") == []


@pytest.mark.parametrize("metrics, message", [
    ({"http_status": {"expire": -1}},
     "plugin_attr.prometheus.metrics.http_status.expire: expected a number of seconds"),
    ({"bandwidth": {"expire": "60"}},
     "plugin_attr.prometheus.metrics.bandwidth.expire: expected a number of seconds"),
    ({"http_status": {"expire": 60}, "http_latency": {"expire": 30}},
     "plugin_attr.prometheus.metrics: http_status.expire and http_latency.expire differ"),
])
def test_start_refused_naming_the_key(make_gateway, metrics, message):
    gw = make_gateway(start=False, config={"plugin_attr": {"prometheus": {"metrics": metrics}}})
    gw.start(wait=False)
    rc = gw.wait_exit(10)
    assert rc is not None and rc != 0, "started with %r:\n%s" % (metrics, gw.log_tail())
    assert message in gw.log_text(), gw.log_tail()
