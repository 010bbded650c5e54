"""The kit's measurement phases with stand-in targets and generator: that every phase runs
its cells (target, scenario) in the rounds it is given, switching each target to the cell's
scenario first; which rate the fixed load uses; how failed runs count; that the SLA
searches of several cells take turns."""

from types import SimpleNamespace

from benchkit import fair, load, phases


class Target:
    """A stand-in target: records the scenario it was last set up for, and answers on one
    URL per scenario, as nginx and HAProxy do."""

    def __init__(self, name, kind, log=None):
        self.name, self.kind, self.pids, self.version = name, kind, [], None
        self.log = log if log is not None else []
        self.current = None

    def url_for(self, scenario):
        return "http://%s/s%d/hello" % (self.name, scenario)

    def setup(self, scenario):
        self.current = scenario
        self.log.append(("setup", self.name, scenario))


def entries_with(rps_by_name, scenario=1):
    return {n: {"scenarios": {str(scenario): {"median": {"rps": rps} if rps else None}}}
            for n, rps in rps_by_name.items()}


def test_the_rate_is_a_fraction_of_nginx_qps():
    cells = [(Target("Sluice", "sluice"), 1), (Target("nginx", "nginx"), 1)]
    notes = []
    plan = phases.fixed_load_plan(cells, entries_with({"Sluice": 40000, "nginx": 21411}), 0.5,
                                  notes)
    assert plan == {"reference": "nginx", "fraction": 0.5, "rate": 10706}
    assert notes == []


def test_no_nginx_in_scenario_1_no_fixed_load_with_a_note():
    notes = []
    cells = [(Target("Sluice", "sluice"), 1), (Target("nginx", "nginx"), 2)]
    assert phases.fixed_load_plan(cells, entries_with({"Sluice": 1}), 0.5, notes) == {}
    assert notes == ["nginx is not measured in scenario 1: no latency at a fixed load"]


def test_nginx_without_qps_gives_no_rate():
    notes = []
    cells = [(Target("nginx", "nginx"), 1)]
    assert phases.fixed_load_plan(cells, entries_with({"nginx": None}), 0.5, notes) == {}
    assert notes == ["nginx has no closed-loop QPS: no latency at a fixed load"]


class FakeGen:
    """Answers runs with a given p99 (and rps), failing the calls whose number is in
    `fail`; each call records the URL, and which scenario its target was set up for."""

    def __init__(self, p99s, fail=(), targets=()):
        self.p99s = list(p99s)
        self.fail = set(fail)
        self.calls = []
        self.targets = {t.name: t for t in targets}

    def _answer(self, url, duration, rate):
        n = len(self.calls)
        t = self.targets.get(url.split("/")[2])
        self.calls.append((url, duration, rate, t.current if t else None))
        if n in self.fail:
            raise load.LoadError("generator died")
        p99 = self.p99s[n % len(self.p99s)]
        rate = rate or 1000
        return {"rps": rate, "requests": int(rate * duration), "errors": 0, "non2xx": 0,
                "unsent": 0, "raw": {"sent": int(rate * duration), "unsent": 0},
                "latency_ms": {"mean": p99 / 2, "p50": p99 / 4, "p90": p99 / 2, "p99": p99,
                               "p99.9": p99 * 2, "max": p99 * 3}}

    def open(self, url, conns, duration, rate):
        return self._answer(url, duration, rate)

    def closed(self, url, conns, duration):
        return self._answer(url, duration, None)


class Quiet:
    def begin(self, what):
        pass

    def end(self, seconds):
        pass


def test_closed_loop_runs_every_cell_once_per_round_in_the_rounds_order():
    log = []
    a, b = Target("Sluice", "sluice", log), Target("nginx", "nginx", log)
    cells = [(a, 1), (b, 1), (a, 2), (b, 2)]
    rounds = fair.Rotation(7).rounds(cells, 3)
    entries = {n: {"scenarios": {}} for n in ("Sluice", "nginx")}
    args = SimpleNamespace(connections=16, duration=2, warmup=0.5)
    gen = FakeGen([1.0], targets=[a, b])
    phases.closed_rounds(rounds, entries, SimpleNamespace(pids=[]), gen, args, Quiet())
    measured = [c for c in gen.calls if c[1] == 2]
    # Each cell: set up, warmed up, measured; in the rounds' order, on the cell's own URL
    # and with the target switched to the cell's scenario.
    assert [(c[0], c[3]) for c in measured] == \
        [(t.url_for(s), s) for r in rounds for t, s in r]
    assert [c for c in gen.calls if c[1] == 0.5] == \
        [(t.url_for(s), 0.5, None, s) for r in rounds for t, s in r]
    assert [x[1:] for x in log] == [(t.name, s) for r in rounds for t, s in r]
    for t, s in cells:
        block = entries[t.name]["scenarios"][str(s)]
        assert [(r["round"]) for r in block["runs"]] == [1, 2, 3]
        assert [r["position"] for r in block["runs"]] == \
            [r.index((t, s)) + 1 for r in rounds]
        assert block["median"]["rps"] == 1000 and block["spread"]["rps"] == [1000, 1000]


