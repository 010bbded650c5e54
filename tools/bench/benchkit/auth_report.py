"""report.md and the terminal summary of `sluice bench auth` (results from auth_run.py).

results.json (kind "auth", schema 1):

    {"schema": 1, "kind": "auth",
     "kit": {"command", "started", "commit", "sluice_version", "nginx_version", "duration_s",
             "runs", "warmup_s", "connections", "consumers", "consumers_put_s",
             "pinning": null | {"gateway": [1], "upstream": [1], "load": [0]},
             "placement": "gateways on CPU 1, ...", "request_headers": {measure: {...}},
             "jwt": {"alg", "claims", "token"}, "notes": [...]},
     "machine": {...as `sluice bench`...},
     "checks": {"Sluice": {"plain": {"authorised": 200},
                           "key-auth": {"authorised": 200, "wrong": 401, "missing": 401},
                           "jwt-auth": {...}},
                "nginx": {"plain": {...}, "key-auth": {...}}},
     "measures": [{"name": "sluice-plain", "letter": "a", "gateway", "variant", "what", "unit",
                   "runs": [{"value": µs | null, "cpu_us_per_req", "cpu_s", "requests", "rps",
                             "non2xx", "errors", "error": null | "...", ...}],
                   "median", "spread": [min, max], "rps_median"}],
     "ratios": [{"name": "b/a", "numerator", "denominator", "what", "per_run": [..],
                 "median", "spread": [min, max],
                 "budget": null | {"ratio_max": 1.05, "met": true | false | null}}],
     "cpus": {"Sluice" | "nginx" | "upstream": {"allowed": ["1"], "ran_on": [1]},
              "wrk": {"allowed": ["0"]}}}
"""

from . import variant_bench as vb


def summary(results):
    k = results["kit"]
    return ("Authentication: %d run(s) of %g s, %d consumers, %s\n" % (
        k["runs"], k["duration_s"], k["consumers"], k["placement"]) + vb.tables(results))


def write(results, out_dir):
    k, mach = results["kit"], results["machine"]
    lines = [
        "# `sluice bench auth`",
        "",
        "- Machine: %s, %s, %s" % (mach.get("label"), mach.get("kernel"), mach.get("os")),
        "- Started %s, commit %s; %s, %s" % (k["started"], k["commit"] or "unknown",
                                           k["sluice_version"], k["nginx_version"]),
        "- Command: `%s`" % k["command"],
        "- %d run(s) of %g s per measurement, all five in every run (order reversing); "
        "wrk `-t1 -c%d`; %d consumers on Sluice (PUT in %.1f s)" % (
            k["runs"], k["duration_s"], k["connections"], k["consumers"],
            k.get("consumers_put_s") or 0),
        "- Placement: %s" % k["placement"],
        "- CPUs: %s" % vb.cpus_text(results),
        "",
        "CPU is each gateway's own utime + stime (nginx: master + worker) over the run, "
        "divided by the requests wrk completed. A ratio is the median of the per-run ratios.",
        "",
        vb.tables(results),
        "Answers before the load (right / wrong / no credentials):",
        "",
    ]
    for gw, variants in (results.get("checks") or {}).items():
        for v, c in variants.items():
            lines.append("- %s, %s: %s" % (gw, v, ", ".join(
                "%s %s" % (what, status) for what, status in c.items())))
    lines.append("")
    lines += vb.notes_lines(results)
    return vb.write_report(lines, out_dir)
