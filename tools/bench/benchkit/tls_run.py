"""`sluice bench tls`: what TLS costs Sluice against nginx, in one run, as ratios.

Sluice and nginx (one worker each) terminate TLS with the same certificates and settings
(tls_targets.py) and proxy to the same plaintext upstream. Each measurement reads the
servers' own CPU accounting (utime + stime in /proc/<pid>/stat; nginx: master + worker)
around one load run, and every run measures both gateways back to back (the order
alternates from run to run), so that each run yields one Sluice / nginx ratio:

  plain       wrk -t1 -cN over http, kept alive: CPU µs per request (the reference)
  https       the same over https (ECDSA certificate): CPU µs per request
  full-ecdsa  a new connection per request, full handshakes (ECDSA P-256): handshakes per
              CPU-second
  full-rsa    the same with the RSA-2048 certificate
  resume      a new connection per request, each resuming the previous one's session:
              resumed handshakes per CPU-second
  close       a new plaintext connection per request: connections per CPU-second (what
              the handshake figures include besides TLS: TCP, one request, the close)

The connection-per-request measurements use conn_client.py (several processes, each one
connection at a time), not wrk, whose reconnects resume the previous session.
Writes results.json and report.md into --out.
"""

import argparse
import datetime
import json
import os
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from . import load, machine, procs, targets, tls_report, tls_targets

SCHEMA = 1

# name: (load, what is served, figure, the Sluice / nginx goal)
MEASURES = {
    "plain": {"load": "wrk", "scheme": "http", "cert": None, "figure": "cpu_us_per_req",
              "what": "kept-alive HTTP: CPU µs per request"},
    "https": {"load": "wrk", "scheme": "https", "cert": "ecdsa", "figure": "cpu_us_per_req",
              "what": "kept-alive HTTPS (ECDSA P-256): CPU µs per request",
              "goal": {"ratio_max": 0.6}},
    "full-ecdsa": {"load": "conn", "mode": "full", "cert": "ecdsa", "figure": "per_cpu_s",
                   "what": "full handshakes (ECDSA P-256) per CPU-second",
                   "goal": {"ratio_min": 1.0}},
    "resume": {"load": "conn", "mode": "resume", "cert": "ecdsa", "figure": "per_cpu_s",
               "what": "resumed handshakes per CPU-second", "goal": {"ratio_min": 1.0}},
    "close": {"load": "conn", "mode": "plain", "cert": None, "figure": "per_cpu_s",
              "what": "new plaintext connections per CPU-second (one request each)"},
    "full-rsa": {"load": "conn", "mode": "full", "cert": "rsa", "figure": "per_cpu_s",
                 "what": "full handshakes (RSA-2048) per CPU-second",
                 "goal": {"ratio_min": 1.0}},
}
UNITS = {"cpu_us_per_req": "CPU µs / request", "per_cpu_s": "per CPU-second"}
CONN_CLIENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "conn_client.py")


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="sluice bench tls",
        description="TLS termination, Sluice against nginx in one run: CPU per kept-alive "
                    "HTTPS request, full (ECDSA P-256, RSA-2048) and resumed handshakes per "
                    "CPU-second, as Sluice / nginx ratios. See docs/performance.md (TLS).")
    ap.add_argument("--out", default="bench-tls-out", help="output directory")
    ap.add_argument("--duration", type=float, default=5, help="seconds per run (default 5)")
    ap.add_argument("--runs", type=int, default=5, help="runs of each measurement (default 5)")
    ap.add_argument("--warmup", type=float, default=1,
                    help="seconds of each load before the first run (default 1)")
    ap.add_argument("--connections", "-c", type=int, default=16,
                    help="wrk's kept-alive connections (default 16)")
    ap.add_argument("--procs", type=int, default=4,
                    help="connection-per-request client processes (default 4)")
    ap.add_argument("--tls-max", choices=("1.2", "1.3"), default="1.3",
                    help="the highest TLS version the handshake client offers (default 1.3)")
    ap.add_argument("--measures", default=",".join(MEASURES),
                    help="comma-separated, from %s (default: all)" % ", ".join(MEASURES))
    ap.add_argument("--quick", action="store_true",
                    help="a check that everything runs: 1 run of 1 s, no warm-up, 2 procs")
    ap.add_argument("--placement", default="",
                    help="%s, or CPUs as gateway=LIST,upstream=LIST,load=LIST (e.g. "
                         "gateway=0,upstream=0,load=1); default: the kit's plan" %
                         "|".join(procs.PLACEMENTS))
    ap.add_argument("--no-pin", action="store_true", help="do not pin processes to CPUs")
    ap.add_argument("--sluice", default=os.environ.get("SLUICE_BIN", ""),
                    help="the sluice binary (default: the one running this kit)")
    ap.add_argument("--keep", action="store_true", help="keep the work dir (configs, logs)")
    args = ap.parse_args(argv)
    if args.quick:
        args.duration, args.runs, args.warmup, args.procs = 1, 1, 0, 2
    if args.duration <= 0 or args.runs < 1 or args.connections < 1 or args.procs < 1:
        ap.error("--duration, --runs, --connections and --procs must be positive")
    args.measure_list = [m.strip() for m in args.measures.split(",") if m.strip()]
    unknown = [m for m in args.measure_list if m not in MEASURES]
    if unknown or not args.measure_list:
        ap.error("--measures: unknown %s (choose from %s)" % (
            ", ".join(unknown) or "(none given)", ", ".join(MEASURES)))
    args.pinning = None
    if args.placement:
        args.pinning = parse_placement(ap, args.placement)
    elif not args.no_pin:
        args.pinning = procs.pin_plan(procs.usable_cpus(), 1)
    if not args.sluice or not os.access(args.sluice, os.X_OK):
        ap.error("--sluice: no sluice binary given (run the kit as `sluice bench tls`)")
    return args


