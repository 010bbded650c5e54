"""The parts of report.md that say how far the figures can be trusted.

- ``run_range``: a cell's lowest and highest run, for the tables' ranges and the charts'
  error bars.
- ``ratio_cell``: a ratio between two cells, or "no measurable difference" where their
  runs' ranges overlap (``fair.overlap``).
- ``warnings_section``: cells whose runs spread over more than ``fair.WIDE_SPREAD`` of their
  median, scenario 2 measurably faster than scenario 1 (drift, not plugins), one run only.
- ``plugin_cost_section``: each target's scenario 2 against its own scenario 1.
- ``scenario2_section``: what scenario 2 runs on each target (nginx's and HAProxy's
  equivalents of limit-count + prometheus).
- ``order_text`` / ``placement_text``: the settings table's rows on run order and placement.

Old results.json files (no run order, no placement name, no scenario 2 on nginx) still
render: the missing parts show "—" or are left out.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Optional

from . import fair

DASH = "\u2014"
EN = "\u2013"


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _scn(target: Optional[dict], key: str) -> Optional[dict]:
    s = ((target or {}).get("scenarios") or {}).get(key)
    return s if isinstance(s, dict) else None


def _dig(d: Any, path: tuple) -> Any:
    for k in path:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d


# Where each figure's runs and spread are: (runs list, value path in a run, spread key).
FIELDS = {
    "rps": (("runs",), ("rps",), ("spread", "rps")),
    "cpu": (("runs",), ("cpu_us_per_req",), ("spread", "cpu_us_per_req")),
    "mean": (("runs",), ("latency_ms", "mean"), None),
    "p99": (("runs",), ("latency_ms", "p99"), ("spread", "p99_ms")),
    "fixed_p99": (("fixed_load", "runs"), ("p99_ms",), ("fixed_load", "spread", "p99_ms")),
    "sla": (("sla", "runs"), ("best_rate",), ("sla", "spread")),
}
MEDIANS = {
    "rps": ("median", "rps"), "cpu": ("median", "cpu_us_per_req"),
    "mean": ("median", "latency_ms", "mean"), "p99": ("median", "latency_ms", "p99"),
    "fixed_p99": ("fixed_load", "median", "p99_ms"), "sla": ("sla", "median_best_rate"),
}


def run_range(target: Optional[dict], key: str, field: str) -> Optional[list]:
    """[lowest, highest] over the runs of one cell that have the figure; the recorded spread
    when the runs are not there; None when neither is."""
    s = _scn(target, key)
    if s is None:
        return None
    runs_path, value_path, spread_path = FIELDS[field]
    runs = _dig(s, runs_path)
    if isinstance(runs, list):
        vals = [_dig(r, value_path) for r in runs if isinstance(r, dict) and r.get("error") is None]
        vals = [float(v) for v in vals if _num(v)]
        if vals:
            return [min(vals), max(vals)]
    spread = _dig(s, spread_path) if spread_path else None
    if isinstance(spread, (list, tuple)) and len(spread) == 2 and all(_num(v) for v in spread):
        return [float(spread[0]), float(spread[1])]
    return None


def median(target: Optional[dict], key: str, field: str) -> Any:
    return _dig(_scn(target, key), MEDIANS[field])


def ratio_cell(a: Optional[dict], a_key: str, b: Optional[dict], b_key: str, field: str,
               fmt_ratio: Callable[[Any, Any], str]) -> str:
    """a's figure over b's ('0.86x'), or "no measurable difference" where the two cells'
    runs overlap; '—' where either figure is missing."""
    va, vb = median(a, a_key, field), median(b, b_key, field)
    if not (_num(va) and _num(vb)) or vb == 0:
        return DASH
    if a is b and a_key == b_key:
        return fmt_ratio(va, vb)  # the reference itself: 1.00x
    return fair.ratio_text(va, run_range(a, a_key, field), vb, run_range(b, b_key, field),
                           fmt_ratio)


def _targets(results: dict) -> list:
    return [t for t in results.get("targets") or [] if isinstance(t, dict)]


# The figures whose spread is checked: label, and how a value of it is printed.
LABELS = {
    "rps": ("QPS", lambda v: f"{v:,.0f}"),
    "cpu": ("CPU \u00b5s/request", lambda v: f"{v:,.1f}"),
    "fixed_p99": ("p99 at the fixed load", lambda v: f"{v:,.2f} ms"),
    "sla": ("SLA rate", lambda v: f"{v:,.0f} req/s"),
}


def wide_cells(results: dict) -> list[str]:
    """One line per cell and figure whose runs spread over more than fair.WIDE_SPREAD of
    its median."""
    out = []
    for t in _targets(results):
        for key in sorted((t.get("scenarios") or {}), key=str):
            for field, (label, fmt) in LABELS.items():
                med, rng = median(t, key, field), run_range(t, key, field)
                if _num(med) and fair.too_wide(med, rng):
                    out.append(f"{t['name']}, scenario {key}: {label} from {fmt(rng[0])} to "
                               f"{fmt(rng[1])}, a spread of "
                               f"{(rng[1] - rng[0]) / med * 100:.0f}% of its median {fmt(med)}")
    return out


def plugins_faster(results: dict) -> list[str]:
    """Targets whose scenario 2 (two plugins) served measurably more than scenario 1 (none):
    plugins do not make a gateway faster, the machine changed speed during the run."""
    out = []
    for t in _targets(results):
        s1, s2 = run_range(t, "1", "rps"), run_range(t, "2", "rps")
        m1, m2 = median(t, "1", "rps"), median(t, "2", "rps")
        if _num(m1) and _num(m2) and m2 > m1 and fair.differs(s1, s2):
            out.append(f"{t['name']}: two plugins {m2:,.0f} QPS ({s2[0]:,.0f}{EN}{s2[1]:,.0f}) "
                       f"against no plugin {m1:,.0f} ({s1[0]:,.0f}{EN}{s1[1]:,.0f})")
    return out


def warnings_section(results: dict, md: Callable[[Any], str]) -> list[str]:
    runs = _dig(results, ("kit", "runs"))
    wide, faster = wide_cells(results), plugins_faster(results)
    limit = f"{fair.WIDE_SPREAD * 100:.0f}%"
    L = ["## How far these figures can be trusted", ""]
    if runs == 1:
        L += ["- **One run per cell:** no spread was measured, so nothing here tells a "
              "difference from noise; run with `--runs 3` or more.", ""]
    if faster:
        L += ["- **Two plugins faster than none,** with the runs' ranges apart: the machine's "
              "speed changed during the run (plugins only add work). Rerun on a quieter "
              "machine."]
        L += [f"  - {md(x)}" for x in faster]
        L.append("")
    if wide:
        L += [f"- **Spread too wide to conclude:** these cells' runs spread over more than "
              f"{limit} of their median; their ratios say little. Rerun on a quieter machine "
              f"(nothing else running)."]
        L += [f"  - {md(x)}" for x in wide]
        L.append("")
    if not (faster or wide or runs == 1):
        L += [f"Every cell's runs stay within {limit} of its median, and no target served "
              f"measurably more with two plugins than without.", ""]
    L += ["A ratio between two cells whose runs' ranges (lowest to highest) overlap is "
          f"printed as \u201c{fair.NO_DIFFERENCE}\u201d rather than a winner; the charts' "
          "error bars show the same ranges.", ""]
    return L


def plugin_cost_section(results: dict, md: Callable[[Any], str],
                        fmt_ratio: Callable[[Any, Any], str]) -> list[str]:
    rows = []
    for t in _targets(results):
        if _scn(t, "1") is None or _scn(t, "2") is None:
            continue
        rows.append(f"| {md(t['name'])} | {ratio_cell(t, '2', t, '1', 'rps', fmt_ratio)} | "
                    f"{ratio_cell(t, '2', t, '1', 'cpu', fmt_ratio)} | "
                    f"{ratio_cell(t, '2', t, '1', 'p99', fmt_ratio)} |")
    if not rows:
        return []
    return ["## What scenario 2 costs each target", "",
            "Each target's scenario 2 over its own scenario 1, from the same interleaved "
            "rounds: below 1.00x QPS, above 1.00x CPU and p99 is what the plugins (or their "
            "equivalents) cost.", "",
            "| target | QPS, 2 / 1 | CPU \u00b5s/request, 2 / 1 | p99, 2 / 1 |",
            "|---|---:|---:|---:|"] + rows + [""]


def scenario2_section(results: dict, md: Callable[[Any], str]) -> list[str]:
    rows = [f"| {md(t['name'])} | {md(t['scenario2'])} |" for t in _targets(results)
            if _scn(t, "2") is not None and t.get("scenario2")]
    if not rows:
        return []
    return ["### Scenario 2 on each target", "",
            "nginx and HAProxy have neither limit-count nor prometheus; they run the nearest "
            "equivalent they ship (docs/benchmark.md says what differs).", "",
            "| target | scenario 2 |", "|---|---|"] + rows + [""]


def order_text(kit: dict) -> str:
    order = kit.get("order") if isinstance(kit.get("order"), dict) else None
    if not order or not order.get("interleaved"):
        return DASH
    warm = kit.get("warmup_s")
    warm_text = f"; {warm:g} s of load before each closed-loop run" if _num(warm) and warm else ""
    return (f"interleaved: each round runs every target and scenario once, in an order "
            f"shuffled per round (seed {order.get('seed')}){warm_text}")


PLACEMENT_WORDS = {
    "own": "each its own CPUs",
    "load-alone": "the load generator alone; gateway and upstream share",
    "gateway-alone": "the gateway alone; upstream and load generator share",
    "custom": "as given",
}


def placement_text(kit: dict, cores: Any) -> str:
    pin = kit.get("pinning")
    if not isinstance(pin, dict) or not pin:
        return f"not pinned: {cores if cores is not None else '?'} cores"
    names = {"gateway": "gateway", "upstream": "upstream", "load": "load generator"}
    parts = []
    for k, v in pin.items():
        cpus = ", ".join(str(c) for c in v) if isinstance(v, (list, tuple)) else str(v)
        parts.append(f"{names.get(k, k)} CPU {cpus}")
    text = "; ".join(parts)
    name = kit.get("placement")
    if name:
        text = f"{name} ({PLACEMENT_WORDS.get(name, name)}): {text}"
    return text
