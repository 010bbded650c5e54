"""Tests for the bench kit's output side: report.md, the SVG charts, compare and its CLI.

Everything is written under pytest's tmp_path; the sample data comes from conftest.py.
"""

from __future__ import annotations

import copy
import json
import math
import os
import xml.etree.ElementTree as ET

import pytest

from benchkit import compare_cli, report, svg

NS = "{http://www.w3.org/2000/svg}"


# --------------------------------------------------------------------------- helpers

def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def _table_row(md_text, first_cell):
    """The cells of the markdown table row whose first cell is ``first_cell``."""
    for line in md_text.splitlines():
        if line.startswith("| "):
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            if cells[0] == first_cell:
                return cells
    raise AssertionError(f"no table row starting with {first_cell!r}")


def _table_rows(md_text, first_cell):
    """The cells of every markdown table row whose first cell is ``first_cell``."""
    return [[c.strip() for c in line.strip().strip("|").split(" | ")]
            for line in md_text.splitlines()
            if line.startswith("| ") and line.strip().strip("|").split(" | ")[0].strip() == first_cell]


def _section(md_text, heading):
    """The text from ``heading`` to the next heading of any level."""
    start = md_text.index(heading)
    rest = md_text[start + len(heading):]
    ends = [i for i in (rest.find("\n#"),) if i >= 0]
    return rest[: ends[0]] if ends else rest


def _bars(svg_text):
    root = ET.fromstring(svg_text)
    return [r for r in root.iter(NS + "rect") if r.get("class") == "bar"]


def _bar(svg_text, category, series_prefix):
    found = [b for b in _bars(svg_text)
             if b.get("data-category") == category and b.get("data-series").startswith(series_prefix)]
    assert len(found) == 1, (category, series_prefix, len(found))
    return found[0]


def _ticks(svg_text):
    root = ET.fromstring(svg_text)
    return [float(t.text.replace(",", "")) for t in root.iter(NS + "text") if t.get("class") == "tick"]


def _is_round_step(step):
    exp = math.floor(math.log10(step))
    mant = step / 10 ** exp
    return any(abs(mant - m) < 1e-9 for m in (1, 2, 2.5, 5, 10))


# --------------------------------------------------------------------------- formatting

@pytest.mark.parametrize("value, text", [
    (34567, "34,600"), (34550, "34,600"), (34549.9, "34,500"), (14900, "14,900"),
    (99.0, "100"), (0, "0"), (None, "\u2014"), (float("nan"), "\u2014"),
])
def test_fmt_qps_rounds_to_hundred_like_the_articles(value, text):
    assert report.fmt_qps(value) == text


def test_fmt_ms_and_ratio():
    assert report.fmt_ms(0.46) == "0.46"
    assert report.fmt_ms(1.2) == "1.20"
    assert report.fmt_ms(0.046) == "0.046"
    assert report.fmt_ms(None) == "\u2014"
    assert report.fmt_ratio(22.8, 26.5) == "0.86x"
    assert report.fmt_ratio(1, 0) == "\u2014"
    assert report.fmt_ratio(None, 3) == "\u2014"


# --------------------------------------------------------------------------- single report

def test_write_report_writes_three_files(results, tmp_path):
    out = tmp_path / "out"
    paths = report.write_report(results, str(out))
    assert [os.path.basename(p) for p in paths] == ["report.md", "qps.svg", "latency.svg"]
    assert all(os.path.isfile(p) for p in paths)
    assert sorted(os.listdir(out)) == ["latency.svg", "qps.svg", "report.md"]


