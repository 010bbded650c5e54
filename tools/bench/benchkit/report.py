"""Output side of ``sluice bench``: report.md, qps.svg and latency.svg, and ``compare``.

Public functions
----------------
``load_results(path) -> dict``
    Read and check a results.json; ``ValueError`` naming the file when it cannot be read,
    is not JSON, or does not follow the schema below.
``validate_results(results, source="results") -> dict``
    The schema check alone (``source`` names the input in the error message).
``write_report(results, out_dir) -> list[str]``
    Write ``report.md``, ``qps.svg`` and ``latency.svg`` for one run of the kit into
    ``out_dir`` (created if needed); return their paths in that order.
``compare(results_list, out_dir, sources=None) -> list[str]``
    The same three files for several machines side by side (typically one arm64 and one
    x86 box); ``sources`` (file names) are quoted in the report when given.

results.json, schema 1
----------------------
The runner (``benchkit.runner``) writes::

    {
     "schema": 1,
     "kit": {"sluice_version": "0.x", "started": "2026-11-30T06:00:00Z",
             "command": "sluice bench ...", "duration_s": 5, "runs": 3,
             "connections": 16, "workers": 1, "sla_ms": 3.0,
             "load_generator": "wrk" | "builtin", "upstream": "nginx" | "builtin",
             "pinning": null | {"gateway": [0], "upstream": [1], "load": [2, 3]},
             "placement": null | "own" | "load-alone" | "gateway-alone" | "custom",
             "warmup_s": 1,
             "order": {"interleaved": true, "seed": 12345,
                       "rounds": {"closed": [["Sluice/2", "nginx/1", ...], ...],
                                  "fixed_load": [...], "sla": [...]}},
             "fixed_load": null | {"reference": "nginx", "fraction": 0.5, "rate": 15000}},
     "machine": {"label": "x86_64 Intel(R) Xeon(R) ... (2 cores)", "hostname": "...",
                 "cpu_model": "...", "arch": "x86_64" | "aarch64", "cores": 2,
                 "kernel": "6.1.0-...", "os": "Debian GNU/Linux 12 (bookworm)",
                 "memory_gib": 24.0},
     "targets": [
       {"name": "Sluice", "kind": "sluice" | "nginx" | "haproxy" | "url" | "direct",
        "version": "...",
        "scenario2": null | "what scenario 2 runs on this target, in words",
        "scenarios": {
          "1": {
            "runs": [{"rps": 34000.0, "requests": 170000, "non2xx": 0, "errors": 0,
                      "latency_ms": {"mean": 0.46, "p50": 0.44, "p90": 0.6, "p99": 0.9,
                                     "p99.9": 1.5, "max": 4.0},
                      "cpu_us_per_req": 22.8, "rss_kib": 9000,
                      "round": 1, "position": 3}, ...],
            "median": {same keys as one run, each the median over runs},
            "spread": {"rps": [min, max], "cpu_us_per_req": [min, max],
                       "p99_ms": [min, max]},
            "sla": null | {"sla_ms": 3.0,
                           "runs": [{"best_rate": 30000,
                                     "steps": [{"rate": 10000, "achieved_rps": 9990,
                                                "p50_ms": .., "p99_ms": ..,
                                                "p99.9_ms": .., "pass": true}, ...]}],
                           "median_best_rate": 30000, "spread": [min, max]},
            "fixed_load": null | {"rate": 15000,
                                  "runs": [{"achieved_rps": .., "p50_ms": .., "p99_ms": ..,
                                            "p99.9_ms": .., "errors": 0, "non2xx": 0,
                                            "unsent": 0, "cpu_us_per_req": ..}, ...],
                                  "median": {"achieved_rps", "p50_ms", "p99_ms",
                                             "p99.9_ms", "cpu_us_per_req"},
                                  "spread": {"p99_ms": [min, max]}}
          },
          "2": {same shape} | absent (direct; a url peer without its Admin API; nginx and
                                      haproxy in results from before they had one)
        }}
     ]
    }

Scenario 1 is the articles' "no plugin" route, scenario 2 adds limit-count + prometheus.
The "direct" target sends the load straight at the upstream: it is the ceiling.
``cpu_us_per_req`` / ``rss_kib`` are null for a process that is not ours (a "url" target
without a pid, "direct" with an external upstream). Any median, spread or sla value may be
null when every run failed. Rendering: "n/a" where a scenario does not apply to a target
(absent), "—" where a value is missing (null, failed).

Layout decisions
----------------
* The articles' table rounds QPS to 100 (``34,567`` -> ``34,600``) and shows the mean
  latency (the median over runs of each run's mean) with two decimals.
* "vs nginx" ratios compare with the first target of kind "nginx" in the same scenario of
  the same results (scenario 2: nginx's equivalent; "—" where nginx has none). Every ratio
  between two cells whose runs' ranges overlap is "no measurable difference"
  (``report_fair``, ``fair``).
* non-2xx / errors are summed over the runs (a median would hide one bad run).
* latency.svg shows mean and p99 per scenario (four series), p99 in a lighter shade; the
  compare latency.svg shows the mean only (like the articles), to stay readable. Every bar
  carries an error bar from its lowest to its highest run.
* compare: A is the first input; every other input is reported as B / A. Charts group
  bars by (target, machine), target-major, for the targets present in every input, with
  a short machine label (CPU model without (R)/(TM)/GHz noise).
"""

