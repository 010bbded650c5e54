"""report.md and the charts say how far their figures can be trusted: every cell with its
runs' range, "no measurable difference" where two cells' runs overlap, error bars, flags for
spreads too wide to conclude and for two plugins beating none, the run order and its seed,
and what scenario 2 is on nginx and HAProxy."""

import copy
import xml.etree.ElementTree as ET

from benchkit import report

from test_report import NS, _bars, _read, _section, _table_row

NO_DIFF = "no measurable difference"


def with_peers_scenario2(results, build):
    """The results as the kit writes them now: nginx and HAProxy with a scenario 2, a run
    order and a placement."""
    by = {t["name"]: t for t in results["targets"]}
    by["nginx"]["scenarios"]["2"] = build.scenario(
        [build.run(r, 0.6, 1.1, c, 5300) for r, c in ((26000, 28.0), (26400, 28.6),
                                                      (26900, 29.3))])
    by["nginx"]["scenario2"] = "limit_req ... + stub_status"
    by["haproxy"]["scenarios"]["2"] = build.scenario(
        [build.run(r, 0.55, 1.0, c, 12100) for r, c in ((28000, 26.0), (28300, 26.5),
                                                       (28900, 27.2))])
    by["haproxy"]["scenario2"] = "stick-table ... + prometheus-exporter"
    by["Sluice"]["scenario2"] = "limit-count + prometheus"
    results["kit"].update({"placement": "load-alone", "warmup_s": 1,
                           "pinning": {"gateway": [1], "upstream": [1], "load": [0]},
                           "order": {"interleaved": True, "seed": 4242, "rounds": {}}})
    return by


def render(results, tmp_path):
    paths = report.write_report(results, str(tmp_path))
    return _read(paths[0]), _read(paths[1]), _read(paths[2])


def test_every_peer_has_its_scenario_2_in_every_table(results, build, tmp_path):
    with_peers_scenario2(results, build)
    text, qps, _ = render(results, tmp_path)
    table = _section(text, "## Results")
    assert _table_row(table, "nginx")[2] == "26,400 (26,000\u201326,900) / 0.60 ms"
    assert _table_row(table, "haproxy")[2] == "28,300 (28,000\u201328,900) / 0.55 ms"
    s2 = _section(text, "### Scenario 2: limit-count + prometheus")
    col = {n: i for i, n in enumerate(_table_row(s2, "target"))}
    # Sluice's scenario 2 CPU against nginx's scenario 2 (its equivalent), not scenario 1.
    assert _table_row(s2, "Sluice")[col["vs nginx CPU"]] == f"{26.4 / 28.6:.2f}x"
    assert _table_row(s2, "nginx")[col["vs nginx CPU"]] == "1.00x"
    equivalents = _section(text, "### Scenario 2 on each target")
    assert _table_row(equivalents, "nginx")[1] == "limit_req ... + stub_status"
    assert _table_row(equivalents, "haproxy")[1] == "stick-table ... + prometheus-exporter"
    missing = [t.get("data-category") for t in ET.fromstring(qps).iter(NS + "text")
               if t.get("class") == "missing"]
    assert sorted(missing) == ["direct"]  # only the ceiling lacks a scenario 2 bar


def test_settings_name_the_run_order_seed_and_placement(results, build, tmp_path):
    with_peers_scenario2(results, build)
    text, _, _ = render(results, tmp_path)
    order = _table_row(text, "Run order")[1]
    assert order.startswith("interleaved: each round runs every target and scenario once")
    assert "shuffled per round (seed 4242)" in order and "1 s of load before each" in order
    assert _table_row(text, "Placement")[1] == (
        "load-alone (the load generator alone; gateway and upstream share): gateway CPU 1; "
        "upstream CPU 1; load generator CPU 0")


def test_overlapping_runs_name_no_winner(results, build, tmp_path):
    by = with_peers_scenario2(results, build)
    # HAProxy's CPU runs 24.0-26.3 meet nginx's 26.2-27.0: no winner, whatever the medians.
    by["haproxy"]["scenarios"]["1"]["runs"][2]["cpu_us_per_req"] = 26.3
    by["haproxy"]["scenarios"]["1"] = build.scenario(by["haproxy"]["scenarios"]["1"]["runs"])
    text, _, _ = render(results, tmp_path)
    s1 = _section(text, "### Scenario 1: no plugin")
    col = {n: i for i, n in enumerate(_table_row(s1, "target"))}
    assert _table_row(s1, "haproxy")[col["vs nginx CPU"]] == NO_DIFF
    assert _table_row(s1, "Sluice")[col["vs nginx CPU"]] == "0.86x"  # 22.1-23.4: apart
    assert f"printed as \u201c{NO_DIFF}\u201d" in text


