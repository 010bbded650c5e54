#!/usr/bin/python3
"""Admin API at scale: how fast one route change reaches every worker with N routes stored,
and whether traffic stalls while the route table is rebuilt.

    /usr/bin/python3 tests/perf/admin_scale.py [--routes 10000] [--updates 100] [--workers 2]

Starts, on free loopback ports and in a temp dir, an nginx upstream (`return 200`) and Sluice
on its embedded store, then:
  1. loads --routes routes through the Admin API (8 client threads, keep-alive);
  2. --updates times: PUTs the probe route with a new uri and, the moment the 2xx arrives,
     sends the new uri on fresh connections (several per worker): every one must hit;
     records the PUT round trip and the rebuild time the gateway logs ("built in N us");
  3. runs wrk against a stored route twice, without and with a route PUT every 50 ms,
     and compares latency percentiles and the maximum (a stall shows up as the maximum).
Prints a table; everything it starts is stopped by PID.
"""

import argparse
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KEY = "perf-admin-key-0123456789"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


class Admin:
    def __init__(self, port):
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def put(self, path, obj):
        self.conn.request("PUT", "/apisix/admin" + path, body=json.dumps(obj),
                          headers={"X-API-KEY": KEY})
        r = self.conn.getresponse()
        body = r.read()
        if r.status not in (200, 201):
            raise RuntimeError("PUT %s: %d %s" % (path, r.status, body))


def route(uri, up_port):
    return {"uri": uri, "upstream": {"nodes": {"127.0.0.1:%d" % up_port: 1}}}


def load_routes(admin_port, up_port, n, threads=8):
    def work(first):
        a = Admin(admin_port)
        for i in range(first, n, threads):
            a.put("/routes/r%d" % i, route("/r/%d" % i, up_port))
    ts = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    t0 = time.monotonic()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return time.monotonic() - t0


