#!/usr/bin/python3
"""CPU per request with http-logger on every request, against the same route without it.

    /usr/bin/python3 tests/perf/http_logger_cost.py [--sluice build/sluice] [--rounds 6]
                                                    [--duration 4]

ab_cost.py's method: the second gateway's route carries http-logger (APISIX's default entry,
batch_max_size 1000) posting to the small HTTP sink. The issue's budget: 1.10.
"""

import argparse

import ab_cost


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sluice", default=ab_cost.DEFAULT_SLUICE)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--duration", type=int, default=4)
    a = ap.parse_args()
    ab_cost.run(a.sluice, lambda sink: {
        "off": ("", ""),
        "on": ("    http-logger:\n      uri: http://127.0.0.1:%d/log\n"
               "      batch_max_size: 1000\n" % sink, ""),
    }, a.rounds, a.duration, "", budget=1.10, sink=True)


if __name__ == "__main__":
    main()
