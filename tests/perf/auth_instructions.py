#!/usr/bin/python3
"""Instructions per request of an authenticated route, by callgrind: plain, key-auth, jwt-auth.

    /usr/bin/python3 tests/perf/auth_instructions.py [--requests 2000] [--consumers 1000]
                                                     [--sluice build/sluice] [--keep]

The `sluice bench auth` setup (tools/bench/benchkit/auth_targets.py) counted instead of timed:
Sluice (1 worker, apisix.yaml) with --consumers consumers, each with a key-auth key and a
jwt-auth key + HS256 secret, one of them the bench kit's `bench`; route /hello to an nginx
upstream with no plugin, `key-auth: {}` or `jwt-auth: {}`, requested with the bench's apikey
header or HS256 bearer token. Each variant runs under `valgrind --tool=callgrind
--instr-atstart=no`: 200 warm-up requests on one keep-alive connection, then instrumentation
on for --requests more (every answer must be a 200). Prints user-space instructions (Ir) per
request over every thread of the gateway, and the ratios to plain. The kernel's share is not
counted: see `sluice bench auth` for CPU time. Everything it starts is stopped by PID.
"""

import argparse
import glob
import os
import re
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu_per_request import (NGINX_UPSTREAM, SLUICE_CONFIG, REPO, free_port,  # noqa: E402
                             start_nginx, wait_port)
from instructions_per_request import control, send  # noqa: E402

sys.path.insert(0, os.path.join(REPO, "tools", "bench"))
from benchkit import auth_targets  # noqa: E402

ROUTES = """\
routes:
  - id: "1"
    uri: /hello
{plugins}    upstream:
      type: roundrobin
      nodes:
        "127.0.0.1:{up_port}": 1
consumers:
{consumers}#END
"""

PLUGINS = {
    "plain": "",
    "key-auth": "    plugins:\n      key-auth: {}\n",
    "jwt-auth": "    plugins:\n      jwt-auth: {}\n",
}


def consumers_yaml(n):
    """n consumers with both keys; the last is the bench kit's measured one."""
    out = []
    for i in range(n):
        last = i == n - 1
        name = auth_targets.CONSUMER if last else "c%05d" % i
        key = auth_targets.KEY if last else "api-key-%05d" % i
        jwt_key = auth_targets.JWT_KEY if last else "jwt-key-%05d" % i
        secret = auth_targets.JWT_SECRET if last else "jwt-secret-%05d-0123456789abcdef" % i
        out.append("  - username: %s\n    plugins:\n      key-auth:\n        key: %s\n"
                   "      jwt-auth:\n        key: %s\n        secret: %s\n"
                   % (name, key, jwt_key, secret))
    return "".join(out)


def request_for(variant, token):
    head = "GET /hello HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: bench\r\nAccept: */*\r\n"
    for k, v in auth_targets.variant_headers(variant, token).items():
        head += "%s: %s\r\n" % (k, v)
    return (head + "\r\n").encode()


def measure(binary, up_port, d, variant, plugins, consumers, request, requests):
    """Instructions per request of `variant`: route /hello with `plugins` (YAML lines under
    the route, indented 4), `consumers` (YAML items), asked `request` (raw bytes)."""
    sd = os.path.join(d, variant)
    os.makedirs(sd)
    port = free_port()
    with open(os.path.join(sd, "config.yaml"), "w") as f:
        f.write(SLUICE_CONFIG.format(port=port, metrics_port=free_port()))
    with open(os.path.join(sd, "apisix.yaml"), "w") as f:
        f.write(ROUTES.format(up_port=up_port, plugins=plugins, consumers=consumers))
    log = open(os.path.join(d, variant + ".log"), "w")
    proc = subprocess.Popen(["valgrind", "--tool=callgrind", "--instr-atstart=no",
                             "--callgrind-out-file=" + os.path.join(sd, "callgrind.out.%p"),
                             binary, "run", "-c", os.path.join(sd, "config.yaml")],
                            cwd=sd, stdout=log, stderr=subprocess.STDOUT)
    try:
        if not wait_port(port, proc, timeout=120):
            raise RuntimeError("%s did not start; see %s" % (variant, log.name))
        with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
            send(s, 200, request)
            control("-i", "on", str(proc.pid))
            send(s, requests, request)
            control("-i", "off", str(proc.pid))
        control("-d", str(proc.pid))
    finally:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
    total = 0
    for path in glob.glob(os.path.join(sd, "callgrind.out.*")):
        with open(path) as f:
            for line in f:
                m = re.match(r"totals: (\d+)", line)
                if m:
                    total += int(m.group(1))
                    break
    return total / requests


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--consumers", type=int, default=1000)
    ap.add_argument("--keep", action="store_true",
                    help="keep the callgrind files (callgrind_annotate them) in the temp dir")
    ap.add_argument("--sluice", default=os.environ.get("SLUICE_BIN",
                                                       os.path.join(REPO, "build", "sluice")))
    args = ap.parse_args()
    d = tempfile.mkdtemp(prefix="sluice-auth-ir-")
    up_port = free_port()
    upstream = start_nginx("upstream", NGINX_UPSTREAM.format(dir=d, port=up_port), up_port, d)
    consumers = consumers_yaml(args.consumers)
    token = auth_targets.make_token()
    results = {}
    try:
        for variant in ("plain", "key-auth", "jwt-auth"):
            results[variant] = measure(args.sluice, up_port, d, variant, PLUGINS[variant],
                                       consumers, request_for(variant, token), args.requests)
    finally:
        upstream.stop()
        if args.keep:
            print("kept %s" % d, file=sys.stderr)
        else:
            subprocess.run(["rm", "-rf", d])
    plain = results["plain"]
    print("callgrind, %d keep-alive requests, 1 worker, %d consumers, instructions per request:"
          % (args.requests, args.consumers))
    print("| route | Ir/request | / plain |")
    print("|---|---:|---:|")
    for variant, ir in results.items():
        print("| %s | %.0f | %.3f |" % (variant, ir, ir / plain))


if __name__ == "__main__":
    main()
