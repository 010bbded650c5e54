"""`sluice bench` end to end, with the real binary, nginx, HAProxy and wrk on loopback.

These check the kit, not the machine: that every target is started, measured with the
articles' routes, accounted (CPU, RSS) and stopped; that the SLA search finds the capacity of
a server whose capacity is known; that bad options are refused."""

import json
import os
import re
import shutil
import signal
import subprocess
import time
import xml.etree.ElementTree as ET

import pytest

from benchkit import load, procs, sla
from benchkit.procs import Process, free_port
from kit_run import KIT_ENV, SLUICE, processes_mentioning, sluice_bench

# These runs measure latency and capacity: they run alone, after the parallel part of the
# suite (Makefile: `-m serial`), so other tests' load does not move their figures.
pytestmark = pytest.mark.serial


@pytest.fixture
def peer_sluice(tmp_path):
    """A second Sluice, given to the kit as a gateway at a URL with its Admin API."""
    port, admin = free_port(), free_port()
    d = tmp_path / "peer"
    d.mkdir()
    (d / "config.yaml").write_text(
        "apisix:\n  node_listen:\n    - %d\n  ssl:\n    enable: false\n"
        "nginx_config:\n  worker_processes: 1\n"
        "deployment:\n  role: traditional\n  role_traditional:\n    config_provider: embedded\n"
        "  admin:\n    admin_listen:\n      ip: 127.0.0.1\n      port: %d\n"
        "    admin_key:\n      - name: admin\n        key: peerkey123\n        role: admin\n"
        "    allow_admin:\n      - 127.0.0.0/24\n"
        "sluice:\n  data_dir: %s\n"
        "plugin_attr:\n  prometheus:\n    export_addr:\n      ip: 127.0.0.1\n      port: %d\n"
        % (port, admin, d / "data", free_port()))
    p = Process("peer", [SLUICE, "run", "-c", str(d / "config.yaml")], admin,
                str(tmp_path / "peer.log"), cwd=str(d))
    yield {"url": "http://127.0.0.1:%d" % port, "admin": "http://127.0.0.1:%d" % admin,
           "pid": p.pid}
    p.stop()


