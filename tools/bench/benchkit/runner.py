"""`sluice bench`: the articles' benchmark, run on this machine with one command.

Starts, on loopback and free ports, the upstream (nginx answering /hello, or Sluice's built-in
upstream), Sluice with one worker on its embedded store with the route created through the
Admin API, nginx (proxy_pass with upstream keep-alive) and HAProxy, each with one worker, and
any gateway at a URL the user names. Then, for scenario 1 (no plugin) and scenario 2
(limit-count + prometheus), each target is measured --runs times with a closed loop like
`wrk -c16 -d5`, and (unless --no-sla) the highest open-loop rate whose p99 stays within
--sla-ms is searched for. Where nginx is measured, every target's latency is also taken at
one fixed open-loop rate, half of nginx's closed-loop QPS in scenario 1 (unless
--no-fixed-load): the same offered load for all. Targets are interleaved within each run so
that machine noise falls on all of them alike. Writes results.json, report.md, qps.svg and latency.svg into --out.
"""

import argparse
import datetime
import json
import os
import shlex
import signal
import statistics
import sys
import tempfile
import time

from . import load, machine, procs, report, sla, targets

SCHEMA = 1


class Progress:
    """One status line on stderr: what runs now, how far along, about how long is left."""

    def __init__(self, total_s, stream=sys.stderr):
        self.total = max(1.0, total_s)
        self.done = 0.0
        self.start = time.monotonic()
        self.stream = stream
        self.tty = stream.isatty()

    def grow(self, seconds):
        self.total += seconds

    def begin(self, what):
        elapsed = time.monotonic() - self.start
        frac = min(0.99, self.done / self.total)
        left = (elapsed / frac - elapsed) if frac > 0.02 else self.total - self.done
        line = "[%3d%%] %s — %s elapsed, ~%s left" % (
            int(frac * 100), what, _dur(elapsed), _dur(max(0.0, left)))
        if self.tty:
            self.stream.write("\r\033[K" + line)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def end(self, seconds):
        self.done += seconds

    def close(self, msg):
        if self.tty:
            self.stream.write("\r\033[K")
        self.stream.write(msg + "\n")
        self.stream.flush()


