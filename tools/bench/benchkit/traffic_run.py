"""`sluice bench traffic`: what the traffic plugins cost Sluice per request, in one run, with
nginx doing the same work in its own directives alongside.

Against the kit's own upstream (nginx answering /hello, as in scenario 1), with wrk's
kept-alive load (`-t1 -cN`), six measurements (traffic_targets.py says how each is set up):

  a  sluice-plain      Sluice, route 1 without plugins (scenario 1)
  b  sluice-traffic    the same route with cors + request-id + limit-req; wrk sends Origin
  c  sluice-cache-hit  the same route with proxy-cache (memory zone); every request a HIT
  d  nginx-plain       nginx proxying, scenario 1's configuration
  e  nginx-traffic     nginx with CORS headers, $request_id and limit_req
  f  nginx-cache-hit   nginx with proxy_cache; every request a HIT

`--each` adds Sluice with each traffic plugin alone (traffic_targets.EACH_PLUGINS: set up so
that it does its work and lets the request through), each with its ratio to a.

Each figure is CPU µs per request of the gateway's own process (variant_bench.py). Ratios:
b/a (the issue's budget: at most 1.10), c/a (at most 0.50), b/e, c/f and a/d. Before the
load each variant is asked once and its answer kept in results.json (the CORS and request-id
headers, the cache status). Writes results.json and report.md into --out.
"""

import argparse
import datetime
import shlex
import signal
import sys
import tempfile
import time

from . import load, machine, targets, traffic_targets
from . import variant_bench as vb
from .tls_run import commit_of_kit, placement_text

SCHEMA = 1
PROG = "sluice bench traffic"

# name: (letter, gateway, variant, what)
MEASURES = {
    "sluice-plain": ("a", "Sluice", "plain", "Sluice, route without plugins (scenario 1)"),
    "sluice-traffic": ("b", "Sluice", "traffic", "Sluice, cors + request-id + limit-req"),
    "sluice-cache-hit": ("c", "Sluice", "cache-hit", "Sluice, proxy-cache memory hits"),
    "nginx-plain": ("d", "nginx", "plain", "nginx, plain proxy (scenario 1)"),
    "nginx-traffic": ("e", "nginx", "traffic", "nginx, CORS headers + $request_id + limit_req"),
    "nginx-cache-hit": ("f", "nginx", "cache-hit", "nginx, proxy_cache hits"),
}
# name: (numerator, denominator, budget: the ratio's highest allowed value, or None)
RATIOS = {
    "b/a": ("sluice-traffic", "sluice-plain", 1.10,
            "cors + request-id + limit-req in Sluice (issue budget: at most 10% more CPU)"),
    "c/a": ("sluice-cache-hit", "sluice-plain", 0.50,
            "a proxy-cache hit against proxying (issue budget: at most 0.5x)"),
    "b/e": ("sluice-traffic", "nginx-traffic", None, "the traffic route against nginx's"),
    "c/f": ("sluice-cache-hit", "nginx-cache-hit", None, "cache hits against nginx's"),
    "a/d": ("sluice-plain", "nginx-plain", None, "Sluice against nginx, no plugins"),
}


def measures_for(each):
    """MEASURES, and with `each` one more per plugin of traffic_targets.EACH_PLUGINS."""
    m, r = dict(MEASURES), dict(RATIOS)
    if each:
        for i, plugin in enumerate(traffic_targets.EACH_PLUGINS):
            name = "sluice-" + plugin
            m[name] = ("g%d" % (i + 1), "Sluice", "each-" + plugin,
                       "Sluice, %s alone" % plugin)
            r["g%d/a" % (i + 1)] = (name, "sluice-plain", None, "%s's cost in Sluice" % plugin)
    return m, r


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog=PROG,
        description="The traffic plugins in one run: CPU per kept-alive request of Sluice "
                    "plain, with cors + request-id + limit-req and with proxy-cache hits, and "
                    "nginx doing the same, as ratios. See docs/performance.md (Traffic "
                    "plugins).")
    vb.add_common_args(ap, "bench-traffic-out")
    ap.add_argument("--each", action="store_true",
                    help="also measure Sluice with each traffic plugin alone (13 more "
                         "measurements, each with its ratio to the plain route)")
    return vb.finish_args(ap, ap.parse_args(argv), PROG)


