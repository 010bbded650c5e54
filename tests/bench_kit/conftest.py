"""Fixtures for the bench kit's report tests: realistic results dicts (schema 1).

``make_results()`` builds what ``benchkit.runner`` writes for one machine: Sluice (both
scenarios, SLA), APISIX reached by URL (no pid: CPU and RSS null), nginx and haproxy
(scenario 1 only, nginx with an SLA block) and the direct ceiling (no CPU: external upstream).
"""

from __future__ import annotations

import copy
import os
import statistics
import sys

import pytest

_TOOLS_BENCH = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "tools", "bench"))
if _TOOLS_BENCH not in sys.path:
    sys.path.insert(0, _TOOLS_BENCH)


def make_run(rps, mean, p99, cpu=None, rss_kib=None, duration_s=5, non2xx=0, errors=0):
    return {
        "rps": float(rps),
        "requests": int(rps * duration_s),
        "non2xx": non2xx,
        "errors": errors,
        "latency_ms": {"mean": mean, "p50": round(mean * 0.95, 3), "p90": round(mean * 1.3, 3),
                       "p99": p99, "p99.9": round(p99 * 1.6, 3), "max": round(p99 * 4, 3)},
        "cpu_us_per_req": cpu,
        "rss_kib": rss_kib,
    }


def _median(vals):
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def _minmax(vals):
    vals = [v for v in vals if v is not None]
    return [min(vals), max(vals)] if vals else None


def make_scenario(runs, sla=None):
    """A scenario block as the runner writes it: runs, their median and spread."""
    ok = [r for r in runs if r.get("rps") is not None]
    if not ok:
        return {"runs": runs, "median": None,
                "spread": {"rps": None, "cpu_us_per_req": None, "p99_ms": None}, "sla": sla}
    median = {k: _median([r[k] for r in ok]) for k in ("rps", "requests", "non2xx", "errors",
                                                      "cpu_us_per_req", "rss_kib")}
    median["latency_ms"] = {k: _median([r["latency_ms"][k] for r in ok])
                            for k in ("mean", "p50", "p90", "p99", "p99.9", "max")}
    spread = {"rps": _minmax([r["rps"] for r in ok]),
              "cpu_us_per_req": _minmax([r["cpu_us_per_req"] for r in ok]),
              "p99_ms": _minmax([r["latency_ms"]["p99"] for r in ok])}
    return {"runs": runs, "median": median, "spread": spread, "sla": sla}


def make_sla(best_rates, sla_ms=3.0):
    runs = []
    for best in best_rates:
        steps = []
        rate = 5000
        while rate <= best + 5000:
            ok = rate <= best
            steps.append({"rate": rate, "achieved_rps": rate * 0.999, "p50_ms": 0.4,
                          "p99_ms": 1.2 if ok else 4.8, "p99.9_ms": 2.0 if ok else 9.0, "pass": ok})
            rate += 5000
        runs.append({"best_rate": best, "steps": steps})
    return {"sla_ms": sla_ms, "runs": runs, "median_best_rate": statistics.median(best_rates),
            "spread": [min(best_rates), max(best_rates)]}


MACHINE_X86 = {
    "label": "x86_64 Intel(R) Xeon(R) Platinum 8370C CPU @ 2.80GHz (2 cores)",
    "hostname": "bench-x86", "cpu_model": "Intel(R) Xeon(R) Platinum 8370C CPU @ 2.80GHz",
    "arch": "x86_64", "cores": 2, "kernel": "6.1.0-27-amd64",
    "os": "Debian GNU/Linux 12 (bookworm)", "memory_gib": 24.0,
}

MACHINE_ARM = {
    "label": "aarch64 Neoverse-N1 (4 cores)", "hostname": "bench-arm", "cpu_model": "Neoverse-N1",
    "arch": "aarch64", "cores": 4, "kernel": "6.1.0-27-arm64",
    "os": "Debian GNU/Linux 12 (bookworm)", "memory_gib": 16.0,
}


def make_results(machine=None, scale=1.0, duration_s=5):
    """One machine's results; ``scale`` multiplies every throughput (and divides latency)."""
    s = scale

    def runs(rates, mean, p99, cpus=None, rss=None):
        cpus = cpus or [None] * len(rates)
        return [make_run(r * s, round(mean / s, 3), round(p99 / s, 3), c, rss, duration_s)
                for r, c in zip(rates, cpus)]

    targets = [
        {"name": "Sluice", "kind": "sluice", "version": "0.9.0",
         "scenarios": {
             "1": make_scenario(runs([34100, 34567, 35020], 0.46, 0.90, [22.1, 22.8, 23.4], 9000),
                                sla=make_sla([28000 * s, 30000 * s, 31000 * s])),
             "2": make_scenario(runs([29800, 30080, 30500], 0.52, 1.05, [26.0, 26.4, 27.1], 9400)),
         }},
        {"name": "APISIX", "kind": "url", "version": "3.11.0",
         "scenarios": {
             "1": make_scenario(runs([14800, 14950, 15010], 1.07, 2.10)),
             "2": make_scenario(runs([13000, 13120, 13300], 1.21, 2.40)),
         }},
        {"name": "nginx", "kind": "nginx", "version": "1.22.1",
         "scenarios": {
             "1": make_scenario(runs([29700, 29880, 30100], 0.53, 1.00, [26.2, 26.5, 27.0], 5200),
                                sla=make_sla([24000 * s, 25000 * s, 26000 * s])),
         }},
        {"name": "haproxy", "kind": "haproxy", "version": "2.6.12",
         "scenarios": {
             "1": make_scenario(runs([31000, 31400, 31900], 0.50, 0.95, [24.0, 24.4, 25.0], 12000)),
         }},
        {"name": "direct", "kind": "direct", "version": "nginx 1.22.1",
         "scenarios": {
             "1": make_scenario(runs([61000, 61500, 62300], 0.26, 0.55)),
         }},
    ]
    return {
        "schema": 1,
        "kit": {"sluice_version": "0.9.0", "started": "2026-11-30T06:00:00Z",
                "command": "sluice bench --runs 3 --sla", "duration_s": duration_s, "runs": 3,
                "connections": 16, "workers": 1, "sla_ms": 3.0, "load_generator": "wrk",
                "upstream": "nginx", "pinning": None},
        "machine": copy.deepcopy(machine or MACHINE_X86),
        "targets": targets,
    }


@pytest.fixture
def results():
    return make_results()


@pytest.fixture
def results_pair():
    """(A, B): an arm64 box and an x86 box, the x86 one 1.25 times faster."""
    return make_results(MACHINE_ARM, scale=1.0), make_results(MACHINE_X86, scale=1.25)


@pytest.fixture
def build():
    """The builders, for tests that need a variant: build.results(machine, scale, duration_s)."""
    class Builders:
        results = staticmethod(make_results)
        scenario = staticmethod(make_scenario)
        run = staticmethod(make_run)
        sla = staticmethod(make_sla)
        machine_x86 = MACHINE_X86
        machine_arm = MACHINE_ARM
    return Builders


def pytest_configure(config):
    config.addinivalue_line("markers", "serial: measures time or capacity; run alone, after "
                            "the parallel part of the suite")