def test_articles_table_rows_and_rounding(results, tmp_path):
    text = _read(report.write_report(results, str(tmp_path))[0])
    table = _section(text, "## Results")
    assert "| target | no plugin QPS / latency | two plugins QPS / latency |" in table
    # Sluice: scenario 1 median 34,567 rps -> 34,600; scenario 2 30,080 -> 30,100; each
    # with its lowest and highest run, rounded alike.
    assert _table_row(table, "Sluice") == ["Sluice", "34,600 (34,100\u201335,000) / 0.46 ms",
                                           "30,100 (29,800\u201330,500) / 0.52 ms"]
    assert _table_row(table, "APISIX") == ["APISIX", "15,000 (14,800\u201315,000) / 1.07 ms",
                                           "13,100 (13,000\u201313,300) / 1.21 ms"]
    # This nginx (results from before nginx had a scenario 2) and the direct ceiling have
    # no scenario 2.
    assert _table_row(table, "nginx") == ["nginx", "29,900 (29,700\u201330,100) / 0.53 ms", "n/a"]
    assert _table_row(table, "direct")[2] == "n/a"


def test_report_header_machine_and_settings(results, tmp_path):
    text = _read(report.write_report(results, str(tmp_path))[0])
    assert text.startswith("# Sluice benchmark: x86_64 Intel(R) Xeon(R) Platinum 8370C")
    assert "2026-11-30T06:00:00Z" in text
    assert "`sluice bench --runs 3 --sla`" in text
    for fact in ("Intel(R) Xeon(R) Platinum 8370C CPU @ 2.80GHz", "x86_64", "6.1.0-27-amd64",
                 "Debian GNU/Linux 12 (bookworm)", "24.0 GiB"):
        assert fact in text
    assert _table_row(text, "Duration per run")[1] == "5 s"
    assert _table_row(text, "Connections")[1] == "16"
    assert _table_row(text, "Gateway workers")[1] == "1"
    assert _table_row(text, "Load generator")[1] == "wrk"
    assert _table_row(text, "Placement")[1] == "not pinned: 2 cores"
    assert _table_row(text, "Run order")[1] == "\u2014"  # results from before the rotation


def test_pinning_is_described(results, tmp_path):
    results["kit"]["pinning"] = {"gateway": [0], "upstream": [1], "load": [2, 3]}
    text = _read(report.write_report(results, str(tmp_path))[0])
    assert _table_row(text, "Placement")[1] == "gateway CPU 0; upstream CPU 1; load generator CPU 2, 3"
    results["kit"]["placement"] = "own"
    text = _read(report.write_report(results, str(tmp_path))[0])
    assert _table_row(text, "Placement")[1] == \
        "own (each its own CPUs): gateway CPU 0; upstream CPU 1; load generator CPU 2, 3"


def test_detail_table_vs_nginx_cpu_and_nulls(results, tmp_path):
    text = _read(report.write_report(results, str(tmp_path))[0])
    s1 = _section(text, "### Scenario 1: no plugin")
    header = _table_row(s1, "target")
    col = {name: i for i, name in enumerate(header)}
    sluice = _table_row(s1, "Sluice")
    # Sluice 22.8 us/req, nginx 26.5 us/req -> 0.86x.
    assert sluice[col["vs nginx CPU"]] == f"{22.8 / 26.5:.2f}x" == "0.86x"
    assert sluice[col["CPU \u00b5s/request (min\u2013max)"]] == "22.8 (22.1\u201323.4)"
    assert sluice[col["QPS median (min\u2013max)"]] == "34,567 (34,100\u201335,020)"
    assert sluice[col["RSS MiB"]] == "8.8"
    assert sluice[col["non-2xx / errors"]] == "0 / 0"
    assert _table_row(s1, "nginx")[col["vs nginx CPU"]] == "1.00x"
    assert _table_row(s1, "haproxy")[col["vs nginx CPU"]] == f"{24.4 / 26.5:.2f}x"
    # The url target has no process of ours: no CPU, no RSS, no ratio.
    apisix = _table_row(s1, "APISIX")
    assert apisix[col["CPU \u00b5s/request (min\u2013max)"]] == "\u2014"
    assert apisix[col["RSS MiB"]] == "\u2014"
    assert apisix[col["vs nginx CPU"]] == "\u2014"
    # Scenario 2: nginx did not run it, so there is nothing to compare with.
    s2 = _section(text, "### Scenario 2: limit-count + prometheus")
    assert _table_row(s2, "Sluice")[col["vs nginx CPU"]] == "\u2014"
    with pytest.raises(AssertionError):
        _table_row(s2, "nginx")


