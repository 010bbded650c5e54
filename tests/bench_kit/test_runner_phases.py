"""The kit's fixed-load phase and the order of its SLA searches, with stand-in targets and
generator: which rate the fixed load uses, how failed runs count, and that the searches of
several targets take turns."""

from types import SimpleNamespace

from benchkit import load, runner


def target(name, kind):
    return SimpleNamespace(name=name, kind=kind, url="http://%s/hello" % name, pids=[])


def entries_with(rps_by_name, scenario=1):
    return {n: {"scenarios": {str(scenario): {"median": {"rps": rps} if rps else None}}}
            for n, rps in rps_by_name.items()}


def test_the_rate_is_a_fraction_of_nginx_qps():
    ts = [target("Sluice", "sluice"), target("nginx", "nginx")]
    notes = []
    plan = runner.fixed_load_plan(ts, entries_with({"Sluice": 40000, "nginx": 21411}), 1, 0.5,
                                  notes, last=False)
    assert plan == {"reference": "nginx", "fraction": 0.5, "rate": 10706}
    assert notes == []


def test_no_nginx_no_fixed_load_with_a_note():
    notes = []
    ts = [target("Sluice", "sluice")]
    # Scenario 1 of 1,2: nginx might still come (it does not, but the decision waits).
    assert runner.fixed_load_plan(ts, entries_with({"Sluice": 1}), 1, 0.5, notes,
                                  last=False) is None
    assert runner.fixed_load_plan(ts, entries_with({"Sluice": 1}, 2), 2, 0.5, notes,
                                  last=True) == {}
    assert notes == ["nginx is not measured: no latency at a fixed load"]


def test_nginx_without_qps_gives_no_rate():
    notes = []
    ts = [target("nginx", "nginx")]
    assert runner.fixed_load_plan(ts, entries_with({"nginx": None}), 1, 0.5, notes,
                                  last=False) == {}
    assert notes == ["nginx has no closed-loop QPS: no latency at a fixed load"]


class FakeGen:
    """Answers open-loop runs with a given p99, failing the calls whose number is in `fail`."""

    def __init__(self, p99s, fail=()):
        self.p99s = list(p99s)
        self.fail = set(fail)
        self.calls = []

    def open(self, url, conns, duration, rate):
        n = len(self.calls)
        self.calls.append((url, conns, duration, rate))
        if n in self.fail:
            raise load.LoadError("generator died")
        p99 = self.p99s[n]
        return {"rps": rate, "requests": int(rate * duration), "errors": 0, "non2xx": 0,
                "unsent": 0, "raw": {"sent": int(rate * duration), "unsent": 0},
                "latency_ms": {"p50": p99 / 4, "p99": p99, "p99.9": p99 * 2}}


class Quiet:
    def begin(self, what):
        pass

    def end(self, seconds):
        pass


def test_runs_interleave_and_failed_runs_are_counted_out():
    a, b = target("Sluice", "sluice"), target("nginx", "nginx")
    entries = {n: {"scenarios": {"1": {}}} for n in ("Sluice", "nginx")}
    args = SimpleNamespace(runs=3, connections=16, duration=2)
    # Calls alternate Sluice, nginx, Sluice, ...; Sluice's second run (call 2) fails.
    gen = FakeGen([0.5, 2.0, 0, 2.2, 0.7, 1.8], fail={2})
    runner.fixed_load_runs([a, b], entries, 1, 10000, SimpleNamespace(pids=[]), gen, args,
                           Quiet())
    assert [c[3] for c in gen.calls] == [10000] * 6  # one rate for everybody
    s = entries["Sluice"]["scenarios"]["1"]["fixed_load"]
    assert len(s["runs"]) == 3 and s["runs"][1]["error"] == "generator died"
    assert s["runs"][1]["achieved_rps"] is None
    assert s["median"]["p99_ms"] == 0.6 and s["median"]["achieved_rps"] == 10000
    assert s["spread"]["p99_ms"] == [0.5, 0.7]
    n = entries["nginx"]["scenarios"]["1"]["fixed_load"]
    assert n["median"]["p99_ms"] == 2.0 and n["spread"]["p99_ms"] == [1.8, 2.2]


def test_sla_searches_of_several_targets_take_turns():
    a, b = target("Sluice", "sluice"), target("nginx", "nginx")
    entries = {"Sluice": {"scenarios": {"1": {"median": {"rps": 100}}}},
               "nginx": {"scenarios": {"1": {"median": {"rps": 50}}}}}
    args = SimpleNamespace(runs=2, connections=16, sla_step_duration=1, sla_ms=3.0,
                           sla_start=0.2, sla_step=0.1)
    gen = FakeGen([0.1] * 1000)
    runner.sla_blocks([a, b], entries, SimpleNamespace(pids=[]), 1, gen, args, Quiet())
    order = [c[0].split("/")[2] for c in gen.calls]
    # Whole searches alternate: Sluice's first, nginx's first, Sluice's second, nginx's second.
    runs_of = [name for i, name in enumerate(order) if i == 0 or order[i - 1] != name]
    assert runs_of == ["Sluice", "nginx", "Sluice", "nginx"]
    for name, base in (("Sluice", 100), ("nginx", 50)):
        block = entries[name]["scenarios"]["1"]["sla"]
        assert len(block["runs"]) == 2
        assert all(r["capped"] for r in block["runs"])  # every step passed up to 1.5x
        assert block["median_best_rate"] == max(st["rate"] for st in block["runs"][0]["steps"])
        assert block["median_best_rate"] <= 1.5 * base


def test_a_target_without_qps_gets_no_search():
    a = target("Sluice", "sluice")
    entries = {"Sluice": {"scenarios": {"1": {"median": None}}}}
    args = SimpleNamespace(runs=2, connections=16, sla_step_duration=1, sla_ms=3.0,
                           sla_start=0.2, sla_step=0.1)
    gen = FakeGen([])
    runner.sla_blocks([a], entries, SimpleNamespace(pids=[]), 1, gen, args, Quiet())
    assert gen.calls == []
    assert entries["Sluice"]["scenarios"]["1"]["sla"]["error"] == \
        "no closed-loop throughput to start from"
