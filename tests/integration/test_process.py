"""Issue 2, point 2: the process — run, workers, listeners, signals, warnings."""

import os
import signal
import subprocess
import threading
import time

import pytest

import harness
from fake_upstream import delay, fixed
from harness import Client, can_connect, curl, free_port, get, route


def test_hello_through_curl(make_gateway, upstream):
    """The issue's 'done when': curl -i through the gateway returns the upstream's answer."""
    upstream.route("/hello", fixed(200, [("Content-Type", "text/plain")], b"hello world\n"))
    gw = make_gateway(routes=[route("/hello", upstream, rid="1")])
    r = curl(gw.url("/hello"))
    assert r.rc == 0, r
    assert r.status == 200
    assert r.body == b"hello world\n"
    assert r.header("content-type") == "text/plain"
    assert (r.header("server") or "").lower().startswith("sluice/"), r.headers


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signal_exits_zero(make_gateway, upstream, sig):
    gw = make_gateway(routes=[route("/*", upstream)], check_exit=False)
    assert get(gw.port, "/x").status == 200
    t0 = time.monotonic()
    rc = gw.stop(sig=sig, timeout=10)
    assert rc == 0, "exit code %r\n%s" % (rc, gw.log_tail())
    assert time.monotonic() - t0 < 5, "an idle gateway should exit promptly"


def test_shutdown_finishes_in_flight_request(make_gateway, upstream):
    upstream.route("/slow", delay(1.5, fixed(200, body=b"slow answer")))
    gw = make_gateway(routes=[route("/*", upstream)], workers=2, graceful_shutdown_timeout=10,
                      check_exit=False)
    result = {}

    def client():
        try:
            result["resp"] = get(gw.port, "/slow", timeout=15)
        except Exception as e:  # reported below
            result["error"] = repr(e)

    t = threading.Thread(target=client)
    t.start()
    assert upstream.wait_for(lambda u: u.requests_for("/slow"), timeout=5), "request not sent"
    gw.signal(signal.SIGTERM)

    # New connections are refused while the in-flight request is still running.
    deadline = time.monotonic() + 1.0
    while can_connect(gw.port) and time.monotonic() < deadline:
        time.sleep(0.05)
    refused_while_in_flight = not can_connect(gw.port) and t.is_alive()

    t.join(timeout=15)
    assert "error" not in result, result
    assert result["resp"].status == 200
    assert result["resp"].body == b"slow answer"
    rc = gw.wait_exit(timeout=10)
    assert rc == 0, "exit code %r" % rc
    assert refused_while_in_flight, "gateway kept accepting after SIGTERM"


def test_shutdown_closes_idle_keepalive_connections(make_gateway, upstream):
    """An idle keep-alive client must not hold the process until graceful_shutdown_timeout."""
    gw = make_gateway(routes=[route("/*", upstream)], graceful_shutdown_timeout=20,
                      check_exit=False)
    with Client(gw.port) as c:
        assert c.get("/a").status == 200  # the connection stays open, idle
        t0 = time.monotonic()
        gw.signal(signal.SIGTERM)
        rc = gw.wait_exit(timeout=10)
        assert rc == 0, "exit code %r after %.1fs" % (rc, time.monotonic() - t0)
        assert time.monotonic() - t0 < 5
        assert c.closed_by_peer(timeout=2)


def test_shutdown_serves_a_connection_accepted_before_its_request(make_gateway, upstream):
    """A client that connected just before the drain and sends its request after it began is
    answered (Connection: close), not closed unanswered (a reset, when the request is already
    on its way); a connection that never sends closes after the short grace."""
    gw = make_gateway(routes=[route("/*", upstream)], graceful_shutdown_timeout=20,
                      check_exit=False)
    with Client(gw.port) as c, Client(gw.port) as silent:
        assert c.get("/warm").status == 200  # both connections are accepted by now
        with Client(gw.port) as fresh:
            time.sleep(0.2)
            t0 = time.monotonic()
            gw.signal(signal.SIGTERM)
            assert gw.wait_for_log(r"signal 15: shutting down", timeout=5)
            time.sleep(0.3)
            r = fresh.get("/late")
            assert r.status == 200, r
            assert (r.header("connection") or "").lower() == "close", r.headers
            assert fresh.closed_by_peer(timeout=2)
        assert c.closed_by_peer(timeout=2)  # it had served a request: closed at once
        assert silent.closed_by_peer(timeout=3)
        rc = gw.wait_exit(timeout=10)
        assert rc == 0, "exit code %r" % rc
        assert time.monotonic() - t0 < 5, "a silent fresh connection held the drain"


def test_shutdown_is_bounded_by_graceful_timeout(make_gateway, upstream):
    upstream.route("/stuck", delay(60))
    gw = make_gateway(routes=[route("/*", upstream)], graceful_shutdown_timeout=1,
                      check_exit=False)
    threading.Thread(target=lambda: _swallow(get, gw.port, "/stuck", timeout=30),
                     daemon=True).start()
    assert upstream.wait_for(lambda u: u.requests_for("/stuck"), timeout=5)
    t0 = time.monotonic()
    gw.signal(signal.SIGTERM)
    rc = gw.wait_exit(timeout=10)
    took = time.monotonic() - t0
    assert rc is not None, "still running 10 s after SIGTERM with graceful_shutdown_timeout 1"
    assert rc == 0, "exit code %r" % rc
    assert took < 4, "took %.1fs with graceful_shutdown_timeout 1" % took


def _swallow(fn, *a, **kw):
    try:
        fn(*a, **kw)
    except Exception:
        pass


