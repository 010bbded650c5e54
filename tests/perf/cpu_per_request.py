#!/usr/bin/python3
"""CPU microseconds per proxied request: Sluice (1 worker) side by side with nginx (1 worker).

    /usr/bin/python3 tests/perf/cpu_per_request.py [--duration 5] [--runs 3] [--no-plugins]
                                                   [--plain-syscalls] [--no-pin]

Starts, on free loopback ports and in a temp dir:
  * upstream: nginx, 1 worker, `location /hello { return 200 "hello world\\n"; }`
  * Sluice:   1 worker, route /hello -> the upstream (the articles' scenario 1)
  * Sluice:   a second one whose /hello also runs limit-count (count 2000000000000,
              time_window 60, rejected_code 503, key remote_addr) and prometheus {}: the
              articles' scenario 2 (--no-plugins leaves it out)
  * Sluice:   with --plain-syscalls, a third one, scenario 1 with `sluice.io_uring: off`
              (one system call per socket call instead of io_uring batches)
  * nginx:    1 worker, reverse proxy to the upstream with keep-alive (keepalive 32,
              proxy_http_version 1.1, Connection "")
then runs `wrk -t1 -c16 -d<duration>s` against the upstream directly (the ceiling), Sluice and
nginx, reading each server's utime+stime from /proc/<pid>/stat (clock ticks, SC_CLK_TCK;
children included for nginx's master/worker pair) before and after, and the TCP segments
the host sent (/proc/net/snmp) per request. Processes are pinned as the bench kit pins
them (benchkit.procs.pin_plan: on 2 cores wrk on CPU 0, gateways and upstream on CPU 1);
--no-pin leaves placement to the scheduler, which moves the figures by up to 2.5x. CPU per
request is the steadiest figure on a shared machine; requests/s depends on what else runs.
Prints a table of medians over --runs. Everything it starts is stopped by PID.
"""

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The bench kit's process helpers and nginx configs (tools/bench/benchkit): one copy of each.
sys.path.insert(0, os.path.join(REPO, "tools", "bench"))
# wait_port is used by instructions_per_request.py, which imports it from here.
from benchkit.procs import (CLK_TCK, Process, cpu_seconds, free_port, pin_plan,  # noqa: E402,F401
                            usable_cpus, wait_port)
from benchkit.targets import NGINX_PROXY, NGINX_UPSTREAM  # noqa: E402


class Server(Process):
    """A server this script runs (the kit's Process), with its CPU in seconds."""

    def cpu(self):
        """CPU seconds of the process and its live children (nginx: master + worker)."""
        return cpu_seconds([self.pid])


SLUICE_CONFIG = """\
apisix:
  node_listen:
    - {port}
nginx_config:
  worker_processes: 1
  error_log_level: warn
  http:
    enable_access_log: false  # nginx's is off too
deployment:
  role: data_plane
  role_data_plane:
    config_provider: yaml
plugin_attr:
  prometheus:
    export_addr:
      ip: 127.0.0.1
      port: {metrics_port}
"""

SLUICE_ROUTES = """\
routes:
  - id: "1"
    uri: /hello
{plugins}    upstream:
      type: roundrobin
      nodes:
        "127.0.0.1:{up_port}": 1
#END
"""


def start_nginx(name, conf_text, port, d, cpus=None):
    conf = os.path.join(d, name + ".conf")
    with open(conf, "w") as f:
        f.write(conf_text)
    return Server(name, ["/usr/sbin/nginx", "-p", d, "-e", os.path.join(d, name + "-start.log"),
                         "-c", conf, "-g", "daemon off;"], port, os.path.join(d, name + ".out"),
                  cpus=cpus)


# The articles' scenario 2 plugins, as apisix.yaml lines under the route.
SCENARIO2_PLUGINS = """\
    plugins:
      limit-count:
        count: 2000000000000
        time_window: 60
        rejected_code: 503
        key: remote_addr
      prometheus: {}
"""


# Issue 19's check: a route whose proxy-rewrite rewrites the uri and sets one header.
PROXY_REWRITE_PLUGINS = """\
    plugins:
      proxy-rewrite:
        uri: /hello
        headers:
          set:
            X-Api-Version: v1
"""


