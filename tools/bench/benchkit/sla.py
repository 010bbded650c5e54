"""Throughput under a latency SLA: the highest offered rate whose p99 stays within the SLA.

The search offers a fixed rate (open loop, latency from each request's intended send time),
raising it step by step until a step fails, then bisects between the last passing and the
first failing rate. A step passes when its p99 is within the SLA, no request failed or got a
non-2xx answer, and the generator kept up with the schedule (at most `max_unsent` of the
requests left unsent). The search itself is pure: `measure(rate)` does the work, so the
logic is tested against a model of known capacity as well as a real server.
"""

import math


def step_passes(step, sla_ms, max_unsent=0.01):
    offered = max(1, step.get("offered", 0))
    return (step["p99_ms"] is not None and step["p99_ms"] <= sla_ms and step["errors"] == 0 and
            step["non2xx"] == 0 and step.get("unsent", 0) <= max_unsent * offered)


def search(measure, start_rate, step_rate, sla_ms, max_rate, refine=2, max_unsent=0.01,
           on_step=None):
    """Raise the rate from start_rate by step_rate until a step fails (or max_rate passes),
    then bisect `refine` times. `measure(rate)` returns a dict with p99_ms, errors, non2xx,
    unsent, offered (requests scheduled), achieved_rps (and whatever else it likes).
    Returns {"best_rate": highest passing rate or 0, "capped": bool, "steps": [...]}."""
    if start_rate <= 0 or step_rate <= 0:
        raise ValueError("start_rate and step_rate must be positive")
    steps = []

    def run(rate):
        rate = int(round(rate))
        result = dict(measure(rate))
        result["rate"] = rate
        result["pass"] = step_passes(result, sla_ms, max_unsent)
        steps.append(result)
        if on_step:
            on_step(result)
        return result["pass"]

    best, fail = 0, None
    rate = start_rate
    while rate <= max_rate:
        if run(rate):
            best = int(round(rate))
            rate += step_rate
        else:
            fail = int(round(rate))
            break
    capped = fail is None
    if fail is not None:
        lo, hi = best, fail
        for _ in range(refine):
            if hi - lo <= max(1, 0.01 * hi):
                break
            mid = (lo + hi) / 2 if lo else hi / 2
            if run(mid):
                lo = best = max(best, int(round(mid)))
            else:
                hi = int(round(mid))
    return {"best_rate": best, "capped": capped, "steps": steps}


def plan(closed_loop_rps, start_fraction=0.2, step_fraction=0.1, max_fraction=1.5):
    """Start, step and ceiling rates, from the closed-loop throughput of the same target: the
    SLA-bound rate of a fixed connection count cannot exceed its saturation much."""
    base = max(1.0, closed_loop_rps)
    start = max(1, int(math.floor(base * start_fraction)))
    step = max(1, int(math.floor(base * step_fraction)))
    return start, step, int(base * max_fraction)
