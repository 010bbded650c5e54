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
import shlex
import signal
import sys
import tempfile
import time

from . import auth_report, auth_targets, load, machine, targets
from . import variant_bench as vb
from .tls_run import commit_of_kit, placement_text

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
    vb.add_common_args(ap, "bench-auth-out")
    ap.add_argument("--consumers", type=int, default=1000,
                    help="consumers on Sluice, each with a key-auth key and a jwt-auth key "
                         "(default 1000; the measured one is among them)")
    args = ap.parse_args(argv)
    if args.consumers < 1:
        ap.error("--consumers must be positive")
    return vb.finish_args(ap, args, "sluice bench auth")


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
        vb.progress("sluice bench auth", "Sluice: putting %d consumers" % args.consumers,
                    None, t0)
        sluice = auth_targets.AuthSluice(args.sluice, upstream, workdir,
                                         pin and pin["gateway"], args.consumers, token)
        started.append(sluice)
        results["kit"].update(sluice_version=sluice.version, nginx_version=nginx.version,
                              consumers_put_s=round(sluice.consumers_put_s, 2))
        gws = {"Sluice": sluice, "nginx": nginx}
        results["checks"] = {name: check_answers(gw, token) for name, gw in gws.items()}
        gen = load.Generator(args.sluice, "wrk", workdir, 1, pin and pin["load"])
        scripts = {name: vb.wrk_script(workdir, name, auth_targets.variant_headers(v, token))
                   for name, (_, _, v, _) in MEASURES.items()}
        headers = {name: auth_targets.variant_headers(v, "<token>")
                   for name, (_, _, v, _) in MEASURES.items()}
        results["kit"]["request_headers"] = headers
        results["kit"]["jwt"] = {"alg": "HS256", "claims": ["key", "exp"], "token": token}
        runs, seen = vb.measure_all("sluice bench auth", MEASURES, gws, upstream, gen,
                                    scripts, args, t0)
        results["measures"], results["ratios"] = vb.summarise(MEASURES, RATIOS, runs)
        results["cpus"] = vb.cpus_block(gws, upstream, gen, seen)
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
    path = vb.write_results(results, args.out)
    md = auth_report.write(results, args.out)
    sys.stdout.write(auth_report.summary(results))
    print("sluice bench auth: wrote %s, %s" % (path, md))
    return 0