def check_answers(gws, each):
    """What each gateway's variant answers before the load: status and the headers that show
    the variant took effect."""
    out = {}
    for name, gw in gws.items():
        out[name] = {}
        for v in traffic_targets.VARIANT_PLUGINS:
            if v.startswith("each-") and (name != "Sluice" or not each):
                continue
            url = gw.use_variant(v)
            status, h = traffic_targets.head_of(url, traffic_targets.VARIANT_HEADERS[v])
            keep = ("access-control-allow-origin", "x-request-id", "content-encoding",
                    traffic_targets.CACHE_HEADER[name].lower())
            out[name][v] = {"status": status, **{k: h[k] for k in keep if k in h}}
    return out


def run(args, argv):
    if not targets.have_nginx():
        raise RuntimeError("nginx is not installed (apt-get install nginx-light): it is the "
                           "upstream and the reference")
    if not load.have_wrk():
        raise RuntimeError("wrk is not installed (apt-get install wrk)")
    pin = args.pinning
    workdir = tempfile.mkdtemp(prefix="sluice-bench-traffic-")
    started = []
    results = {
        "schema": SCHEMA, "kind": "traffic",
        "kit": {"command": PROG + " " + " ".join(shlex.quote(a) for a in argv),
                "started": datetime.datetime.now(datetime.timezone.utc).strftime(
                    "%Y-%m-%dT%H:%M:%SZ"),
                "commit": commit_of_kit(), "sluice_version": None, "nginx_version": None,
                "duration_s": args.duration, "runs": args.runs, "warmup_s": args.warmup,
                "connections": args.connections, "pinning": pin,
                "placement": placement_text(pin), "notes": [],
                "sluice_plugins": traffic_targets.VARIANT_PLUGINS,
                "request_headers": traffic_targets.VARIANT_HEADERS},
        "machine": machine.facts(),
    }
    try:
        upstream = targets.Upstream("nginx", workdir, args.sluice, pin and pin["upstream"])
        started.append(upstream)
        nginx = traffic_targets.TrafficNginx(upstream, workdir, pin and pin["gateway"])
        started.append(nginx)
        sluice = traffic_targets.TrafficSluice(args.sluice, upstream, workdir,
                                               pin and pin["gateway"])
        started.append(sluice)
        t0 = time.monotonic()
        results["kit"].update(sluice_version=sluice.version, nginx_version=nginx.version)
        gws = {"Sluice": sluice, "nginx": nginx}
        results["checks"] = check_answers(gws, args.each)
        gen = load.Generator(args.sluice, "wrk", workdir, 1, pin and pin["load"])
        measures, ratios = measures_for(args.each)
        scripts = {name: vb.wrk_script(workdir, name, traffic_targets.VARIANT_HEADERS[v])
                   for name, (_, _, v, _) in measures.items()}
        runs, seen = vb.measure_all(PROG, measures, gws, upstream, gen, scripts, args, t0)
        results["measures"], results["ratios"] = vb.summarise(measures, ratios, runs)
        results["cpus"] = vb.cpus_block(gws, upstream, gen, seen)
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
    return ("Traffic plugins: %d run(s) of %g s, %s\n" % (k["runs"], k["duration_s"],
                                                         k["placement"]) + vb.tables(results))


def write_report(results, out_dir):
    k, mach = results["kit"], results["machine"]
    lines = [
        "# `%s`" % PROG,
        "",
        "- Machine: %s, %s, %s" % (mach.get("label"), mach.get("kernel"), mach.get("os")),
        "- Started %s, commit %s; %s, %s" % (k["started"], k["commit"] or "unknown",
                                           k["sluice_version"], k["nginx_version"]),
        "- Command: `%s`" % k["command"],
        "- %d run(s) of %g s per measurement, all of them in every run (order reversing); "
        "wrk `-t1 -c%d`" % (k["runs"], k["duration_s"], k["connections"]),
        "- Placement: %s" % k["placement"],
        "- CPUs: %s" % vb.cpus_text(results),
        "",
        "CPU is each gateway's own utime + stime (nginx: master + worker) over the run, "
        "divided by the requests wrk completed. A ratio is the median of the per-run ratios.",
        "",
        vb.tables(results),
        "Answers before the load:",
        "",
    ]
    for gw, variants in (results.get("checks") or {}).items():
        for v, c in variants.items():
            lines.append("- %s, %s: %s" % (gw, v, ", ".join(
                "%s %s" % (what, value) for what, value in c.items())))
    lines.append("")
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
