#!/usr/bin/python3
"""User-space instructions per request and per handshake, Sluice against nginx, by callgrind.

    /usr/bin/python3 tests/perf/tls_instructions.py [--requests 2000] [--connections 200]
                                                    [--sluice build/sluice] [--keep]

CPU time on a shared machine swings by ±20% from run to run; instruction counts do not. This
starts the `sluice bench tls` setup (benchkit/tls_targets.py: the same ECDSA P-256
certificate, protocols, ciphers and session cache for both, nginx as the plaintext upstream)
with Sluice (1 worker) and nginx (`master_process off`) each under
`valgrind --tool=callgrind --instr-atstart=no`, and counts, with instrumentation switched on
around each phase only (callgrind_control):

  plain keep-alive    --requests GETs on one kept-alive HTTP connection (after 200 warm-up)
  https keep-alive    the same over one TLS 1.3 connection
  plain connection    --connections connections, one GET with `Connection: close` each
  full handshake      the same over TLS, never offering a session
  resumed handshake   the same, each offering the previous connection's session

Prints Ir per request (keep-alive) or per connection, for every thread of the gateway, and how
many handshakes of the resumed phase were not resumed. The kernel's share (most of a
kept-alive request's CPU) is not counted here: see `sluice bench tls` for CPU time.
Everything it starts is stopped by PID.
"""

import argparse
import glob
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tools", "bench"))
from benchkit import targets, tls_targets  # noqa: E402
from benchkit.procs import free_port, wait_port  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import instructions_per_request  # noqa: E402

REQUEST = b"GET /hello HTTP/1.1\r\nHost: localhost\r\nUser-Agent: bench\r\nAccept: */*\r\n\r\n"
CLOSE = b"GET /hello HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
PHASES = ("plain keep-alive", "https keep-alive", "plain connection", "full handshake",
          "resumed handshake")


def keepalive(sock, n):
    """n sequential requests on one connection; every answer must be a 200."""
    instructions_per_request.send(sock, n, REQUEST)


class Connector:
    """One connection per request; `resume` offers the session the last one ended with."""

    def __init__(self, port):
        self.port = port
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        self.ctx.check_hostname = False
        self.ctx.verify_mode = ssl.CERT_NONE
        self.session = None
        self.not_resumed = 0

    def run(self, n, tls, resume=False):
        for _ in range(n):
            s = socket.create_connection(("127.0.0.1", self.port))
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if tls:
                s = self.ctx.wrap_socket(s, server_hostname=tls_targets.SNI,
                                         session=self.session if resume else None)
                if resume and not s.session_reused:
                    self.not_resumed += 1
            s.sendall(CLOSE)
            while s.recv(65536):
                pass
            if resume:
                self.session = s.session
            s.close()


def control(*args):
    subprocess.run(["callgrind_control", *args], check=True, capture_output=True)


def counted(proc, out_dir, fn):
    """Instructions the process ran during fn() (every thread)."""
    before = set(glob.glob(os.path.join(out_dir, "callgrind.out.*")))
    control("-i", "on", str(proc.pid))
    fn()
    control("-i", "off", str(proc.pid))
    control("-d", str(proc.pid))
    time.sleep(0.3)
    total = 0
    for path in set(glob.glob(os.path.join(out_dir, "callgrind.out.*"))) - before:
        with open(path) as f:
            for line in f:
                m = re.match(r"totals: (\d+)", line)
                if m:
                    total += int(m.group(1))
                    break
    return total


def phases(proc, out_dir, plain_port, tls_port, args):
    out = {}
    with socket.create_connection(("127.0.0.1", plain_port)) as s:
        keepalive(s, 200)
        out[PHASES[0]] = counted(proc, out_dir, lambda: keepalive(s, args.requests)) / \
            args.requests
    ctx = Connector(tls_port).ctx
    with ctx.wrap_socket(socket.create_connection(("127.0.0.1", tls_port)),
                         server_hostname=tls_targets.SNI) as s:
        keepalive(s, 200)
        out[PHASES[1]] = counted(proc, out_dir, lambda: keepalive(s, args.requests)) / \
            args.requests
    n = args.connections
    plain, tls = Connector(plain_port), Connector(tls_port)
    plain.run(20, False)
    out[PHASES[2]] = counted(proc, out_dir, lambda: plain.run(n, False)) / n
    tls.run(20, True)
    out[PHASES[3]] = counted(proc, out_dir, lambda: tls.run(n, True)) / n
    tls.run(20, True, resume=True)
    tls.not_resumed = 0
    out[PHASES[4]] = counted(proc, out_dir, lambda: tls.run(n, True, resume=True)) / n
    out["not resumed"] = tls.not_resumed
    return out


