"""Issue 20, item 2: a second gateway may not silently share a running one's ports.

SO_REUSEPORT lets any process of the same user join a listening port, which split traffic and
Admin API calls between two gateways with different configurations. A gateway now refuses to
start when another process listens on any port it would listen on (proxy, admin, prometheus
export), naming the port and the process, and the running one keeps serving everything.

The planned hand-over (binary upgrade) is SIGUSR2 to the running gateway: it starts its binary
again with the listening sockets and the store's lock inherited; the operator then stops the old
one with SIGTERM. Requests and Admin API calls keep working throughout.
"""

import os
import re
import signal
import threading
import time

import pytest

from harness import admin_route, free_port, get

ROUTE_PATH = "/ports"


def serves_everything(gw, n=20):
    """n proxied requests on fresh connections and n admin listings, all from `gw`'s config."""
    statuses = [get(gw.port, ROUTE_PATH, timeout=5).status for _ in range(n)]
    assert statuses == [200] * n, statuses
    for _ in range(n):
        r = gw.admin("GET", "/routes")
        assert r.status == 200 and r.data["total"] == 1, r


@pytest.mark.parametrize("shared", ["proxy", "admin", "prometheus"])
def test_a_second_gateway_on_a_held_port_is_refused(make_gateway, upstream, shared):
    first = make_gateway(admin=True, workers=2)
    assert first.admin("PUT", "/routes/1", admin_route(ROUTE_PATH, upstream)).status == 201
    serves_everything(first, 3)

    second = make_gateway(
        admin=True, workers=2, start=False, check_exit=False,
        listen=[first.port] if shared == "proxy" else None,
        admin_listen={"ip": "127.0.0.1",
                      "port": first.admin_port if shared == "admin" else free_port()})
    if shared == "prometheus":
        second.prometheus_port = first.prometheus_port
    port = {"proxy": first.port, "admin": first.admin_port,
            "prometheus": first.prometheus_port}[shared]
    second.start(wait=False)
    rc = second.wait_exit(20)
    assert rc not in (None, 0), "the second gateway started on a held port:\n" + \
        second.log_tail()
    want = r"address already in use: [0-9.]+:%d is held by pid %d \(sluice\)" % (
        port, first.pid)
    assert re.search(want, second.log_text()), second.log_tail()
    # It never joined: every request and admin call still reaches the first gateway.
    serves_everything(first)


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open("/proc/%d/stat" % pid) as f:
        return f.read().split()[2] != "Z"


def _stop_pid(pid, timeout=15):
    if _pid_alive(pid):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while _pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if _pid_alive(pid):
        os.kill(pid, signal.SIGKILL)


def test_sigusr2_hands_the_ports_and_store_to_a_new_process(make_gateway, upstream):
    old = make_gateway(admin=True, workers=2)
    assert old.admin("PUT", "/routes/1", admin_route(ROUTE_PATH, upstream)).status == 201
    failures, done, count = [], threading.Event(), [0]

    def load():
        # No retries: a connection the old process accepted is answered even when its request
        # arrives after the drain began (ClientConn::on_drain), so nothing here may fail.
        while not done.is_set():
            try:
                r = get(old.port, ROUTE_PATH, timeout=5)
                if r.status != 200:
                    failures.append(r.status)
            except (OSError, ValueError, EOFError) as e:
                failures.append(repr(e))
            count[0] += 1

    t = threading.Thread(target=load)
    t.start()
    new_pid = None
    try:
        start = old.log_size()
        old.signal(signal.SIGUSR2)
        m = old.wait_for_log(r"SIGUSR2: started \S+ as pid (\d+)", timeout=10, start=start)
        assert m, (old.alive(), old.proc.poll(), old.log_tail())
        new_pid = int(m.group(1))
        assert old.wait_for_log(r"took over 2 listening socket\(s\)", timeout=20, start=start), \
            old.log_tail()
        assert old.wait_for_log(r"configuration \d+ published", timeout=20, start=start)
        # Both serve now. Only the new one takes Admin API writes: the old one answers 503,
        # so no write lands in a process about to exit without the new one seeing it.
        written = []
        for i in range(10):
            r = old.admin("PUT", "/routes/w%d" % i, admin_route("/w%d" % i, upstream))
            assert r.status in (201, 503), r
            if r.status == 201:
                written.append("w%d" % i)
            else:
                assert "handing over to a new process (pid %d)" % new_pid in r.error_msg, r
        print("admin writes taken by the new process: %d of 10" % len(written))
        time.sleep(0.5)
        assert old.stop() == 0  # SIGTERM: the old one drains and exits
        assert _pid_alive(new_pid), old.log_tail()
        time.sleep(0.5)
    finally:
        done.set()
        t.join()
    try:
        assert failures == [], (failures, count[0])
        print("requests during the hand-over: %d" % count[0])
        assert count[0] > 20
        # The new process owns the ports, the store and its lock: it reads and writes.
        assert get(old.port, ROUTE_PATH).status == 200
        r = old.admin("GET", "/routes")
        assert r.status == 200, r
        assert sorted(x["value"]["id"] for x in r.data["list"]) == sorted(["1"] + written), r
        assert old.admin("PUT", "/routes/2", admin_route("/after", upstream)).status == 201
        assert get(old.port, "/after").status == 200
        log = old.log_text()
        assert "data directory" not in log or "in use" not in log, log
        assert not re.search(r"address already in use", log), log
    finally:
        if new_pid:
            _stop_pid(new_pid)


def test_a_successor_that_fails_to_start_leaves_the_old_one_in_charge(make_gateway, upstream):
    old = make_gateway(admin=True)
    assert old.admin("PUT", "/routes/1", admin_route(ROUTE_PATH, upstream)).status == 201
    with open(old.config_path, "a") as f:
        f.write("\nnginx_config: [not, a, map]\n")  # the new process reads this and exits
    start = old.log_size()
    old.signal(signal.SIGUSR2)
    m = old.wait_for_log(r"the new process \(pid (\d+)\) exited \(status 1\)", timeout=20,
                         start=start)
    assert m, old.log_tail()
    assert not _pid_alive(int(m.group(1)))
    serves_everything(old, 5)
    assert old.admin("PUT", "/routes/2", admin_route("/two", upstream)).status == 201
