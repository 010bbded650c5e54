"""limit-count with policy redis and redis-cluster against real redis-server processes: one
counter shared by two gateways, AUTH and SELECT, redis down (500 "failed to limit count", or
admitted with allow_degradation), redis back, and a three-node cluster."""

import json
import os
import shutil
import signal
import socket
import subprocess
import time

import pytest

from harness import admin_route, free_port, get, wait_port

REDIS_SERVER = shutil.which("redis-server")
REDIS_CLI = shutil.which("redis-cli")


class RedisServer:
    """One redis-server on 127.0.0.1 in its own directory; stopped by PID."""

    def __init__(self, workdir, port=None, extra=()):
        if not REDIS_SERVER or not REDIS_CLI:
            pytest.fail("redis-server/redis-cli not installed (apt-get install redis-server): "
                        "the redis policy cannot be tested", pytrace=False)
        self.port = port or free_port()
        self.dir = str(workdir)
        os.makedirs(self.dir, exist_ok=True)
        self.extra = list(extra)
        self.proc = None
        self.password = None
        for i, a in enumerate(self.extra):
            if a == "--requirepass":
                self.password = self.extra[i + 1]
        self.start()

    def start(self):
        log = open(os.path.join(self.dir, "redis-%d.log" % self.port), "ab")
        self.proc = subprocess.Popen(
            [REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self.dir] + self.extra,
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
        log.close()
        deadline = time.monotonic() + 10
        while True:
            if self.proc.poll() is not None:
                pytest.fail("redis-server exited with %s:\n%s" % (self.proc.returncode,
                                                                 self.log()), pytrace=False)
            if wait_port(self.port, timeout=0.2) and self.cli("PING").strip() == "PONG":
                return
            if time.monotonic() > deadline:
                pytest.fail("redis-server on %d not ready:\n%s" % (self.port, self.log()),
                            pytrace=False)
            time.sleep(0.05)

    def log(self):
        try:
            with open(os.path.join(self.dir, "redis-%d.log" % self.port)) as f:
                return f.read()[-3000:]
        except OSError:
            return ""

    def cli(self, *args, db=None):
        cmd = [REDIS_CLI, "-p", str(self.port)]
        if self.password:
            cmd += ["--no-auth-warning", "-a", self.password]
        if db is not None:
            cmd += ["-n", str(db)]
        p = subprocess.run(cmd + list(args), capture_output=True, text=True, timeout=10)
        return p.stdout

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)


@pytest.fixture
def make_redis(tmp_path):
    servers = []

    def make(**kw):
        s = RedisServer(tmp_path / ("redis%d" % len(servers)), **kw)
        servers.append(s)
        return s

    yield make
    for s in servers:
        s.stop()


def _redis_conf(redis, **kw):
    c = {"count": 3, "time_window": 60, "policy": "redis", "redis_host": "127.0.0.1",
         "redis_port": redis.port, "redis_timeout": 5000}  # generous: a loaded CI machine
    c.update(kw)
    return c


def _put(gw, rid, uri, up, conf):
    r = gw.admin("PUT", "/routes/%s" % rid, admin_route(uri, up, plugins={"limit-count": conf}))
    assert r.status in (200, 201), r


def _quota(r):
    return (r.status, r.header("x-ratelimit-limit"), r.header("x-ratelimit-remaining"))


def test_two_gateways_share_one_redis_counter(make_redis, make_gateway, upstream):
    redis = make_redis()
    g1 = make_gateway(admin=True, workers=2)
    g2 = make_gateway(admin=True, workers=2)
    for g in (g1, g2):
        _put(g, 1, "/r", upstream, _redis_conf(redis))
    got = [get(g.port, "/r") for g in (g1, g2, g1, g2, g1, g2)]
    assert [r.status for r in got] == [200, 200, 200, 503, 503, 503], got
    assert [_quota(r) for r in got[:4]] == [(200, "3", "2"), (200, "3", "1"),
                                            (200, "3", "0"), (503, "3", "0")], got
    assert len(upstream.requests_for("/r")) == 3
    reset = int(got[0].header("x-ratelimit-reset"))
    assert 0 < reset <= 60, got[0]