def _dur(s):
    s = int(round(s))
    return "%dm%02ds" % (s // 60, s % 60) if s >= 60 else "%ds" % s


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _spread(values):
    values = [v for v in values if v is not None]
    return [min(values), max(values)] if values else None


def summarise(runs):
    """Median and spread over the successful runs of one target and scenario."""
    ok = [r for r in runs if r.get("error") is None]
    if not ok:
        return None, None
    lat_keys = ok[0]["latency_ms"].keys()
    median = {
        "rps": _median(r["rps"] for r in ok),
        "requests": _median(r["requests"] for r in ok),
        "non2xx": _median(r["non2xx"] for r in ok),
        "errors": _median(r["errors"] for r in ok),
        "latency_ms": {k: _median(r["latency_ms"][k] for r in ok) for k in lat_keys},
        "cpu_us_per_req": _median(r.get("cpu_us_per_req") for r in ok),
        "rss_kib": _median(r.get("rss_kib") for r in ok),
    }
    spread = {
        "rps": _spread(r["rps"] for r in ok),
        "cpu_us_per_req": _spread(r.get("cpu_us_per_req") for r in ok),
        "p99_ms": _spread(r["latency_ms"]["p99"] for r in ok),
    }
    return median, spread


def failed_run(error):
    return {"error": str(error), "rps": None, "requests": 0, "non2xx": 0, "errors": 0,
            "latency_ms": {"mean": None, "p50": None, "p90": None, "p99": None,
                           "p99.9": None, "max": None},
            "cpu_us_per_req": None, "rss_kib": None}


def measured(target, upstream, fn):
    """Runs fn() (one load run) and adds the target's CPU per request and RSS, from /proc."""
    pids = target.pids
    up_pids = upstream.pids if target is not upstream else []
    c0, u0 = procs.cpu_seconds(pids), procs.cpu_seconds(up_pids)
    result = fn()
    c1, u1 = procs.cpu_seconds(pids), procs.cpu_seconds(up_pids)
    n = max(1, result["requests"])
    result["cpu_us_per_req"] = (c1 - c0) * 1e6 / n if pids else None
    result["cpu_s"] = (c1 - c0) if pids else None
    result["rss_kib"] = procs.rss_kib(pids) if pids else None
    result["upstream_cpu_us_per_req"] = (u1 - u0) * 1e6 / n if up_pids else None
    return result


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="sluice bench",
        description="Reproduce the APISIX Arm/x86 benchmark articles on this machine: "
                    "Sluice, nginx, HAProxy and the upstream itself, scenario 1 (no plugin) and "
                    "scenario 2 (limit-count + prometheus), closed-loop QPS and latency, CPU "
                    "per request, and throughput under a p99 latency SLA.",
        epilog="`sluice bench compare a.json b.json --out DIR` puts runs from several machines "
               "side by side. See docs/benchmark.md.")
    ap.add_argument("--out", default="bench-out", help="output directory (default bench-out)")
    ap.add_argument("--duration", type=float, default=5, help="seconds per run (default 5)")
    ap.add_argument("--runs", type=int, default=3, help="runs per target and scenario (default 3)")
    ap.add_argument("--connections", "-c", type=int, default=16,
                    help="concurrent connections (default 16)")
    ap.add_argument("--workers", type=int, default=1,
                    help="worker processes/threads of each gateway (default 1)")
    ap.add_argument("--warmup", type=float, default=1,
                    help="seconds of load before each target's measured runs (default 1)")
    ap.add_argument("--scenarios", default="1,2", help="scenarios to run (default 1,2)")
    ap.add_argument("--targets", default="sluice,nginx,haproxy,direct",
                    help="built-in targets, comma-separated (default sluice,nginx,haproxy,direct;"
                         " missing nginx/HAProxy are left out with a note)")
    ap.add_argument("--peer", action="append", default=[], metavar="NAME=URL",
                    help="also measure the gateway at URL (e.g. apisix=http://127.0.0.1:9080); "
                         "repeatable")
    ap.add_argument("--peer-admin", action="append", default=[], metavar="NAME=URL[,KEY]",
                    help="the peer's APISIX Admin API (e.g. apisix=http://127.0.0.1:9180,KEY): "
                         "the kit then creates the articles' route for both scenarios")
    ap.add_argument("--peer-pid", action="append", default=[], metavar="NAME=PID",
                    help="the peer's main process, for its CPU per request and RSS")
    ap.add_argument("--load", choices=("auto", "wrk", "builtin"), default="auto",
                    help="closed-loop generator: wrk (as the articles) or the built-in one "
                         "(default: wrk when installed); open loop always uses the built-in one")
    ap.add_argument("--load-threads", type=int, default=0,
                    help="load generator threads (default: its CPUs when pinned, at most 2; "
                         "otherwise 1)")
    ap.add_argument("--upstream", choices=("auto", "nginx", "builtin"), default="auto",
                    help="the upstream (default: nginx when installed)")
    ap.add_argument("--no-sla", action="store_true", help="skip the SLA search")
    ap.add_argument("--no-fixed-load", action="store_true",
                    help="skip the latency at a fixed load (a fraction of nginx's QPS)")
    ap.add_argument("--fixed-load-fraction", type=float, default=0.5,
                    help="the fixed load, as a fraction of nginx's closed-loop QPS in "
                         "scenario 1 (default 0.5)")
    ap.add_argument("--sla-ms", type=float, default=3.0, help="p99 bound in ms (default 3)")
    ap.add_argument("--sla-step-duration", type=float, default=0,
                    help="seconds per SLA step (default: --duration)")
    ap.add_argument("--sla-start", type=float, default=0.2,
                    help="first offered rate, as a fraction of the closed-loop QPS (default 0.2)")
    ap.add_argument("--sla-step", type=float, default=0.1,
                    help="rate step, as a fraction of the closed-loop QPS (default 0.1)")
    ap.add_argument("--no-pin", action="store_true", help="do not pin processes to CPUs")
    ap.add_argument("--sluice", default=os.environ.get("SLUICE_BIN", ""),
                    help="the sluice binary (default: the one running this kit)")
    ap.add_argument("--keep", action="store_true", help="keep the work dir (configs, logs)")
    args = ap.parse_args(argv)
    if args.duration <= 0 or args.runs < 1 or args.connections < 1 or args.workers < 1:
        ap.error("--duration, --runs, --connections and --workers must be positive")
    try:
        args.scenario_list = sorted({int(s) for s in args.scenarios.split(",") if s})
    except ValueError:
        ap.error("--scenarios: a comma-separated list of 1 and 2")
    if not args.scenario_list or not set(args.scenario_list) <= {1, 2}:
        ap.error("--scenarios: a comma-separated list of 1 and 2")
    args.target_list = [t.strip() for t in args.targets.split(",") if t.strip()]
    unknown = set(args.target_list) - {"sluice", "nginx", "haproxy", "direct"}
    if unknown:
        ap.error("--targets: unknown %s (choose from sluice, nginx, haproxy, direct)" %
                 ", ".join(sorted(unknown)))
    args.peers = _named(ap, "--peer", args.peer)
    args.peer_admins = _named(ap, "--peer-admin", args.peer_admin)
    args.peer_pids = {}
    for name, v in _named(ap, "--peer-pid", args.peer_pid).items():
        if not v.isdigit():
            ap.error("--peer-pid %s=%s: not a PID" % (name, v))
        args.peer_pids[name] = int(v)
    for opt, d in (("--peer-admin", args.peer_admins), ("--peer-pid", args.peer_pids)):
        for name in d:
            if name not in args.peers:
                ap.error("%s %s: no --peer of that name" % (opt, name))
    if not args.sluice:
        ap.error("--sluice: no sluice binary given (run the kit as `sluice bench`)")
    if not os.access(args.sluice, os.X_OK):
        ap.error("--sluice %s: not an executable" % args.sluice)
    if not 0 < args.fixed_load_fraction <= 2:
        ap.error("--fixed-load-fraction: a number in (0, 2]")
    if args.sla_step_duration <= 0:
        args.sla_step_duration = args.duration
    return args