def parse_placement(ap, spec, workers=1):
    """--placement: a named plan (procs.PLACEMENTS) or gateway=LIST,upstream=LIST,load=LIST."""
    if spec in procs.PLACEMENTS:
        plan = procs.place(procs.usable_cpus(), workers, spec)
        if plan is None:
            ap.error("--placement %s: too few CPUs here (usable: %s)" % (
                spec, ",".join(map(str, procs.usable_cpus()))))
        return plan
    out = {}
    for part in spec.split(","):
        name, sep, cpus = part.partition("=")
        if not sep or name not in ("gateway", "upstream", "load"):
            ap.error("--placement: expected %s or gateway=LIST,upstream=LIST,load=LIST, got %r"
                     % ("|".join(procs.PLACEMENTS), spec))
        try:
            out[name] = [int(c) for c in cpus.split("+") if c != ""]
        except ValueError:
            ap.error("--placement %s: CPUs are numbers joined by +" % part)
    if set(out) != {"gateway", "upstream", "load"} or not all(out.values()):
        ap.error("--placement: give gateway, upstream and load CPUs")
    usable = set(procs.usable_cpus())
    bad = sorted({c for v in out.values() for c in v} - usable)
    if bad:
        ap.error("--placement: CPU %s not usable here (usable: %s)" % (
            ",".join(map(str, bad)), ",".join(map(str, sorted(usable)))))
    return out


def placement_text(pinning):
    if not pinning:
        return "unpinned (the scheduler's choice)"
    return "gateways on CPU %s, upstream on CPU %s, load generator on CPU %s" % tuple(
        "+".join(map(str, pinning[k])) for k in ("gateway", "upstream", "load"))


def conn_run(port, mode, duration, nprocs, tls_max, cpus):
    cmd = [sys.executable, CONN_CLIENT, "--port", str(port), "--mode", mode,
           "--procs", str(nprocs), "--duration", "%g" % duration, "--tls-max", tls_max,
           "--sni", tls_targets.SNI]
    pre = (lambda: os.sched_setaffinity(0, set(cpus))) if cpus else None
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 60,
                           preexec_fn=pre)
    except subprocess.TimeoutExpired:
        raise load.LoadError("conn_client.py did not finish within %d s" % (duration + 60))
    if p.returncode != 0:
        raise load.LoadError("conn_client.py exited %d: %s" % (p.returncode, p.stderr[-2000:]))
    return json.loads(p.stdout)