def test_redis_window_expires(make_redis, make_gateway, upstream):
    redis = make_redis()
    gw = make_gateway(admin=True)
    _put(gw, 1, "/w", upstream, _redis_conf(redis, count=1, time_window=1))
    assert [get(gw.port, "/w").status for _ in range(2)] == [200, 503]
    time.sleep(1.3)
    assert _quota(get(gw.port, "/w")) == (200, "1", "0"), "redis window did not expire"


def test_redis_password_and_database(make_redis, make_gateway, upstream):
    redis = make_redis(extra=["--requirepass", "s3cret-pw"])
    gw = make_gateway(admin=True)
    _put(gw, 1, "/auth", upstream, _redis_conf(redis, count=2, redis_password="s3cret-pw",
                                               redis_database=3))
    _put(gw, 2, "/wrong", upstream, _redis_conf(redis, count=2, redis_password="nope"))
    _put(gw, 3, "/none", upstream, _redis_conf(redis, count=2))
    assert [_quota(get(gw.port, "/auth")) for _ in range(3)] == [
        (200, "2", "1"), (200, "2", "0"), (503, "2", "0")]
    assert int(redis.cli("DBSIZE", db=3).strip() or 0) >= 1, \
        "no key in redis database 3: redis_database not SELECTed"
    assert int(redis.cli("DBSIZE", db=0).strip() or 0) == 0, "keys written to database 0"
    for path in ("/wrong", "/none"):
        r = get(gw.port, path)
        assert r.status == 500, "%s: %r" % (path, r)
        assert json.loads(r.body) == {"error_msg": "failed to limit count"}, r
    assert not upstream.requests_for("/wrong") and not upstream.requests_for("/none")


def test_redis_down_is_500_or_degrades(make_redis, make_gateway, upstream):
    redis = make_redis()
    gw = make_gateway(admin=True, workers=2)
    _put(gw, 1, "/strict", upstream, _redis_conf(redis, count=5))
    _put(gw, 2, "/lenient", upstream, _redis_conf(redis, count=5, allow_degradation=True))
    assert _quota(get(gw.port, "/strict")) == (200, "5", "4")
    assert _quota(get(gw.port, "/lenient")) == (200, "5", "4")
    redis.stop()
    for _ in range(3):
        r = get(gw.port, "/strict")
        assert r.status == 500, r
        assert json.loads(r.body) == {"error_msg": "failed to limit count"}, r
        assert r.body.endswith(b"\n"), r
        r = get(gw.port, "/lenient")
        assert r.status == 200, "allow_degradation true must admit: %r" % r
        assert json.loads(r.body)["path"] == "/lenient"
    assert len(upstream.requests_for("/strict")) == 1
    assert len(upstream.requests_for("/lenient")) == 4

    redis.start()  # same port, empty data: the gateway reconnects
    deadline = time.monotonic() + 5
    while True:
        r = get(gw.port, "/strict")
        if r.status == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert _quota(r) == (200, "5", "4"), "redis back, still refused: %r" % r


def test_redis_unreachable_host_times_out_quickly(make_gateway, upstream):
    """A redis that accepts nothing (a closed port): the 500 comes at once, not after a hang."""
    gw = make_gateway(admin=True)
    port = free_port()
    _put(gw, 1, "/x", upstream, {"count": 1, "time_window": 60, "policy": "redis",
                                 "redis_host": "127.0.0.1", "redis_port": port,
                                 "redis_timeout": 500})
    t0 = time.monotonic()
    r = get(gw.port, "/x")
    assert r.status == 500 and json.loads(r.body) == {"error_msg": "failed to limit count"}, r
    assert time.monotonic() - t0 < 3, "took %.1fs" % (time.monotonic() - t0)


