#!/usr/bin/python3
"""Puts benchmark results from several machines (an Arm and an x86 one) side by side.

    /usr/bin/python3 tests/arm64/merge_results.py x86=results-x86 arm64=results-arm64

Each argument is LABEL=DIR, a directory holding what docs/performance.md ("Arm64 and x86")
collects on one machine:
  cpu_per_request.txt  the output of tests/perf/cpu_per_request.py --json
  <name>_bench.json    Google Benchmark output (--benchmark_out=... --benchmark_out_format=json)
  host.txt             optional: one line naming the machine (CPU, cores, kernel)
Prints Markdown tables: CPU per request and its ratio to nginx measured in the same run on
each machine (the ratio is what compares across machines; absolute µs depend on the core),
then every micro-benchmark's CPU time per machine and its ratio to the first machine.
"""

import glob
import json
import os
import statistics
import sys


def load_cpu_per_request(path):
    """{target: {"rps": median, "cpu_us": median}} from cpu_per_request.py --json output."""
    with open(path) as f:
        lines = f.read().splitlines()
    # The JSON document is printed last, starting with a line that is just "{".
    try:
        start = lines.index("{")
    except ValueError:
        sys.exit("%s: no JSON in it (run cpu_per_request.py with --json)" % path)
    runs = json.loads("\n".join(lines[start:]))
    return {name: {key: statistics.median(r[key] for r in rs) for key in ("rps", "cpu_us")}
            for name, rs in runs.items()}


def load_benchmarks(paths):
    """{benchmark name: CPU ns per iteration}: the median aggregate where there is one."""
    out = {}
    for path in paths:
        with open(path) as f:
            doc = json.load(f)
        scale = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
        for b in doc.get("benchmarks", []):
            if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
                continue
            name = b.get("run_name", b["name"])
            if b.get("run_type") == "iteration" and name in out:
                continue
            out[name] = b["cpu_time"] * scale[b.get("time_unit", "ns")]
    return out


def main():
    machines = []
    for arg in sys.argv[1:]:
        label, sep, d = arg.partition("=")
        if not sep or not os.path.isdir(d):
            sys.exit(__doc__)
        host = os.path.join(d, "host.txt")
        cpr = os.path.join(d, "cpu_per_request.txt")
        machines.append({
            "label": label,
            "host": open(host).read().strip() if os.path.exists(host) else "",
            "cpr": load_cpu_per_request(cpr) if os.path.exists(cpr) else {},
            "bench": load_benchmarks(sorted(glob.glob(os.path.join(d, "*_bench.json")))),
        })
    if not machines:
        sys.exit(__doc__)

    for m in machines:
        if m["host"]:
            print("- **%s**: %s" % (m["label"], m["host"]))
    print()

    targets = []
    for m in machines:
        targets += [t for t in m["cpr"] if t not in targets]
    if targets:
        heads = ["%s req/s | %s CPU µs/req | %s vs nginx" % ((m["label"],) * 3) for m in machines]
        print("| target | " + " | ".join(heads) + " |")
        print("|---|" + "---:|" * (3 * len(machines)))
        for t in targets:
            cells = []
            for m in machines:
                r, ng = m["cpr"].get(t), m["cpr"].get("nginx")
                if r is None:
                    cells += ["-", "-", "-"]
                    continue
                ratio = "-"
                if ng and t != "upstream (direct)":
                    ratio = "%.2fx" % (r["cpu_us"] / ng["cpu_us"])
                cells += ["%.0f" % r["rps"], "%.1f" % r["cpu_us"], ratio]
            print("| %s | %s |" % (t, " | ".join(cells)))
        print()

    names = []
    for m in machines:
        names += [n for n in m["bench"] if n not in names]
    if names:
        first = machines[0]
        print("| benchmark | " + " | ".join("%s CPU ns" % m["label"] for m in machines) +
              "".join(" | %s / %s" % (m["label"], first["label"]) for m in machines[1:]) + " |")
        print("|---|" + "---:|" * (2 * len(machines) - 1))
        for n in names:
            times = [m["bench"].get(n) for m in machines]
            cells = ["%.1f" % t if t is not None else "-" for t in times]
            for t in times[1:]:
                cells.append("%.2f" % (t / times[0]) if t is not None and times[0] else "-")
            print("| %s | %s |" % (n, " | ".join(cells)))


if __name__ == "__main__":
    main()
