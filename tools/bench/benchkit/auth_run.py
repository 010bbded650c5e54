"""`sluice bench auth`: what key-auth and jwt-auth cost Sluice per request, in one run, with
nginx's plain proxy and its static key check alongside.

Against the kit's own upstream (nginx answering /hello, as in scenario 1), with wrk's
kept-alive load (`-t1 -cN`), five measurements (auth_targets.py says how each is set up):

  a  sluice-plain     Sluice, route 1 without plugins (scenario 1)
  b  sluice-key-auth  the same route with key-auth; wrk sends the consumer's `apikey`
  c  sluice-jwt-auth  the same route with jwt-auth; wrk sends `Authorization: Bearer <HS256>`
  d  nginx-plain      nginx proxying, scenario 1's configuration
  e  nginx-key        nginx with `map $http_apikey` + `if ... return 401`; wrk sends the key

Each figure is CPU µs per request: the server's own utime + stime (/proc/<pid>/stat; nginx:
master + worker) over the load run, divided by the requests wrk completed. Every run measures
all five (the order reverses from run to run), so each run gives one of each ratio:
b/a (the issue's key-auth budget, at most 1.05), c/a (jwt-auth, at most 1.15), b/e, a/d and
e/d. Before the load, each gateway is asked once with the right credentials (200), a wrong
key or token (401) and none (401); results.json keeps the answers. Writes results.json and
report.md into --out.
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

from . import auth_report, auth_targets, load, machine, procs, targets
from .tls_run import commit_of_kit, parse_placement, placement_text

SCHEMA = 1

# name: (letter, gateway, variant, what)
MEASURES = {
    "sluice-plain": ("a", "Sluice", "plain", "Sluice, route without plugins (scenario 1)"),
    "sluice-key-auth": ("b", "Sluice", "key-auth", "Sluice, the route with key-auth"),
    "sluice-jwt-auth": ("c", "Sluice", "jwt-auth", "Sluice, the route with jwt-auth (HS256)"),
    "nginx-plain": ("d", "nginx", "plain", "nginx, plain proxy (scenario 1)"),
    "nginx-key": ("e", "nginx", "key-auth", "nginx, static key check (map + if, 401)"),
}
# name: (numerator, denominator, budget: the ratio's highest allowed value, or None)
RATIOS = {
    "b/a": ("sluice-key-auth", "sluice-plain", 1.05,
            "key-auth's cost in Sluice (issue budget: at most 5% more CPU per request)"),
    "c/a": ("sluice-jwt-auth", "sluice-plain", 1.15,
            "jwt-auth's cost in Sluice (issue budget: at most 15% more)"),
    "b/e": ("sluice-key-auth", "nginx-key", None,
            "Sluice with key-auth against nginx's static key check (the floor)"),
    "a/d": ("sluice-plain", "nginx-plain", None, "Sluice against nginx, no auth"),
    "e/d": ("nginx-key", "nginx-plain", None, "the static key check's cost in nginx"),
}


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="sluice bench auth",
        description="Authenticated routes in one run: CPU per kept-alive request of Sluice "
                    "plain, with key-auth and with jwt-auth (HS256), nginx plain and with a "
                    "static key check, as ratios. See docs/performance.md (Authentication).")
    ap.add_argument("--out", default="bench-auth-out", help="output directory")
    ap.add_argument("--duration", type=float, default=5, help="seconds per run (default 5)")
    ap.add_argument("--runs", type=int, default=5, help="runs of each measurement (default 5)")
    ap.add_argument("--warmup", type=float, default=1,
                    help="seconds of each measurement before the first run (default 1)")
    ap.add_argument("--connections", "-c", type=int, default=16,
                    help="wrk's kept-alive connections (default 16)")
    ap.add_argument("--consumers", type=int, default=1000,
                    help="consumers on Sluice, each with a key-auth key and a jwt-auth key "
                         "(default 1000; the measured one is among them)")
    ap.add_argument("--quick", action="store_true",
                    help="a check that everything runs: 1 run of 1 s, no warm-up")
    ap.add_argument("--placement", default="",
                    help="CPUs as gateway=LIST,upstream=LIST,load=LIST (e.g. "
                         "gateway=0,upstream=0,load=1); default: the kit's plan")
    ap.add_argument("--no-pin", action="store_true", help="do not pin processes to CPUs")
    ap.add_argument("--sluice", default=os.environ.get("SLUICE_BIN", ""),
                    help="the sluice binary (default: the one running this kit)")
    ap.add_argument("--keep", action="store_true", help="keep the work dir (configs, logs)")
    args = ap.parse_args(argv)
    if args.quick:
        args.duration, args.runs, args.warmup = 1, 1, 0
    if args.duration <= 0 or args.runs < 1 or args.connections < 1 or args.consumers < 1:
        ap.error("--duration, --runs, --connections and --consumers must be positive")
    args.pinning = None
    if args.placement:
        args.pinning = parse_placement(ap, args.placement)
    elif not args.no_pin:
        args.pinning = procs.pin_plan(procs.usable_cpus(), 1)
    if not args.sluice or not os.access(args.sluice, os.X_OK):
        ap.error("--sluice: no sluice binary given (run the kit as `sluice bench auth`)")
    return args


# --- where the processes ran --------------------------------------------------------------

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


# --- one measurement ----------------------------------------------------------------------

def wrk_script(workdir, name, headers):
    """report.lua's done() hook with the measurement's request headers set."""
    path = os.path.join(workdir, "%s.lua" % name)
    with open(path, "w") as f:
        for k, v in headers.items():
            f.write("wrk.headers[%s] = %s\n" % (json.dumps(k), json.dumps(v)))
        f.write(load.WRK_SCRIPT)
    return path


def measure_once(name, gw, upstream, gen, script, args, seen_cpus):
    _, _, variant, _ = MEASURES[name]
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


def check_answers(gw, token):
    """What each gateway answers with the right, a wrong and no credentials, per variant."""
    wrong = {"key-auth": {"apikey": auth_targets.WRONG_KEY},
             "jwt-auth": {"Authorization": "Bearer " + auth_targets.hs256_token(
                 auth_targets.JWT_KEY, "wrong-secret", int(time.time()) + 3600)}}
    out = {}
    variants = ("plain", "key-auth", "jwt-auth") if gw.name == "Sluice" else ("plain",
                                                                               "key-auth")
    for v in variants:
        url = gw.use_variant(v)
        out[v] = {"authorised": auth_targets.status_of(url, auth_targets.variant_headers(
            v, token))}
        if v != "plain":
            out[v]["wrong"] = auth_targets.status_of(url, wrong[v])
            out[v]["missing"] = auth_targets.status_of(url)
    return out


def _stats(values):
    values = [v for v in values if v is not None]
    if not values:
        return None, None
    return statistics.median(values), [min(values), max(values)]


def summarise(runs):
    measures = []
    for name, (letter, gw, variant, what) in MEASURES.items():
        med, spread = _stats([r["value"] for r in runs[name]])
        rps, _ = _stats([r.get("rps") for r in runs[name] if r.get("value") is not None])
        measures.append({"name": name, "letter": letter, "gateway": gw, "variant": variant,
                         "what": what, "unit": "CPU µs / request", "runs": runs[name],
                         "median": med, "spread": spread, "rps_median": rps})
    ratios = []
    for rname, (num, den, budget, what) in RATIOS.items():
        per_run = [a["value"] / b["value"] if a["value"] and b["value"] else None
                   for a, b in zip(runs[num], runs[den])]
        med, spread = _stats(per_run)
        block = {"name": rname, "numerator": num, "denominator": den, "what": what,
                 "per_run": per_run, "median": med, "spread": spread, "budget": None}
        if budget is not None:
            block["budget"] = {"ratio_max": budget,
                               "met": None if med is None else med <= budget}
        ratios.append(block)
    return measures, ratios


def _progress(what, count, t0):
    head = "[%d/%d] " % count if count else ""
    print("%s%s (%.0f s)" % (head, what, time.monotonic() - t0), file=sys.stderr, flush=True)


def run(args, argv):
    if not targets.have_nginx():
        raise RuntimeError("nginx is not installed (apt-get install nginx-light): it is the "
                           "upstream and the reference")
    if not load.have_wrk():
        raise RuntimeError("wrk is not installed (apt-get install wrk)")
    pin = args.pinning
    workdir = tempfile.mkdtemp(prefix="sluice-bench-auth-")
    token = auth_targets.make_token()
    started = []
    results = {
        "schema": SCHEMA, "kind": "auth",
        "kit": {"command": "sluice bench auth " + " ".join(shlex.quote(a) for a in argv),
                "started": datetime.datetime.now(datetime.timezone.utc).strftime(
                    "%Y-%m-%dT%H:%M:%SZ"),
                "commit": commit_of_kit(), "sluice_version": None, "nginx_version": None,
                "duration_s": args.duration, "runs": args.runs, "warmup_s": args.warmup,
                "connections": args.connections, "consumers": args.consumers,
                "pinning": pin, "placement": placement_text(pin), "notes": []},
        "machine": machine.facts(),
    }
    try:
        upstream = targets.Upstream("nginx", workdir, args.sluice, pin and pin["upstream"])
        started.append(upstream)
        nginx = auth_targets.AuthNginx(upstream, workdir, pin and pin["gateway"])
        started.append(nginx)
        t0 = time.monotonic()
        _progress("Sluice: putting %d consumers" % args.consumers, None, t0)
        sluice = auth_targets.AuthSluice(args.sluice, upstream, workdir,
                                         pin and pin["gateway"], args.consumers, token)
        started.append(sluice)
        results["kit"].update(sluice_version=sluice.version, nginx_version=nginx.version,
                              consumers_put_s=round(sluice.consumers_put_s, 2))
        gws = {"Sluice": sluice, "nginx": nginx}
        results["checks"] = {name: check_answers(gw, token) for name, gw in gws.items()}
        gen = load.Generator(args.sluice, "wrk", workdir, 1, pin and pin["load"])
        scripts = {name: wrk_script(workdir, name, auth_targets.variant_headers(v, token))
                   for name, (_, _, v, _) in MEASURES.items()}
        headers = {name: auth_targets.variant_headers(v, "<token>")
                   for name, (_, _, v, _) in MEASURES.items()}
        results["kit"]["request_headers"] = headers
        results["kit"]["jwt"] = {"alg": "HS256", "claims": ["key", "exp"], "token": token}
        seen = {}
        order = list(MEASURES)
        if args.warmup > 0:
            warm = argparse.Namespace(**dict(vars(args), duration=args.warmup))
            for name in order:
                _progress("warm-up: %s" % name, None, t0)
                measure_once(name, gws[MEASURES[name][1]], upstream, gen, scripts[name],
                             warm, {})
        runs = {name: [] for name in order}
        total, done = len(order) * args.runs, 0
        for i in range(args.runs):
            for name in (order if i % 2 == 0 else order[::-1]):
                done += 1
                _progress("run %d/%d: %s" % (i + 1, args.runs, name), (done, total), t0)
                runs[name].append(measure_once(name, gws[MEASURES[name][1]], upstream, gen,
                                               scripts[name], args, seen))
        results["measures"], results["ratios"] = summarise(runs)
        results["cpus"] = {
            "Sluice": {"allowed": allowed_cpus(sluice.pids), "ran_on": sorted(seen.get(
                "Sluice", ()))},
            "nginx": {"allowed": allowed_cpus(nginx.pids), "ran_on": sorted(seen.get(
                "nginx", ()))},
            "upstream": {"allowed": allowed_cpus(upstream.pids), "ran_on": sorted(seen.get(
                "upstream", ()))},
            "wrk": {"allowed": [",".join(map(str, sorted(gen.cpus)))] if gen.cpus else []},
        }
        print("sluice bench auth: done in %.0f s" % (time.monotonic() - t0), file=sys.stderr)
    finally:
        for t in reversed(started):
            t.stop()
        if args.keep:
            print("sluice bench auth: work dir kept at %s" % workdir, file=sys.stderr)
        else:
            import shutil
            shutil.rmtree(workdir, ignore_errors=True)
    return results


def main(argv):
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        results = run(args, argv)
    except (RuntimeError, ValueError, load.LoadError) as e:
        print("sluice bench auth: %s" % e, file=sys.stderr)
        return 1
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "results.json")
    with open(path + ".tmp", "w") as f:
        json.dump(results, f, indent=1)
        f.write("\n")
    os.replace(path + ".tmp", path)
    md = auth_report.write(results, args.out)
    sys.stdout.write(auth_report.summary(results))
    print("sluice bench auth: wrote %s, %s" % (path, md))
    return 0
