#!/usr/bin/python3
"""Instructions per request with the access log off and on, counted by callgrind.

    /usr/bin/python3 tests/perf/accesslog_instructions.py [--requests 2000]
                                                          [--sluice build/sluice] [--keep]

The `sluice bench accesslog` setup counted instead of timed: Sluice (1 worker, apisix.yaml),
route /hello to an nginx upstream, no plugin, asked with a User-Agent and a Referer. Three
variants: the access log off; on, APISIX's default format and buffer (16384 bytes); on, a
JSON-lines format with escape=json. Each runs under `valgrind --tool=callgrind
--instr-atstart=no`: 200 warm-up requests on one keep-alive connection, then instrumentation
on for --requests more (every answer a 200). Prints user-space instructions (Ir) per request
over every thread of the gateway, and the ratios to off. The kernel's share (the write(2) of
each 16 KiB) is not counted: `sluice bench accesslog` measures CPU time with it. Everything it
starts is stopped by PID.
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
from cpu_per_request import (NGINX_UPSTREAM, SLUICE_CONFIG, SLUICE_ROUTES, REPO,  # noqa: E402
                             free_port, start_nginx, wait_port)
from instructions_per_request import control, send  # noqa: E402

REQUEST = (b"GET /hello HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: Mozilla/5.0 (X11; Linux "
           b"x86_64) bench/1.0\r\nAccept: */*\r\nReferer: https://www.example.com/page?x=1\r\n\r\n")

OFF = "    enable_access_log: false  # nginx's is off too\n"
JSON = ('{"time":"$time_iso8601","client":"$remote_addr","request":"$request","status":'
        '$status,"bytes":$body_bytes_sent,"request_time":$request_time,"upstream":'
        '"$upstream_addr","upstream_status":"$upstream_status","ua":"$http_user_agent"}')
VARIANTS = {
    "off": OFF,
    "on": "    enable_access_log: true\n    access_log: {log}\n",
    "json": "    enable_access_log: true\n    access_log: {log}\n"
            "    access_log_format: '%s'\n    access_log_format_escape: json\n" % JSON,
}


def measure(binary, up_port, d, variant, requests):
    sd = os.path.join(d, variant)
    os.makedirs(sd)
    port = free_port()
    config = SLUICE_CONFIG.format(port=port, metrics_port=free_port())
    assert OFF in config
    config = config.replace(OFF, VARIANTS[variant].replace(
        "{log}", os.path.join(sd, "access.log")))
    with open(os.path.join(sd, "config.yaml"), "w") as f:
        f.write(config)
    with open(os.path.join(sd, "apisix.yaml"), "w") as f:
        f.write(SLUICE_ROUTES.format(up_port=up_port, plugins=""))
    log = open(os.path.join(d, variant + ".log"), "w")
    proc = subprocess.Popen(["valgrind", "--tool=callgrind", "--instr-atstart=no",
                             "--callgrind-out-file=" + os.path.join(sd, "callgrind.out.%p"),
                             binary, "run", "-c", os.path.join(sd, "config.yaml")],
                            cwd=sd, stdout=log, stderr=subprocess.STDOUT)
    try:
        if not wait_port(port, proc, timeout=120):
            raise RuntimeError("%s did not start; see %s" % (variant, log.name))
        with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
            send(s, 200, REQUEST)
            control("-i", "on", str(proc.pid))
            send(s, requests, REQUEST)
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
    lines = 0
    if variant != "off":
        with open(os.path.join(sd, "access.log"), "rb") as f:
            lines = sum(1 for _ in f)
        if lines < requests:
            raise RuntimeError("%s: %d lines for %d requests" % (variant, lines, requests))
    return total / requests


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--keep", action="store_true",
                    help="keep the callgrind files (callgrind_annotate them) in the temp dir")
    ap.add_argument("--only", choices=list(VARIANTS), action="append",
                    help="measure only these variants (default: all)")
    ap.add_argument("--sluice", default=os.environ.get("SLUICE_BIN",
                                                       os.path.join(REPO, "build", "sluice")))
    args = ap.parse_args()
    d = tempfile.mkdtemp(prefix="sluice-accesslog-ir-")
    up_port = free_port()
    upstream = start_nginx("upstream", NGINX_UPSTREAM.format(dir=d, port=up_port), up_port, d)
    results = {}
    try:
        for variant in args.only or VARIANTS:
            results[variant] = measure(args.sluice, up_port, d, variant, args.requests)
    finally:
        upstream.stop()
        if args.keep:
            print("kept %s" % d, file=sys.stderr)
        else:
            subprocess.run(["rm", "-rf", d])
    off = results.get("off")
    print("callgrind, %d keep-alive requests, 1 worker, instructions per request:"
          % args.requests)
    print("| access log | Ir/request | / off |")
    print("|---|---:|---:|")
    for variant, ir in results.items():
        print("| %s | %.0f | %s |" % (variant, ir, "%.3f" % (ir / off) if off else "-"))


if __name__ == "__main__":
    main()