def test_failed_scenario_renders_dash_and_errors_are_summed(results, build, tmp_path):
    failed = {"rps": None, "requests": 0, "non2xx": 0, "errors": 7, "latency_ms": None,
              "cpu_us_per_req": None, "rss_kib": None}
    apisix = results["targets"][1]
    apisix["scenarios"]["2"] = build.scenario([dict(failed) for _ in range(3)])
    sluice = results["targets"][0]
    sluice["scenarios"]["1"]["runs"][0]["non2xx"] = 12
    sluice["scenarios"]["1"]["runs"][2]["errors"] = 3
    text = _read(report.write_report(results, str(tmp_path))[0])
    assert _table_row(_section(text, "## Results"), "APISIX")[2] == "\u2014"
    s2 = _section(text, "### Scenario 2")
    row = _table_row(s2, "APISIX")
    assert row[1] == "\u2014 [0/3 runs ok]" and row[2] == "\u2014"
    assert row[-1] == "0 / 21"
    assert _table_row(_section(text, "### Scenario 1"), "Sluice")[-1] == "12 / 3"


def test_partly_failed_runs_are_flagged(results, tmp_path):
    results["targets"][0]["scenarios"]["1"]["runs"][1]["rps"] = None
    text = _read(report.write_report(results, str(tmp_path))[0])
    assert "[2/3 runs ok]" in _table_row(_section(text, "### Scenario 1"), "Sluice")[1]


def test_sla_table(results, tmp_path):
    text = _read(report.write_report(results, str(tmp_path))[0])
    sla = _section(text, "## Throughput under an SLA (p99 \u2264 3 ms)")
    assert _table_row(sla, "Sluice") == ["Sluice", "1: no plugin", "30,000 (28,000\u201331,000)", "1.20x"]
    assert _table_row(sla, "nginx") == ["nginx", "1: no plugin", "25,000 (24,000\u201326,000)", "1.00x"]


def test_no_sla_section_without_sla(results, tmp_path):
    for t in results["targets"]:
        for s in t["scenarios"].values():
            s["sla"] = None
    text = _read(report.write_report(results, str(tmp_path))[0])
    assert "under an SLA" not in text


def test_reference_table_note_and_chart_links(results, tmp_path):
    text = _read(report.write_report(results, str(tmp_path))[0])
    assert "ratios within one run" in text
    ref = _section(text, "### Published APISIX figures (for reference)")
    assert _table_row(ref, "Azure Ddsv5 (x86)") == ["Azure Ddsv5 (x86)", "14,900 / 1.07 ms", "13,100 / 1.21 ms"]
    assert _table_row(ref, "AWS c7g Graviton3") == ["AWS c7g Graviton3", "23,000 / 0.68 ms", "18,000 / 0.88 ms"]
    assert "![QPS per target](qps.svg)" in text
    assert "![Latency per target](latency.svg)" in text


# --------------------------------------------------------------------------- charts