def test_redis_timeout_on_a_server_that_never_answers(make_gateway, upstream):
    """A listener that accepts (the kernel's backlog) and never replies: redis_timeout (ms)
    bounds the wait; then 500, or the request is admitted with allow_degradation."""
    hole = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    hole.bind(("127.0.0.1", 0))
    hole.listen(64)
    try:
        gw = make_gateway(admin=True)
        conf = {"count": 1, "time_window": 60, "policy": "redis", "redis_host": "127.0.0.1",
                "redis_port": hole.getsockname()[1], "redis_timeout": 300}
        _put(gw, 1, "/hole", upstream, conf)
        _put(gw, 2, "/hole-ok", upstream, dict(conf, allow_degradation=True))
        t0 = time.monotonic()
        r = get(gw.port, "/hole", timeout=20)
        took = time.monotonic() - t0
        assert r.status == 500 and json.loads(r.body) == {"error_msg": "failed to limit count"}, r
        assert 0.25 <= took < 3, "redis_timeout 300 ms, the answer took %.2fs" % took
        t0 = time.monotonic()
        r = get(gw.port, "/hole-ok", timeout=20)
        took = time.monotonic() - t0
        assert r.status == 200, r
        assert took < 3, "allow_degradation answer took %.2fs" % took
    finally:
        hole.close()


# --------------------------------------------------------------------------- redis-cluster


def _cluster_supported():
    p = subprocess.run([REDIS_SERVER, "--version"], capture_output=True, text=True)
    m = p.stdout.split("v=")[1].split(".")[0] if "v=" in p.stdout else "0"
    return int(m) >= 7  # CLUSTER ADDSLOTSRANGE is a Redis 7 command


def _make_cluster(make_redis):
    if not REDIS_SERVER or not REDIS_CLI:
        pytest.fail("redis-server/redis-cli not installed", pytrace=False)
    if not _cluster_supported():
        pytest.skip("redis-server older than 7: no CLUSTER ADDSLOTSRANGE")
    nodes = []
    for _ in range(3):
        port, bus = free_port(), free_port()  # the bus port: not port+10000 (may be > 65535)
        node = make_redis(port=port, extra=[
            "--cluster-enabled", "yes", "--cluster-config-file", "nodes-%d.conf" % port,
            "--cluster-port", str(bus), "--cluster-node-timeout", "2000"])
        node.bus_port = bus
        nodes.append(node)
    ranges = [(0, 5460), (5461, 10922), (10923, 16383)]
    for node, (a, b) in zip(nodes, ranges):
        out = node.cli("CLUSTER", "ADDSLOTSRANGE", str(a), str(b))
        assert out.strip() == "OK", "ADDSLOTSRANGE on %d: %r" % (node.port, out)
    for node in nodes[1:]:
        out = nodes[0].cli("CLUSTER", "MEET", "127.0.0.1", str(node.port), str(node.bus_port))
        assert out.strip() == "OK", out
    deadline = time.monotonic() + 20
    while True:
        states = [n.cli("CLUSTER", "INFO") for n in nodes]
        if all("cluster_state:ok" in s and "cluster_known_nodes:3" in s for s in states):
            return nodes
        if time.monotonic() > deadline:
            pytest.fail("redis cluster never reached cluster_state:ok: %r" % states,
                        pytrace=False)
        time.sleep(0.1)


def test_redis_cluster_policy(make_redis, make_gateway, upstream):
    nodes = _make_cluster(make_redis)
    conf = {"count": 2, "time_window": 60, "policy": "redis-cluster", "key_type": "var",
            "key": "http_x_user", "redis_timeout": 5000, "redis_cluster_name": "sluice-test",
            # one seed node only: the others are learnt from the cluster
            "redis_cluster_nodes": ["127.0.0.1:%d" % nodes[1].port]}
    g1 = make_gateway(admin=True, workers=2)
    g2 = make_gateway(admin=True, workers=2)
    for g in (g1, g2):
        _put(g, 1, "/rc", upstream, conf)
    users = ["u%d" % i for i in range(8)]  # keys that hash to slots on different nodes
    for user in users:
        got = [get(g.port, "/rc", headers={"X-User": user}) for g in (g1, g2, g1)]
        assert [_quota(r) for r in got] == [(200, "2", "1"), (200, "2", "0"),
                                            (503, "2", "0")], (user, got)
    keys = [int(n.cli("DBSIZE").strip() or 0) for n in nodes]
    assert sum(keys) >= len(users), "counters not in the cluster: %r" % keys
    assert sum(1 for k in keys if k) >= 2, "all keys on one node (no slot routing?): %r" % keys