def test_full_kit_run_with_every_peer_type(tmp_path, peer_sluice):
    if not shutil.which("haproxy") or not shutil.which("wrk"):
        pytest.fail("haproxy and wrk are installed by scripts/setup; run it")
    out = tmp_path / "out"
    r = sluice_bench("--out", str(out), "--duration", "1", "--runs", "2", "--warmup", "0.2",
              "--no-sla", "--keep",
              "--peer", "other=%s" % peer_sluice["url"],
              "--peer-admin", "other=%s,peerkey123" % peer_sluice["admin"],
              "--peer-pid", "other=%d" % peer_sluice["pid"])
    assert r.returncode == 0, r.stderr[-3000:]
    work = re.search(r"work dir kept at (\S+)", r.stderr).group(1)
    try:
        # Everything the kit started is gone (the peer is ours, not the kit's).
        assert processes_mentioning(work) == []
    finally:
        shutil.rmtree(work, ignore_errors=True)
    assert "scenario 2, round 2/2" in r.stderr  # the progress line names what runs

    res = json.loads((out / "results.json").read_text())
    assert res["schema"] == 1
    assert res["machine"]["cores"] == os.cpu_count()
    assert res["machine"]["arch"] == os.uname().machine
    assert res["kit"]["load_generator"] == "wrk" and res["kit"]["upstream"] == "nginx"
    by_name = {t["name"]: t for t in res["targets"]}
    assert set(by_name) == {"Sluice", "nginx", "HAProxy", "other", "direct (upstream)"}
    assert by_name["other"]["kind"] == "url"
    # Scenario 2 everywhere but at the upstream itself: limit-count and prometheus on Sluice
    # and on the peer whose Admin API the kit used, their equivalents on nginx and HAProxy.
    assert by_name["nginx"]["scenario2"].startswith("limit_req")
    assert by_name["HAProxy"]["scenario2"].startswith("stick-table")
    assert by_name["direct (upstream)"]["scenario2"] is None
    # Every cell once per round, in rotation; the order and its seed are recorded.
    order = res["kit"]["order"]
    assert order["interleaved"] and isinstance(order["seed"], int)
    cells = sorted("%s/%s" % (n, k) for n, t in by_name.items() for k in t["scenarios"])
    assert len(cells) == 9
    for phase in ("closed", "fixed_load"):
        assert [sorted(r) for r in order["rounds"][phase]] == [cells, cells], phase
    assert res["kit"]["placement"] == procs.default_placement(procs.usable_cpus(), 1)
    for name, t in by_name.items():
        want = {"1"} if name == "direct (upstream)" else {"1", "2"}
        assert set(t["scenarios"]) == want, name
        for key, s in t["scenarios"].items():
            assert len(s["runs"]) == 2
            assert [r["round"] for r in s["runs"]] == [1, 2]
            assert [r["position"] for r in s["runs"]] == [
                rnd.index("%s/%s" % (name, key)) + 1 for rnd in order["rounds"]["closed"]]
            for run in s["runs"]:
                assert run.get("error") is None, (name, run.get("error"))
                assert run["requests"] > 0 and run["non2xx"] == 0 and run["errors"] == 0
                assert 0 < run["latency_ms"]["p50"] <= run["latency_ms"]["p99"] <= \
                    run["latency_ms"]["max"]
                # Every target here is a process on this machine: CPU and RSS accounted.
                assert run["cpu_us_per_req"] > 0 and run["rss_kib"] > 0, name
                assert run["raw"]["tool"] == "wrk"
            assert s["median"]["rps"] > 0
            assert s["spread"]["rps"][0] <= s["median"]["rps"] <= s["spread"]["rps"][1]
            assert s["sla"] is None
            # One fixed open-loop load for every target: half of nginx's closed-loop QPS.
            fl = s["fixed_load"]
            assert fl["rate"] == res["kit"]["fixed_load"]["rate"], name
            assert len(fl["runs"]) == 2
            for run in fl["runs"]:
                assert run.get("error") is None, (name, run.get("error"))
                assert run["errors"] == 0 and run["non2xx"] == 0
                assert 0 < run["p50_ms"] <= run["p99_ms"]
            assert fl["median"]["p99_ms"] > 0
    nginx_qps = by_name["nginx"]["scenarios"]["1"]["median"]["rps"]
    assert res["kit"]["fixed_load"] == {"reference": "nginx", "fraction": 0.5,
                                        "rate": int(round(nginx_qps * 0.5))}
    assert res["kit"]["pinning"] == procs.pin_plan(procs.usable_cpus(), 1)

    report = (out / "report.md").read_text()
    for name in by_name:
        assert re.search(r"^\| %s \|" % re.escape(name), report, re.M), name
    assert "## Latency at a fixed load" in report
    assert "## How far these figures can be trusted" in report
    assert "(seed %d)" % order["seed"] in report
    for chart in ("qps.svg", "latency.svg"):
        ET.parse(out / chart)


def test_builtin_generator_and_upstream_with_the_sla_search(tmp_path):
    out = tmp_path / "out"
    r = sluice_bench("--out", str(out), "--targets", "sluice,direct", "--scenarios", "2",
              "--load", "builtin", "--upstream", "builtin", "--duration", "1", "--runs", "1",
              "--warmup", "0", "--sla-step-duration", "0.5", "--sla-step", "0.25")
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads((out / "results.json").read_text())
    assert res["kit"]["load_generator"] == "builtin" and res["kit"]["upstream"] == "builtin"
    (t,) = res["targets"]  # direct has no scenario 2
    assert t["name"] == "Sluice"
    s = t["scenarios"]["2"]
    run = s["runs"][0]
    assert run["raw"]["tool"] == "sluice bench load" and run["raw"]["mode"] == "closed"
    assert run["requests"] > 0 and run["errors"] == 0 and run["non2xx"] == 0
    assert sum(b[2] for b in run["raw"]["histogram"]) == run["raw"]["requests"]
    block = s["sla"]
    assert block["sla_ms"] == 3.0 and len(block["runs"]) == 1
    steps = block["runs"][0]["steps"]
    assert steps and all(st["rate"] > 0 for st in steps)
    best = block["runs"][0]["best_rate"]
    assert best == max([st["rate"] for st in steps if st["pass"]] or [0])
    assert block["median_best_rate"] == best
    assert "3 ms" in (out / "report.md").read_text() or "3.0 ms" in (out / "report.md").read_text()