def test_qps_svg_bars_proportional(results, tmp_path):
    paths = report.write_report(results, str(tmp_path))
    text = _read(paths[1])
    root = ET.fromstring(text)
    assert root.tag == NS + "svg"
    assert root.get("width") and root.get("height")
    # One bar per measured (target, scenario): 5 targets in scenario 1, 2 in scenario 2.
    assert len(_bars(text)) == 7
    s1 = _bar(text, "Sluice", "scenario 1")
    ng = _bar(text, "nginx", "scenario 1")
    ratio = float(s1.get("height")) / float(ng.get("height"))
    assert ratio == pytest.approx(34567 / 29880, rel=1e-3)
    # Bars stand on the same baseline.
    assert float(s1.get("y")) + float(s1.get("height")) == pytest.approx(
        float(ng.get("y")) + float(ng.get("height")), abs=0.02)
    # The rounded value is printed; the missing scenario 2 of nginx says n/a.
    values = [t.text for t in root.iter(NS + "text") if t.get("class") == "value"]
    assert "34,600" in values
    missing = [t for t in root.iter(NS + "text") if t.get("class") == "missing"]
    assert {m.get("data-category") for m in missing} == {"nginx", "haproxy", "direct"}
    assert all(m.text == "n/a" for m in missing)
    # Legend: one swatch per series, distinct colours.
    swatches = [r for r in root.iter(NS + "rect") if r.get("class") == "swatch"]
    assert len(swatches) == 2 and len({s.get("fill") for s in swatches}) == 2


def test_latency_svg_has_mean_and_p99(results, tmp_path):
    text = _read(report.write_report(results, str(tmp_path))[2])
    bars = _bars(text)
    assert len(bars) == 14  # (5 + 2) measured scenarios x (mean, p99)
    mean = _bar(text, "Sluice", "scenario 1 mean")
    p99 = _bar(text, "Sluice", "scenario 1 p99")
    assert float(p99.get("height")) / float(mean.get("height")) == pytest.approx(0.90 / 0.46, rel=1e-3)


def test_axis_ticks_round_and_cover_maximum(results, tmp_path):
    paths = report.write_report(results, str(tmp_path))
    for path, top_value in ((paths[1], 61500.0), (paths[2], 2.40)):
        ticks = _ticks(_read(path))
        assert ticks[0] == 0
        step = ticks[1] - ticks[0]
        assert _is_round_step(step)
        assert all(b - a == pytest.approx(step) for a, b in zip(ticks, ticks[1:]))
        assert ticks[-1] >= top_value
        assert ticks[-1] - top_value < step
        assert len(ticks) <= 7


@pytest.mark.parametrize("max_value", [0.93, 1.0, 2.4, 7, 13.5, 99, 100, 101, 34567, 61500, 123456789])
def test_nice_ticks(max_value):
    ticks = svg.nice_ticks(max_value)
    step = ticks[1] - ticks[0]
    assert ticks[0] == 0 and ticks[-1] >= max_value and ticks[-1] - max_value < step + 1e-9
    assert _is_round_step(step)
    assert 2 <= len(ticks) <= 7


def test_nice_ticks_degenerate():
    assert svg.nice_ticks(0) == [0.0, 1.0]
    assert svg.nice_ticks(float("nan")) == [0.0, 1.0]


def test_labels_are_escaped(results, tmp_path):
    results["targets"][0]["name"] = "a<b&c>"
    paths = report.write_report(results, str(tmp_path))
    for path in paths[1:]:
        raw = _read(path)
        assert "a&lt;b&amp;c&gt;" in raw and "a<b&c>" not in raw
        root = ET.fromstring(raw)
        cats = ["".join(t.itertext()) for t in root.iter(NS + "text") if t.get("class") == "category"]
        assert "a<b&c>" in cats
    text = _read(paths[0])
    assert "a<b&c>" not in text
    assert _table_row(_section(text, "## Results"), "a&lt;b&amp;c&gt;")[1] == \
        "34,600 (34,100\u201335,000) / 0.46 ms"


def test_bar_chart_standalone():
    text = svg.bar_chart('T "q" <x>', ["one", "two & three"], ["s1", "s2"],
                         [[10, 20], [5, None]], y_label="y")
    root = ET.fromstring(text)
    assert root.tag == NS + "svg"
    assert "<script" not in text and "@import" not in text and "href" not in text
    bars = _bars(text)
    assert len(bars) == 3
    heights = {(b.get("data-category"), b.get("data-series")): float(b.get("height")) for b in bars}
    assert heights[("two & three", "s1")] == pytest.approx(2 * heights[("one", "s1")])
    assert heights[("one", "s1")] == pytest.approx(2 * heights[("one", "s2")])
    with pytest.raises(ValueError):
        svg.bar_chart("t", ["a"], ["s1", "s2"], [[1]])


