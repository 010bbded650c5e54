"""`sluice bench accesslog` end to end (quick mode): the real binary, nginx and wrk on
loopback. Checks the kit, never the speed: every measurement ran and was served with 2xx only,
the Sluice with its log on and nginx's logging port wrote lines while the others wrote none,
nginx's configuration is APISIX's buffered access_log, the ratios are the per-run figures
divided, and nothing is left running."""

import json
import os
import re
import shutil

import pytest

from benchkit import accesslog_run
from kit_run import processes_mentioning, sluice_bench

pytestmark = pytest.mark.serial


def test_quick_run_measures_every_variant(tmp_path):
    if not shutil.which("wrk") or not shutil.which("nginx") and not os.path.exists(
            "/usr/sbin/nginx"):
        pytest.fail("nginx and wrk are installed by scripts/setup; run it")
    out = tmp_path / "out"
    r = sluice_bench("accesslog", "--quick", "--out", str(out), "--keep", timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    work = re.search(r"work dir kept at (\S+)", r.stderr).group(1)
    try:
        assert processes_mentioning(work) == []  # every server the kit started is gone
        conf = open(os.path.join(work, "nginx", "nginx.conf")).read()
        assert "buffer=16384 flush=3" in conf and accesslog_run.APISIX_FORMAT in conf
        on = open(os.path.join(work, "sluice", "config.yaml")).read()
        off = open(os.path.join(work, "sluice-off", "config.yaml")).read()
        assert "enable_access_log: true" in on and "enable_access_log: false" in off
        assert not os.path.exists(os.path.join(work, "sluice-off", "logs"))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    res = json.loads((out / "results.json").read_text())
    assert res["schema"] == 1 and res["kind"] == "accesslog"
    assert res["kit"]["runs"] == 1 and res["kit"]["duration_s"] == 1
    measures = {m["name"]: m for m in res["measures"]}
    assert list(measures) == list(accesslog_run.MEASURES)
    for name, m in measures.items():
        (run,) = m["runs"]
        assert run["error"] is None, (name, run)
        assert run["requests"] > 0 and run["non2xx"] == 0 and run["errors"] == 0, (name, run)
    # The logs took effect: a line per request the logging variants served, at least.
    assert res["logs"]["Sluice"] >= measures["sluice-on"]["runs"][0]["requests"]
    assert res["logs"]["nginx"] >= measures["nginx-on"]["runs"][0]["requests"]
    assert measures["nginx-on"]["runs"][0]["url"] != measures["nginx-off"]["runs"][0]["url"]

    ratios = {r["name"]: r for r in res["ratios"]}
    assert list(ratios) == ["b/a", "d/c", "b/d", "a/c"]
    for name, ratio in ratios.items():
        want = measures[ratio["numerator"]]["median"] / measures[ratio["denominator"]]["median"]
        assert ratio["median"] == pytest.approx(want), name
    assert ratios["b/a"]["budget"]["ratio_max"] == 1.05

    report = (out / "report.md").read_text()
    assert "`sluice bench accesslog`" in report and "| b/a |" in report
