"""proxy-mirror: APISIX's documented examples against a real gateway (ports changed): the
mirror gets the same request (method, target, headers, body) while the client's answer comes
from the upstream; a dead or slow mirror changes nothing for the client (status, latency,
keep-alive); sample_ratio over many requests; path and path_concat_mode; the per-worker cap
on copies in flight; and the Admin API's 400s."""

import hashlib
import time

import pytest

from fake_upstream import delay
from harness import Client, curl, expect_error, free_port, get, http

ERR = "failed to check the configuration of plugin proxy-mirror err: "


@pytest.fixture
def pm_gw(make_gateway):
    return make_gateway(admin=True, workers=2)


def _doc_put(gw, body_text, path="/apisix/admin/routes/1"):
    r = curl(gw.url(path, port=gw.admin_port), "-X", "PUT",
             "-H", "X-API-KEY: %s" % gw.admin_key, "-d", body_text)
    assert r.rc == 0 and r.status in (200, 201), r
    return r


def _put(gw, conf, up, uri="/hello", rid="1", workers_note=None):
    r = gw.admin("PUT", "/routes/" + rid, {"uri": uri, "plugins": {"proxy-mirror": conf},
                                           "upstream": {"nodes": {up.addr: 1}}})
    assert r.status in (200, 201), r