# --------------------------------------------------------------------------- compare

def test_compare_rows_ratios_and_charts(results_pair, tmp_path):
    a, b = results_pair
    paths = report.compare([a, b], str(tmp_path / "cmp"), sources=["arm.json", "x86.json"])
    text = _read(paths[0])
    table = _section(text, "## Results")
    rows = [ln for ln in table.splitlines()
            if ln.startswith("| ") and "\u2014" in ln.split(" | ")[0] and not ln.startswith("| machine")]
    assert len(rows) == len(a["targets"]) + len(b["targets"])
    assert _table_row(table, "aarch64 Neoverse-N1 (4 cores) \u2014 Sluice") == [
        "aarch64 Neoverse-N1 (4 cores) \u2014 Sluice", "34,600 (34,100\u201335,000) / 0.46 ms",
        "30,100 (29,800\u201330,500) / 0.52 ms"]
    x86_sluice = _table_row(table, f"{b['machine']['label']} \u2014 Sluice")
    assert x86_sluice[1] == "%s (%s\u2013%s) / 0.37 ms" % tuple(
        report.fmt_qps(q * 1.25) for q in (34567, 34100, 35020))
    assert _table_row(table, f"{b['machine']['label']} \u2014 nginx")[2] == "n/a"
    # B / A ratios.
    ratios = _section(text, "## Ratios B / A")
    header = _table_row(ratios, "target")
    col = {name: i for i, name in enumerate(header)}
    sl = _table_row(ratios, "Sluice")
    assert sl[col["no plugin QPS"]] == "1.25x" and sl[col["two plugins QPS"]] == "1.25x"
    assert _table_row(ratios, "nginx")[col["two plugins QPS"]] == "n/a"
    assert _table_row(ratios, "APISIX")[col["no plugin CPU \u00b5s/request"]] == "\u2014"
    # The same CPU per request on both machines: the runs overlap, no winner.
    assert sl[col["no plugin CPU \u00b5s/request"]] == "no measurable difference"
    # SLA comparison.
    sla = _section(text, "## Throughput under an SLA")
    assert _table_row(sla, "Sluice")[-1] == "1.25x"
    # Machine facts of each input; no settings warning (same kit).
    assert "Neoverse-N1" in text and "Intel(R) Xeon(R) Platinum 8370C CPU @ 2.80GHz" in text
    assert "6.1.0-27-arm64" in text and "6.1.0-27-amd64" in text
    assert "`arm.json`" in text and "`x86.json`" in text
    assert "Warning" not in text
    # Charts: one group per (target, machine) for the targets in both; 2 scenarios.
    qps = _read(paths[1])
    cats = {b_.get("data-category") for b_ in _bars(qps)}
    assert len(cats) == 2 * len(a["targets"])
    bars = _bars(qps)
    arm = [x for x in bars if x.get("data-category").startswith("Sluice\naarch64")
           and x.get("data-series").startswith("scenario 1")]
    x86 = [x for x in bars if x.get("data-category").startswith("Sluice\nx86_64")
           and x.get("data-series").startswith("scenario 1")]
    assert len(arm) == len(x86) == 1
    assert float(x86[0].get("height")) / float(arm[0].get("height")) == pytest.approx(1.25, rel=1e-3)
    ET.fromstring(_read(paths[2]))


def test_compare_warns_on_different_settings(build, tmp_path):
    a = build.results(build.machine_arm)
    b = build.results(build.machine_x86, scale=1.1, duration_s=10)
    b["kit"]["connections"] = 32
    text = _read(report.compare([a, b], str(tmp_path))[0])
    warning = [ln for ln in text.splitlines() if "Warning" in ln]
    assert len(warning) == 1
    assert "duration_s" in warning[0] and "connections" in warning[0] and "workers" not in warning[0]