def test_sla_search_finds_the_capacity_of_a_synthetic_server(tmp_path):
    """`sluice bench upstream --service-us 5000` serves exactly 200 requests/s, one at a time.
    Below that rate the p99 is about the service time; above it the backlog grows for the
    whole step (at 1.1x capacity, 20 requests = 100 ms by the end of a 1 s step). With an SLA
    of 50 ms (wide enough for the scheduling stalls of a shared machine, far below the
    overload's latency) the search must land at, not far below, the capacity."""
    port = free_port()
    server = Process("synthetic", [SLUICE, "bench", "upstream", "--listen",
                                   "127.0.0.1:%d" % port, "--service-us", "5000"], port,
                     str(tmp_path / "synthetic.log"))
    try:
        gen = load.Generator(SLUICE, "builtin", str(tmp_path))
        url = "http://127.0.0.1:%d/hello" % port

        def measure(rate):
            r = gen.open(url, 8, 1.0, rate)
            return {"offered": r["raw"]["sent"] + r["raw"]["unsent"], "achieved_rps": r["rps"],
                    "p99_ms": r["latency_ms"]["p99"], "errors": r["errors"],
                    "non2xx": r["non2xx"], "unsent": r["unsent"]}

        res = sla.search(measure, 40, 40, 50.0, 320, refine=2)
    finally:
        server.stop()
    assert not res["capped"]
    assert 120 <= res["best_rate"] <= 215, res["steps"]
    # 20% over capacity, the open loop sees the queue grow: the p99 is the backlog's wait.
    over = [s for s in res["steps"] if s["rate"] >= 240]
    assert over and all(not s["pass"] and s["p99_ms"] > 100 for s in over), res["steps"]


@pytest.mark.parametrize("args,message", [
    (["--scenarios", "3"], "--scenarios"),
    (["--targets", "sluice,varnish"], "unknown varnish"),
    (["--peer-admin", "x=http://127.0.0.1:1"], "no --peer of that name"),
    (["--peer", "noequals"], "expected NAME=VALUE"),
    (["--duration", "0"], "must be positive"),
    (["--fixed-load-fraction", "0"], "--fixed-load-fraction"),
    (["--fixed-load-fraction", "nan"], "--fixed-load-fraction"),
])
def test_bad_options_are_refused(args, message):
    r = sluice_bench(*args, timeout=30)
    assert r.returncode == 2
    assert message in r.stderr


def test_compare_refuses_a_missing_file(tmp_path):
    r = sluice_bench("compare", str(tmp_path / "nope.json"), str(tmp_path / "nope2.json"),
              "--out", str(tmp_path / "c"), timeout=30)
    assert r.returncode == 2
    assert "nope.json" in r.stderr


def test_sigterm_mid_run_stops_everything(tmp_path):
    p = subprocess.Popen([SLUICE, "bench", "--out", str(tmp_path / "o"), "--no-sla",
                          "--duration", "30", "--runs", "1", "--warmup", "0", "--keep",
                          "--targets", "sluice,nginx"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=KIT_ENV)
    # The progress line appears once the targets are up and a run has begun.
    deadline = time.monotonic() + 30
    seen = b""
    os.set_blocking(p.stderr.fileno(), False)
    while time.monotonic() < deadline and b"round 1/1" not in seen:
        seen += p.stderr.read() or b""
        time.sleep(0.1)
    assert b"round 1/1" in seen, seen
    p.send_signal(signal.SIGTERM)
    assert p.wait(30) != 0
    os.set_blocking(p.stderr.fileno(), True)
    seen = (seen + p.stderr.read()).decode(errors="replace")
    work = re.search(r"work dir kept at (\S+)", seen).group(1)
    try:
        assert processes_mentioning(work) == []
    finally:
        shutil.rmtree(work, ignore_errors=True)
    assert not (tmp_path / "o" / "results.json").exists()


def test_compare_through_the_sluice_command(tmp_path, results_pair):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(results_pair[0]))
    b.write_text(json.dumps(results_pair[1]))
    out = tmp_path / "cmp"
    r = sluice_bench("compare", str(a), str(b), "--out", str(out), timeout=30)
    assert r.returncode == 0, r.stderr
    report = (out / "report.md").read_text()
    for res in results_pair:
        assert res["machine"]["arch"] in report
    for chart in ("qps.svg", "latency.svg"):
        ET.parse(out / chart)
