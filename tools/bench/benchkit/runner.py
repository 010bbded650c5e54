"""`sluice bench`: the articles' benchmark, run on this machine with one command.

Starts, on loopback and free ports, the upstream (nginx answering /hello, or Sluice's built-in
upstream), Sluice with one worker on its embedded store with the route created through the
Admin API, nginx (proxy_pass with upstream keep-alive) and HAProxy, each with one worker, and
any gateway at a URL the user names. Then, for scenario 1 (no plugin) and scenario 2
(limit-count + prometheus, or nginx's and HAProxy's nearest equivalents), each target is
measured --runs times with a closed loop like `wrk -c16 -d5`, and (unless --no-sla) the
highest open-loop rate whose p99 stays within --sla-ms is searched for. Where nginx is
measured, every target's latency is also taken at one fixed open-loop rate, half of nginx's
closed-loop QPS in scenario 1 (unless --no-fixed-load): the same offered load for all.
Every measurement is taken target by target and scenario by scenario in rotation, in an order
shuffled per round from a seed (phases.py, fair.py), so that drift on the machine falls on
all of them alike. Writes results.json, report.md, qps.svg and latency.svg into --out.
"""

import argparse
import datetime
import json
import os
import shlex
import signal
import sys
import tempfile
import time

from . import fair, load, machine, phases, procs, report, targets
from .tls_run import parse_placement

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
    # Five, not three: two cells that do not differ give runs whose ranges do not meet with
    # a chance of 2 in C(2n, n): 10% with 3 runs each, 0.8% with 5 (fair.py's overlap rule).
    ap.add_argument("--runs", type=int, default=5,
                    help="rounds: runs per target and scenario, and SLA searches (default 5)")
    ap.add_argument("--connections", "-c", type=int, default=16,
                    help="concurrent connections (default 16)")
    ap.add_argument("--workers", type=int, default=1,
                    help="worker processes/threads of each gateway (default 1)")
    ap.add_argument("--warmup", type=float, default=1,
                    help="seconds of load before each closed-loop run (default 1)")
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
    ap.add_argument("--placement", default="",
                    help="where the processes run: %s, or CPUs as gateway=LIST,upstream=LIST,"
                         "load=LIST (default: own where there are workers + 2 CPUs, else "
                         "load-alone; see docs/benchmark.md)" % "|".join(procs.PLACEMENTS))
    ap.add_argument("--no-pin", action="store_true", help="do not pin processes to CPUs")
    ap.add_argument("--seed", type=int, default=None,
                    help="seed of the run order's shuffles (default: a new one, printed in "
                         "the report)")
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
    if args.placement and args.no_pin:
        ap.error("--placement and --no-pin: choose one")
    args.placement_name, args.pinning = None, None
    if args.placement:
        args.pinning = parse_placement(ap, args.placement, args.workers)
        args.placement_name = args.placement if args.placement in procs.PLACEMENTS else "custom"
    elif not args.no_pin:
        args.placement_name = procs.default_placement(procs.usable_cpus(), args.workers)
        if args.placement_name:
            args.pinning = procs.place(procs.usable_cpus(), args.workers, args.placement_name)
    if args.seed is None:
        args.seed = fair.new_seed()
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
    pinning = args.pinning
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
    rotation = fair.Rotation(args.seed)
    results = {
        "schema": SCHEMA,
        "kit": {
            "sluice_version": None,
            "started": datetime.datetime.now(datetime.timezone.utc).strftime(
                "%Y-%m-%dT%H:%M:%SZ"),
            "command": "sluice bench " + " ".join(shlex.quote(a) for a in argv),
            "duration_s": args.duration, "runs": args.runs, "connections": args.connections,
            "workers": args.workers, "warmup_s": args.warmup,
            "sla_ms": None if args.no_sla else args.sla_ms,
            "load_generator": load_kind, "load_threads": threads, "upstream": up_kind,
            "pinning": pinning, "placement": args.placement_name,
            "order": {"interleaved": True, "seed": args.seed, "rounds": {}},
            "notes": notes, "fixed_load": None,
        },
        "machine": machine.facts(),
        "targets": [],
    }
    try:
        upstream = targets.Upstream(up_kind, workdir, args.sluice, up_cpus)
        started.append(upstream)
        gateways = start_gateways(args, upstream, workdir, gw_cpus, started, results, notes)
        if "direct" in args.target_list:
            gateways.append(upstream)
        if not gateways:
            raise SystemExit("sluice bench: nothing to measure")
        measure(args, gateways, upstream, workdir, threads, load_cpus, rotation, results)
    finally:
        for t in reversed(started):
            t.stop()
        if args.keep:
            print("sluice bench: work dir kept at %s" % workdir, file=sys.stderr)
        else:
            import shutil
            shutil.rmtree(workdir, ignore_errors=True)
    return results


def start_gateways(args, upstream, workdir, gw_cpus, started, results, notes):
    """Starts the built-in targets and connects the peers; each goes into `started` as soon
    as it runs, so that a failure later stops it."""
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
    return gateways


def measure(args, gateways, upstream, workdir, threads, load_cpus, rotation, results):
    """The closed loop, the fixed load and the SLA search, each over every cell (target,
    scenario) in rotation."""
    kit, notes = results["kit"], results["kit"]["notes"]
    gen = load.Generator(args.sluice, kit["load_generator"], workdir, threads, load_cpus)
    open_gen = load.Generator(args.sluice, "builtin", workdir, threads, load_cpus)
    cells = [(t, s) for s in args.scenario_list for t in gateways if s in t.scenarios()]
    measured_targets = [t for t in gateways if any(c[0] is t for c in cells)]
    for t in gateways:
        if t not in measured_targets:
            notes.append("%s runs scenario 1 only: left out of scenario %s" % (
                t.name, args.scenarios))
    entries = {t.name: {"name": t.name, "kind": t.kind, "version": t.version,
                        "scenario2": t.scenario2 if 2 in t.scenarios() else None,
                        "scenarios": {}} for t in measured_targets}
    results["targets"] = [entries[t.name] for t in measured_targets]
    has_nginx = any(t.kind == "nginx" and s == 1 for t, s in cells)
    do_fixed = has_nginx and not args.no_fixed_load
    n = len(cells) * args.runs
    progress = Progress(n * (args.warmup + args.duration) +
                        (n * args.duration if do_fixed else 0) +
                        (0 if args.no_sla else n * 9 * args.sla_step_duration))

    def rounds(phase):
        got = rotation.rounds(cells, args.runs)
        kit["order"]["rounds"][phase] = [[phases.cell_name(c) for c in r] for r in got]
        return got

    phases.closed_rounds(rounds("closed"), entries, upstream, gen, args, progress)
    if not args.no_fixed_load:
        fixed = phases.fixed_load_plan(cells, entries, args.fixed_load_fraction, notes)
        kit["fixed_load"] = fixed or None
        if do_fixed and not fixed:
            progress.grow(-n * args.duration)
        if fixed:
            phases.fixed_load_runs(rounds("fixed_load"), entries, fixed["rate"], upstream,
                                   open_gen, args, progress)
    if not args.no_sla:
        phases.sla_blocks(rounds("sla"), entries, upstream, open_gen, args, progress)
    progress.close("sluice bench: done in %s" % _dur(time.monotonic() - progress.start))


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