def test_compare_target_missing_on_one_machine(build, tmp_path):
    a = build.results(build.machine_arm)
    b = build.results(build.machine_x86)
    b["targets"] = [t for t in b["targets"] if t["name"] != "haproxy"]
    paths = report.compare([a, b], str(tmp_path))
    text = _read(paths[0])
    assert "Not measured on B: haproxy." in text
    cats = {x.get("data-category") for x in _bars(_read(paths[1]))}
    assert not any(c.startswith("haproxy") for c in cats)


def test_compare_same_machine_labels_are_told_apart(build, tmp_path):
    a = build.results(build.machine_x86)
    b = build.results(build.machine_x86)
    text = _read(report.compare([a, b], str(tmp_path))[0])
    label = build.machine_x86["label"]
    assert _table_row(text, f"{label} #1 \u2014 Sluice")
    assert _table_row(text, f"{label} #2 \u2014 Sluice")


# --------------------------------------------------------------------------- loading

def test_load_results_roundtrip(results, tmp_path):
    p = tmp_path / "r.json"
    p.write_text(json.dumps(results))
    assert report.load_results(str(p)) == results


@pytest.mark.parametrize("content, why", [
    ("{not json", "invalid JSON"),
    ("[1, 2]", "not a results object"),
    ('{"schema": 2, "targets": []}', "unsupported schema 2"),
    ('{"targets": []}', "no \"schema\""),
    ('{"schema": 1, "targets": {}}', "\"targets\" must be a list"),
    ('{"schema": 1, "targets": [{"name": "x", "scenarios": []}]}', "\"scenarios\" must be an object"),
])
def test_load_results_rejects_bad_files(tmp_path, content, why):
    p = tmp_path / "bad-results.json"
    p.write_text(content)
    with pytest.raises(ValueError) as e:
        report.load_results(str(p))
    assert str(p) in str(e.value)
    assert why in str(e.value)


def test_load_results_missing_file(tmp_path):
    p = tmp_path / "nope.json"
    with pytest.raises(ValueError) as e:
        report.load_results(str(p))
    assert str(p) in str(e.value)


def test_write_report_rejects_wrong_schema(tmp_path):
    with pytest.raises(ValueError):
        report.write_report({"schema": 7, "targets": []}, str(tmp_path))


# --------------------------------------------------------------------------- compare_cli

def test_compare_cli_ok(results_pair, tmp_path, capsys):
    files = []
    for i, r in enumerate(results_pair):
        p = tmp_path / f"r{i}.json"
        p.write_text(json.dumps(r))
        files.append(str(p))
    out = tmp_path / "cmp"
    assert compare_cli.main(["compare", *files, "--out", str(out)]) == 0
    printed = capsys.readouterr().out.strip()
    assert printed == str(out / "report.md")
    assert sorted(os.listdir(out)) == ["latency.svg", "qps.svg", "report.md"]


def test_compare_cli_default_out_dir(results_pair, tmp_path, monkeypatch, capsys):
    files = []
    for i, r in enumerate(results_pair):
        p = tmp_path / f"r{i}.json"
        p.write_text(json.dumps(r))
        files.append(str(p))
    monkeypatch.chdir(tmp_path)
    assert compare_cli.main(files) == 0
    assert capsys.readouterr().out.strip() == os.path.join("bench-compare", "report.md")
    assert (tmp_path / "bench-compare" / "report.md").is_file()


def test_compare_cli_missing_file_exits_2(results, tmp_path, capsys):
    good = tmp_path / "good.json"
    good.write_text(json.dumps(results))
    missing = tmp_path / "missing.json"
    rc = compare_cli.main(["compare", str(good), str(missing), "--out", str(tmp_path / "o")])
    assert rc == 2
    err = capsys.readouterr().err
    assert str(missing) in err
    assert not (tmp_path / "o").exists()