def check_conn(raw, mode):
    """Why a connection-per-request run does not count, or None."""
    n = raw["connections"]
    if n == 0 or raw["responses"] == 0:
        return "no connection completed"
    bad = sum(raw["errors"].values()) + (raw["responses"] - raw["status"].get("2xx", 0))
    if bad > 0.01 * n:
        return "%d of %d connections failed or got no 2xx" % (bad, n)
    if mode == "full" and raw["reused"]:
        return "%d handshakes were resumed" % raw["reused"]
    if mode == "resume" and raw["reused"] < 0.9 * raw["handshakes"]:
        return "only %d of %d handshakes were resumed" % (raw["reused"], raw["handshakes"])
    return None


def measure_once(name, spec, t, upstream, gen, args):
    """One load run against one target, with its CPU accounting."""
    port = t.use_cert(spec["cert"]) if spec["cert"] else t.port
    c0, u0 = procs.cpu_seconds(t.pids), procs.cpu_seconds(upstream.pids)
    try:
        if spec["load"] == "wrk":
            url = ("https://%s:%d/hello" % (tls_targets.SNI, port) if spec["scheme"] == "https"
                   else "http://127.0.0.1:%d/hello" % port)
            r = gen.closed(url, args.connections, args.duration)
        else:
            raw = conn_run(port, spec["mode"], args.duration, args.procs, args.tls_max,
                           args.pinning["load"] if args.pinning else None)
    except load.LoadError as e:
        return {"error": str(e), "value": None}
    cpu = procs.cpu_seconds(t.pids) - c0
    up_cpu = procs.cpu_seconds(upstream.pids) - u0
    if spec["load"] == "wrk":
        n = r["requests"]
        out = {"requests": n, "rps": r["rps"], "errors": r["errors"], "non2xx": r["non2xx"],
               "cpu_s": cpu, "latency_ms": r["latency_ms"], "command": r["raw"]["command"]}
        bad = r["errors"] + r["non2xx"]
        out["error"] = ("no request completed" if n == 0 else
                        "%d errors or non-2xx answers" % bad if bad > 0.01 * n else None)
    else:
        n = raw["handshakes"] if spec["mode"] != "plain" else raw["connections"]
        out = dict(raw, cpu_s=cpu)
        out["error"] = check_conn(raw, spec["mode"])
    out["upstream_cpu_s"] = up_cpu
    out["cpu_us_per_req" if spec["load"] == "wrk" else "cpu_us_per_conn"] = (
        cpu * 1e6 / n if n else None)
    if spec["figure"] == "per_cpu_s":
        out["value"] = n / cpu if cpu > 0 and out["error"] is None else None
    else:
        out["value"] = cpu * 1e6 / n if n and out["error"] is None else None
    return out


def _stats(values):
    values = [v for v in values if v is not None]
    if not values:
        return None, None
    return statistics.median(values), [min(values), max(values)]


def summarise(name, spec, runs):
    """Medians, spreads and the per-run Sluice / nginx ratios of one measurement."""
    block = {"name": name, "what": spec["what"], "figure": spec["figure"],
             "unit": UNITS[spec["figure"]],
             "better": "lower" if spec["figure"] == "cpu_us_per_req" else "higher",
             "targets": {}, "ratio": None, "goal": None}
    for tname, rs in runs.items():
        med, spread = _stats([r["value"] for r in rs])
        block["targets"][tname] = {"runs": rs, "median": med, "spread": spread}
    if set(runs) >= {"Sluice", "nginx"}:
        per_run = [s["value"] / n["value"] if s["value"] and n["value"] else None
                   for s, n in zip(runs["Sluice"], runs["nginx"])]
        med, spread = _stats(per_run)
        block["ratio"] = {"per_run": per_run, "median": med, "spread": spread}
        goal = spec.get("goal")
        if goal:
            met = None
            if med is not None:
                met = (med <= goal["ratio_max"] if "ratio_max" in goal
                       else med >= goal["ratio_min"])
            block["goal"] = dict(goal, met=met)
    return block


def commit_of_kit():
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        p = subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"],
                           capture_output=True, text=True, timeout=10)
        return p.stdout.strip() or None
    except OSError:
        return None


