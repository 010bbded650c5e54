"""`sluice bench auth` end to end (quick mode): the real binary, nginx and wrk on loopback.
Checks the kit, never the speed: every measurement ran and was served with 2xx only, both
gateways let the authorised requests through and refused a wrong key with 401 (Sluice a
token signed with the wrong secret too), the ratios are the per-run figures divided, the
placement is the pin plan's, and nothing is left running."""

import json
import os
import re
import shutil

import pytest

from benchkit import auth_run, procs
from kit_run import processes_mentioning, sluice_bench

pytestmark = pytest.mark.serial


def bench_auth(*args, timeout=300):
    return sluice_bench("auth", *args, timeout=timeout)


def test_quick_run_measures_every_variant(tmp_path):
    if not shutil.which("wrk") or not shutil.which("nginx") and not os.path.exists(
            "/usr/sbin/nginx"):
        pytest.fail("nginx and wrk are installed by scripts/setup; run it")
    out = tmp_path / "out"
    r = bench_auth("--quick", "--out", str(out), "--keep")
    assert r.returncode == 0, r.stderr[-3000:]
    work = re.search(r"work dir kept at (\S+)", r.stderr).group(1)
    try:
        assert processes_mentioning(work) == []  # every server the kit started is gone
        conf = open(os.path.join(work, "nginx", "nginx.conf")).read()
        assert "map $http_apikey $key_ok" in conf and "return 401" in conf
    finally:
        shutil.rmtree(work, ignore_errors=True)

    res = json.loads((out / "results.json").read_text())
    assert res["schema"] == 1 and res["kind"] == "auth"
    kit = res["kit"]
    assert kit["runs"] == 1 and kit["duration_s"] == 1 and kit["consumers"] == 1000
    assert kit["pinning"] == procs.pin_plan(procs.usable_cpus(), 1)
    if kit["pinning"]:
        gw_cpus = ",".join(map(str, kit["pinning"]["gateway"]))
        for name in ("Sluice", "nginx"):  # both gateways on the plan's CPU, wrk off it
            assert res["cpus"][name]["allowed"] == [gw_cpus], res["cpus"]
            assert set(res["cpus"][name]["ran_on"]) <= set(kit["pinning"]["gateway"])
        assert res["cpus"]["wrk"]["allowed"] == [",".join(map(str, kit["pinning"]["load"]))]
    assert kit["sluice_version"].startswith("sluice ")
    assert kit["nginx_version"].startswith("nginx ")
    assert kit["request_headers"]["sluice-key-auth"] == {"apikey": "bench-api-key-0001"}
    assert kit["request_headers"]["nginx-key"] == {"apikey": "bench-api-key-0001"}
    assert kit["request_headers"]["sluice-jwt-auth"] == {"Authorization": "Bearer <token>"}

    # Before the load: the right credentials pass, a wrong or missing one is refused.
    checks = res["checks"]
    assert checks["Sluice"]["plain"] == {"authorised": 200}
    assert checks["nginx"]["plain"] == {"authorised": 200}
    for gw, variants in (("Sluice", ("key-auth", "jwt-auth")), ("nginx", ("key-auth",))):
        for v in variants:
            assert checks[gw][v] == {"authorised": 200, "wrong": 401, "missing": 401}, (gw, v)

    # Every measurement ran once, was served, and only with 2xx answers.
    measures = {m["name"]: m for m in res["measures"]}
    assert list(measures) == list(auth_run.MEASURES)
    for name, m in measures.items():
        (run,) = m["runs"]
        assert run["error"] is None, (name, run)
        assert run["requests"] > 0 and run["non2xx"] == 0 and run["errors"] == 0, (name, run)
        assert run["cpu_s"] > 0 and run["value"] == pytest.approx(
            run["cpu_s"] * 1e6 / run["requests"]), name
        assert m["median"] == run["value"] and m["spread"] == [run["value"]] * 2
    assert measures["nginx-key"]["runs"][0]["url"] != measures["nginx-plain"]["runs"][0]["url"]

    ratios = {r["name"]: r for r in res["ratios"]}
    assert list(ratios) == ["b/a", "c/a", "b/e", "a/d", "e/d"]
    for name, ratio in ratios.items():
        want = measures[ratio["numerator"]]["median"] / measures[ratio["denominator"]]["median"]
        assert ratio["median"] == pytest.approx(want), name
    assert ratios["b/a"]["budget"]["ratio_max"] == 1.05
    assert ratios["c/a"]["budget"]["ratio_max"] == 1.15
    assert ratios["b/e"]["budget"] is None

    report = (out / "report.md").read_text()
    for name in ratios:
        assert re.search(r"^\| %s \|" % re.escape(name), report, re.M), name
    assert kit["placement"] in report
    assert "b/a" in r.stdout  # the summary tables on the terminal


@pytest.mark.parametrize("args,message", [
    (["--consumers", "0"], "must be positive"),
    (["--placement", "gateway=1"], "give gateway, upstream and load"),
    (["--runs", "0"], "must be positive"),
])
def test_bad_options_are_refused(args, message):
    r = bench_auth(*args, timeout=30)
    assert r.returncode == 2
    assert message in r.stderr
