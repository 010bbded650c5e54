"""report.md and the terminal summary of `sluice bench tls` (results from tls_run.py).

results.json (kind "tls", schema 1):

    {"schema": 1, "kind": "tls",
     "kit": {"command", "started", "commit", "sluice_version", "nginx_version", "duration_s",
             "runs", "warmup_s", "connections", "procs", "tls_max",
             "pinning": null | {"gateway": [1], "upstream": [1], "load": [0]},
             "placement": "gateways on CPU 1, ...", "notes": [...]},
     "machine": {...as `sluice bench`...},
     "measures": [
       {"name": "https", "what": "...", "figure": "cpu_us_per_req" | "per_cpu_s",
        "unit": "...", "better": "lower" | "higher",
        "targets": {"Sluice": {"runs": [{"value": .., "cpu_s": .., "error": null, ...}],
                               "median": .., "spread": [min, max]},
                    "nginx": {...}},
        "ratio": {"per_run": [..], "median": .., "spread": [min, max]},  (Sluice / nginx)
        "goal": null | {"ratio_max": 0.6 | "ratio_min": 1.0, "met": true | false | null}}]}
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


def _ratio(r):
    if not r or r.get("median") is None:
        return "–"
    lo, hi = r["spread"]
    return "%.2fx (%.2f–%.2f)" % (r["median"], lo, hi)


def _goal(g):
    if not g:
        return ""
    bound = ("≤ %.2gx" % g["ratio_max"]) if "ratio_max" in g else ("≥ %.2gx" % g["ratio_min"])
    verdict = {True: "met", False: "**missed**", None: "no figure"}[g["met"]]
    return "%s: %s" % (bound, verdict)


def _failures(m):
    out = []
    for tname, t in m["targets"].items():
        for i, r in enumerate(t["runs"]):
            if r.get("error"):
                out.append("%s, %s, run %d: %s" % (m["name"], tname, i + 1, r["error"]))
    return out


def table(results):
    rows = ["| measure | figure | Sluice (median, range) | nginx (median, range) | "
            "Sluice / nginx (median, range) | goal |",
            "|---|---|---:|---:|---:|---|"]
    for m in results["measures"]:
        s = m["targets"].get("Sluice", {})
        n = m["targets"].get("nginx", {})
        rows.append("| %s | %s | %s (%s) | %s (%s) | %s | %s |" % (
            m["name"], m["unit"], _num(s.get("median")), _spread(s.get("spread")),
            _num(n.get("median")), _spread(n.get("spread")), _ratio(m["ratio"]),
            _goal(m["goal"])))
    return "\n".join(rows) + "\n"


def summary(results):
    k = results["kit"]
    return ("TLS: Sluice against nginx, %d run(s) of %g s, %s\n" % (
        k["runs"], k["duration_s"], k["placement"]) + table(results))


def write(results, out_dir):
    k, mach = results["kit"], results["machine"]
    lines = [
        "# `sluice bench tls`",
        "",
        "- Machine: %s, %s, %s" % (mach.get("label"), mach.get("kernel"), mach.get("os")),
        "- Started %s, commit %s; %s, %s" % (k["started"], k["commit"] or "unknown",
                                           k["sluice_version"], k["nginx_version"]),
        "- Command: `%s`" % k["command"],
        "- %d run(s) of %g s per measurement, both gateways in every run (order alternating)"
        "; wrk `-t1 -c%d`; %d connection-per-request client process(es), TLS up to %s" % (
            k["runs"], k["duration_s"], k["connections"], k["procs"], k["tls_max"]),
        "- Placement: %s" % k["placement"],
        "",
        "CPU is each gateway's own utime + stime (nginx: master + worker) over the run. "
        "The ratio column is the median of the per-run Sluice / nginx ratios: below 1 is "
        "better for CPU per request, above 1 for handshakes per CPU-second.",
        "",
        "| measure | what |",
        "|---|---|",
    ]
    lines += ["| %s | %s |" % (m["name"], m["what"]) for m in results["measures"]]
    lines += ["", table(results)]
    fails = [f for m in results["measures"] for f in _failures(m)]
    notes = list(k.get("notes") or [])
    if fails:
        notes.append("runs left out of the medians: " + "; ".join(fails))
    if notes:
        lines += ["Notes:", ""] + ["- " + n for n in notes] + [""]
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "report.md")
    with open(path, "w") as f:
        f.write("\n".join(lines))
    return path