def run(args, argv):
    notes = []
    if not targets.have_nginx():
        raise RuntimeError("nginx is not installed (apt-get install nginx-light): the TLS "
                           "figures are ratios to nginx")
    measure_list = list(args.measure_list)
    if not load.have_wrk():
        dropped = [m for m in measure_list if MEASURES[m]["load"] == "wrk"]
        measure_list = [m for m in measure_list if m not in dropped]
        if dropped:
            notes.append("wrk is not installed: %s left out" % ", ".join(dropped))
        if not measure_list:
            raise RuntimeError("wrk is not installed and nothing else was asked for")
    tls_targets.check_localhost()
    pin = args.pinning
    workdir = tempfile.mkdtemp(prefix="sluice-bench-tls-")
    started = []
    results = {
        "schema": SCHEMA, "kind": "tls",
        "kit": {"command": "sluice bench tls " + " ".join(shlex.quote(a) for a in argv),
                "started": datetime.datetime.now(datetime.timezone.utc).strftime(
                    "%Y-%m-%dT%H:%M:%SZ"),
                "commit": commit_of_kit(), "sluice_version": None, "nginx_version": None,
                "duration_s": args.duration, "runs": args.runs, "warmup_s": args.warmup,
                "connections": args.connections, "procs": args.procs, "tls_max": args.tls_max,
                "pinning": pin, "placement": placement_text(pin), "notes": notes},
        "machine": machine.facts(),
        "measures": [],
    }
    try:
        certs = tls_targets.make_certs(workdir)
        upstream = targets.Upstream("nginx", workdir, args.sluice, pin and pin["upstream"])
        started.append(upstream)
        sluice = tls_targets.TlsSluice(args.sluice, upstream, workdir, certs,
                                       pin and pin["gateway"])
        started.append(sluice)
        nginx = tls_targets.TlsNginx(upstream, workdir, certs, pin and pin["gateway"])
        started.append(nginx)
        results["kit"]["sluice_version"] = sluice.version
        results["kit"]["nginx_version"] = nginx.version
        sluice.setup(1)
        nginx.setup(1)
        gen = load.Generator(args.sluice, "wrk", workdir, 1, pin and pin["load"])
        pair = [sluice, nginx]
        total = len(measure_list) * len(pair) * args.runs
        done = 0
        t0 = time.monotonic()
        if args.warmup > 0:
            warm = argparse.Namespace(**dict(vars(args), duration=args.warmup))
            for name in measure_list:
                for t in pair:
                    _progress("warm-up: %s, %s" % (t.name, name), None, t0)
                    measure_once(name, MEASURES[name], t, upstream, gen, warm)
        runs = {name: {t.name: [] for t in pair} for name in measure_list}
        for i in range(args.runs):
            order = pair if i % 2 == 0 else pair[::-1]
            for name in measure_list:
                for t in order:
                    done += 1
                    _progress("run %d/%d: %s, %s" % (i + 1, args.runs, t.name, name),
                              (done, total), t0)
                    runs[name][t.name].append(measure_once(name, MEASURES[name], t, upstream,
                                                           gen, args))
        results["measures"] = [summarise(n, MEASURES[n], runs[n]) for n in measure_list]
        print("sluice bench tls: done in %.0f s" % (time.monotonic() - t0), file=sys.stderr)
    finally:
        for t in reversed(started):
            t.stop()
        if args.keep:
            print("sluice bench tls: work dir kept at %s" % workdir, file=sys.stderr)
        else:
            import shutil
            shutil.rmtree(workdir, ignore_errors=True)
    return results


def _progress(what, count, t0):
    head = "[%d/%d] " % count if count else ""
    print("%s%s (%.0f s)" % (head, what, time.monotonic() - t0), file=sys.stderr, flush=True)


def main(argv):
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        results = run(args, argv)
    except (RuntimeError, ValueError) as e:
        print("sluice bench tls: %s" % e, file=sys.stderr)
        return 1
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "results.json")
    with open(path + ".tmp", "w") as f:
        json.dump(results, f, indent=1)
        f.write("\n")
    os.replace(path + ".tmp", path)
    md = tls_report.write(results, args.out)
    sys.stdout.write(tls_report.summary(results))
    print("sluice bench tls: wrote %s, %s" % (path, md))
    return 0