from __future__ import annotations

import json
import math
import os
import re
from typing import Any, Callable, Iterable, Optional, Sequence

from . import report_fair as rf
from . import svg

__all__ = ["SCHEMA", "load_results", "validate_results", "write_report", "compare",
           "PUBLISHED", "fmt_qps", "fmt_ms", "fmt_ratio"]

SCHEMA = 1
DASH = "\u2014"          # —: value missing (every run failed)
NA = "n/a"               # scenario does not apply to the target
EN = "\u2013"            # –: ranges

SCENARIO_SHORT = {"1": "no plugin", "2": "two plugins"}
SCENARIO_LONG = {"1": "no plugin", "2": "limit-count + prometheus"}

# "The published benchmark" (APISIX Arm/x86 articles), single worker:
# (machine, no-plugin QPS, latency ms, two-plugins QPS, latency ms).
PUBLISHED = [
    ("Azure Ddsv5 (x86)", 14900, 1.07, 13100, 1.21),
    ("Azure Dpdsv5 (Arm)", 13400, 1.21, 11000, 1.43),
    ("GCP T2D (x86)", 12500, 1.26, 10600, 1.45),
    ("GCP T2A (Arm)", 11300, 1.39, 9900, 1.60),
    ("AWS c6g Graviton2", 13000, 1.11, 11000, 1.39),
    ("AWS c7g Graviton3", 23000, 0.68, 18000, 0.88),
]

QPS_COLOURS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7"]
# mean / p99 of scenario 1, mean / p99 of scenario 2, ...
LATENCY_COLOURS = ["#0072B2", "#56B4E9", "#D55E00", "#E69F00", "#009E73", "#7FD1B9"]

KIT_COMPARED = ("duration_s", "connections", "workers", "load_generator", "upstream", "sla_ms")

REPORT_MD, QPS_SVG, LATENCY_SVG = "report.md", "qps.svg", "latency.svg"

CHART_NOTE = ("Bars: median of the runs; error bars: the lowest and the highest run. Where two "
              "bars' error bars overlap, the run shows no measurable difference between them.")


# --------------------------------------------------------------------------- loading

def validate_results(results: Any, source: str = "results") -> dict:
    """Check ``results`` against schema 1; raise ValueError naming ``source``."""
    def bad(msg: str) -> ValueError:
        return ValueError(f"{source}: {msg}")

    if not isinstance(results, dict):
        raise bad(f"not a results object (a JSON object with \"schema\": {SCHEMA} expected)")
    if "schema" not in results:
        raise bad(f"no \"schema\" field (schema {SCHEMA} expected); not a sluice bench results file?")
    if results["schema"] != SCHEMA or isinstance(results["schema"], bool):
        raise bad(f"unsupported schema {results['schema']!r} (this kit reads schema {SCHEMA})")
    for key in ("kit", "machine"):
        if key in results and results[key] is not None and not isinstance(results[key], dict):
            raise bad(f"\"{key}\" must be an object")
    targets = results.get("targets")
    if not isinstance(targets, list):
        raise bad("\"targets\" must be a list")
    for i, t in enumerate(targets):
        if not isinstance(t, dict):
            raise bad(f"targets[{i}] must be an object")
        if not isinstance(t.get("name"), str) or not t["name"]:
            raise bad(f"targets[{i}] has no \"name\"")
        scns = t.get("scenarios", {})
        if not isinstance(scns, dict):
            raise bad(f"targets[{i}] ({t['name']}): \"scenarios\" must be an object")
        for k, s in scns.items():
            if s is not None and not isinstance(s, dict):
                raise bad(f"targets[{i}] ({t['name']}): scenario {k!r} must be an object or null")
            if isinstance(s, dict):
                for sub in ("median", "spread", "sla", "fixed_load"):
                    if s.get(sub) is not None and not isinstance(s[sub], dict):
                        raise bad(f"targets[{i}] ({t['name']}): scenario {k!r}: \"{sub}\" must be an object or null")
                fl = s.get("fixed_load")
                if isinstance(fl, dict):
                    for sub in ("median", "spread"):
                        if fl.get(sub) is not None and not isinstance(fl[sub], dict):
                            raise bad(f"targets[{i}] ({t['name']}): scenario {k!r}: \"fixed_load\".\"{sub}\" must be an object or null")
                    fr = fl.get("runs")
                    if fr is not None and not (isinstance(fr, list) and all(isinstance(r, dict) for r in fr)):
                        raise bad(f"targets[{i}] ({t['name']}): scenario {k!r}: \"fixed_load\".\"runs\" must be a list of objects")
                if s.get("runs") is not None and not isinstance(s["runs"], list):
                    raise bad(f"targets[{i}] ({t['name']}): scenario {k!r}: \"runs\" must be a list")
    return results