def start_sluice(binary, up_port, d, name="sluice", plugins="", io_uring="auto", cpus=None,
                 env=None):
    sd = os.path.join(d, name.replace(" ", "_"))
    os.makedirs(sd)
    port = free_port()
    with open(os.path.join(sd, "config.yaml"), "w") as f:
        f.write(SLUICE_CONFIG.format(port=port, metrics_port=free_port()))
        f.write("sluice:\n  io_uring: %s\n" % io_uring)
    with open(os.path.join(sd, "apisix.yaml"), "w") as f:
        f.write(SLUICE_ROUTES.format(up_port=up_port, plugins=plugins))
    return Server(name, [binary, "run", "-c", os.path.join(sd, "config.yaml")], port,
                  os.path.join(d, name.replace(" ", "_") + ".log"), cwd=sd, cpus=cpus, env=env)


def parse_variant(text):
    """NAME=BINARY[,VAR=VALUE...]: another Sluice for scenario 1, e.g. an allocator candidate:
    "jemalloc=build/sluice,LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"."""
    name, _, rest = text.partition("=")
    parts = rest.split(",")
    env = dict(os.environ)
    for kv in parts[1:]:
        k, _, v = kv.partition("=")
        env[k] = v
    return name, os.path.abspath(parts[0]), env


def run_wrk(port, duration, threads, conns, cpus=None):
    cmd = ["wrk", "-t%d" % threads, "-c%d" % conns, "-d%ds" % duration, "--latency",
           "http://127.0.0.1:%d/hello" % port]
    pin = (lambda: os.sched_setaffinity(0, set(cpus))) if cpus else None
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 60,
                       preexec_fn=pin)
    out = p.stdout + p.stderr
    m = re.search(r"(\d+) requests in", out)
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if p.returncode != 0 or not m or not rps:
        raise RuntimeError("wrk failed:\n" + out)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = re.search(r"Socket errors: (.*)", out)
    p50 = re.search(r"^\s+50%\s+(\S+)", out, re.M)
    return {"requests": int(m.group(1)), "rps": float(rps.group(1)),
            "non2xx": int(non2xx.group(1)) if non2xx else 0,
            "errors": errors.group(1) if errors else "", "p50": p50.group(1) if p50 else "?"}


def tcp_out_segments():
    """TCP segments sent in this network namespace (Tcp OutSegs in /proc/net/snmp). A run's
    traffic is loopback, so its delta over the requests is the segments per request, all
    hops; other traffic in the namespace during the run (ssh, another measurement) adds to
    it, so read it as an upper bound."""
    with open("/proc/net/snmp") as f:
        rows = [line.split() for line in f if line.startswith("Tcp:")]
    return int(rows[1][rows[0].index("OutSegs")])


