"""`sluice bench accesslog`: what the access log costs Sluice per request, in one run, with
nginx's buffered access_log alongside.

Against the kit's own upstream (nginx answering /hello, as in scenario 1), with wrk's
kept-alive load (`-t1 -cN`), four measurements:

  a  sluice-off  Sluice (one worker), route 1 without plugins, enable_access_log: false
  b  sluice-on   a second Sluice, the same route, its access log on: APISIX's default
                 format, 16384-byte buffer (APISIX's defaults), a file in the work dir
  c  nginx-off   nginx (one worker) proxying, `access_log off` (scenario 1's configuration)
  d  nginx-on    the same nginx on another port: `access_log ... buffer=16384 flush=3` with
                 APISIX's format, the line APISIX's nginx.conf writes

The access log is config.yaml's, fixed at start, so a and b are two Sluice processes, both on
the gateway CPU; only the one under load works. Each figure is CPU µs per request of the
gateway's own process (variant_bench.py). Every run measures all four (the order reversing),
so each run gives one of each ratio: b/a (the issue's budget: at most 1.05), d/c, b/d and a/c.
After the runs the kit counts the lines each log got (results.json "logs"), so a log that
wrote nothing shows. Writes results.json and report.md into --out.
"""

import datetime
import os
import shlex
import signal
import sys
import tempfile
import time

from . import load, machine, targets
from . import variant_bench as vb
from .procs import free_port
from .tls_run import commit_of_kit, placement_text

SCHEMA = 1
PROG = "sluice bench accesslog"

# APISIX's default access_log_format (apisix/cli/config.lua).
APISIX_FORMAT = ('$remote_addr - $remote_user [$time_local] $http_host "$request" $status '
                 '$body_bytes_sent $request_time "$http_referer" "$http_user_agent" '
                 '$upstream_addr $upstream_status $upstream_response_time '
                 '"$upstream_scheme://$upstream_host$upstream_uri"')

# name: (letter, gateway, variant, what)
MEASURES = {
    "sluice-off": ("a", "Sluice-off", "plain", "Sluice, access log off"),
    "sluice-on": ("b", "Sluice", "plain",
                  "Sluice, access log on (APISIX's format, 16384-byte buffer)"),
    "nginx-off": ("c", "nginx", "off", "nginx, access_log off (scenario 1)"),
    "nginx-on": ("d", "nginx", "on", "nginx, access_log buffer=16384 flush=3, APISIX's format"),
}
# name: (numerator, denominator, budget: the ratio's highest allowed value, or None)
RATIOS = {
    "b/a": ("sluice-on", "sluice-off", 1.05,
            "the access log's cost in Sluice (issue budget: at most 5% more CPU per request)"),
    "d/c": ("nginx-on", "nginx-off", None, "the access log's cost in nginx"),
    "b/d": ("sluice-on", "nginx-on", None, "Sluice against nginx, both logging"),
    "a/c": ("sluice-off", "nginx-off", None, "Sluice against nginx, neither logging"),
}

# APISIX's nginx.conf sets these in its `location /`; nginx needs them for APISIX's format.
NGINX_LOG = """\
worker_processes 1;
pid {dir}/proxy.pid;
error_log {dir}/proxy-error.log warn;
events {{ worker_connections 4096; }}
http {{
    log_format main '{format}';
    access_log off;
    keepalive_requests 100000000;
    upstream up {{
        server 127.0.0.1:{up_port};
        keepalive 32;
    }}
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        location /hello {{
            set $upstream_scheme 'http';
            set $upstream_host $http_host;
            set $upstream_uri '';
            proxy_pass http://up;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }}
    }}
    server {{
        listen 127.0.0.1:{log_port} backlog=4096;
        access_log {log} main buffer=16384 flush=3;
        location /hello {{
            set $upstream_scheme 'http';
            set $upstream_host $http_host;
            set $upstream_uri '';
            proxy_pass http://up;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }}
    }}
}}
"""


class LogSluice(targets.Sluice):
    """One Sluice worker serving route 1 (scenario 1), its access log at `log` or off."""

    def __init__(self, binary, upstream, workdir, cpus, log, name):
        super().__init__(binary, upstream, workdir, 1, cpus, name=name, access_log=log,
                         subdir=name.lower())
        self.log = log
        self.setup(1)

    def use_variant(self, variant):
        return self.url


class LogNginx(targets.NginxTarget):
    """nginx, one worker: `access_log off` on one port, APISIX's buffered log on another."""

    def __init__(self, upstream, workdir, cpus):
        super().__init__(workdir)
        self.port, self.log_port = free_port(), free_port()
        self.log = os.path.join(self.dir, "access.log")
        self.start(NGINX_LOG.format(dir=self.dir, port=self.port, log_port=self.log_port,
                                    up_port=upstream.port, log=self.log,
                                    format=APISIX_FORMAT), self.port, cpus)
        self.url = "http://127.0.0.1:%d/hello" % self.port
        self.log_url = "http://127.0.0.1:%d/hello" % self.log_port
        for url in (self.url, self.log_url):
            targets.wait_serving(url, 1)

    def use_variant(self, variant):
        return self.log_url if variant == "on" else self.url


