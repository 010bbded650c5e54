"""The status API (apisix.status): APISIX's GET /status and GET /status/ready on their own
listener, for load balancers and Kubernetes probes. /status says the process answers;
/status/ready says every worker serves the configuration published last (503 with APISIX's
"worker id: N has not received configuration" otherwise). Off unless configured."""

import json
import os
import signal
import socket
import time

import pytest

from harness import admin_route, free_port, get, http

STATUS = {"status": "ok"}


def status_config(port, ip="127.0.0.1"):
    return {"apisix": {"status": {"ip": ip, "port": port}}}


def ask(port, path, method="GET", timeout=5):
    r = http(port, method, path, timeout=timeout)
    body = json.loads(r.body) if r.body else None
    return r, body


def wait_ready(port, timeout=15):
    deadline = time.monotonic() + timeout
    while True:
        r, body = ask(port, "/status/ready")
        if r.status == 200 or time.monotonic() > deadline:
            return r, body
        time.sleep(0.05)


def test_both_endpoints_answer_as_apisix(make_gateway, upstream):
    port = free_port()
    gw = make_gateway(admin=True, workers=2, config=status_config(port))
    assert gw.admin("PUT", "/routes/1", admin_route("/hello", upstream)).status == 201
    for path in ("/status", "/status/ready", "/apisix/status", "/apisix/status/ready"):
        r, body = ask(port, path)
        assert r.status == 200, (path, r)
        assert body == STATUS, (path, r)
        assert r.header("content-type") == "application/json", r
    r, body = ask(port, "/status/ready", method="HEAD")
    assert r.status == 200 and r.body == b"", r
    assert gw.wait_for_log(r"listening on 127\.0\.0\.1:%d \(status\)" % port, timeout=1), \
        gw.log_tail()


def test_other_paths_and_methods_are_refused(make_gateway):
    port = free_port()
    make_gateway(admin=True, config=status_config(port))
    for path in ("/", "/statusx", "/status/readyx", "/apisix/admin/routes", "/status/"):
        r, _ = ask(port, path)
        assert r.status == 404, (path, r)
    for method in ("POST", "PUT", "DELETE"):
        r, _ = ask(port, "/status/ready", method=method)
        assert r.status == 405, (method, r)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"GARBAGE\r\n\r\n")
        assert s.recv(100).startswith(b"HTTP/1.1 400 "), "a bad request gets 400"


def test_off_unless_configured(make_gateway):
    gw = make_gateway(admin=True)
    assert get(gw.port, "/status").status == 404  # the proxy port routes it like any path
    assert "(status)" not in gw.log_text()


def test_ready_waits_for_the_first_configuration_from_etcd(etcd, make_gateway, upstream):
    """A node whose etcd is down at its first start has no configuration to serve: /status
    answers (the process is up), /status/ready does not until etcd does."""
    etcd.stop_all()
    port = free_port()
    config = {"deployment": {"role_traditional": {"config_provider": "etcd"},
                             "etcd": {"host": list(etcd.urls), "timeout": 3}}}
    config.update(status_config(port))
    gw = make_gateway(admin=True, workers=2, config=config)
    r, body = ask(port, "/status")
    assert r.status == 200 and body == STATUS, r
    r, body = ask(port, "/status/ready")
    assert r.status == 503, r
    assert body == {"status": "error",
                    "error": "worker id: 0 has not received configuration"}, body
    etcd.start_all()
    r, body = wait_ready(port, timeout=20)
    assert r.status == 200 and body == STATUS, (r, gw.log_tail())
    assert gw.admin("PUT", "/routes/1", admin_route("/hello", upstream)).status == 201
    r, body = ask(port, "/status/ready")
    assert r.status == 200, r


def test_ready_follows_every_change(make_gateway, upstream):
    """Each write is in force on every worker before its 2xx, so a probe right after it finds
    every worker on the newest configuration."""
    port = free_port()
    gw = make_gateway(admin=True, workers=2, config=status_config(port))
    for i in range(20):
        assert gw.admin("PUT", "/routes/%d" % i, admin_route("/r%d" % i, upstream)).status == 201
        r, body = ask(port, "/status/ready")
        assert r.status == 200 and body == STATUS, (i, r)


def test_a_port_taken_refuses_the_start(make_gateway):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        gw = make_gateway(admin=True, config=status_config(port), start=False,
                          check_exit=False)
        gw.start(wait=False)
        assert gw.wait_exit(10) not in (None, 0), gw.log_tail()
        assert "apisix.status" in gw.log_text(), gw.log_tail()


@pytest.mark.parametrize("bad, words", [
    ({"port": 0}, "apisix.status.port"),
    ({"port": "x"}, "apisix.status.port"),
    ({"ip": "not-an-ip"}, "apisix.status.ip"),
    ("7085", "apisix.status"),
])
def test_bad_settings_refuse_the_start(make_gateway, bad, words):
    gw = make_gateway(admin=True, config={"apisix": {"status": bad}}, start=False,
                      check_exit=False)
    gw.start(wait=False)
    assert gw.wait_exit(10) not in (None, 0), gw.log_tail()
    assert words in gw.log_text(), gw.log_tail()


def test_the_status_port_goes_to_the_new_process_at_a_binary_upgrade(make_gateway):
    port = free_port()
    old = make_gateway(admin=True, config=status_config(port))
    start = old.log_size()
    old.signal(signal.SIGUSR2)
    m = old.wait_for_log(r"SIGUSR2: started \S+ as pid (\d+)", timeout=10, start=start)
    assert m, old.log_tail()
    new_pid = int(m.group(1))
    try:
        assert old.wait_for_log(r"listening on 127\.0\.0\.1:%d \(status\)" % port, timeout=20,
                                start=start), old.log_tail()
        assert "apisix.status" not in old.log_text()[start:], old.log_tail()
        assert old.stop() == 0
        r, body = wait_ready(port)
        assert r.status == 200 and body == STATUS, r
    finally:
        try:
            os.kill(new_pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.kill(new_pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
