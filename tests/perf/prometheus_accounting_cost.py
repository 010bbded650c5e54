#!/usr/bin/python3
"""CPU per request with prometheus and its per-route accounting, against prometheus without it.

    /usr/bin/python3 tests/perf/prometheus_accounting_cost.py [--sluice build/sluice]
                                                               [--rounds 6] [--duration 4]
    /usr/bin/python3 tests/perf/prometheus_accounting_cost.py --instructions 2000

ab_cost.py's method: both routes carry the prometheus plugin; the first gateway runs with
plugin_attr.prometheus.route_accounting: false, the second with the default (true: every
connection event timed, sluice_route_cpu_seconds_total).
With --instructions N: instead, instructions per request under callgrind, N keep-alive
requests after 200 of warm-up, each configuration in turn (instructions_per_request.py's
method, nginx as the upstream): stable where CPU time on a shared machine is not.
Everything it starts is stopped by PID.
"""


import argparse
import os
import subprocess
import sys
import tempfile

import ab_cost


def confs(accounting):
    return ("    prometheus: {}\n",
            "  prometheus: {enable_export_server: false, route_accounting: %s}\n"
            % ("true" if accounting else "false"))


def instructions(sluice, requests):
    """Ir per request with route_accounting off, then on (callgrind)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import cpu_per_request as cpr
    import instructions_per_request as ipr
    d = tempfile.mkdtemp(prefix="sluice-prom-ir-")
    up_port = cpr.free_port()
    upstream = cpr.start_nginx("upstream", cpr.NGINX_UPSTREAM.format(dir=d, port=up_port),
                               up_port, d)
    res = {}
    try:
        for name in ("off", "on"):
            # The config's last block is plugin_attr.prometheus: one more key of it.
            ipr.SLUICE_CONFIG = cpr.SLUICE_CONFIG + "    route_accounting: %s\n" % (
                "true" if name == "on" else "false")
            res[name] = ipr.measure(sluice, up_port, d, name, "    plugins:\n      prometheus: {}\n",
                                    requests)
    finally:
        upstream.stop()
        subprocess.run(["rm", "-rf", d])
    print("callgrind, %d keep-alive requests, 1 worker, prometheus on the route:" % requests)
    print("route_accounting off: %.0f Ir/request; on: %.0f; on/off %.4f"
          % (res["off"], res["on"], res["on"] / res["off"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sluice", default=ab_cost.DEFAULT_SLUICE)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--duration", type=int, default=4)
    ap.add_argument("--instructions", type=int, default=0, metavar="N",
                    help="count instructions of N requests under callgrind instead")
    a = ap.parse_args()
    if a.instructions:
        instructions(a.sluice, a.instructions)
        return
    ab_cost.run(a.sluice, lambda sink: {"off": confs(False), "on": confs(True)}, a.rounds,
                a.duration, "")


if __name__ == "__main__":
    main()