def load_results(path: str) -> dict:
    """Read a results.json; ValueError naming the file when missing, not JSON or not schema 1."""
    try:
        with open(path, "r", encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ValueError(f"{path}: cannot read: {e.strerror or e}") from e
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 text: {e}") from e
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: invalid JSON: {e}") from e
    return validate_results(data, source=str(path))


# --------------------------------------------------------------------------- formatting

def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _get(d: Any, *keys: str) -> Any:
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d


def _round_half_up(x: float, unit: float) -> float:
    return math.floor(x / unit + 0.5) * unit


def fmt_qps(v: Any) -> str:
    """QPS rounded to 100 like the articles: 34567 -> '34,600'."""
    if not _num(v):
        return DASH
    return f"{int(_round_half_up(float(v), 100)):,}"


def fmt_int(v: Any) -> str:
    return f"{int(_round_half_up(float(v), 1)):,}" if _num(v) else DASH


def fmt_ms(v: Any) -> str:
    """Milliseconds: two decimals (three below 0.1 ms, one from 100 ms)."""
    if not _num(v):
        return DASH
    v = float(v)
    if abs(v) < 0.1 and v != 0:
        return f"{v:.3f}"
    if abs(v) >= 100:
        return f"{v:,.1f}"
    return f"{v:.2f}"


def fmt_1(v: Any) -> str:
    return f"{float(v):,.1f}" if _num(v) else DASH


def fmt_ratio(a: Any, b: Any) -> str:
    """a / b as '0.86x'; '—' when either is missing or b is 0."""
    if not (_num(a) and _num(b)) or float(b) == 0:
        return DASH
    return f"{float(a) / float(b):.2f}x"


def _range(pair: Any, fmt: Callable[[Any], str]) -> str:
    if isinstance(pair, (list, tuple)) and len(pair) == 2 and _num(pair[0]) and _num(pair[1]):
        return f"{fmt(pair[0])}{EN}{fmt(pair[1])}"
    return ""


def _with_range(value: str, pair: Any, fmt: Callable[[Any], str]) -> str:
    r = _range(pair, fmt)
    return f"{value} ({r})" if r and value != DASH else value


def md(text: Any) -> str:
    """Escape text for a markdown table cell / inline text."""
    s = svg.clean_text(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    s = s.replace("|", "\\|").replace("\r", " ").replace("\n", " ")
    return s


def code(text: Any) -> str:
    """An inline code span that survives backticks inside the text."""
    s = svg.clean_text(text).replace("\r", " ").replace("\n", " ")
    runs = re.findall(r"`+", s)
    fence = "`" * (max((len(r) for r in runs), default=0) + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def _scenario_key_order(k: str) -> tuple:
    return (0, int(k), k) if str(k).isdigit() else (1, 0, str(k))


def _scenario_name(k: str, long: bool = True) -> str:
    names = SCENARIO_LONG if long else SCENARIO_SHORT
    return names.get(str(k), f"scenario {k}")


# --------------------------------------------------------------------------- data access

def _targets(results: dict) -> list[dict]:
    return [t for t in results.get("targets") or [] if isinstance(t, dict)]


def _scn(target: dict, key: str) -> Optional[dict]:
    s = (target.get("scenarios") or {}).get(key)
    return s if isinstance(s, dict) else None


def _median(target: dict, key: str) -> Optional[dict]:
    s = _scn(target, key)
    m = s.get("median") if s else None
    return m if isinstance(m, dict) else None


def _med(target: dict, key: str, *path: str) -> Any:
    return _get(_median(target, key), *path)


def _scenario_keys(results_list: Iterable[dict]) -> list[str]:
    keys: set[str] = set()
    for r in results_list:
        for t in _targets(r):
            for k, v in (t.get("scenarios") or {}).items():
                if isinstance(v, dict):
                    keys.add(str(k))
    return sorted(keys, key=_scenario_key_order)


def _nginx(results: dict) -> Optional[dict]:
    for t in _targets(results):
        if t.get("kind") == "nginx":
            return t
    return None


def _article_cell(target: dict, key: str) -> str:
    if _scn(target, key) is None:
        return NA
    rps = _med(target, key, "rps")
    lat = _med(target, key, "latency_ms", "mean")
    if not _num(rps) and not _num(lat):
        return DASH
    lat_s = f"{fmt_ms(lat)} ms" if _num(lat) else DASH
    return f"{_with_range(fmt_qps(rps), rf.run_range(target, key, 'rps'), fmt_qps)} / {lat_s}"


def _runs(target: dict, key: str) -> list[dict]:
    s = _scn(target, key)
    runs = s.get("runs") if s else None
    return [r for r in runs if isinstance(r, dict)] if isinstance(runs, list) else []


def _sum_runs(target: dict, key: str, field: str) -> Any:
    runs = _runs(target, key)
    vals = [r.get(field) for r in runs if _num(r.get(field))]
    if vals:
        return sum(vals)
    return _med(target, key, field)


def _failures(target: dict, key: str) -> str:
    n = _sum_runs(target, key, "non2xx")
    e = _sum_runs(target, key, "errors")
    if not _num(n) and not _num(e):
        return DASH
    return f"{fmt_int(n)} / {fmt_int(e)}"


def _ok_runs_note(target: dict, key: str) -> str:
    runs = _runs(target, key)
    if not runs:
        return ""
    ok = sum(1 for r in runs if _num(r.get("rps")))
    return "" if ok == len(runs) else f" [{ok}/{len(runs)} runs ok]"


def _sla(target: dict, key: str) -> Optional[dict]:
    s = _scn(target, key)
    sla = s.get("sla") if s else None
    return sla if isinstance(sla, dict) else None


def _sla_cell(sla: Optional[dict]) -> str:
    if sla is None:
        return NA
    return _with_range(fmt_int(sla.get("median_best_rate")), sla.get("spread"), fmt_int)


def _sla_ms(results_list: Sequence[dict]) -> Any:
    for r in results_list:
        for t in _targets(r):
            for k in _scenario_keys([r]):
                v = _get(_sla(t, k), "sla_ms")
                if _num(v):
                    return v
        v = _get(r, "kit", "sla_ms")
        if _num(v):
            return v
    return 3.0


def _fmt_num_plain(v: Any) -> str:
    if not _num(v):
        return DASH
    return f"{int(v)}" if float(v).is_integer() else f"{v:g}"


# --------------------------------------------------------------------------- machine

_CPU_NOISE = [r"\(R\)", r"\(TM\)", r"\(tm\)", r"\bCPU\b", r"\bProcessor\b", r"@\s*[\d.]+\s*GHz"]


def machine_short(machine: dict) -> str:
    """A short label for charts: 'x86_64 Intel Xeon Platinum 8370C (2 cores)'."""
    m = machine or {}
    cpu = str(m.get("cpu_model") or "")
    for pat in _CPU_NOISE:
        cpu = re.sub(pat, "", cpu)
    cpu = " ".join(cpu.split())
    parts = [str(m.get("arch") or ""), cpu]
    label = " ".join(p for p in parts if p)
    if _num(m.get("cores")):
        label = f"{label} ({_fmt_num_plain(m['cores'])}\u00a0cores)".strip()  # no break inside
    return label or str(m.get("label") or m.get("hostname") or "unknown machine")


def machine_label(machine: dict) -> str:
    m = machine or {}
    return str(m.get("label") or "") or machine_short(m)


def _pinning_text(results: dict) -> str:
    cores = _get(results, "machine", "cores")
    return rf.placement_text(results.get("kit") or {}, _fmt_num_plain(cores) if _num(cores) else None)


def _kit_value(results: dict, key: str) -> Any:
    return _get(results, "kit", key)


def _kit_rows(results: dict) -> list[tuple[str, str]]:
    kit = results.get("kit") or {}

    def v(key: str, unit: str = "") -> str:
        x = kit.get(key)
        if x is None or x == "":
            return DASH
        return f"{_fmt_num_plain(x) if _num(x) else x}{unit}"

    return [
        ("Duration per run", v("duration_s", " s")),
        ("Runs per scenario", v("runs")),
        ("Connections", v("connections")),
        ("Gateway workers", v("workers")),
        ("Load generator", v("load_generator")),
        ("Upstream", v("upstream")),
        ("Placement", _pinning_text(results)),
        ("Run order", rf.order_text(kit)),
        ("SLA", f"p99 \u2264 {v('sla_ms', ' ms')}"),
    ]


def _machine_rows(results: dict) -> list[tuple[str, str]]:
    m = results.get("machine") or {}

    def v(key: str, unit: str = "") -> str:
        x = m.get(key)
        if x is None or x == "":
            return DASH
        return f"{_fmt_num_plain(x) if _num(x) else x}{unit}"

    mem = m.get("memory_gib")
    return [
        ("CPU model", v("cpu_model")),
        ("Architecture", v("arch")),
        ("Cores", v("cores")),
        ("Kernel", v("kernel")),
        ("OS", v("os")),
        ("Memory", f"{float(mem):.1f} GiB" if _num(mem) else DASH),
        ("Hostname", v("hostname")),
    ]


# --------------------------------------------------------------------------- markdown helpers

def _table(header: Sequence[str], rows: Iterable[Sequence[str]], align: Optional[str] = None) -> list[str]:
    """A markdown table; ``align`` is one char per column: 'l' or 'r'."""
    header = list(header)
    align = align or "l" * len(header)
    sep = ["---:" if a == "r" else "---" for a in align]
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(sep) + "|"]
    for r in rows:
        out.append("| " + " | ".join(r) + " |")
    return out


def _published_section() -> list[str]:
    lines = ["### Published APISIX figures (for reference)", "",
             "Single worker, `wrk -d 5 -c 16`, from the APISIX Arm/x86 benchmark articles "
             "(other machines, other days: not comparable with the figures above except as a "
             "rough scale).", ""]
    rows = [(m, f"{q1:,} / {l1:.2f} ms", f"{q2:,} / {l2:.2f} ms") for m, q1, l1, q2, l2 in PUBLISHED]
    lines += _table(["machine", "no plugin QPS / latency", "two plugins QPS / latency"], rows, "lrr")
    return lines


def _article_footnote(results_list: Sequence[dict]) -> str:
    runs = {str(_kit_value(r, "runs")) for r in results_list if _kit_value(r, "runs") is not None}
    n = runs.pop() if len(runs) == 1 else "the"
    return (f"QPS: median of {n} runs, rounded to 100 like the articles, with the lowest and "
            f"highest run; latency: mean latency (median over runs). {NA}: the target cannot "
            f"run that scenario; {DASH}: no successful run.")


def _direct_note(results_list: Sequence[dict]) -> list[str]:
    names = sorted({t["name"] for r in results_list for t in _targets(r) if t.get("kind") == "direct"})
    if not names:
        return []
    who = ", ".join(md(n) for n in names)
    return [f"{who}: load sent straight at the upstream, without a gateway: the ceiling no "
            f"proxy can exceed on this machine.", ""]


# --------------------------------------------------------------------------- single report

def _detail_table(results: dict, key: str) -> list[str]:
    nginx = _nginx(results)
    header = ["target", "QPS median (min\u2013max)", "mean (ms)", "p50 (ms)", "p90 (ms)",
              "p99 (ms, min\u2013max)", "p99.9 (ms)", "CPU \u00b5s/request (min\u2013max)",
              "RSS MiB", "vs nginx CPU", "non-2xx / errors"]
    rows = []
    for t in _targets(results):
        if _scn(t, key) is None:
            continue
        spread = _get(_scn(t, key), "spread") or {}
        lat = _med(t, key, "latency_ms") or {}
        rps = _with_range(fmt_int(_med(t, key, "rps")), spread.get("rps"), fmt_int) + _ok_runs_note(t, key)
        cpu_v = _med(t, key, "cpu_us_per_req")
        cpu = _with_range(fmt_1(cpu_v), spread.get("cpu_us_per_req"), fmt_1)
        rss = _med(t, key, "rss_kib")
        rows.append([
            md(t["name"]),
            rps,
            fmt_ms(lat.get("mean")),
            fmt_ms(lat.get("p50")),
            fmt_ms(lat.get("p90")),
            _with_range(fmt_ms(lat.get("p99")), spread.get("p99_ms"), fmt_ms),
            fmt_ms(lat.get("p99.9")),
            cpu,
            fmt_1(rss / 1024.0) if _num(rss) else DASH,
            rf.ratio_cell(t, key, nginx, key, "cpu", fmt_ratio),
            _failures(t, key),
        ])
    return _table(header, rows, "lrrrrrrrrrr")


def _fixed_median(fl: Any) -> dict:
    """A fixed-load block's medians ({} when absent or malformed)."""
    med = fl.get("median") if isinstance(fl, dict) else None
    return med if isinstance(med, dict) else {}


def _nginx_fixed_p99(results: dict, key: str) -> Any:
    """nginx's p99 at the fixed load in scenario `key`: what every target's p99 is divided by."""
    nginx = _nginx(results)
    return _fixed_median(_get(_scn(nginx, key), "fixed_load")).get("p99_ms") if nginx else None


def _fixed_table(results: dict) -> list[str]:
    """p99 of every target at the one fixed rate; "vs nginx" divides by nginx's p99 in the
    same scenario (its equivalent of the two plugins in scenario 2)."""
    nginx = _nginx(results)
    rows = []
    for key in _scenario_keys([results]):
        for t in _targets(results):
            fl = _get(_scn(t, key), "fixed_load")
            if not isinstance(fl, dict):
                continue
            med = _fixed_median(fl)
            runs = [r for r in fl.get("runs") or [] if isinstance(r, dict)]
            bad = [sum(r[k] for r in runs if _num(r.get(k))) for k in ("non2xx", "errors", "unsent")]
            ok = sum(1 for r in runs if r.get("error") is None)
            note = f" [{ok}/{len(runs)} runs ok]" if runs and ok < len(runs) else ""
            rows.append([md(t["name"]), f"{key}: {_scenario_name(key, False)}",
                         fmt_int(med.get("achieved_rps")) + note, fmt_ms(med.get("p50_ms")),
                         _with_range(fmt_ms(med.get("p99_ms")),
                                     _get(fl, "spread", "p99_ms"), fmt_ms),
                         fmt_ms(med.get("p99.9_ms")),
                         rf.ratio_cell(t, key, nginx, key, "fixed_p99", fmt_ratio),
                         " / ".join(fmt_int(b) for b in bad)])
    if not rows:
        return []
    header = ["target", "scenario", "achieved req/s", "p50 (ms)", "p99 (ms, min\u2013max)",
              "p99.9 (ms)", "p99 vs nginx", "non-2xx / errors / unsent"]
    return _table(header, rows, "llrrrrrr")


def _fixed_cell(t: Optional[dict], key: str, nginx: Optional[dict]) -> str:
    """'1.04 ms at 12,764 req/s (0.76x nginx)' for one target's fixed load on one machine."""
    fl = _get(_scn(t, key), "fixed_load") if t else None
    p99 = _fixed_median(fl).get("p99_ms")
    if not _num(p99):
        return DASH
    text = f"{fmt_ms(p99)} ms at {fmt_int(fl.get('rate'))} req/s"
    ratio = rf.ratio_cell(t, key, nginx, key, "fixed_p99", fmt_ratio)
    return text if ratio == DASH else f"{text} ({ratio} nginx)"


def _sla_table(results: dict, sla_ms: Any) -> list[str]:
    nginx = _nginx(results)
    rows = []
    for key in _scenario_keys([results]):
        for t in _targets(results):
            sla = _sla(t, key)
            if sla is None:
                continue
            rows.append([md(t["name"]), f"{key}: {_scenario_name(key, False)}", _sla_cell(sla),
                         rf.ratio_cell(t, key, nginx, key, "sla", fmt_ratio)])
    if not rows:
        return []
    header = ["target", "scenario",
              f"highest rate with p99 \u2264 {_fmt_num_plain(sla_ms)} ms, req/s (median of runs, min\u2013max)",
              "vs nginx"]
    return _table(header, rows, "llrr")


def _qps_chart(categories: list[str], cells: list[tuple[dict, str]], keys: list[str], title: str,
               subtitle: str = "") -> str:
    """cells[i] = (target, label) in category order."""
    series, values = [], []
    for k in keys:
        series.append(f"scenario {k}: {_scenario_name(k)}")
        row = []
        for t, _ in cells:
            if _scn(t, k) is None:
                row.append(NA)
            else:
                v = _med(t, k, "rps")
                row.append(float(v) if _num(v) else DASH)
        values.append(row)
    ranges = [[rf.run_range(t, k, "rps") for t, _ in cells] for k in keys]
    return svg.bar_chart(title, categories, series, values, y_label="requests per second",
                         value_format=fmt_qps, colours=QPS_COLOURS, subtitle=subtitle,
                         ranges=ranges, note=CHART_NOTE)


def _latency_chart(categories: list[str], cells: list[tuple[dict, str]], keys: list[str], title: str,
                   subtitle: str = "", p99: bool = True) -> str:
    series, values, ranges = [], [], []
    stats = (("mean", "mean"), ("p99", "p99")) if p99 else (("mean", "mean"),)
    colours = LATENCY_COLOURS if p99 else QPS_COLOURS
    for k in keys:
        for stat, label in stats:
            ranges.append([rf.run_range(t, k, stat) for t, _ in cells])
            series.append(f"scenario {k} {label}" if p99 else f"scenario {k}: {_scenario_name(k)}")
            row = []
            for t, _ in cells:
                if _scn(t, k) is None:
                    row.append(NA)
                else:
                    v = _med(t, k, "latency_ms", stat)
                    row.append(float(v) if _num(v) else DASH)
            values.append(row)
    return svg.bar_chart(title, categories, series, values, y_label="milliseconds",
                         value_format=fmt_ms, colours=colours, subtitle=subtitle,
                         ranges=ranges, note=CHART_NOTE)


def _write(path: str, text: str) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8", errors="replace", newline="\n") as f:
        f.write(text)
    os.replace(tmp, path)


def _chart_keys(results_list: Sequence[dict]) -> list[str]:
    keys = _scenario_keys(results_list)
    return keys or ["1", "2"]


def render_report(results: dict) -> str:
    """The markdown text of report.md for one results dict (already validated)."""
    kit = results.get("kit") or {}
    label = machine_label(results.get("machine") or {})
    sla_ms = _sla_ms([results])
    L: list[str] = []
    L += [f"# Sluice benchmark: {md(label)}", ""]
    L.append(f"- Date: {md(kit.get('started') or DASH)}")
    if kit.get("command"):
        L.append(f"- Command: {code(kit['command'])}")
    L.append(f"- Sluice version: {md(kit.get('sluice_version') or DASH)}")
    L += ["", "## Machine", ""]
    L += _table(["", ""], [(k, md(v)) for k, v in _machine_rows(results)])
    L += ["", "## Kit settings", ""]
    L += _table(["", ""], [(k, md(v)) for k, v in _kit_rows(results)])
    notes = [n for n in kit.get("notes") or [] if isinstance(n, str)]
    if notes:
        L += [""] + [f"- Note: {md(n)}" for n in notes]
    L += ["", "Scenario 1: one route, one upstream node, no plugin. Scenario 2: the same route "
               "with limit-count (a count no test reaches) and prometheus, or the target's "
               "nearest equivalent.", ""]
    L += ["### Targets", ""]
    L += _table(["target", "kind", "version"],
                [(md(t["name"]), md(t.get("kind") or DASH), md(t.get("version") or DASH))
                 for t in _targets(results)])
    L.append("")
    L += rf.scenario2_section(results, md)

    # 2. The articles' table.
    L += ["## Results", ""]
    L += _table(["target", "no plugin QPS / latency", "two plugins QPS / latency"],
                [(md(t["name"]), _article_cell(t, "1"), _article_cell(t, "2")) for t in _targets(results)],
                "lrr")
    L += ["", _article_footnote([results]), ""]
    L += _direct_note([results])
    L += rf.warnings_section(results, md)

    # 3. Detail tables.
    for key in _scenario_keys([results]):
        L += [f"### Scenario {key}: {_scenario_name(key)}", ""]
        L += _detail_table(results, key)
        L.append("")
    L += ["Latency percentiles and CPU are medians over the runs; the ranges are the lowest and "
          "highest run. CPU \u00b5s/request: the gateway's (or server's) CPU time per request; "
          "\u201cvs nginx CPU\u201d divides it by nginx's in the same scenario of this run. "
          "non-2xx / errors are totals over the runs.", ""]
    L += rf.plugin_cost_section(results, md, fmt_ratio)

    # 4. Latency at one fixed load.
    fixed_lines = _fixed_table(results)
    fixed = kit.get("fixed_load") if isinstance(kit.get("fixed_load"), dict) else {}
    if fixed_lines:
        L += ["## Latency at a fixed load", ""]
        L += [f"Every target offered the same open-loop load: {fmt_int(fixed.get('rate'))} "
              f"requests/s, {_fmt_num_plain(fixed.get('fraction'))} of "
              f"{md(fixed.get('reference') or 'nginx')}'s closed-loop QPS in scenario 1; "
              "latency from each request's scheduled send time; medians over the runs. "
              "\u201cp99 vs nginx\u201d divides by nginx's p99 at this load in the same "
              "scenario.", ""]
        L += fixed_lines
        L.append("")

    # 5. SLA.
    sla_lines = _sla_table(results, sla_ms)
    if sla_lines:
        L += [f"## Throughput under an SLA (p99 \u2264 {_fmt_num_plain(sla_ms)} ms)", ""]
        L += sla_lines
        L += ["", "The load rate is raised step by step until p99 exceeds the SLA; each run's best "
                  "passing rate is kept, and the table shows their median and range.", ""]

    # 6. Reading the figures.
    L += ["## Reading these figures", "",
          "Absolute QPS depends on the machine and on what else runs on it: on a shared machine "
          "the ratios within one run (targets side by side, the \u201cvs nginx\u201d columns) "
          "are the comparable figures, not the absolute numbers.", ""]
    L += _published_section()
    L.append("")

    # 7. Charts.
    L += ["## Charts", "", f"![QPS per target]({QPS_SVG})", "",
          f"![Latency per target]({LATENCY_SVG})", ""]
    return "\n".join(L)


def write_report(results: dict, out_dir: str) -> list[str]:
    """Write report.md, qps.svg and latency.svg for one results dict; return their paths."""
    validate_results(results)
    os.makedirs(out_dir, exist_ok=True)
    targets = _targets(results)
    cats = [t["name"] for t in targets]
    cells = [(t, t["name"]) for t in targets]
    keys = _chart_keys([results])
    sub = machine_label(results.get("machine") or {})
    paths = [os.path.join(out_dir, n) for n in (REPORT_MD, QPS_SVG, LATENCY_SVG)]
    _write(paths[0], render_report(results))
    _write(paths[1], _qps_chart(cats, cells, keys, "Throughput (QPS, median of runs), higher is better", sub))
    _write(paths[2], _latency_chart(cats, cells, keys, "Latency (ms, mean and p99), lower is better", sub))
    return paths


# --------------------------------------------------------------------------- compare

def _labels(results_list: Sequence[dict], short: bool) -> list[str]:
    f = machine_short if short else machine_label
    raw = [f(r.get("machine") or {}) for r in results_list]
    out = []
    for i, lab in enumerate(raw):
        out.append(f"{lab} #{i + 1}" if raw.count(lab) > 1 else lab)
    return out


def _target_names(results: dict) -> list[str]:
    return [t["name"] for t in _targets(results)]


def _find(results: dict, name: str) -> Optional[dict]:
    for t in _targets(results):
        if t["name"] == name:
            return t
    return None


def _kit_differences(results_list: Sequence[dict]) -> list[str]:
    """One text per kit setting (KIT_COMPARED) whose value is not the same in every input."""
    diffs = []
    for key in KIT_COMPARED:
        vals = [_kit_value(r, key) for r in results_list]
        if len({json.dumps(float(v) if _num(v) else v, sort_keys=True) for v in vals}) > 1:
            shown = ", ".join(f"{_letter(i)}: {md(_fmt_num_plain(v) if _num(v) else (v if v is not None else DASH))}"
                              for i, v in enumerate(vals))
            diffs.append(f"`{key}` ({shown})")
    return diffs


def render_compare(results_list: Sequence[dict], sources: Optional[Sequence[str]] = None) -> str:
    labels = _labels(results_list, short=False)
    n = len(results_list)
    sla_ms = _sla_ms(results_list)
    L: list[str] = ["# Sluice benchmark comparison", ""]
    L += ["Inputs (A is the first; ratios are every other input over A):", ""]
    for i, (r, lab) in enumerate(zip(results_list, labels)):
        letter = _letter(i)
        src = f" {code(sources[i])}" if sources and i < len(sources) else ""
        kit = r.get("kit") or {}
        L.append(f"- {letter}:{src} {md(lab)}, {md(kit.get('started') or DASH)}, "
                 f"Sluice {md(kit.get('sluice_version') or DASH)}")
    L.append("")
    diffs = _kit_differences(results_list)
    if diffs:
        L += ["> **Warning:** the inputs' kit settings differ, so their figures are not measured "
              "the same way: " + "; ".join(diffs) + ".", ""]

    # Articles' table: one row per (machine, target).
    L += ["## Results", ""]
    rows = []
    for r, lab in zip(results_list, labels):
        for t in _targets(r):
            rows.append((f"{md(lab)} \u2014 {md(t['name'])}", _article_cell(t, "1"), _article_cell(t, "2")))
    L += _table(["machine \u2014 target", "no plugin QPS / latency", "two plugins QPS / latency"], rows, "lrr")
    L += ["", _article_footnote(results_list), ""]
    L += _direct_note(results_list)

    # Ratios B / A: one table per other input, one line per target measured on both.
    if n > 1:
        base = results_list[0]
        for i in range(1, n):
            L += [f"## Ratios {_letter(i)} / A ({md(labels[i])} / {md(labels[0])})", ""]
            rows = []
            missing = []
            for name in _target_names(base):
                ta, tb = _find(base, name), _find(results_list[i], name)
                if tb is None:
                    missing.append(name)
                    continue
                row = [md(name)]
                for field in ("rps", "cpu"):
                    for k in ("1", "2"):
                        if _scn(ta, k) is None or _scn(tb, k) is None:
                            row.append(NA)
                        else:
                            row.append(rf.ratio_cell(tb, k, ta, k, field, fmt_ratio))
                rows.append(row)
            L += _table(["target", "no plugin QPS", "two plugins QPS",
                         "no plugin CPU \u00b5s/request", "two plugins CPU \u00b5s/request"], rows, "lrrrr")
            L.append("")
            only_b = [nm for nm in _target_names(results_list[i]) if _find(base, nm) is None]
            if missing:
                L += [f"Not measured on {_letter(i)}: {', '.join(md(m) for m in missing)}.", ""]
            if only_b:
                L += [f"Not measured on A: {', '.join(md(m) for m in only_b)}.", ""]
        L += ["QPS above 1.00x: the other machine serves more than A; CPU \u00b5s/request below "
              "1.00x: it spends less CPU per request than A.", ""]

    all_names: list[str] = []
    for r in results_list:
        for nm in _target_names(r):
            if nm not in all_names:
                all_names.append(nm)

    # Latency at each machine's fixed load (half of that machine's nginx QPS, by default).
    fixed_rows = []
    for key in _scenario_keys(results_list):
        for name in all_names:
            cells = []
            for r in results_list:
                t = _find(r, name)
                cells.append(_fixed_cell(t, key, _nginx(r)))
            if all(c == DASH for c in cells):
                continue
            fixed_rows.append([md(name), f"{key}: {_scenario_name(key, False)}"] + cells)
    if fixed_rows:
        L += ["## Latency at a fixed load", "",
              "Each machine offered every target one open-loop rate, a fraction of its own "
              "nginx's closed-loop QPS (the rate differs between machines); p99 median over "
              "the runs, and its ratio to nginx's p99 on the same machine.", ""]
        header = ["target", "scenario"] + [f"{_letter(i)}: p99 at the fixed load" for i in range(n)]
        L += _table(header, fixed_rows, "ll" + "r" * n)
        L.append("")

    # SLA comparison.
    sla_rows = []
    for key in _scenario_keys(results_list):
        for name in all_names:
            slas = []
            for r in results_list:
                t = _find(r, name)
                slas.append(_sla(t, key) if t else None)
            if all(s is None for s in slas):
                continue
            row = [md(name), f"{key}: {_scenario_name(key, False)}"] + [_sla_cell(s) for s in slas]
            for i in range(1, n):
                row.append(rf.ratio_cell(_find(results_list[i], name), key,
                                         _find(results_list[0], name), key, "sla", fmt_ratio))
            sla_rows.append(row)
    if sla_rows:
        L += [f"## Throughput under an SLA (p99 \u2264 {_fmt_num_plain(sla_ms)} ms)", ""]
        header = ["target", "scenario"] + [f"{_letter(i)}: req/s (min\u2013max)" for i in range(n)] + \
                 [f"{_letter(i)} / A" for i in range(1, n)]
        L += _table(header, sla_rows, "ll" + "r" * (2 * n - 1))
        L.append("")

    # Machine facts and settings.
    L += ["## Machines and settings", ""]
    header = [""] + [f"{_letter(i)}: {md(lab)}" for i, lab in enumerate(labels)]
    facts: list[list[str]] = []
    per = [_machine_rows(r) + _kit_rows(r) for r in results_list]
    for j, (name, _) in enumerate(per[0]):
        facts.append([name] + [md(p[j][1]) for p in per])
    facts.append(["Command"] + [code(_kit_value(r, "command")) if _kit_value(r, "command") else DASH
                                for r in results_list])
    L += _table(header, facts)
    L.append("")

    L += ["## Reading these figures", "",
          "Each machine's figures were measured on that machine alone; compare the ratios, and "
          "check that the settings above match. Within one machine, the ratios between targets "
          "are the comparable figures on a shared machine.", ""]
    L += _published_section()
    L += ["", "## Charts", "",
          "Targets measured on every input, one group of bars per (target, machine).", "",
          f"![QPS per machine]({QPS_SVG})", "", f"![Latency per machine]({LATENCY_SVG})", ""]
    return "\n".join(L)


def _letter(i: int) -> str:
    s = ""
    i += 1
    while i:
        i, rem = divmod(i - 1, 26)
        s = chr(ord("A") + rem) + s
    return s


def compare(results_list: Sequence[dict], out_dir: str, sources: Optional[Sequence[str]] = None) -> list[str]:
    """Write report.md, qps.svg and latency.svg comparing several results; return their paths."""
    results_list = list(results_list)
    if not results_list:
        raise ValueError("compare: no results to compare")
    for i, r in enumerate(results_list):
        validate_results(r, source=sources[i] if sources and i < len(sources) else f"input {i + 1}")
    os.makedirs(out_dir, exist_ok=True)
    short = _labels(results_list, short=True)
    common = [nm for nm in _target_names(results_list[0])
              if all(_find(r, nm) is not None for r in results_list[1:])]
    cats, cells = [], []
    for nm in common:
        for r, lab in zip(results_list, short):
            cats.append(f"{nm}\n{lab}")
            cells.append((_find(r, nm), lab))
    keys = _chart_keys(results_list)
    paths = [os.path.join(out_dir, nme) for nme in (REPORT_MD, QPS_SVG, LATENCY_SVG)]
    _write(paths[0], render_compare(results_list, sources))
    _write(paths[1], _qps_chart(cats, cells, keys, "Throughput per machine (QPS, median of runs), higher is better"))
    _write(paths[2], _latency_chart(cats, cells, keys, "Mean latency per machine (ms), lower is better",
                                    p99=False))
    return paths
