"""What the kit's plugin benchmarks (`sluice bench auth`, `sluice bench traffic`) share: a
table of measurements, each one gateway serving one variant of route 1 under wrk's kept-alive
load, all of them measured in every run (the order reversing from run to run), and ratios of
the per-run figures.

A suite module gives MEASURES, {name: (letter, gateway, variant, what)}, and RATIOS,
{name: (numerator, denominator, budget or None, what)}. A gateway object has `name`, `pids`
and `use_variant(variant)`, which makes it serve the variant and returns the URL to load.

Each figure is CPU µs per request: the server's own utime + stime (/proc/<pid>/stat; nginx:
master + worker) over the load run, divided by the requests wrk completed.
"""

import argparse
import json
import os
import statistics
import sys
import time

from . import load, procs
from .tls_run import parse_placement


def add_common_args(ap, out_default):
    """The options every variant suite takes."""
    ap.add_argument("--out", default=out_default, help="output directory")
    ap.add_argument("--duration", type=float, default=5, help="seconds per run (default 5)")
    ap.add_argument("--runs", type=int, default=5, help="runs of each measurement (default 5)")
    ap.add_argument("--warmup", type=float, default=1,
                    help="seconds of each measurement before the first run (default 1)")
    ap.add_argument("--connections", "-c", type=int, default=16,
                    help="wrk's kept-alive connections (default 16)")
    ap.add_argument("--quick", action="store_true",
                    help="a check that everything runs: 1 run of 1 s, no warm-up")
    ap.add_argument("--placement", default="",
                    help="%s, or CPUs as gateway=LIST,upstream=LIST,load=LIST (e.g. "
                         "gateway=0,upstream=0,load=1); default: the kit's plan" %
                         "|".join(procs.PLACEMENTS))
    ap.add_argument("--no-pin", action="store_true", help="do not pin processes to CPUs")
    ap.add_argument("--sluice", default=os.environ.get("SLUICE_BIN", ""),
                    help="the sluice binary (default: the one running this kit)")
    ap.add_argument("--keep", action="store_true", help="keep the work dir (configs, logs)")


def finish_args(ap, args, prog):
    """Applies --quick, checks the common options and works out the pinning."""
    if args.quick:
        args.duration, args.runs, args.warmup = 1, 1, 0
    if args.duration <= 0 or args.runs < 1 or args.connections < 1:
        ap.error("--duration, --runs and --connections must be positive")
    args.pinning = None
    if args.placement:
        args.pinning = parse_placement(ap, args.placement)
    elif not args.no_pin:
        args.pinning = procs.pin_plan(procs.usable_cpus(), 1)
    if not args.sluice or not os.access(args.sluice, os.X_OK):
        ap.error("--sluice: no sluice binary given (run the kit as `%s`)" % prog)
    return args