def _named(ap, opt, values):
    out = {}
    for v in values:
        name, sep, rest = v.partition("=")
        if not sep or not name or not rest:
            ap.error("%s %s: expected NAME=VALUE" % (opt, v))
        out[name] = rest
    return out


def run(args, argv):
    pinning = None if args.no_pin else procs.pin_plan(procs.usable_cpus(), args.workers)
    gw_cpus = pinning["gateway"] if pinning else None
    up_cpus = pinning["upstream"] if pinning else None
    load_cpus = pinning["load"] if pinning else None
    threads = args.load_threads or (min(2, len(load_cpus)) if load_cpus else 1)
    notes = []

    load_kind = args.load
    if load_kind == "auto":
        load_kind = "wrk" if load.have_wrk() else "builtin"
        if load_kind == "builtin":
            notes.append("wrk is not installed: the closed loop used the built-in generator")
    up_kind = args.upstream
    if up_kind == "auto":
        up_kind = "nginx" if targets.have_nginx() else "builtin"
        if up_kind == "builtin":
            notes.append("nginx is not installed: the upstream is Sluice's built-in one")
    elif up_kind == "nginx" and not targets.have_nginx():
        raise SystemExit("sluice bench: --upstream nginx, but nginx is not installed")

    workdir = tempfile.mkdtemp(prefix="sluice-bench-")
    started = []
    results = {
        "schema": SCHEMA,
        "kit": {
            "sluice_version": None,
            "started": datetime.datetime.now(datetime.timezone.utc).strftime(
                "%Y-%m-%dT%H:%M:%SZ"),
            "command": "sluice bench " + " ".join(shlex.quote(a) for a in argv),
            "duration_s": args.duration, "runs": args.runs, "connections": args.connections,
            "workers": args.workers, "sla_ms": None if args.no_sla else args.sla_ms,
            "load_generator": load_kind, "load_threads": threads, "upstream": up_kind,
            "pinning": pinning, "notes": notes, "fixed_load": None,
        },
        "machine": machine.facts(),
        "targets": [],
    }
    try:
        upstream = targets.Upstream(up_kind, workdir, args.sluice, up_cpus)
        started.append(upstream)
        gateways = []
        for name in args.target_list:
            if name == "sluice":
                t = targets.Sluice(args.sluice, upstream, workdir, args.workers, gw_cpus)
                results["kit"]["sluice_version"] = t.version
            elif name == "nginx":
                if not targets.have_nginx():
                    notes.append("nginx is not installed: left out")
                    continue
                t = targets.Nginx(upstream, workdir, args.workers, gw_cpus)
            elif name == "haproxy":
                if not targets.have_haproxy():
                    notes.append("HAProxy is not installed: left out (apt-get install haproxy)")
                    continue
                t = targets.HAProxy(upstream, workdir, args.workers, gw_cpus)
            else:
                continue
            started.append(t)
            gateways.append(t)
        for name, url in args.peers.items():
            admin, _, key = args.peer_admins.get(name, "").partition(",")
            t = targets.UrlPeer(name, url, upstream, admin or None, key or None,
                                args.peer_pids.get(name))
            started.append(t)
            gateways.append(t)
        if "direct" in args.target_list:
            gateways.append(upstream)
        if not gateways:
            raise SystemExit("sluice bench: nothing to measure")

        gen = load.Generator(args.sluice, load_kind, workdir, threads, load_cpus)
        open_gen = load.Generator(args.sluice, "builtin", workdir, threads, load_cpus)
        measured_targets = [t for t in gateways
                            if set(t.scenarios()) & set(args.scenario_list)]
        for t in gateways:
            if t not in measured_targets:
                notes.append("%s runs scenario 1 only: left out of scenario %s" % (
                    t.name, args.scenarios))
        entries = {t.name: {"name": t.name, "kind": t.kind, "version": t.version,
                            "scenarios": {}} for t in measured_targets}
        results["targets"] = [entries[t.name] for t in measured_targets]

        plan = [(s, [t for t in gateways if s in t.scenarios()]) for s in args.scenario_list]
        per_target = args.warmup + args.runs * args.duration
        sla_guess = 0 if args.no_sla else args.runs * 9 * args.sla_step_duration
        # The fixed load runs where nginx gives it a rate (scenario 1); a plan that decides
        # against it takes its estimate back.
        has_nginx = any(t.kind == "nginx" for _, ts in plan for t in ts)
        fixed_guess = 0 if args.no_fixed_load or not has_nginx else args.runs * args.duration
        progress = Progress(sum(len(ts) * (per_target + sla_guess + fixed_guess)
                                for _, ts in plan))
        fixed = None  # {"reference", "fraction", "rate"} once nginx's QPS is known

        for scenario, ts in plan:
            for t in ts:
                progress.begin("%s: scenario %d set-up and %gs warm-up" % (
                    t.name, scenario, args.warmup))
                t.setup(scenario)
                if args.warmup > 0:
                    try:
                        gen.closed(t.url, args.connections, args.warmup)
                    except load.LoadError:
                        pass  # the measured runs report it
                progress.end(args.warmup)
            runs = {t.name: [] for t in ts}
            for i in range(args.runs):
                for t in ts:
                    progress.begin("%s: scenario %d, run %d/%d, closed loop -c%d -d%gs" % (
                        t.name, scenario, i + 1, args.runs, args.connections, args.duration))
                    try:
                        r = measured(t, upstream, lambda: gen.closed(
                            t.url, args.connections, args.duration))
                    except load.LoadError as e:
                        r = failed_run(e)
                    runs[t.name].append(r)
                    progress.end(args.duration)
            for t in ts:
                median, spread = summarise(runs[t.name])
                entries[t.name]["scenarios"][str(scenario)] = {
                    "runs": runs[t.name], "median": median, "spread": spread, "sla": None,
                    "fixed_load": None}
            if fixed is None and not args.no_fixed_load:
                fixed = fixed_load_plan(ts, entries, scenario, args.fixed_load_fraction, notes,
                                        scenario == args.scenario_list[-1])
                results["kit"]["fixed_load"] = fixed or None
                if fixed == {}:
                    progress.grow(-fixed_guess * sum(len(x) for _, x in plan))
            if fixed:
                fixed_load_runs(ts, entries, scenario, fixed["rate"], upstream, open_gen, args,
                                progress)
            if args.no_sla:
                continue
            sla_blocks(ts, entries, upstream, scenario, open_gen, args, progress)
        progress.close("sluice bench: done in %s" % _dur(time.monotonic() - progress.start))
    finally:
        for t in reversed(started):
            t.stop()
        if args.keep:
            print("sluice bench: work dir kept at %s" % workdir, file=sys.stderr)
        else:
            import shutil
            shutil.rmtree(workdir, ignore_errors=True)
    return results