def test_sighup_reloads_and_keeps_connections(make_gateway, upstream):
    gw = make_gateway(routes=[route("/old", upstream)], workers=2)
    pid = gw.pid
    with Client(gw.port) as c:
        assert c.get("/old").status == 200
        gw.routes = [route("/old", upstream), route("/new", upstream)]
        gw.generation += 1
        gw.write_apisix_text(gw.apisix_text())
        gw.signal(signal.SIGHUP)
        assert gw.wait_probe(gw.generation, timeout=5), gw.log_tail()
        assert gw.alive() and gw.pid == pid
        # The keep-alive connection opened before SIGHUP still serves, with the new routes.
        assert c.get("/old").status == 200
        assert c.get("/new").status == 200
    assert get(gw.port, "/new").status == 200


def test_sighup_rereads_config_yaml(make_gateway, upstream):
    """A key added to config.yaml is seen on SIGHUP (it is warned about, being unknown)."""
    gw = make_gateway(routes=[route("/*", upstream)])
    assert "frobnicate_after_hup" not in gw.log_text()
    cfg = gw.config_dict()
    cfg["apisix"]["frobnicate_after_hup"] = 1
    gw.write_config(cfg)
    gw.signal(signal.SIGHUP)
    assert gw.wait_for_log(r"frobnicate_after_hup", timeout=5), gw.log_tail()
    assert gw.alive()
    assert get(gw.port, "/x").status == 200


def test_unsupported_keys_are_named_in_a_warning(make_gateway, upstream):
    gw = make_gateway(routes=[route("/*", upstream)], config={
        "apisix": {"frobnicate_level": 3},
        "made_up_section": {"a": 1},
    })
    assert get(gw.port, "/x").status == 200
    log = gw.log_text().splitlines()
    for key in ("frobnicate_level", "made_up_section"):
        lines = [ln for ln in log if key in ln]
        assert lines, "no log line names %r:\n%s" % (key, gw.log_tail())
        assert any("warn" in ln.lower() for ln in lines), lines


@pytest.mark.parametrize("workers", [1, 4])
def test_worker_threads(make_gateway, upstream, workers):
    gw = make_gateway(routes=[route("/*", upstream)], workers=workers)
    # The listeners accept (into the kernel's backlog) a moment before the worker threads
    # run: on a loaded machine the count may need that moment.
    deadline = time.monotonic() + 5
    while gw.task_count() < workers + 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert gw.task_count() >= workers + 1, "%d tasks for %d workers" % (gw.task_count(), workers)
    for i in range(20):
        assert get(gw.port, "/w%d" % i).status == 200


def test_worker_processes_auto(make_gateway, upstream):
    gw = make_gateway(routes=[route("/*", upstream)], workers="auto")
    deadline = time.monotonic() + 5
    while gw.task_count() < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert gw.task_count() >= 2
    for i in range(10):
        assert get(gw.port, "/w%d" % i).status == 200


def test_listens_on_every_node_listen_entry(make_gateway, upstream):
    p1, p2, p3 = free_port(), free_port(), free_port()
    gw = make_gateway(routes=[route("/*", upstream)], workers=2,
                      listen=[p1, {"ip": "127.0.0.1", "port": p2}, {"port": p3}])
    for p in (p1, p2, p3):
        r = get(p, "/echo")
        assert r.status == 200, "port %d: %r" % (p, r)
        assert r.json()["path"] == "/echo"


def test_missing_config_file_fails_fast(tmp_path):
    if not os.path.exists(harness.SLUICE_BIN):
        pytest.fail("gateway binary %s does not exist" % harness.SLUICE_BIN)
    missing = tmp_path / "nope" / "config.yaml"
    p = subprocess.run([harness.SLUICE_BIN, "run", "-c", str(missing)], capture_output=True,
                       timeout=10)
    assert p.returncode != 0
    assert str(missing) in (p.stderr + p.stdout).decode(errors="replace")


def test_foreground_logs_to_stderr(make_gateway, upstream):
    """Something is logged at info level (startup, listeners) and the process stays up."""
    gw = make_gateway(routes=[route("/*", upstream)], log_level="info")
    assert gw.wait_for_log(r"\S", timeout=3), "nothing on stderr at error_log_level info"
    assert gw.alive()


def test_version_matches_server_header(make_gateway, upstream):
    p = subprocess.run([harness.SLUICE_BIN, "version"], capture_output=True, text=True,
                       timeout=10)
    assert p.returncode == 0, p.stderr
    version = p.stdout.split()[-1]
    gw = make_gateway(routes=[route("/*", upstream)])
    assert get(gw.port, "/v").header("server") == "sluice/%s" % version


def test_shutdown_deadline_with_requests_still_waiting_exits_zero(make_gateway, upstream):
    """Connections still waiting on an upstream at the graceful-shutdown deadline are closed
    on the worker, and the process exits 0 (it once crashed freeing them twice)."""
    upstream.route("/hang", delay(30, fixed(200, body=b"late")))
    gw = make_gateway(routes=[route("/*", upstream)], graceful_shutdown_timeout=1,
                      check_exit=False)
    clients = [Client(gw.port) for _ in range(3)]
    for c in clients:
        c.send(b"GET /hang HTTP/1.1\r\nHost: x\r\n\r\n")
    time.sleep(0.3)
    rc = gw.stop(sig=signal.SIGTERM, timeout=10)
    assert rc == 0, "exit code %r\n%s" % (rc, gw.log_tail())
    assert "still busy at the shutdown deadline" in gw.log_tail()
    for c in clients:
        assert c.closed_by_peer()
        c.close()
