"""The SLA search's logic, against a model server whose capacity is known exactly.

The model is an M/D/1-like queue seen through a p99: below capacity the p99 is the service
time plus a little; above it the backlog grows for the whole step and the p99 with it. The
search must land within its resolution of the highest rate whose p99 meets the SLA."""

import pytest

from benchkit import sla


def model(capacity, service_ms, duration_s=1.0):
    """measure(rate) for a FIFO server of `capacity` req/s: latency grows linearly with the
    backlog once the offered rate exceeds capacity."""
    calls = []

    def measure(rate):
        calls.append(rate)
        if rate <= capacity:
            p99 = service_ms * (1 + rate / capacity)  # some queueing as load rises
        else:
            backlog_s = (rate - capacity) * duration_s / capacity  # at the end of the step
            p99 = 2 * service_ms + 0.99 * backlog_s * 1000  # continuous at capacity
        return {"offered": int(rate * duration_s), "achieved_rps": min(rate, capacity),
                "p50_ms": service_ms, "p99_ms": p99, "p99.9_ms": p99, "errors": 0,
                "non2xx": 0, "unsent": 0}
    measure.calls = calls
    return measure


def highest_passing(capacity, service_ms, sla_ms, duration_s=1.0):
    """The true answer for the model, by brute force over whole rates."""
    m = model(capacity, service_ms, duration_s)
    best = 0
    for r in range(1, int(capacity * 1.5)):
        if sla.step_passes(m(r), sla_ms):
            best = r
    return best


@pytest.mark.parametrize("capacity,service_ms,sla_ms", [
    (1000, 1.0, 3.0),    # passes right up to capacity (p99 2 ms there), fails just above
    (1000, 2.0, 3.0),    # the SLA breaks below capacity (p99 = 2 * (1 + r/c) > 3 at r > 500)
    (50000, 0.1, 3.0),
])
def test_search_lands_within_its_resolution_of_the_true_answer(capacity, service_ms, sla_ms):
    truth = highest_passing(capacity, service_ms, sla_ms)
    start, step, ceiling = sla.plan(capacity)  # closed-loop throughput ~ capacity
    res = sla.search(model(capacity, service_ms), start, step, sla_ms, ceiling, refine=3)
    assert not res["capped"]
    assert res["best_rate"] <= truth  # never reports a rate that failed
    # three bisections of a 10% step: within 10% / 2^3 = 1.25% of the closed-loop rate
    assert truth - res["best_rate"] <= step / 8 + 1
    passing = [s["rate"] for s in res["steps"] if s["pass"]]
    assert max(passing) == res["best_rate"]
    assert all(s["pass"] == (s["rate"] <= truth) for s in res["steps"])


def test_steps_rise_from_the_start_until_the_first_failure():
    m = model(1000, 1.0)
    res = sla.search(m, 200, 100, 3.0, 1500, refine=0)
    assert m.calls == [200, 300, 400, 500, 600, 700, 800, 900, 1000, 1100]
    assert res["best_rate"] == 1000
    assert [s["pass"] for s in res["steps"]] == [True] * 9 + [False]


def test_first_step_failing_bisects_below_it():
    m = model(100, 1.0)
    res = sla.search(m, 400, 100, 3.0, 1500, refine=3)
    assert m.calls[0] == 400
    assert res["best_rate"] > 0 and res["best_rate"] <= 100
    assert not res["steps"][0]["pass"]


def test_never_failing_is_reported_as_capped():
    m = model(10**9, 0.1)
    res = sla.search(m, 100, 100, 3.0, 1000)
    assert res["capped"] and res["best_rate"] == 1000


@pytest.mark.parametrize("field,value", [("errors", 1), ("non2xx", 3), ("unsent", 500),
                                         ("p99_ms", None), ("p99_ms", 3.01)])
def test_a_step_with_failures_or_a_lagging_generator_fails(field, value):
    step = {"offered": 10000, "p99_ms": 1.0, "errors": 0, "non2xx": 0, "unsent": 0}
    assert sla.step_passes(step, 3.0)
    step[field] = value
    assert not sla.step_passes(step, 3.0)


def test_unsent_within_one_percent_passes():
    assert sla.step_passes({"offered": 10000, "p99_ms": 1.0, "errors": 0, "non2xx": 0,
                            "unsent": 100}, 3.0)


def test_plan_scales_with_closed_loop_throughput():
    assert sla.plan(30000) == (6000, 3000, 45000)
    assert sla.plan(0.5) == (1, 1, 1)
    with pytest.raises(ValueError):
        sla.search(model(10, 1), 0, 1, 3.0, 10)