def measure(target, upstream, args, load_cpus):
    """One wrk run against target; CPU of target (and of the upstream) per request."""
    run_wrk(target.port, 1, args.threads, args.connections, load_cpus)  # warm-up
    t0, u0, s0 = target.cpu(), upstream.cpu(), tcp_out_segments()
    res = run_wrk(target.port, args.duration, args.threads, args.connections, load_cpus)
    t1, u1, s1 = target.cpu(), upstream.cpu(), tcp_out_segments()
    n = max(res["requests"], 1)
    res["segments"] = (s1 - s0) / n
    res["cpu_us"] = (t1 - t0) * 1e6 / n
    res["upstream_cpu_us"] = (u1 - u0) * 1e6 / n
    res["cpu_s"] = t1 - t0
    if res["non2xx"] or res["errors"]:
        print("  warning: %s: non-2xx %d, socket errors %s" % (
            target.name, res["non2xx"], res["errors"]), file=sys.stderr)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", type=int, default=5, help="seconds per wrk run (default 5)")
    ap.add_argument("--runs", type=int, default=1, help="runs per target; medians reported")
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--sluice", default=os.environ.get("SLUICE_BIN",
                                                       os.path.join(REPO, "build", "sluice")))
    ap.add_argument("--no-sluice", action="store_true",
                    help="measure only the upstream and nginx (to check the setup)")
    ap.add_argument("--no-plugins", action="store_true",
                    help="leave out Sluice with limit-count + prometheus (scenario 2)")
    ap.add_argument("--plain-syscalls", action="store_true",
                    help="also run scenario 1 with sluice.io_uring: off, in the same run")
    ap.add_argument("--proxy-rewrite", action="store_true",
                    help="also run Sluice with proxy-rewrite (uri + one header set) on /hello")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=BINARY[,VAR=VAL]",
                    help="also run scenario 1 on this binary and environment, in the same run "
                         "(repeatable; e.g. an allocator through LD_PRELOAD)")
    ap.add_argument("--no-pin", action="store_true",
                    help="leave CPU placement to the scheduler (default: the kit's pin plan)")
    ap.add_argument("--json", action="store_true", help="also print the results as JSON")
    ap.add_argument("--keep", action="store_true", help="keep the temp dir (logs, configs)")
    args = ap.parse_args()
    if not args.no_sluice and not os.path.exists(args.sluice):
        sys.exit("no gateway binary at %s (build it: make build)" % args.sluice)

    plan = None if args.no_pin else pin_plan(usable_cpus(), 1)
    gw_cpus = plan["gateway"] if plan else None
    up_cpus = plan["upstream"] if plan else None
    load_cpus = plan["load"] if plan else None
    d = tempfile.mkdtemp(prefix="sluice-perf-")
    servers = []
    # SIGTERM/SIGINT: raise SystemExit so that the finally block stops everything by PID.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    try:
        up_port = free_port()
        upstream = start_nginx("upstream", NGINX_UPSTREAM.format(dir=d, port=up_port), up_port, d,
                               up_cpus)
        servers.append(upstream)
        sluice = plugged = plain = rewrite = None
        variants = []
        if not args.no_sluice:
            sluice = start_sluice(args.sluice, up_port, d, cpus=gw_cpus)
            servers.append(sluice)
            for v in args.variant:
                name, binary, env = parse_variant(v)
                variants.append(start_sluice(binary, up_port, d, "sluice " + name, cpus=gw_cpus,
                                             env=env))
                servers.append(variants[-1])
            if args.plain_syscalls:
                plain = start_sluice(args.sluice, up_port, d, "sluice (io_uring off)",
                                     io_uring="off", cpus=gw_cpus)
                servers.append(plain)
            if not args.no_plugins:
                plugged = start_sluice(args.sluice, up_port, d, "sluice+plugins",
                                       SCENARIO2_PLUGINS, cpus=gw_cpus)
                servers.append(plugged)
            if args.proxy_rewrite:
                rewrite = start_sluice(args.sluice, up_port, d, "sluice+proxy-rewrite",
                                       PROXY_REWRITE_PLUGINS, cpus=gw_cpus)
                servers.append(rewrite)
        px_port = free_port()
        nginx = start_nginx("nginx", NGINX_PROXY.format(dir=d, port=px_port, up_port=up_port,
                                                              workers=1),
                            px_port, d, gw_cpus)
        servers.append(nginx)
        upstream.name = "upstream (direct)"

        targets = [t for t in [upstream, sluice, *variants, plain, plugged, rewrite, nginx]
                   if t is not None]
        results = {t.name: [] for t in targets}
        for i in range(args.runs):
            for target in targets:
                r = measure(target, upstream, args, load_cpus)
                results[target.name].append(r)
                print("run %d %-22s %9.0f req/s  %7.1f µs/req  p50 %s  %.2f TCP segments/req" % (
                    i + 1, target.name, r["rps"], r["cpu_us"], r["p50"], r["segments"]),
                    file=sys.stderr)

        def med(name, key):
            return statistics.median(r[key] for r in results[name])

        nginx_cpu = med("nginx", "cpu_us")
        print()
        print("wrk -t%d -c%d -d%ds, %d run(s), medians; CPU from /proc/<pid>/stat "
              "(SC_CLK_TCK=%d); %s" % (args.threads, args.connections, args.duration, args.runs,
                                       CLK_TCK, "pinned: %s" % plan if plan else "not pinned"))
        print("| target | requests/s | CPU µs/request | vs nginx | upstream CPU µs/request |")
        print("|---|---:|---:|---:|---:|")
        for name in [t.name for t in targets]:
            cpu = med(name, "cpu_us")
            ratio = "%.2fx" % (cpu / nginx_cpu) if name != "upstream (direct)" and nginx_cpu \
                else "-"
            print("| %s | %.0f | %.1f | %s | %.1f |" % (
                name, med(name, "rps"), cpu, ratio, med(name, "upstream_cpu_us")))
        if plugged is not None:
            print()
            print("scenario 2 (limit-count + prometheus) / scenario 1 CPU per request: %.3f" % (
                med(plugged.name, "cpu_us") / med(sluice.name, "cpu_us")))
        if rewrite is not None:
            print("proxy-rewrite (uri + one header) / scenario 1 CPU per request: %.3f" % (
                med(rewrite.name, "cpu_us") / med(sluice.name, "cpu_us")))
        if plain is not None:
            print("io_uring batches / plain system calls, CPU per request: %.3f" % (
                med(sluice.name, "cpu_us") / med(plain.name, "cpu_us")))
        if args.json:
            print(json.dumps(results, indent=2))
    finally:
        for s in reversed(servers):
            s.stop()
        if args.keep:
            print("kept %s" % d, file=sys.stderr)
        else:
            subprocess.run(["rm", "-rf", d])


if __name__ == "__main__":
    main()
