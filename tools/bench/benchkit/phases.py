"""The measurements of `sluice bench`, each taken cell by cell in rotation.

A cell is one target in one scenario, `(target, scenario)`. Each phase (the closed loop, the
latency at a fixed load, the SLA search) is given its rounds (`fair.Rotation.rounds`): every
round runs every cell once, in its own shuffled order, so drift on the machine falls on all
cells alike. Before each run the target is switched to the cell's scenario (Sluice re-PUTs
its route; nginx and HAProxy serve the scenarios on two ports of one process) and checked.

Results land in `entries[name]["scenarios"][str(scenario)]` as runner.py's schema says; each
run also records its round and its position in the round.
"""

import statistics

from . import load, procs, sla


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _spread(values):
    values = [v for v in values if v is not None]
    return [min(values), max(values)] if values else None


def cell_name(cell):
    t, scenario = cell
    return "%s/%d" % (t.name, scenario)


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


def _place(run, i, pos):
    run["round"], run["position"] = i + 1, pos + 1
    return run


def closed_rounds(rounds, entries, upstream, gen, args, progress):
    """The closed loop (wrk -c -d): --warmup seconds of load, then one measured run, for each
    cell of each round."""
    runs = {}
    for i, order in enumerate(rounds):
        for pos, (t, s) in enumerate(order):
            url = t.url_for(s)
            progress.begin("%s: scenario %d, round %d/%d, closed loop -c%d -d%gs" % (
                t.name, s, i + 1, len(rounds), args.connections, args.duration))
            t.setup(s)
            if args.warmup > 0:
                try:
                    gen.closed(url, args.connections, args.warmup)
                except load.LoadError:
                    pass  # the measured run reports it
            try:
                r = measured(t, upstream, lambda: gen.closed(url, args.connections,
                                                             args.duration))
            except load.LoadError as e:
                r = failed_run(e)
            runs.setdefault((t.name, s), []).append(_place(r, i, pos))
            progress.end(args.warmup + args.duration)
    for (name, s), got in runs.items():
        median, spread = summarise(got)
        entries[name]["scenarios"][str(s)] = {
            "runs": got, "median": median, "spread": spread, "sla": None, "fixed_load": None}


def open_summary(r):
    """What the report keeps of one open-loop run (a fixed-load run or an SLA step)."""
    raw = r["raw"]
    return {"offered": raw.get("sent", 0) + raw.get("unsent", 0),
            "achieved_rps": r["rps"], "p50_ms": r["latency_ms"]["p50"],
            "p99_ms": r["latency_ms"]["p99"], "p99.9_ms": r["latency_ms"]["p99.9"],
            "errors": r["errors"], "non2xx": r["non2xx"], "unsent": r["unsent"],
            "cpu_us_per_req": r["cpu_us_per_req"]}


def fixed_load_plan(cells, entries, fraction, notes):
    """The fixed rate: `fraction` of nginx's median closed-loop QPS in scenario 1, or {}
    (with a note) when nginx did not run scenario 1 or has no QPS there."""
    ref = next((t for t, s in cells if t.kind == "nginx" and s == 1), None)
    if ref is None:
        notes.append("nginx is not measured in scenario 1: no latency at a fixed load")
        return {}
    median = entries[ref.name]["scenarios"]["1"]["median"]
    if not median or not median.get("rps"):
        notes.append("nginx has no closed-loop QPS: no latency at a fixed load")
        return {}
    return {"reference": ref.name, "fraction": fraction,
            "rate": max(1, int(round(median["rps"] * fraction)))}


def fixed_load_runs(rounds, entries, rate, upstream, gen, args, progress):
    """One open-loop run at `rate` for each cell of each round: every target's latency under
    the same offered load."""
    per = {}
    for i, order in enumerate(rounds):
        for pos, (t, s) in enumerate(order):
            progress.begin("%s: scenario %d, round %d/%d, fixed load, offering %d req/s" % (
                t.name, s, i + 1, len(rounds), rate))
            t.setup(s)
            url = t.url_for(s)
            try:
                one = open_summary(measured(t, upstream, lambda: gen.open(
                    url, args.connections, args.duration, rate)))
            except load.LoadError as e:
                one = {"offered": 0, "achieved_rps": None, "p50_ms": None, "p99_ms": None,
                       "p99.9_ms": None, "errors": 0, "non2xx": 0, "unsent": 0,
                       "cpu_us_per_req": None, "error": str(e)}
            per.setdefault((t.name, s), []).append(_place(one, i, pos))
            progress.end(args.duration)
    for (name, s), got in per.items():
        ok = [r for r in got if r.get("error") is None]  # medians over the runs that ran
        median = {k: _median([r[k] for r in ok])
                  for k in ("achieved_rps", "p50_ms", "p99_ms", "p99.9_ms", "cpu_us_per_req")}
        entries[name]["scenarios"][str(s)]["fixed_load"] = {
            "rate": rate, "runs": got, "median": median,
            "spread": {"p99_ms": _spread([r["p99_ms"] for r in ok])}}


def sla_blocks(rounds, entries, upstream, gen, args, progress):
    """One SLA search for each cell of each round: search i of every cell before search
    i + 1 of any, so that a noisy minute spoils one search of several cells rather than
    every search of one."""
    plans, out = {}, {}
    for t, s in rounds[0] if rounds else []:
        entry = entries[t.name]["scenarios"][str(s)]
        base = entry["median"]["rps"] if entry["median"] else None
        if base:
            plans[(t.name, s)] = sla.plan(base, args.sla_start, args.sla_step)
            out[(t.name, s)] = []
        else:
            entry["sla"] = {"sla_ms": args.sla_ms, "runs": [], "median_best_rate": None,
                            "spread": None, "error": "no closed-loop throughput to start from"}
    for i, order in enumerate(rounds):
        for pos, (t, s) in enumerate(order):
            if (t.name, s) in plans:
                t.setup(s)
                one = sla_search(t, upstream, s, i, len(rounds), plans[(t.name, s)], gen,
                                 args, progress)
                out[(t.name, s)].append(_place(one, i, pos))
    for (name, s), got in out.items():
        best = [r["best_rate"] for r in got]
        entries[name]["scenarios"][str(s)]["sla"] = {
            "sla_ms": args.sla_ms, "runs": got, "median_best_rate": _median(best),
            "spread": _spread(best)}


def sla_search(t, upstream, scenario, i, n, plan, gen, args, progress):
    """One SLA search (the i-th of n) for one target and scenario."""
    start, step, ceiling = plan
    url = t.url_for(scenario)

    def measure(rate):
        progress.begin("%s: scenario %d, SLA search %d/%d, offering %d req/s (p99 <= %g ms)" % (
            t.name, scenario, i + 1, n, rate, args.sla_ms))
        try:
            r = measured(t, upstream, lambda: gen.open(
                url, args.connections, args.sla_step_duration, rate))
        except load.LoadError as e:
            progress.end(args.sla_step_duration)
            return {"offered": 0, "achieved_rps": 0, "p50_ms": None, "p99_ms": None,
                    "p99.9_ms": None, "errors": 1, "non2xx": 0, "unsent": 0,
                    "error": str(e)}
        progress.end(args.sla_step_duration)
        return open_summary(r)

    return sla.search(measure, start, step, args.sla_ms, ceiling)