def test_compare_cli_bad_usage_exits_2(results, tmp_path, capsys):
    good = tmp_path / "good.json"
    good.write_text(json.dumps(results))
    assert compare_cli.main(["compare"]) == 2
    assert compare_cli.main(["compare", str(good)]) == 2
    assert "at least two" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": 1}')
    assert compare_cli.main([str(good), str(bad)]) == 2
    assert str(bad) in capsys.readouterr().err


def test_odd_names_and_empty_results(results, tmp_path):
    results["targets"][1]["name"] = "ctl\x01 | pipe \ud800"
    paths = report.write_report(results, str(tmp_path / "odd"))
    for p in paths[1:]:
        ET.fromstring(_read(p))
    assert "| ctl\ufffd \\| pipe \ufffd |" in _read(paths[0])
    empty = {"schema": 1, "kit": {}, "machine": {}, "targets": []}
    paths = report.write_report(empty, str(tmp_path / "empty"))
    for p in paths[1:]:
        assert _bars(_read(p)) == []
    assert "# Sluice benchmark: unknown machine" in _read(paths[0])


def _fixed(p99s, rate=15000):
    runs = [{"achieved_rps": rate, "p50_ms": p / 3, "p99_ms": p, "p99.9_ms": p * 2,
             "errors": 0, "non2xx": 0, "unsent": 0, "cpu_us_per_req": 20.0} for p in p99s]
    p99s_sorted = sorted(p99s)
    return {"rate": rate, "runs": runs,
            "median": {"achieved_rps": rate, "p50_ms": p99s_sorted[1] / 3,
                       "p99_ms": p99s_sorted[1], "p99.9_ms": p99s_sorted[1] * 2,
                       "cpu_us_per_req": 20.0},
            "spread": {"p99_ms": [p99s_sorted[0], p99s_sorted[-1]]}}


def test_fixed_load_table_compares_p99_with_nginx(results, tmp_path):
    results["kit"]["fixed_load"] = {"reference": "nginx", "fraction": 0.5, "rate": 15000}
    by = {t["name"]: t for t in results["targets"]}
    by["Sluice"]["scenarios"]["1"]["fixed_load"] = _fixed([0.5, 0.6, 0.8])
    by["Sluice"]["scenarios"]["2"]["fixed_load"] = _fixed([0.9, 1.0, 1.1])
    by["nginx"]["scenarios"]["1"]["fixed_load"] = _fixed([1.0, 1.2, 1.5])
    by["nginx"]["scenarios"]["2"] = copy.deepcopy(by["nginx"]["scenarios"]["1"])
    by["nginx"]["scenarios"]["2"]["fixed_load"] = _fixed([1.0, 1.05, 1.3])
    by["Sluice"]["scenarios"]["2"]["fixed_load"]["runs"][0]["unsent"] = 7
    text = _read(report.write_report(results, str(tmp_path))[0])
    sec = _section(text, "## Latency at a fixed load")
    assert "15,000 requests/s, 0.5 of nginx's closed-loop QPS in scenario 1" in sec
    rows = [line for line in sec.splitlines() if line.startswith("| Sluice |")]
    assert len(rows) == 2
    cells = [c.strip() for c in rows[0].strip().strip("|").split(" | ")]
    assert cells == ["Sluice", "1: no plugin", "15,000", "0.20", "0.60 (0.50\u20130.80)", "1.20",
                     "0.50x", "0 / 0 / 0"]
    cells = [c.strip() for c in rows[1].strip().strip("|").split(" | ")]
    assert cells[1] == "2: two plugins"
    # Scenario 2 against nginx's scenario 2 at the same load: Sluice's runs (0.9-1.1 ms)
    # overlap nginx's (1.0-1.3 ms), so there is no winner.
    assert cells[6] == "no measurable difference"
    assert cells[7] == "0 / 0 / 7"
    assert [r[6] for r in _table_rows(sec, "nginx")] == ["1.00x", "1.00x"]