def get_status(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", path)
    r = c.getresponse()
    r.read()
    c.close()
    return r.status


def propagation(admin_port, port, up_port, updates, fresh_conns):
    a = Admin(admin_port)
    rtts, misses = [], 0
    for k in range(updates):
        t0 = time.monotonic()
        a.put("/routes/probe", route("/probe/%d" % k, up_port))
        rtts.append((time.monotonic() - t0) * 1000)
        for _ in range(fresh_conns):
            if get_status(port, "/probe/%d" % k) != 200:
                misses += 1
    return rtts, misses


def wrk(port, path, seconds):
    out = subprocess.run(["wrk", "-t1", "-c8", "-d%ds" % seconds, "--latency",
                          "http://127.0.0.1:%d%s" % (port, path)],
                         capture_output=True, text=True, timeout=seconds + 30).stdout
    def ms(label):
        m = re.search(r"%s\s+([\d.]+)(us|ms|s)\b" % re.escape(label), out)
        if not m:
            return float("nan")
        v = float(m.group(1))
        return v / 1000 if m.group(2) == "us" else v * 1000 if m.group(2) == "s" else v
    m = re.search(r"Latency\s+\S+\s+\S+\s+([\d.]+)(us|ms|s)", out)
    mx = float(m.group(1)) * {"us": 0.001, "ms": 1, "s": 1000}[m.group(2)] if m else float("nan")
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    sock = re.search(r"Socket errors: (.*)", out)
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    return {"p50": ms("50%"), "p99": ms("99%"), "max": mx,
            "non2xx": int(errors.group(1)) if errors else 0,
            "socket_errors": sock.group(1) if sock else "", "rps": float(rps.group(1)) if rps else 0}


def churn(admin_port, up_port, stop, counter):
    a = Admin(admin_port)
    k = 0
    while not stop.is_set():
        a.put("/routes/churn", route("/churn/%d" % k, up_port))
        k += 1
        counter[0] = k
        stop.wait(0.05)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--routes", type=int, default=10000)
    ap.add_argument("--updates", type=int, default=100)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--wrk-seconds", type=int, default=8)
    ap.add_argument("--binary", default=os.path.join(REPO, "build", "sluice"))
    args = ap.parse_args()

    d = tempfile.mkdtemp(prefix="sluice-admin-scale-")
    up_port, port, admin_port = free_port(), free_port(), free_port()
    procs = []
    try:
        with open(os.path.join(d, "nginx.conf"), "w") as f:
            f.write("daemon off; worker_processes 1; pid %s/nginx.pid; error_log %s/ng.log;\n"
                    "events {}\nhttp { access_log off; server { listen 127.0.0.1:%d;\n"
                    "location / { return 200 \"ok\\n\"; } } }\n" % (d, d, up_port))
        ng = subprocess.Popen(["nginx", "-c", os.path.join(d, "nginx.conf"), "-p", d],
                              stderr=subprocess.DEVNULL)
        procs.append(ng)
        with open(os.path.join(d, "config.yaml"), "w") as f:
            f.write("apisix: {node_listen: [{ip: 127.0.0.1, port: %d}]}\n"
                    "nginx_config: {worker_processes: %d, error_log_level: info}\n"
                    "deployment: {admin: {admin_listen: {ip: 127.0.0.1, port: %d},\n"
                    "  admin_key: [{name: admin, key: %s, role: admin}]}}\n"
                    % (port, args.workers, admin_port, KEY))
        log = open(os.path.join(d, "sluice.log"), "w")
        gw = subprocess.Popen([args.binary, "run", "-c", os.path.join(d, "config.yaml")],
                              stdout=log, stderr=subprocess.STDOUT)
        procs.append(gw)
        if not (wait_port(up_port, ng) and wait_port(port, gw) and wait_port(admin_port, gw)):
            sys.exit("servers did not start; see %s" % d)

        load_s = load_routes(admin_port, up_port, args.routes)
        print("loaded %d routes in %.1f s (%.0f PUT/s, 8 clients)"
              % (args.routes, load_s, args.routes / load_s))
        mark = os.path.getsize(log.name)
        rtts, misses = propagation(admin_port, port, up_port, args.updates, 4 * args.workers)
        with open(log.name) as f:
            f.seek(mark)
            builds = [int(x) / 1000 for x in re.findall(r"built in (\d+) us", f.read())]
        q = lambda xs, p: sorted(xs)[min(len(xs) - 1, int(len(xs) * p))]
        print("route PUT with %d routes stored: round trip p50 %.1f ms, p99 %.1f ms, max %.1f ms"
              % (args.routes, q(rtts, .5), q(rtts, .99), max(rtts)))
        print("  rebuild+publish (gateway log): p50 %.1f ms, max %.1f ms over %d builds"
              % (q(builds, .5), max(builds), len(builds)))
        print("  requests on fresh connections right after the 2xx that missed the change: %d "
              "of %d" % (misses, args.updates * 4 * args.workers))

        base = wrk(port, "/r/5", args.wrk_seconds)
        stop, counter = threading.Event(), [0]
        t = threading.Thread(target=churn, args=(admin_port, up_port, stop, counter))
        t.start()
        busy = wrk(port, "/r/5", args.wrk_seconds)
        stop.set()
        t.join()
        print("wrk -t1 -c8 /r/5          p50 ms   p99 ms   max ms   req/s   non-2xx")
        for name, r in (("quiet", base), ("%d route PUTs" % counter[0], busy)):
            print("  %-22s %7.2f  %7.2f  %7.1f  %7.0f  %d %s" % (
                name, r["p50"], r["p99"], r["max"], r["rps"], r["non2xx"], r["socket_errors"]))
        if misses or busy["non2xx"] or base["non2xx"]:
            sys.exit("FAILED: requests missed a change or failed")
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(15)
                except subprocess.TimeoutExpired:
                    p.kill()
        subprocess.run(["rm", "-rf", d])


if __name__ == "__main__":
    main()
