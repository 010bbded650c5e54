"""`sluice bench tls` end to end (quick mode): the real binary, nginx, wrk and the
connection-per-request client on loopback. Checks the kit, never the speed: every measurement
ran against both gateways, both served, the handshake client did (or did not) resume as its
mode says, the figures and ratios are where the schema puts them, and nothing is left
running."""

import json
import os
import re
import shutil

import pytest

from benchkit import procs, tls_run
from kit_run import processes_mentioning, sluice_bench

pytestmark = pytest.mark.serial


def bench_tls(*args, timeout=180):
    return sluice_bench("tls", *args, timeout=timeout)


def served(name, run):
    """How many requests the run got answers to (wrk) or connections it completed."""
    if name in ("plain", "https"):
        return run["requests"]
    return run["responses"]


def test_quick_run_measures_both_gateways(tmp_path):
    if not shutil.which("wrk") or not shutil.which("nginx") and not os.path.exists(
            "/usr/sbin/nginx"):
        pytest.fail("nginx and wrk are installed by scripts/setup; run it")
    out = tmp_path / "out"
    r = bench_tls("--quick", "--out", str(out), "--keep")
    assert r.returncode == 0, r.stderr[-3000:]
    work = re.search(r"work dir kept at (\S+)", r.stderr).group(1)
    try:
        assert processes_mentioning(work) == []  # every server the kit started is gone
        for kind in ("ecdsa", "rsa"):  # the certificates both gateways served
            assert os.path.getsize(os.path.join(work, "%s.crt" % kind)) > 0
    finally:
        shutil.rmtree(work, ignore_errors=True)

    res = json.loads((out / "results.json").read_text())
    assert res["schema"] == 1 and res["kind"] == "tls"
    kit = res["kit"]
    assert kit["runs"] == 1 and kit["duration_s"] == 1 and kit["procs"] == 2
    assert kit["pinning"] == procs.pin_plan(procs.usable_cpus(), 1)
    if kit["pinning"]:
        assert "CPU %d" % kit["pinning"]["load"][0] in kit["placement"]
    assert kit["sluice_version"].startswith("sluice ")
    assert kit["nginx_version"].startswith("nginx ")
    assert res["machine"]["cores"] == os.cpu_count()

    measures = {m["name"]: m for m in res["measures"]}
    assert list(measures) == list(tls_run.MEASURES)
    for name, m in measures.items():
        assert m["unit"] and m["what"]
        assert set(m["targets"]) == {"Sluice", "nginx"}, name
        for tname, t in m["targets"].items():
            (run,) = t["runs"]
            assert served(name, run) > 0, (name, tname, run)
            assert run["cpu_s"] > 0, (name, tname)
        nginx_run = m["targets"]["nginx"]["runs"][0]
        assert nginx_run["error"] is None, (name, nginx_run["error"])
        assert nginx_run["value"] > 0 and m["targets"]["nginx"]["median"] == nginx_run["value"]
        if name in ("full-ecdsa", "full-rsa"):
            for t in m["targets"].values():  # a full handshake is never a resumption
                assert t["runs"][0]["reused"] == 0 and t["runs"][0]["handshakes"] > 0
        sluice_run = m["targets"]["Sluice"]["runs"][0]
        if sluice_run["value"] is not None:
            want = sluice_run["value"] / nginx_run["value"]
            assert m["ratio"]["median"] == pytest.approx(want)
            assert m["ratio"]["spread"] == [m["ratio"]["median"]] * 2
    # The resuming client resumes where the server keeps sessions (nginx): all but the
    # first connection of each client process.
    n = measures["resume"]["targets"]["nginx"]["runs"][0]
    assert n["reused"] >= n["handshakes"] - kit["procs"]
    assert measures["https"]["goal"]["ratio_max"] == 0.6
    for name in ("full-ecdsa", "full-rsa", "resume"):
        assert measures[name]["goal"]["ratio_min"] == 1.0
    assert measures["plain"]["goal"] is None

    report = (out / "report.md").read_text()
    for name in measures:
        assert re.search(r"^\| %s \|" % re.escape(name), report, re.M), name
    assert kit["placement"] in report
    assert "Sluice / nginx" in r.stdout  # the summary table on the terminal


@pytest.mark.parametrize("args,message", [
    (["--measures", "plain,bogus"], "unknown bogus"),
    (["--placement", "gateway=1"], "give gateway, upstream and load"),
    (["--placement", "gateway=1,upstream=1,load=4096"], "not usable here"),
    (["--runs", "0"], "must be positive"),
])
def test_bad_options_are_refused(args, message):
    r = bench_tls(*args, timeout=30)
    assert r.returncode == 2
    assert message in r.stderr