def under_callgrind(cmd, d, cwd):
    return subprocess.Popen(["valgrind", "--tool=callgrind", "--instr-atstart=no",
                             "--callgrind-out-file=" + os.path.join(d, "callgrind.out.%p"),
                             *cmd], cwd=cwd, stdout=open(os.path.join(d, "valgrind.log"), "w"),
                            stderr=subprocess.STDOUT)


def stop(proc):
    proc.terminate()
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def measure_sluice(args, certs, up_port, wd):
    d = os.path.join(wd, "sluice")
    os.makedirs(d)
    port, admin, tls_port = free_port(), free_port(), free_port()
    with open(os.path.join(d, "config.yaml"), "w") as f:
        f.write(targets.SLUICE_CONFIG.format(
            port=port, workers=1, admin_port=admin, key=targets.ADMIN_KEY,
            data_dir=os.path.join(d, "data"), metrics_port=free_port(),
            http=targets.access_log_yaml(None),
            ssl=tls_targets.SLUICE_SSL.format(port=tls_port, ciphers=tls_targets.CIPHERS)))
    proc = under_callgrind([args.sluice, "run", "-c", os.path.join(d, "config.yaml")], d, d)
    try:
        if not wait_port(admin, proc, timeout=120):
            raise RuntimeError("Sluice did not start under valgrind; see %s" % d)
        url = "http://127.0.0.1:%d" % admin
        for path, body in (("/apisix/admin/routes/1", targets.route_body("127.0.0.1", up_port, 1)),
                           ("/apisix/admin/ssls/1", {
                               "cert": open(certs["ecdsa"][0]).read(),
                               "key": open(certs["ecdsa"][1]).read(),
                               "snis": [tls_targets.SNI]})):
            status, text = targets.admin_put(url, targets.ADMIN_KEY, path, body, timeout=60)
            if status not in (200, 201):
                raise RuntimeError("PUT %s answered %s: %s" % (path, status, text[:300]))
        tls_targets.wait_cert(tls_port, certs["ecdsa"][0], timeout=60)
        targets.wait_serving("http://127.0.0.1:%d/hello" % port, 1, timeout=60)
        return phases(proc, d, port, tls_port, args)
    finally:
        stop(proc)


def measure_nginx(args, certs, up_port, wd):
    d = os.path.join(wd, "nginx")
    os.makedirs(d)
    port, ecdsa, rsa = free_port(), free_port(), free_port()
    conf = os.path.join(d, "nginx.conf")
    with open(conf, "w") as f:
        f.write(tls_targets.NGINX_TLS.format(
            dir=d, port=port, up_port=up_port, ciphers=tls_targets.CIPHERS, ecdsa_port=ecdsa,
            rsa_port=rsa, ecdsa_crt=certs["ecdsa"][0], ecdsa_key=certs["ecdsa"][1],
            rsa_crt=certs["rsa"][0], rsa_key=certs["rsa"][1]))
    proc = under_callgrind([targets.nginx_binary(), "-p", d, "-c", conf, "-g",
                            "daemon off; master_process off;"], d, d)
    try:
        if not wait_port(port, proc, timeout=120):
            raise RuntimeError("nginx did not start under valgrind; see %s" % d)
        return phases(proc, d, port, ecdsa, args)
    finally:
        stop(proc)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--connections", type=int, default=200)
    ap.add_argument("--sluice", default=os.environ.get("SLUICE_BIN",
                                                       os.path.join(REPO, "build", "sluice")))
    ap.add_argument("--keep", action="store_true", help="keep the callgrind files")
    args = ap.parse_args()
    wd = tempfile.mkdtemp(prefix="sluice-tls-ir-")
    certs = tls_targets.make_certs(wd)
    upstream = targets.Upstream("nginx", wd, args.sluice, None)
    try:
        s = measure_sluice(args, certs, upstream.port, wd)
        n = measure_nginx(args, certs, upstream.port, wd)
    finally:
        upstream.stop()
        if args.keep:
            print("kept %s" % wd, file=sys.stderr)
        else:
            shutil.rmtree(wd, ignore_errors=True)
    print("callgrind, user-space instructions (every thread), TLS 1.3, ECDSA P-256:")
    print("| phase | Sluice | nginx | Sluice / nginx |")
    print("|---|---:|---:|---:|")
    for p in PHASES:
        print("| %s | %s | %s | %.2f |" % (p, "{:,.0f}".format(s[p]), "{:,.0f}".format(n[p]),
                                           s[p] / n[p]))
    print("not resumed in the resumed phase: Sluice %d, nginx %d (of %d)" % (
        s["not resumed"], n["not resumed"], args.connections))


if __name__ == "__main__":
    main()