def test_what_scenario_2_costs_each_target(results, build, tmp_path):
    by = with_peers_scenario2(results, build)
    # HAProxy's scenario 2 runs reach into its scenario 1's: no measurable QPS difference.
    for r, q in zip(by["haproxy"]["scenarios"]["2"]["runs"], (28000, 31200, 31500)):
        r["rps"] = float(q)
    by["haproxy"]["scenarios"]["2"] = build.scenario(by["haproxy"]["scenarios"]["2"]["runs"])
    text, _, _ = render(results, tmp_path)
    sec = _section(text, "## What scenario 2 costs each target")
    assert _table_row(sec, "Sluice") == ["Sluice", f"{30080 / 34567:.2f}x",
                                         f"{26.4 / 22.8:.2f}x", f"{1.05 / 0.90:.2f}x"]
    assert _table_row(sec, "haproxy")[1] == NO_DIFF
    assert "direct" not in [ln.split(" | ")[0].strip("| ") for ln in sec.splitlines()]


def test_a_quiet_run_says_so(results, build, tmp_path):
    with_peers_scenario2(results, build)
    text, _, _ = render(results, tmp_path)
    sec = _section(text, "## How far these figures can be trusted")
    assert "Every cell's runs stay within 25% of its median" in sec
    assert "Spread too wide" not in sec and "faster than none" not in sec


def test_a_drifting_run_is_flagged(results, build, tmp_path):
    """The issue's run: Sluice's scenario 2 at 39,500 QPS, its scenario 1 at 26,000."""
    by = with_peers_scenario2(results, build)
    by["Sluice"]["scenarios"]["1"] = build.scenario(
        [build.run(q, 0.6, 1.2, 22.0) for q in (25500, 26000, 34000)])
    by["Sluice"]["scenarios"]["2"] = build.scenario(
        [build.run(q, 0.4, 0.9, 20.0) for q in (39000, 39500, 40100)])
    text, _, _ = render(results, tmp_path)
    sec = _section(text, "## How far these figures can be trusted")
    assert "**Two plugins faster than none,**" in sec
    assert "Sluice: two plugins 39,500 QPS (39,000\u201340,100) against no plugin 26,000 " \
           "(25,500\u201334,000)" in sec
    assert "**Spread too wide to conclude:**" in sec and "Rerun on a quieter machine" in sec
    assert "Sluice, scenario 1: QPS from 25,500 to 34,000, a spread of 33% of its " \
           "median 26,000" in sec
    assert "Sluice, scenario 2: QPS" not in sec  # 2.8%: fine


def test_one_run_cannot_tell_difference_from_noise(results, tmp_path):
    results["kit"]["runs"] = 1
    text, _, _ = render(results, tmp_path)
    assert "**One run per cell:**" in _section(text, "## How far these figures can be trusted")


def test_charts_carry_error_bars_from_the_runs(results, build, tmp_path):
    with_peers_scenario2(results, build)
    _, qps, latency = render(results, tmp_path)
    root = ET.fromstring(qps)
    bars = root.iter(NS + "g")
    errs = {(g.get("data-category"), g.get("data-series")[:10]): g for g in bars
            if g.get("class") == "error-bar"}
    assert len(errs) == len(_bars(qps)) == 9  # every bar has its runs' range
    sluice = errs[("Sluice", "scenario 1")]
    assert (float(sluice.get("data-low")), float(sluice.get("data-high"))) == (34100, 35020)
    notes = [t.text for t in root.iter(NS + "text") if t.get("class") == "note"]
    assert notes and "error bars: the lowest and the highest run" in " ".join(notes)
    ticks = [float(t.text.replace(",", "")) for t in root.iter(NS + "text")
             if t.get("class") == "tick"]
    assert ticks[-1] >= 62300  # the highest run of the highest bar, not just its median
    lat = ET.fromstring(latency)
    assert len([g for g in lat.iter(NS + "g") if g.get("class") == "error-bar"]) == \
        len(_bars(latency)) == 18


def test_results_without_runs_still_draw_from_the_spread(results, tmp_path):
    res = copy.deepcopy(results)
    for t in res["targets"]:
        for s in t["scenarios"].values():
            s["runs"] = []
    _, qps, _ = render(res, tmp_path)
    errs = [g for g in ET.fromstring(qps).iter(NS + "g") if g.get("class") == "error-bar"]
    assert len(errs) == len(_bars(qps))


def test_the_kits_notes_are_in_the_report(results, tmp_path):
    results["kit"]["notes"] = ["nginx is not measured in scenario 1: no latency at a fixed load"]
    text, _, _ = render(results, tmp_path)
    assert "- Note: nginx is not measured in scenario 1: no latency at a fixed load" in text