def open_summary(r):
    """What the report keeps of one open-loop run (a fixed-load run or an SLA step)."""
    raw = r["raw"]
    return {"offered": raw.get("sent", 0) + raw.get("unsent", 0),
            "achieved_rps": r["rps"], "p50_ms": r["latency_ms"]["p50"],
            "p99_ms": r["latency_ms"]["p99"], "p99.9_ms": r["latency_ms"]["p99.9"],
            "errors": r["errors"], "non2xx": r["non2xx"], "unsent": r["unsent"],
            "cpu_us_per_req": r["cpu_us_per_req"]}


def fixed_load_plan(ts, entries, scenario, fraction, notes, last):
    """The fixed rate: `fraction` of nginx's median closed-loop QPS, taken from the first
    scenario nginx runs (scenario 1). {} (decided: none) when nginx is not measured or has
    no QPS; None (not yet) when nginx does not run this scenario and a later one remains."""
    ref = next((t for t in ts if t.kind == "nginx"), None)
    if ref is None:
        if last:
            notes.append("nginx is not measured: no latency at a fixed load")
            return {}
        return None
    median = entries[ref.name]["scenarios"][str(scenario)]["median"]
    if not median or not median.get("rps"):
        notes.append("nginx has no closed-loop QPS: no latency at a fixed load")
        return {}
    return {"reference": ref.name, "fraction": fraction,
            "rate": max(1, int(round(median["rps"] * fraction)))}


