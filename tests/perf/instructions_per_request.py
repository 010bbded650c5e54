#!/usr/bin/python3
"""Instructions per proxied request, counted by callgrind: stable where CPU time is noisy.

    /usr/bin/python3 tests/perf/instructions_per_request.py [--requests 2000]

Starts an nginx upstream (1 worker, `return 200 "hello world\\n"`) and, for each scenario of
the published APISIX benchmark, Sluice (1 worker, apisix.yaml) under
`valgrind --tool=callgrind --instr-atstart=no`:
  scenario 1: route /hello -> the upstream, no plugin
  scenario 2: the same route with limit-count (count 2000000000000, time_window 60,
              rejected_code 503, key remote_addr) and prometheus {}
After 200 warm-up requests on one keep-alive connection, instrumentation is switched on with
callgrind_control, --requests more are sent on the same connection, it is switched
off and the counts are dumped. Instructions (Ir) per request over every thread of the
gateway (the control thread's 200 ms tick included) are printed, with the ratio.
Everything it starts is stopped by PID.
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
from cpu_per_request import (NGINX_UPSTREAM, SCENARIO2_PLUGINS, SLUICE_CONFIG,  # noqa: E402
                             SLUICE_ROUTES, REPO, free_port, start_nginx, wait_port)

REQUEST = b"GET /hello HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: bench\r\nAccept: */*\r\n\r\n"


def _response_end(buf, head_end, head):
    """Where the response starting at buf[0] ends (Content-Length or chunked), or None."""
    if re.search(r"(?im)^transfer-encoding:\s*chunked", head):
        pos = head_end + 4
        while True:
            eol = buf.find(b"\r\n", pos)
            if eol < 0:
                return None
            size = int(buf[pos:eol].split(b";")[0], 16)
            pos = eol + 2 + size + 2
            if size == 0:  # no trailers: the last chunk's CRLF ends the message
                return pos if len(buf) >= pos else None
            if len(buf) < pos:
                return None
    m = re.search(r"(?i)content-length:\s*(\d+)", head)
    total = head_end + 4 + (int(m.group(1)) if m else 0)
    return total if len(buf) >= total else None


def send(sock, n, request=REQUEST):
    """n sequential keep-alive requests; every answer must be a 200."""
    buf = b""
    for _ in range(n):
        sock.sendall(request)
        while True:
            head_end = buf.find(b"\r\n\r\n")
            if head_end >= 0:
                head = buf[:head_end].decode("latin-1")
                total = _response_end(buf, head_end, head)
                if total is not None:
                    if not head.startswith("HTTP/1.1 200"):
                        raise RuntimeError("unexpected answer: " + head.splitlines()[0])
                    buf = buf[total:]
                    break
            chunk = sock.recv(65536)
            if not chunk:
                raise RuntimeError("connection closed")
            buf += chunk


def control(*args):
    subprocess.run(["callgrind_control"] + list(args), check=True, capture_output=True)


def measure(binary, up_port, d, name, plugins, requests, io_uring="auto"):
    sd = os.path.join(d, name)
    os.makedirs(sd)
    port = free_port()
    with open(os.path.join(sd, "config.yaml"), "w") as f:
        f.write(SLUICE_CONFIG.format(port=port, metrics_port=free_port()))
        f.write("sluice:\n  io_uring: %s\n" % io_uring)
    with open(os.path.join(sd, "apisix.yaml"), "w") as f:
        f.write(SLUICE_ROUTES.format(up_port=up_port, plugins=plugins))
    out = os.path.join(sd, "callgrind.out.%p")
    log = open(os.path.join(d, name + ".log"), "w")
    proc = subprocess.Popen(["valgrind", "--tool=callgrind", "--instr-atstart=no",
                             "--callgrind-out-file=" + out, binary, "run", "-c",
                             os.path.join(sd, "config.yaml")],
                            cwd=sd, stdout=log, stderr=subprocess.STDOUT)
    try:
        if not wait_port(port, proc, timeout=60):
            raise RuntimeError("%s did not start; see %s" % (name, log.name))
        with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
            send(s, 200)
            control("-i", "on", str(proc.pid))
            send(s, requests)
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
    ap.add_argument("--io-uring", default="auto", choices=["auto", "off"],
                    help="sluice.io_uring for both gateways (default auto)")
    ap.add_argument("--keep", action="store_true",
                    help="keep the callgrind files (callgrind_annotate them) in the temp dir")
    ap.add_argument("--sluice", default=os.environ.get("SLUICE_BIN",
                                                       os.path.join(REPO, "build", "sluice")))
    args = ap.parse_args()
    d = tempfile.mkdtemp(prefix="sluice-ir-")
    up_port = free_port()
    upstream = start_nginx("upstream", NGINX_UPSTREAM.format(dir=d, port=up_port), up_port, d)
    try:
        s1 = measure(args.sluice, up_port, d, "scenario1", "", args.requests,
                     args.io_uring)
        s2 = measure(args.sluice, up_port, d, "scenario2", SCENARIO2_PLUGINS, args.requests,
                     args.io_uring)
    finally:
        upstream.stop()
        if args.keep:
            print("kept %s" % d, file=sys.stderr)
        else:
            subprocess.run(["rm", "-rf", d])
    print("callgrind, %d keep-alive requests, 1 worker, instructions per request:" % args.requests)
    print("| scenario | Ir/request |")
    print("|---|---:|")
    print("| 1: no plugin | %.0f |" % s1)
    print("| 2: limit-count + prometheus | %.0f |" % s2)
    print("scenario 2 / scenario 1: %.3f" % (s2 / s1))


if __name__ == "__main__":
    main()
