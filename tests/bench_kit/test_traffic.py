"""`sluice bench traffic --each` end to end (quick mode): the real binary, nginx and wrk on
loopback. Checks the kit, never the speed: every measurement ran and was served with 2xx only,
each variant took effect before the load (the CORS and request-id headers, cache
hits), the ratios are the per-run figures divided, and nothing is left running."""

import json
import os
import re
import shutil

import pytest

from benchkit import traffic_run, traffic_targets
from kit_run import processes_mentioning, sluice_bench

pytestmark = pytest.mark.serial


def bench_traffic(*args, timeout=300):
    return sluice_bench("traffic", *args, timeout=timeout)


def test_quick_run_measures_every_variant(tmp_path):
    if not shutil.which("wrk") or not shutil.which("nginx") and not os.path.exists(
            "/usr/sbin/nginx"):
        pytest.fail("nginx and wrk are installed by scripts/setup; run it")
    out = tmp_path / "out"
    r = bench_traffic("--quick", "--each", "--out", str(out), "--keep")
    assert r.returncode == 0, r.stderr[-3000:]
    work = re.search(r"work dir kept at (\S+)", r.stderr).group(1)
    try:
        assert processes_mentioning(work) == []  # every server the kit started is gone
        conf = open(os.path.join(work, "nginx", "nginx.conf")).read()
        assert "limit_req zone=bench" in conf and "proxy_cache bench_cache;" in conf
    finally:
        shutil.rmtree(work, ignore_errors=True)

    res = json.loads((out / "results.json").read_text())
    assert res["schema"] == 1 and res["kind"] == "traffic"
    kit = res["kit"]
    assert kit["runs"] == 1 and kit["duration_s"] == 1
    assert set(kit["sluice_plugins"]["traffic"]) == {"cors", "request-id", "limit-req"}

    # Before the load, each variant answered as it should on both gateways.
    checks = res["checks"]
    for gw, cache_header in (("Sluice", "apisix-cache-status"), ("nginx", "x-cache-status")):
        assert checks[gw]["plain"]["status"] == 200
        traffic = checks[gw]["traffic"]
        assert traffic["status"] == 200 and traffic["access-control-allow-origin"] == "*"
        assert re.fullmatch(r"[0-9a-f-]{32,36}", traffic["x-request-id"]), traffic
        assert checks[gw]["cache-hit"] == {"status": 200, cache_header: "HIT"}, gw

    # --each: every plugin alone answered 200 (gzip and brotli compressed) and was measured.
    each = {v[len("each-"):]: c for v, c in checks["Sluice"].items() if v.startswith("each-")}
    assert set(each) == set(traffic_targets.EACH_PLUGINS)
    assert all(c["status"] == 200 for c in each.values()), each
    assert each["cors"]["access-control-allow-origin"] == "*" and "x-request-id" in each[
        "request-id"]
    assert each["gzip"]["content-encoding"] == "gzip"
    assert each["brotli"]["content-encoding"] == "br"
    assert not any(v.startswith("each-") for v in checks["nginx"])

    measures = {m["name"]: m for m in res["measures"]}
    assert list(measures) == list(traffic_run.measures_for(True)[0])
    assert len(measures) == len(traffic_run.MEASURES) + len(traffic_targets.EACH_PLUGINS)
    for name, m in measures.items():
        (run,) = m["runs"]
        assert run["error"] is None, (name, run)
        assert run["requests"] > 0 and run["non2xx"] == 0 and run["errors"] == 0, (name, run)
        assert run["cpu_s"] > 0 and run["value"] == pytest.approx(
            run["cpu_s"] * 1e6 / run["requests"]), name
    urls = {m["runs"][0]["url"] for n, m in measures.items() if n.startswith("nginx")}
    assert len(urls) == 3  # one nginx port per variant

    ratios = {r["name"]: r for r in res["ratios"]}
    assert list(ratios)[:5] == ["b/a", "c/a", "b/e", "c/f", "a/d"]
    assert ratios["g1/a"]["numerator"] == "sluice-cors"
    for name, ratio in ratios.items():
        want = measures[ratio["numerator"]]["median"] / measures[ratio["denominator"]]["median"]
        assert ratio["median"] == pytest.approx(want), name
    assert ratios["b/a"]["budget"]["ratio_max"] == 1.10
    assert ratios["c/a"]["budget"]["ratio_max"] == 0.50

    report = (out / "report.md").read_text()
    for name in ratios:
        assert re.search(r"^\| %s \|" % re.escape(name), report, re.M), name
    assert "b/a" in r.stdout


@pytest.mark.parametrize("args,message", [
    (["--placement", "gateway=1"], "give gateway, upstream and load"),
    (["--duration", "0"], "must be positive"),
])
def test_bad_options_are_refused(args, message):
    r = bench_traffic(*args, timeout=30)
    assert r.returncode == 2
    assert message in r.stderr