def fixed_load_runs(ts, entries, scenario, rate, upstream, gen, args, progress):
    """--runs open-loop runs of every target at `rate`, interleaved; each target's latency."""
    per = {t.name: [] for t in ts}
    for i in range(args.runs):
        for t in ts:
            progress.begin("%s: scenario %d, fixed load %d/%d, offering %d req/s" % (
                t.name, scenario, i + 1, args.runs, rate))
            try:
                one = open_summary(measured(t, upstream, lambda: gen.open(
                    t.url, args.connections, args.duration, rate)))
            except load.LoadError as e:
                one = {"offered": 0, "achieved_rps": None, "p50_ms": None, "p99_ms": None,
                       "p99.9_ms": None, "errors": 0, "non2xx": 0, "unsent": 0,
                       "cpu_us_per_req": None, "error": str(e)}
            per[t.name].append(one)
            progress.end(args.duration)
    for t in ts:
        got = per[t.name]
        ok = [r for r in got if r.get("error") is None]  # medians over the runs that ran
        median = {k: _median([r[k] for r in ok])
                  for k in ("achieved_rps", "p50_ms", "p99_ms", "p99.9_ms", "cpu_us_per_req")}
        entries[t.name]["scenarios"][str(scenario)]["fixed_load"] = {
            "rate": rate, "runs": got, "median": median,
            "spread": {"p99_ms": _spread([r["p99_ms"] for r in ok])}}


def sla_blocks(ts, entries, upstream, scenario, gen, args, progress):
    """--runs SLA searches for each target of a scenario, interleaved: search i of every
    target before search i + 1 of any, so that a noisy minute on a shared machine falls on
    one search of several targets rather than on all searches of one."""
    out = {t.name: [] for t in ts}
    plans = {}
    for t in ts:
        entry = entries[t.name]["scenarios"][str(scenario)]
        base = entry["median"]["rps"] if entry["median"] else None
        if base:
            plans[t.name] = sla.plan(base, args.sla_start, args.sla_step)
        else:
            entry["sla"] = {"sla_ms": args.sla_ms, "runs": [], "median_best_rate": None,
                            "spread": None, "error": "no closed-loop throughput to start from"}
    for i in range(args.runs):
        for t in ts:
            if t.name in plans:
                out[t.name].append(sla_search(t, upstream, scenario, i, plans[t.name], gen,
                                              args, progress))
    for t in ts:
        if t.name in plans:
            best = [r["best_rate"] for r in out[t.name]]
            entries[t.name]["scenarios"][str(scenario)]["sla"] = {
                "sla_ms": args.sla_ms, "runs": out[t.name], "median_best_rate": _median(best),
                "spread": _spread(best)}


def sla_search(t, upstream, scenario, i, plan, gen, args, progress):
    """One SLA search (the i-th) for one target and scenario."""
    start, step, ceiling = plan

    def measure(rate):
        progress.begin("%s: scenario %d, SLA search %d/%d, offering %d req/s (p99 <= %g ms)" % (
            t.name, scenario, i + 1, args.runs, rate, args.sla_ms))
        try:
            r = measured(t, upstream, lambda: gen.open(
                t.url, args.connections, args.sla_step_duration, rate))
        except load.LoadError as e:
            progress.end(args.sla_step_duration)
            return {"offered": 0, "achieved_rps": 0, "p50_ms": None, "p99_ms": None,
                    "p99.9_ms": None, "errors": 1, "non2xx": 0, "unsent": 0,
                    "error": str(e)}
        progress.end(args.sla_step_duration)
        return open_summary(r)

    return sla.search(measure, start, step, args.sla_ms, ceiling)


def main(argv):
    args = parse_args(argv)
    # SIGTERM (and SIGINT) end the run through the finally blocks that stop every process.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        results = run(args, argv)
    except (RuntimeError, ValueError) as e:
        print("sluice bench: %s" % e, file=sys.stderr)
        return 1
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "results.json")
    with open(path + ".tmp", "w") as f:
        json.dump(results, f, indent=1)
        f.write("\n")
    os.replace(path + ".tmp", path)
    written = report.write_report(results, args.out)
    print("sluice bench: wrote %s" % ", ".join([path] + written))
    return 0
