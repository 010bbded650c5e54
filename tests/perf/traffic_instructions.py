#!/usr/bin/python3
"""Instructions per request of the traffic plugins' routes, by callgrind.

    /usr/bin/python3 tests/perf/traffic_instructions.py [--requests 2000] [--each]
                                                        [--sluice build/sluice] [--keep]

The `sluice bench traffic` routes (tools/bench/benchkit/traffic_targets.py) counted instead
of timed: route /hello to an nginx upstream with no plugin, cors + request-id + limit-req, or
proxy-cache (memory hits), and with --each every traffic plugin alone, each asked with its
variant's headers. The method is auth_instructions.py's (valgrind --tool=callgrind, 200
warm-up requests on one keep-alive connection, then --requests counted; every answer must be
a 200). Prints user-space instructions per request over every thread of the gateway and the
ratio to plain; the kernel's share is not counted (see `sluice bench traffic` for CPU time).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from auth_instructions import measure  # noqa: E402
from cpu_per_request import NGINX_UPSTREAM, REPO, free_port, start_nginx  # noqa: E402

sys.path.insert(0, os.path.join(REPO, "tools", "bench"))
from benchkit import traffic_targets  # noqa: E402

CONSUMERS = "  - username: nobody\n"


def request_for(variant):
    head = "GET /hello HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: bench\r\nAccept: */*\r\n"
    for k, v in traffic_targets.VARIANT_HEADERS[variant].items():
        head += "%s: %s\r\n" % (k, v)
    return (head + "\r\n").encode()


def plugins_yaml(variant, up):
    plugins = traffic_targets.plugins_of(variant, up)
    return "    plugins: %s\n" % json.dumps(plugins) if plugins else ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--each", action="store_true", help="also every traffic plugin alone")
    ap.add_argument("--keep", action="store_true",
                    help="keep the callgrind files (callgrind_annotate them) in the temp dir")
    ap.add_argument("--sluice", default=os.environ.get("SLUICE_BIN",
                                                       os.path.join(REPO, "build", "sluice")))
    args = ap.parse_args()
    d = tempfile.mkdtemp(prefix="sluice-traffic-ir-")
    up_port = free_port()
    upstream = start_nginx("upstream", NGINX_UPSTREAM.format(dir=d, port=up_port), up_port, d)
    variants = [v for v in traffic_targets.VARIANT_PLUGINS
                if args.each or not v.startswith("each-")]
    results = {}
    try:
        for v in variants:
            results[v] = measure(args.sluice, up_port, d, v,
                                 plugins_yaml(v, "127.0.0.1:%d" % up_port), CONSUMERS,
                                 request_for(v), args.requests)
    finally:
        upstream.stop()
        if args.keep:
            print("kept %s" % d, file=sys.stderr)
        else:
            subprocess.run(["rm", "-rf", d])
    plain = results["plain"]
    print("callgrind, %d keep-alive requests, 1 worker, instructions per request:"
          % args.requests)
    print("| route | Ir/request | / plain |")
    print("|---|---:|---:|")
    for v, ir in results.items():
        print("| %s | %.0f | %.3f |" % (v, ir, ir / plain))


if __name__ == "__main__":
    main()
