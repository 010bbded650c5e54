"""Sluice on a secured etcd: TLS (server verification, mutual TLS, a wrong CA, verify off) and
etcd authentication (user/password, a wrong password, tokens that expire).

Each test starts its own one-member etcd (Debian's etcd-server) on free loopback ports, with
certificates made by `openssl` for the test, and stops it by PID at the end.
"""

import json
import os
import subprocess
import time

import pytest

import harness
from harness import free_port

ETCD_BIN = os.environ.get("SLUICE_ETCD_BIN", "etcd")
ETCDCTL_BIN = os.environ.get("SLUICE_ETCDCTL_BIN", "etcdctl")


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """A CA, a server certificate for 127.0.0.1 and a client certificate, all signed by it,
    plus a second, unrelated CA."""
    d = str(tmp_path_factory.mktemp("pki"))
    ext = os.path.join(d, "san.ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for ca in ("ca", "other-ca"):
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                 "-subj", "/CN=sluice-test-%s" % ca, "-keyout", ca + ".key", "-out", ca + ".pem",
                 cwd=d)
    for name, extra in (("server", ["-extfile", ext]), ("client", [])):
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=sluice-" + name,
                 "-keyout", name + ".key", "-out", name + ".csr", cwd=d)
        _openssl("x509", "-req", "-in", name + ".csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                 "-CAcreateserial", "-days", "2", "-out", name + ".pem", *extra, cwd=d)
    return d


class Etcd:
    """One etcd member, plain or TLS (with client certificates required when mtls)."""

    def __init__(self, workdir, pki=None, mtls=False, extra=()):
        self.dir = str(workdir)
        os.makedirs(self.dir, exist_ok=True)
        self.pki = pki
        self.port, self.peer = free_port(), free_port()
        scheme = "https" if pki else "http"
        self.url = "%s://127.0.0.1:%d" % (scheme, self.port)
        cmd = [ETCD_BIN, "--name", "s0", "--data-dir", os.path.join(self.dir, "data"),
               "--listen-client-urls", self.url, "--advertise-client-urls", self.url,
               "--listen-peer-urls", "http://127.0.0.1:%d" % self.peer,
               "--initial-advertise-peer-urls", "http://127.0.0.1:%d" % self.peer,
               "--initial-cluster", "s0=http://127.0.0.1:%d" % self.peer,
               "--heartbeat-interval", "50", "--election-timeout", "500", *extra]
        if pki:
            cmd += ["--cert-file", os.path.join(pki, "server.pem"),
                    "--key-file", os.path.join(pki, "server.key")]
            if mtls:
                cmd += ["--client-cert-auth", "--trusted-ca-file", os.path.join(pki, "ca.pem")]
        self.log = open(os.path.join(self.dir, "etcd.log"), "ab")
        env = {k: v for k, v in os.environ.items() if not k.startswith("ETCD")}
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=self.log, env=env,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        self.user = None
        deadline = time.monotonic() + 20
        while self.ctl("endpoint", "health", check=False).returncode != 0:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise AssertionError("etcd did not start:\n" + self.log_text())
            time.sleep(0.1)

    def ctl(self, *args, check=True, user=True):
        cmd = [ETCDCTL_BIN, "--endpoints", self.url, "--command-timeout", "5s"]
        if self.pki:
            cmd += ["--cacert", os.path.join(self.pki, "ca.pem"),
                    "--cert", os.path.join(self.pki, "client.pem"),
                    "--key", os.path.join(self.pki, "client.key")]
        if user and self.user:
            cmd += ["--user", self.user]
        env = {k: v for k, v in os.environ.items() if not k.startswith("ETCD")}
        env["ETCDCTL_API"] = "3"
        r = subprocess.run(cmd + list(args), capture_output=True, text=True, env=env, timeout=20)
        if check and r.returncode != 0:
            raise AssertionError("etcdctl %s: %s" % (args, r.stderr))
        return r

    def log_text(self):
        with open(os.path.join(self.dir, "etcd.log"), "rb") as f:
            return f.read().decode(errors="replace")[-4000:]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


@pytest.fixture
def make_etcd(tmp_path):
    made = []

    def make(**kw):
        e = Etcd(tmp_path / ("etcd%d" % len(made)), **kw)
        made.append(e)
        return e

    yield make
    for e in made:
        e.stop()


ROUTE = {"uri": "/hello", "upstream": {"type": "roundrobin", "nodes": {}}}


def route_to(upstream, uri):
    return {"uri": uri,
            "upstream": {"type": "roundrobin", "nodes": {"127.0.0.1:%d" % upstream.port: 1}}}


def etcd_gateway(make_gateway, etcd, **etcd_conf):
    conf = {"deployment": {"role_traditional": {"config_provider": "etcd"},
                           "etcd": dict({"host": [etcd.url], "timeout": 3}, **etcd_conf)}}
    ssl = etcd_conf.pop("_trusted", None)
    if ssl:
        conf["apisix"] = {"ssl": {"ssl_trusted_certificate": ssl}}
        conf["deployment"]["etcd"].pop("_trusted")
    return make_gateway(admin=True, config=conf)


def wait_status(port, path, want, timeout=5.0):
    deadline = time.monotonic() + timeout
    while True:
        got = harness.get(port, path).status
        if got == want or time.monotonic() > deadline:
            return got
        time.sleep(0.02)


def test_mutual_tls(make_gateway, make_etcd, upstream, pki):
    etcd = make_etcd(pki=pki, mtls=True)
    gw = etcd_gateway(make_gateway, etcd, _trusted=os.path.join(pki, "ca.pem"),
                      tls={"cert": os.path.join(pki, "client.pem"),
                           "key": os.path.join(pki, "client.key")})
    r = gw.admin("PUT", "/routes/1", route_to(upstream, "/tls"))
    assert r.status in (200, 201), r.body
    assert wait_status(gw.port, "/tls", 200) == 200
    stored = json.loads(etcd.ctl("get", "/apisix/routes/1", "--print-value-only").stdout)
    assert stored["uri"] == "/tls" and stored["id"] == "1"
    # And the watch, over TLS: a write made with etcdctl serves.
    etcd.ctl("put", "/apisix/routes/2", json.dumps(route_to(upstream, "/tls2")))
    assert wait_status(gw.port, "/tls2", 200) == 200
    metrics = harness.get(gw.prometheus_port, "/apisix/prometheus/metrics").body.decode()
    assert "apisix_etcd_reachable 1" in metrics


def test_mtls_without_client_certificate_is_refused(make_gateway, make_etcd, pki):
    etcd = make_etcd(pki=pki, mtls=True)
    gw = etcd_gateway(make_gateway, etcd, _trusted=os.path.join(pki, "ca.pem"))
    r = gw.admin("PUT", "/routes/1", ROUTE)
    assert r.status == 503, r.body
    # The reason is in the log (etcd refuses the handshake without a client certificate).
    assert gw.wait_for_log(r"the configuration store failed: etcd unreachable: https://",
                           timeout=5), gw.log_tail()
    assert etcd.ctl("get", "/apisix/routes/1").stdout == ""


def test_server_certificate_from_another_ca_is_refused(make_gateway, make_etcd, pki):
    etcd = make_etcd(pki=pki)
    gw = etcd_gateway(make_gateway, etcd, _trusted=os.path.join(pki, "other-ca.pem"))
    r = gw.admin("PUT", "/routes/1", ROUTE)
    assert r.status == 503, r.body
    assert b"certificate" not in r.body  # the reason goes to the log, not to the client
    assert gw.wait_for_log(r"certificate not trusted", timeout=5), gw.log_tail()
    metrics = harness.get(gw.prometheus_port, "/apisix/prometheus/metrics").body.decode()
    assert "apisix_etcd_reachable 0" in metrics
    assert etcd.ctl("get", "/apisix/routes/1").stdout == ""


def test_verify_off_accepts_any_certificate(make_gateway, make_etcd, upstream, pki):
    etcd = make_etcd(pki=pki)
    gw = etcd_gateway(make_gateway, etcd, _trusted=os.path.join(pki, "other-ca.pem"),
                      tls={"verify": False})
    r = gw.admin("PUT", "/routes/1", route_to(upstream, "/noverify"))
    assert r.status in (200, 201), r.body
    assert wait_status(gw.port, "/noverify", 200) == 200


def enable_auth(etcd, password):
    etcd.ctl("user", "add", "root", "--new-user-password=" + password)
    etcd.ctl("auth", "enable")
    etcd.user = "root:" + password


def test_user_and_password(make_gateway, make_etcd, upstream):
    etcd = make_etcd()
    enable_auth(etcd, "s3cret-pw")
    gw = etcd_gateway(make_gateway, etcd, user="root", password="s3cret-pw")
    r = gw.admin("PUT", "/routes/1", route_to(upstream, "/auth"))
    assert r.status in (200, 201), r.body
    assert wait_status(gw.port, "/auth", 200) == 200
    etcd.ctl("put", "/apisix/routes/2", json.dumps(route_to(upstream, "/auth2")))
    assert wait_status(gw.port, "/auth2", 200) == 200  # the watch carries the token too
    # Without credentials etcd refuses: the data is really protected.
    assert etcd.ctl("get", "/apisix/routes/1", check=False, user=False).returncode != 0


def test_wrong_password(make_gateway, make_etcd):
    etcd = make_etcd()
    enable_auth(etcd, "right-pw")
    gw = etcd_gateway(make_gateway, etcd, user="root", password="wrong-pw-123")
    r = gw.admin("PUT", "/routes/1", ROUTE)
    assert r.status == 503, r.body
    assert b"wrong-pw-123" not in r.body and b"authentication" not in r.body
    assert gw.wait_for_log(r"authentication failed", timeout=5), gw.log_tail()
    assert "wrong-pw-123" not in gw.log_text()
    assert etcd.ctl("get", "/apisix/routes/1").stdout == ""


def test_expired_token_is_renewed(make_gateway, make_etcd, upstream):
    etcd = make_etcd(extra=("--auth-token", "simple", "--auth-token-ttl", "1"))
    enable_auth(etcd, "pw-ttl")
    gw = etcd_gateway(make_gateway, etcd, user="root", password="pw-ttl")
    assert gw.admin("PUT", "/routes/1", route_to(upstream, "/t1")).status in (200, 201)
    time.sleep(2.5)  # the simple token's TTL is 1 s
    r = gw.admin("PUT", "/routes/2", route_to(upstream, "/t2"))
    assert r.status in (200, 201), (r.body, gw.log_tail())
    assert wait_status(gw.port, "/t2", 200) == 200