def _wait_count(up, n, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and len(up.requests) < n:
        time.sleep(0.02)
    return len(up.requests)


def test_doc_enable_on_a_route(pm_gw, make_upstream):
    up, mirror = make_upstream("up"), make_upstream("mirror")
    _doc_put(pm_gw, """
{
    "plugins": {
        "proxy-mirror": {
           "host": "http://%s"
        }
    },
    "upstream": {
        "nodes": {
            "%s": 1
        },
        "type": "roundrobin"
    },
    "uri": "/hello"
}""" % (mirror.addr, up.addr))
    r = curl(pm_gw.url("/hello"))
    assert r.status == 200 and r.json()["upstream"] == "up", r
    assert _wait_count(mirror, 1) == 1
    assert mirror.requests[0].path == "/hello"


def test_doc_mirror_partial_traffic(pm_gw, make_upstream):
    up, mirror = make_upstream("up"), make_upstream("mirror")
    _doc_put(pm_gw, """{
    "id": "traffic-mirror-route",
    "uri": "/get",
    "plugins": {
      "proxy-mirror": {
        "host": "http://%s",
        "sample_ratio": 0.5
      }
    },
    "upstream": {
      "nodes": {
        "%s": 1
      },
      "type": "roundrobin"
    }
  }""" % (mirror.addr, up.addr), path="/apisix/admin/routes")
    n = 400
    with Client(pm_gw.port) as c:
        for _ in range(n):
            assert c.get("/get").status == 200
    time.sleep(0.5)
    got = _wait_count(mirror, n, timeout=1.0)
    # Binomial(400, 0.5): mean 200, sd 10; +-6 sd.
    assert 140 <= got <= 260, got
    assert len(up.requests) == n


def test_the_mirror_gets_the_same_request_with_its_body(pm_gw, make_upstream):
    up, mirror = make_upstream("up"), make_upstream("mirror")
    _put(pm_gw, {"host": "http://" + mirror.addr}, up, uri="/post")
    body = b"x" * 100000 + b"end"
    r = http(pm_gw.port, "POST", "/post?a=1&b=2", headers=[("X-Trace", "t-1"),
                                                           ("Content-Type", "text/plain")],
             body=body)
    assert r.status == 200, r
    assert _wait_count(mirror, 1) == 1
    m, u = mirror.requests[0], up.requests[0]
    assert m.method == "POST" and m.target == "/post?a=1&b=2"
    assert m.header("x-trace") == "t-1" and m.header("content-type") == "text/plain"
    assert m.header("host") == u.header("host")
    m.done.wait(5)
    assert m.body_len == len(body)
    assert m.body_sha256 == hashlib.sha256(body).hexdigest() == u.body_sha256


def test_path_and_path_concat_mode(pm_gw, make_upstream):
    up, mirror = make_upstream("up"), make_upstream("mirror")
    _put(pm_gw, {"host": "http://" + mirror.addr, "path": "/a"}, up)
    assert get(pm_gw.port, "/hello?x=1").status == 200
    _put(pm_gw, {"host": "http://" + mirror.addr, "path": "/a", "path_concat_mode": "prefix"},
         up)
    assert get(pm_gw.port, "/hello?x=1").status == 200
    assert _wait_count(mirror, 2) == 2
    assert sorted(r.target for r in mirror.requests) == ["/a/hello?x=1", "/a?x=1"]


def test_a_dead_mirror_changes_nothing_for_the_client(pm_gw, make_upstream):
    up = make_upstream("up")
    _put(pm_gw, {"host": "http://127.0.0.1:%d" % free_port()}, up)
    with Client(pm_gw.port) as c:
        for _ in range(20):
            r = c.get("/hello")
            assert r.status == 200 and r.json()["upstream"] == "up", r
    assert len(up.requests) == 20


def test_a_slow_mirror_delays_nothing(pm_gw, make_upstream):
    up, mirror = make_upstream("up"), make_upstream("mirror")
    mirror.route("/hello", delay(3))
    _put(pm_gw, {"host": "http://" + mirror.addr}, up)
    t0 = time.monotonic()
    with Client(pm_gw.port) as c:  # keep-alive: the next request is not held either
        for _ in range(10):
            r = c.get("/hello")
            assert r.status == 200, r
    assert time.monotonic() - t0 < 1.5
    assert _wait_count(mirror, 10) == 10  # every copy arrived while the client went on


def test_copies_beyond_the_cap_are_dropped_and_counted(make_gateway, make_upstream):
    gw = make_gateway(admin=True, workers=1)
    up, mirror = make_upstream("up"), make_upstream("mirror")
    mirror.route("/hello", delay(10))
    _put(gw, {"host": "http://" + mirror.addr}, up)
    with Client(gw.port) as c:
        for _ in range(300):
            assert c.get("/hello").status == 200
    assert gw.wait_for_log(r"proxy-mirror: dropped \d+ mirror request\(s\)", timeout=3)
    assert _wait_count(mirror, 256, timeout=5) == 256
    time.sleep(0.3)
    assert len(mirror.requests) == 256  # the cap per worker (MirrorClient::kMaxJobs)


@pytest.mark.parametrize("conf,msg", [
    ({}, 'property "host" is required'),
    ({"host": "127.0.0.1:1986"},
     'property "host" validation failed: failed to match pattern '
     '"^(http(s)?|grpc(s)?):\\\\/\\\\/([\\\\da-zA-Z.-]+|\\\\[[\\\\da-fA-F:]+\\\\])(:\\\\d+)?$" '
     'with "127.0.0.1:1986"'),
    ({"host": "http://a", "path": "a"},
     'property "path" validation failed: failed to match pattern "^/[^?&]+$" with "a"'),
    ({"host": "http://a", "sample_ratio": 0},
     'property "sample_ratio" validation failed: expected 0 to be at least 1e-05'),
    ({"host": "grpc://127.0.0.1:1986"},
     'property "host" validation failed: grpc mirrors are not supported by Sluice'),
])
def test_admin_refuses_bad_confs(pm_gw, conf, msg):
    r = pm_gw.admin("PUT", "/routes/bad", {"uri": "/bad", "plugins": {"proxy-mirror": conf},
                                          "upstream": {"nodes": {"127.0.0.1:1980": 1}}})
    expect_error(r, 400, ERR + msg)


def test_on_a_global_rule(pm_gw, make_upstream):
    up, mirror = make_upstream("up"), make_upstream("mirror")
    r = pm_gw.admin("PUT", "/routes/g", {"uri": "/g", "upstream": {"nodes": {up.addr: 1}}})
    assert r.status in (200, 201), r
    r = pm_gw.admin("PUT", "/global_rules/1",
                    {"plugins": {"proxy-mirror": {"host": "http://" + mirror.addr}}})
    assert r.status in (200, 201), r
    assert get(pm_gw.port, "/g?a=1").status == 200
    assert _wait_count(mirror, 1) == 1
    assert mirror.requests[0].target == "/g?a=1"


def test_an_https_mirror(pm_gw, make_upstream, tmp_path):
    """TLS to the mirror without verification (nginx's proxy_ssl_verify off, APISIX's
    default): Debian's nginx, with a certificate no trusted CA signed, logs the copy."""
    from nginx_tls import NginxTls, make_pki
    (tmp_path / "pki").mkdir()
    pki = make_pki(str(tmp_path / "pki"))
    ng = NginxTls(tmp_path / "nginx", pki, [{"cert": "other-server"}])
    try:
        up = make_upstream("up")
        _put(pm_gw, {"host": "https://" + ng.node()}, up)
        assert get(pm_gw.port, "/hello?tls=1").status == 200
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not ng.access_lines():
            time.sleep(0.05)
        lines = ng.access_lines()
        assert len(lines) == 1 and lines[0].endswith("/hello?tls=1"), lines
    finally:
        ng.stop()


def test_a_request_refused_in_access_is_not_mirrored(pm_gw, make_upstream):
    # nginx's mirror runs after APISIX's access phase: limit-count's 503 is never mirrored.
    up, mirror = make_upstream("up"), make_upstream("mirror")
    r = pm_gw.admin("PUT", "/routes/1", {"uri": "/hello", "upstream": {"nodes": {up.addr: 1}},
                                         "plugins": {"proxy-mirror": {"host": "http://" + mirror.addr},
                                                     "limit-count": {"count": 1, "time_window": 60,
                                                                     "rejected_code": 503}}})
    assert r.status in (200, 201), r
    assert [get(pm_gw.port, "/hello").status for _ in range(3)] == [200, 503, 503]
    assert _wait_count(mirror, 1) == 1
    time.sleep(0.3)
    assert len(mirror.requests) == 1
