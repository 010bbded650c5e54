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

import os


def _num(v):
    if v is None:
        return "–"
    if v >= 1000:
        return "{:,.0f}".format(v)
    return "%.1f" % v if v >= 10 else "%.2f" % v


def _spread(s):
    return "–" if not s else "%s–%s" % (_num(s[0]), _num(s[1]))


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
            m["letter"], m["what"], _num(m["median"]), _spread(m["spread"]),
            _num(m["rps_median"])))
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


def summary(results):
    k = results["kit"]
    return ("Authentication: %d run(s) of %g s, %d consumers, %s\n" % (
        k["runs"], k["duration_s"], k["consumers"], k["placement"]) + tables(results))


def _failures(results):
    out = []
    for m in results["measures"]:
        for i, r in enumerate(m["runs"]):
            if r.get("error"):
                out.append("%s, run %d: %s" % (m["name"], i + 1, r["error"]))
    return out


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
        "- CPUs: %s" % cpus_text(results),
        "",
        "CPU is each gateway's own utime + stime (nginx: master + worker) over the run, "
        "divided by the requests wrk completed. A ratio is the median of the per-run ratios.",
        "",
        tables(results),
        "Answers before the load (right / wrong / no credentials):",
        "",
    ]
    for gw, variants in (results.get("checks") or {}).items():
        for v, c in variants.items():
            lines.append("- %s, %s: %s" % (gw, v, ", ".join(
                "%s %s" % (what, status) for what, status in c.items())))
    lines.append("")
    notes = list(k.get("notes") or [])
    fails = _failures(results)
    if fails:
        notes.append("runs left out of the medians: " + "; ".join(fails))
    if notes:
        lines += ["Notes:", ""] + ["- " + n for n in notes] + [""]
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "report.md")
    with open(path, "w") as f:
        f.write("\n".join(lines))
    return path