def test_no_fixed_load_section_without_one(results, tmp_path):
    text = _read(report.write_report(results, str(tmp_path))[0])
    assert "Latency at a fixed load" not in text


def test_a_fixed_load_that_is_not_an_object_is_refused(results):
    results["targets"][0]["scenarios"]["1"]["fixed_load"] = [1, 2]
    with pytest.raises(ValueError, match="fixed_load"):
        report.validate_results(results)


def test_a_failed_fixed_load_run_is_counted_out_and_noted(results, tmp_path):
    results["kit"]["fixed_load"] = {"reference": "nginx", "fraction": 0.5, "rate": 15000}
    by = {t["name"]: t for t in results["targets"]}
    fl = _fixed([0.5, 0.6, 0.8])
    fl["runs"][2] = {"offered": 0, "achieved_rps": None, "p50_ms": None, "p99_ms": None,
                     "p99.9_ms": None, "errors": 0, "non2xx": 0, "unsent": 0,
                     "cpu_us_per_req": None, "error": "wrk died"}
    by["Sluice"]["scenarios"]["1"]["fixed_load"] = fl
    text = _read(report.write_report(results, str(tmp_path))[0])
    row = _table_row(_section(text, "## Latency at a fixed load"), "Sluice")
    assert row[2] == "15,000 [2/3 runs ok]"


@pytest.mark.parametrize("bad", [{"median": [1]}, {"runs": [None]}, {"runs": "abc"},
                                 {"spread": 3}])
def test_malformed_fixed_load_parts_are_refused(results, bad):
    results["targets"][0]["scenarios"]["1"]["fixed_load"] = dict({"rate": 1}, **bad)
    with pytest.raises(ValueError, match="fixed_load"):
        report.validate_results(results)


def test_non_numeric_fixed_load_counts_do_not_break_the_report(results, tmp_path):
    results["kit"]["fixed_load"] = {"reference": "nginx", "fraction": 0.5, "rate": 15000}
    fl = _fixed([0.5, 0.6, 0.8])
    fl["runs"][0]["unsent"] = "7"
    results["targets"][0]["scenarios"]["1"]["fixed_load"] = fl
    text = _read(report.write_report(results, str(tmp_path))[0])
    assert _table_row(_section(text, "## Latency at a fixed load"), "Sluice")[7] == "0 / 0 / 0"


def test_compare_shows_each_machines_fixed_load(results_pair, tmp_path):
    a, b = results_pair
    for res, sluice_p99s, nginx_p99s, rate in ((a, [0.5, 0.6, 0.8], [1.0, 1.2, 1.5], 12000),
                                               (b, [0.4, 0.5, 0.6], [1.0, 1.0, 1.0], 15000)):
        res["kit"]["fixed_load"] = {"reference": "nginx", "fraction": 0.5, "rate": rate}
        by = {t["name"]: t for t in res["targets"]}
        by["Sluice"]["scenarios"]["1"]["fixed_load"] = _fixed(sluice_p99s, rate)
        by["nginx"]["scenarios"]["1"]["fixed_load"] = _fixed(nginx_p99s, rate)
    paths = report.compare([a, b], str(tmp_path), ["a.json", "b.json"])
    text = _read(paths[0])
    sec = _section(text, "## Latency at a fixed load")
    assert _table_row(sec, "Sluice")[2:] == ["0.60 ms at 12,000 req/s (0.50x nginx)",
                                             "0.50 ms at 15,000 req/s (0.50x nginx)"]
    assert _table_row(sec, "nginx")[2:] == ["1.20 ms at 12,000 req/s (1.00x nginx)",
                                            "1.00 ms at 15,000 req/s (1.00x nginx)"]
    # Without a fixed load on either machine there is no such section.
    for res in (a, b):
        for t in res["targets"]:
            for sc in t["scenarios"].values():
                sc.pop("fixed_load", None)
    assert "Latency at a fixed load" not in _read(report.compare([a, b], str(tmp_path))[0])
