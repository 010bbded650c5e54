#!/usr/bin/python3
"""CPU per request with a tracer sampling every request, against the same route without it.

    /usr/bin/python3 tests/perf/tracing_cost.py [--plugin opentelemetry|zipkin]
                     [--sluice build/sluice] [--rounds 6] [--duration 4]

ab_cost.py's method, for the tracing plugins: the second gateway's route carries the tracer
at 100% sampling (opentelemetry: sampler always_on, plugin_attr.opentelemetry.collector at
ab_cost's HTTP sink; zipkin: sample_ratio 1, its endpoint at the sink), so every request makes a server span and a client span and every
span is exported. The issue's budget: 1.15.
"""

import argparse

import ab_cost


def confs(plugin, sink):
    if plugin == "opentelemetry":
        on = ("    opentelemetry:\n      sampler: {name: always_on}\n",
              "  prometheus: {enable_export_server: false}\n"
              "  opentelemetry: {collector: {address: '127.0.0.1:%d'}}\n" % sink)
    else:
        on = ("    zipkin:\n      endpoint: http://127.0.0.1:%d/api/v2/spans\n"
              "      sample_ratio: 1\n" % sink, "")
    return {"off": ("", ""), "on": on}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--plugin", default="opentelemetry", choices=["opentelemetry", "zipkin"])
    ap.add_argument("--sluice", default=ab_cost.DEFAULT_SLUICE)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--duration", type=int, default=4)
    a = ap.parse_args()
    ab_cost.run(a.sluice, lambda sink: confs(a.plugin, sink), a.rounds, a.duration, a.plugin,
                budget=1.15, sink=True)


if __name__ == "__main__":
    main()