def _status_field(pid, name):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(name + ":"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def last_cpus(pids):
    """The CPUs the threads of these processes (and children) last ran on (proc(5) field
    39 of each task's stat)."""
    seen = set()
    for root in pids:
        for p in procs.tree(root):
            try:
                tasks = os.listdir("/proc/%d/task" % p)
            except OSError:
                continue
            for tid in tasks:
                try:
                    with open("/proc/%d/task/%s/stat" % (p, tid)) as f:
                        seen.add(int(f.read().rsplit(")", 1)[1].split()[36]))
                except (OSError, IndexError, ValueError):
                    pass
    return seen


def allowed_cpus(pids):
    return sorted({_status_field(p, "Cpus_allowed_list") for root in pids
                   for p in procs.tree(root)} - {None})


def wrk_script(workdir, name, headers):
    """report.lua's done() hook with the measurement's request headers set."""
    path = os.path.join(workdir, "%s.lua" % name)
    with open(path, "w") as f:
        for k, v in headers.items():
            f.write("wrk.headers[%s] = %s\n" % (json.dumps(k), json.dumps(v)))
        f.write(load.WRK_SCRIPT)
    return path


def measure_once(variant, gw, upstream, gen, script, args, seen_cpus):
    """One load run of `gw` serving `variant`: the CPU it spent per completed request."""
    url = gw.use_variant(variant)
    gen.wrk_script = script
    c0, u0 = procs.cpu_seconds(gw.pids), procs.cpu_seconds(upstream.pids)
    try:
        r = gen.closed(url, args.connections, args.duration)
    except load.LoadError as e:
        return {"error": str(e), "value": None}
    cpu = procs.cpu_seconds(gw.pids) - c0
    up_cpu = procs.cpu_seconds(upstream.pids) - u0
    seen_cpus.setdefault(gw.name, set()).update(last_cpus(gw.pids))
    seen_cpus.setdefault("upstream", set()).update(last_cpus(upstream.pids))
    n = r["requests"]
    bad = r["errors"] + r["non2xx"]
    out = {"url": url, "requests": n, "rps": r["rps"], "errors": r["errors"],
           "non2xx": r["non2xx"], "cpu_s": cpu, "upstream_cpu_s": up_cpu,
           "latency_ms": r["latency_ms"], "command": r["raw"]["command"],
           "error": ("no request completed" if n == 0 else
                     "%d errors or non-2xx answers" % bad if bad > 0.01 * n else None)}
    out["cpu_us_per_req"] = cpu * 1e6 / n if n else None
    out["value"] = out["cpu_us_per_req"] if out["error"] is None else None
    return out


def _stats(values):
    values = [v for v in values if v is not None]
    if not values:
        return None, None
    return statistics.median(values), [min(values), max(values)]


def summarise(measures, ratios, runs):
    """The measures' medians and spreads, and each ratio over the runs' pairs."""
    out_m = []
    for name, (letter, gw, variant, what) in measures.items():
        med, spread = _stats([r["value"] for r in runs[name]])
        rps, _ = _stats([r.get("rps") for r in runs[name] if r.get("value") is not None])
        out_m.append({"name": name, "letter": letter, "gateway": gw, "variant": variant,
                      "what": what, "unit": "CPU µs / request", "runs": runs[name],
                      "median": med, "spread": spread, "rps_median": rps})
    out_r = []
    for rname, (num, den, budget, what) in ratios.items():
        per_run = [a["value"] / b["value"] if a["value"] and b["value"] else None
                   for a, b in zip(runs[num], runs[den])]
        med, spread = _stats(per_run)
        block = {"name": rname, "numerator": num, "denominator": den, "what": what,
                 "per_run": per_run, "median": med, "spread": spread, "budget": None}
        if budget is not None:
            block["budget"] = {"ratio_max": budget,
                               "met": None if med is None else med <= budget}
        out_r.append(block)
    return out_m, out_r


def progress(prog, what, count, t0):
    head = "[%d/%d] " % count if count else ""
    print("%s: %s%s (%.0f s)" % (prog, head, what, time.monotonic() - t0), file=sys.stderr,
          flush=True)


def measure_all(prog, measures, gws, upstream, gen, scripts, args, t0):
    """The warm-up, then args.runs runs of every measurement; returns (runs, seen CPUs)."""
    seen = {}
    order = list(measures)
    if args.warmup > 0:
        warm = argparse.Namespace(**dict(vars(args), duration=args.warmup))
        for name in order:
            progress(prog, "warm-up: %s" % name, None, t0)
            measure_once(measures[name][2], gws[measures[name][1]], upstream, gen,
                         scripts[name], warm, {})
    runs = {name: [] for name in order}
    total, done = len(order) * args.runs, 0
    for i in range(args.runs):
        for name in (order if i % 2 == 0 else order[::-1]):
            done += 1
            progress(prog, "run %d/%d: %s" % (i + 1, args.runs, name), (done, total), t0)
            runs[name].append(measure_once(measures[name][2], gws[measures[name][1]],
                                           upstream, gen, scripts[name], args, seen))
    return runs, seen


def cpus_block(gws, upstream, gen, seen):
    """Where each process was allowed to run and was seen running."""
    out = {name: {"allowed": allowed_cpus(gw.pids), "ran_on": sorted(seen.get(name, ()))}
           for name, gw in gws.items()}
    out["upstream"] = {"allowed": allowed_cpus(upstream.pids),
                       "ran_on": sorted(seen.get("upstream", ()))}
    out["wrk"] = {"allowed": [",".join(map(str, sorted(gen.cpus)))] if gen.cpus else []}
    return out


def write_results(results, out_dir):
    """results.json, written whole or not at all."""
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "results.json")
    with open(path + ".tmp", "w") as f:
        json.dump(results, f, indent=1)
        f.write("\n")
    os.replace(path + ".tmp", path)
    return path


# --- report --------------------------------------------------------------------------------

def num(v):
    if v is None:
        return "–"
    if v >= 1000:
        return "{:,.0f}".format(v)
    return "%.1f" % v if v >= 10 else "%.2f" % v


def _spread(s):
    return "–" if not s else "%s–%s" % (num(s[0]), num(s[1]))


def _budget(b):
    if not b:
        return ""
    verdict = {True: "met", False: "**missed**", None: "no figure"}[b["met"]]
    return "≤ %.2fx: %s" % (b["ratio_max"], verdict)


def _ratio(r):
    if r.get("median") is None:
        return "–"
    return "%.3fx (%.3f–%.3f)" % (r["median"], r["spread"][0], r["spread"][1])


def tables(results):
    rows = ["| | measure | CPU µs / request (median, range) | requests/s (median) |",
            "|---|---|---:|---:|"]
    for m in results["measures"]:
        rows.append("| %s | %s | %s (%s) | %s |" % (
            m["letter"], m["what"], num(m["median"]), _spread(m["spread"]),
            num(m["rps_median"])))
    rows += ["", "| ratio | what | median (range of the per-run ratios) | budget |",
             "|---|---|---:|---|"]
    for r in results["ratios"]:
        rows.append("| %s | %s | %s | %s |" % (r["name"], r["what"], _ratio(r),
                                             _budget(r["budget"])))
    return "\n".join(rows) + "\n"


def cpus_text(results):
    c = results.get("cpus") or {}
    parts = []
    for name in ("Sluice", "nginx", "upstream"):
        if name in c:
            parts.append("%s allowed %s, seen on %s" % (
                name, "/".join(c[name]["allowed"]) or "?",
                ",".join(map(str, c[name]["ran_on"])) or "?"))
    if c.get("wrk", {}).get("allowed"):
        parts.append("wrk pinned to %s" % "/".join(c["wrk"]["allowed"]))
    return "; ".join(parts)


def failures(results):
    out = []
    for m in results["measures"]:
        for i, r in enumerate(m["runs"]):
            if r.get("error"):
                out.append("%s, run %d: %s" % (m["name"], i + 1, r["error"]))
    return out


def notes_lines(results):
    notes = list(results["kit"].get("notes") or [])
    fails = failures(results)
    if fails:
        notes.append("runs left out of the medians: " + "; ".join(fails))
    return ["Notes:", ""] + ["- " + n for n in notes] + [""] if notes else []


def write_report(lines, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "report.md")
    with open(path, "w") as f:
        f.write("\n".join(lines))
    return path
