#!/usr/bin/python3
"""Consumers at scale (issue 23): what one consumer change costs with N consumers stored, and
whether a request's key lookup depends on N.

    /usr/bin/python3 tests/perf/consumers_scale.py [--consumers 100000] [--changes 5]

Starts, in a temp dir on free loopback ports, the harness's upstream and Sluice on its
embedded store (1 worker), loads --consumers consumers with a key-auth key each through
`sluice config load`, then:
  1. --changes times: PUTs one consumer with a new key through the Admin API and polls until
     the new key authenticates; records the PUT round trip, the time until the key works, and
     the rebuild the gateway logs ("built in N us (M us CPU)");
  2. the gateway's CPU per request (utime+stime from /proc over 3,000 keep-alive requests with
     a valid key) with N consumers, and again on a gateway with 10 consumers.
Prints a table; everything it starts is stopped. Not part of `make test` (it takes minutes).
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))

import harness  # noqa: E402
from fake_upstream import FakeUpstream  # noqa: E402


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def load_consumers(gw, n, path):
    with open(path, "w") as f:
        f.write("consumers:\n")
        for i in range(n):
            f.write("  - username: u%d\n    plugins:\n      key-auth:\n        key: key-%d\n"
                    % (i, i))
        f.write("#END\n")
    t0 = time.monotonic()
    p = subprocess.run([harness.SLUICE_BIN, "config", "load", "-c", gw.config_path, path],
                       capture_output=True, text=True, timeout=3600)
    if p.returncode != 0:
        sys.exit("config load failed: " + p.stderr[-500:])
    return time.monotonic() - t0


def cpu_per_request(gw, n_requests=3000):
    ticks = os.sysconf("SC_CLK_TCK")
    with harness.Client(gw.port) as c:
        for _ in range(200):  # warm
            c.get("/k", headers=[("apikey", "key-7")])
        before = cpu_ticks(gw.proc.pid)
        for _ in range(n_requests):
            r = c.get("/k", headers=[("apikey", "key-7")])
            assert r.status == 200, r
        after = cpu_ticks(gw.proc.pid)
    return (after - before) / ticks / n_requests * 1e6  # us per request


def gateway(tmp, name, upstream, n):
    gw = harness.Gateway(os.path.join(tmp, name), admin=True, workers=1, log_level="info")
    gw.write_config()
    load_s = load_consumers(gw, n, os.path.join(tmp, name + ".yaml"))
    gw.start(write=False)
    r = gw.admin("PUT", "/routes/1", harness.admin_route("/k", upstream,
                                                         plugins={"key-auth": {}}))
    assert r.status == 201, r
    assert harness.wait_until(lambda: harness.get(gw.port, "/k", headers=[
        ("apikey", "key-7")]).status == 200, timeout=30)
    return gw, load_s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--consumers", type=int, default=100000)
    ap.add_argument("--changes", type=int, default=5)
    args = ap.parse_args()
    upstream = FakeUpstream()
    with tempfile.TemporaryDirectory() as tmp:
        gw, load_s = gateway(tmp, "big", upstream, args.consumers)
        small = None
        try:
            rows = []
            for j in range(args.changes):
                start = gw.log_size()
                t0 = time.monotonic()
                r = gw.admin("PUT", "/consumers/u5", {"username": "u5", "plugins": {
                    "key-auth": {"key": "new-%d" % j}}})
                put_s = time.monotonic() - t0
                assert r.status == 200, r
                while harness.get(gw.port, "/k", headers=[("apikey", "new-%d" % j)]).status != 200:
                    time.sleep(0.001)
                live_s = time.monotonic() - t0
                m = gw.wait_for_log(r"built in (\d+) us \((\d+) us CPU\)", timeout=5, start=start)
                rows.append((put_s * 1000, live_s * 1000, int(m.group(1)) / 1000,
                             int(m.group(2)) / 1000))
            big_us = cpu_per_request(gw)
            small, _ = gateway(tmp, "small", upstream, 10)
            small_us = cpu_per_request(small)
        finally:
            gw.stop()
            if small is not None:
                small.stop()
            upstream.stop()
    print("%d consumers loaded by `sluice config load` in %.1f s" % (args.consumers, load_s))
    print("| change | PUT ms | live ms | rebuild ms | rebuild CPU ms |")
    print("|---|---:|---:|---:|---:|")
    for i, r in enumerate(rows):
        print("| %d | %.1f | %.1f | %.1f | %.1f |" % ((i + 1,) + r))
    print("median live: %.1f ms; median rebuild: %.1f ms"
          % (statistics.median(r[1] for r in rows), statistics.median(r[2] for r in rows)))
    print("gateway CPU per request with a valid key: %.1f us at %d consumers, %.1f us at 10"
          % (big_us, args.consumers, small_us))


if __name__ == "__main__":
    main()