def test_fixed_load_rotates_and_failed_runs_are_counted_out():
    a, b = Target("Sluice", "sluice"), Target("nginx", "nginx")
    rounds = [[(a, 1), (b, 1)], [(b, 1), (a, 1)], [(a, 1), (b, 1)]]
    entries = {n: {"scenarios": {"1": {}}} for n in ("Sluice", "nginx")}
    args = SimpleNamespace(connections=16, duration=2)
    # Calls: Sluice, nginx, nginx, Sluice, Sluice, nginx; Sluice's second run (call 3) fails.
    gen = FakeGen([0.5, 2.0, 2.2, 0, 0.7, 1.8], fail={3}, targets=[a, b])
    phases.fixed_load_runs(rounds, entries, 10000, SimpleNamespace(pids=[]), gen, args,
                           Quiet())
    assert [c[2] for c in gen.calls] == [10000] * 6  # one rate for everybody
    s = entries["Sluice"]["scenarios"]["1"]["fixed_load"]
    assert len(s["runs"]) == 3 and s["runs"][1]["error"] == "generator died"
    assert s["runs"][1]["achieved_rps"] is None
    assert [r["position"] for r in s["runs"]] == [1, 2, 1]
    assert s["median"]["p99_ms"] == 0.6 and s["median"]["achieved_rps"] == 10000
    assert s["spread"]["p99_ms"] == [0.5, 0.7]
    n = entries["nginx"]["scenarios"]["1"]["fixed_load"]
    assert n["median"]["p99_ms"] == 2.0 and n["spread"]["p99_ms"] == [1.8, 2.2]


def test_sla_searches_of_several_cells_take_turns():
    a, b = Target("Sluice", "sluice"), Target("nginx", "nginx")
    entries = {"Sluice": {"scenarios": {"1": {"median": {"rps": 100}},
                                        "2": {"median": {"rps": 80}}}},
               "nginx": {"scenarios": {"1": {"median": {"rps": 50}}}}}
    args = SimpleNamespace(connections=16, sla_step_duration=1, sla_ms=3.0,
                           sla_start=0.2, sla_step=0.1)
    rounds = [[(a, 1), (b, 1), (a, 2)], [(a, 2), (a, 1), (b, 1)]]
    gen = FakeGen([0.1], targets=[a, b])
    phases.sla_blocks(rounds, entries, SimpleNamespace(pids=[]), gen, args, Quiet())
    steps = [((c[0].split("/")[2], c[3]), c[2]) for c in gen.calls]
    # Whole searches take turns, in the rounds' order. Every step passes here, so within a
    # search the rate only rises: a new search starts where the cell changes or it falls.
    searches = [cell for i, (cell, rate) in enumerate(steps)
                if i == 0 or steps[i - 1][0] != cell or steps[i - 1][1] >= rate]
    assert searches == [("Sluice", 1), ("nginx", 1), ("Sluice", 2),
                        ("Sluice", 2), ("Sluice", 1), ("nginx", 1)]
    for name, s, base in (("Sluice", "1", 100), ("Sluice", "2", 80), ("nginx", "1", 50)):
        block = entries[name]["scenarios"][s]["sla"]
        assert len(block["runs"]) == 2
        assert all(r["capped"] for r in block["runs"])  # every step passed up to 1.5x
        assert block["median_best_rate"] == max(st["rate"] for st in block["runs"][0]["steps"])
        assert block["median_best_rate"] <= 1.5 * base


def test_a_cell_without_qps_gets_no_search():
    a = Target("Sluice", "sluice")
    entries = {"Sluice": {"scenarios": {"1": {"median": None}}}}
    args = SimpleNamespace(connections=16, sla_step_duration=1, sla_ms=3.0,
                           sla_start=0.2, sla_step=0.1)
    gen = FakeGen([])
    phases.sla_blocks([[(a, 1)], [(a, 1)]], entries, SimpleNamespace(pids=[]), gen, args,
                      Quiet())
    assert gen.calls == []
    assert entries["Sluice"]["scenarios"]["1"]["sla"]["error"] == \
        "no closed-loop throughput to start from"