def parse_args(argv):
    import argparse
    ap = argparse.ArgumentParser(
        prog=PROG,
        description="The access log's cost in one run: CPU per kept-alive request of Sluice "
                    "with its access log off and on, nginx with access_log off and buffered, "
                    "as ratios. See docs/performance.md (Access log).")
    vb.add_common_args(ap, "bench-accesslog-out")
    return vb.finish_args(ap, ap.parse_args(argv), PROG)


def count_lines(path):
    try:
        with open(path, "rb") as f:
            return sum(1 for _ in f)
    except OSError:
        return None


def run(args, argv):
    if not targets.have_nginx():
        raise RuntimeError("nginx is not installed (apt-get install nginx-light): it is the "
                           "upstream and the reference")
    if not load.have_wrk():
        raise RuntimeError("wrk is not installed (apt-get install wrk)")
    pin = args.pinning
    workdir = tempfile.mkdtemp(prefix="sluice-bench-accesslog-")
    started = []
    results = {
        "schema": SCHEMA, "kind": "accesslog",
        "kit": {"command": PROG + " " + " ".join(shlex.quote(a) for a in argv),
                "started": datetime.datetime.now(datetime.timezone.utc).strftime(
                    "%Y-%m-%dT%H:%M:%SZ"),
                "commit": commit_of_kit(), "sluice_version": None, "nginx_version": None,
                "duration_s": args.duration, "runs": args.runs, "warmup_s": args.warmup,
                "connections": args.connections, "format": APISIX_FORMAT,
                "pinning": pin, "placement": placement_text(pin), "notes": []},
        "machine": machine.facts(),
    }
    try:
        gw_cpus = pin and pin["gateway"]
        upstream = targets.Upstream("nginx", workdir, args.sluice, pin and pin["upstream"])
        started.append(upstream)
        nginx = LogNginx(upstream, workdir, gw_cpus)
        started.append(nginx)
        off = LogSluice(args.sluice, upstream, workdir, gw_cpus, None, "Sluice-off")
        started.append(off)
        on = LogSluice(args.sluice, upstream, workdir, gw_cpus,
                       os.path.join(workdir, "sluice-access.log"), "Sluice")
        started.append(on)
        results["kit"].update(sluice_version=on.version, nginx_version=nginx.version)
        gws = {"Sluice": on, "Sluice-off": off, "nginx": nginx}
        gen = load.Generator(args.sluice, "wrk", workdir, 1, pin and pin["load"])
        scripts = {name: vb.wrk_script(workdir, name, {}) for name in MEASURES}
        t0 = time.monotonic()
        runs, seen = vb.measure_all(PROG, MEASURES, gws, upstream, gen, scripts, args, t0)
        results["measures"], results["ratios"] = vb.summarise(MEASURES, RATIOS, runs)
        results["cpus"] = vb.cpus_block(gws, upstream, gen, seen)
        for t in (on, nginx):  # their last buffered lines go out as they stop
            t.stop()
            started.remove(t)
        results["logs"] = {"Sluice": count_lines(on.log), "nginx": count_lines(nginx.log)}
        print("%s: done in %.0f s" % (PROG, time.monotonic() - t0), file=sys.stderr)
    finally:
        for t in reversed(started):
            t.stop()
        if args.keep:
            print("%s: work dir kept at %s" % (PROG, workdir), file=sys.stderr)
        else:
            import shutil
            shutil.rmtree(workdir, ignore_errors=True)
    return results


def summary(results):
    k = results["kit"]
    return ("Access log: %d run(s) of %g s, %s\n" % (k["runs"], k["duration_s"], k["placement"])
            + vb.tables(results))


def write_report(results, out_dir):
    k, mach = results["kit"], results["machine"]
    logs = results.get("logs") or {}
    lines = [
        "# `sluice bench accesslog`",
        "",
        "- Machine: %s, %s, %s" % (mach.get("label"), mach.get("kernel"), mach.get("os")),
        "- Started %s, commit %s; %s, %s" % (k["started"], k["commit"] or "unknown",
                                           k["sluice_version"], k["nginx_version"]),
        "- Command: `%s`" % k["command"],
        "- %d run(s) of %g s per measurement, all four in every run (order reversing); "
        "wrk `-t1 -c%d`" % (k["runs"], k["duration_s"], k["connections"]),
        "- Placement: %s" % k["placement"],
        "- Format (both): `%s`" % k["format"],
        "- Lines written: Sluice %s, nginx %s" % (logs.get("Sluice"), logs.get("nginx")),
        "",
        "CPU is each gateway's own utime + stime (nginx: master + worker) over the run, "
        "divided by the requests wrk completed. A ratio is the median of the per-run ratios.",
        "",
        vb.tables(results),
    ]
    lines += vb.notes_lines(results)
    return vb.write_report(lines, out_dir)


def main(argv):
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        results = run(args, argv)
    except (RuntimeError, ValueError, load.LoadError) as e:
        print("%s: %s" % (PROG, e), file=sys.stderr)
        return 1
    path = vb.write_results(results, args.out)
    md = write_report(results, args.out)
    sys.stdout.write(summary(results))
    print("%s: wrote %s, %s" % (PROG, path, md))
    return 0
