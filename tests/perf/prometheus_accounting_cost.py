#!/usr/bin/python3
"""CPU per request with prometheus and its per-route accounting, against prometheus without it.

    /usr/bin/python3 tests/perf/prometheus_accounting_cost.py [--sluice build/sluice]
                                                               [--rounds 6] [--duration 4]
    /usr/bin/python3 tests/perf/prometheus_accounting_cost.py --instructions 2000

Two Sluice processes (1 worker each, apisix.yaml, access log off) route /hello, with the
prometheus plugin, to the built-in upstream (`sluice bench upstream`); the first runs with
plugin_attr.prometheus.route_accounting: false, the second with the default (true: every
connection event timed, sluice_route_cpu_seconds_total). wrk -t1 -c16 asks each in turn, the
order alternating per round. CPU per request is each gateway's utime + stime (/proc/PID/stat,
every thread) over the requests wrk completed. Prints both series and the per-round on/off
ratios with their median. Gateways and the upstream on CPU 1, wrk on CPU 0 when there are two.
With --instructions N: instead, instructions per request under callgrind, N keep-alive
requests after 200 of warm-up, each configuration in turn (instructions_per_request.py's
method, nginx as the upstream): stable where CPU time on a shared machine is not.
Everything it starts is stopped by PID.
"""


import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def cpu_ticks(pid):
    fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def gateway_dir(root, name, port, upstream, accounting):
    d = os.path.join(root, name)
    os.makedirs(d)
    route = ("routes:\n- id: '1'\n  uri: /hello\n  upstream:\n    type: roundrobin\n"
             "    nodes:\n      '127.0.0.1:%d': 1\n  plugins:\n    prometheus: {}\n" % upstream)
    with open(os.path.join(d, "apisix.yaml"), "w") as f:
        f.write(route + "#END\n")
    with open(os.path.join(d, "config.yaml"), "w") as f:
        f.write("apisix:\n  node_listen: [%d]\n  ssl: {enable: false}\n"
                "nginx_config:\n  worker_processes: 1\n  error_log_level: warn\n"
                "  http: {enable_access_log: false}\n"
                "deployment:\n  role: data_plane\n  role_data_plane: {config_provider: yaml}\n"
                "plugin_attr:\n  prometheus: {enable_export_server: false, route_accounting: %s}\n"
                % (port, "true" if accounting else "false"))
    return os.path.join(d, "config.yaml")


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
    ap.add_argument("--sluice", default=os.path.join(REPO, "build", "sluice"))
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--duration", type=int, default=4)
    ap.add_argument("--instructions", type=int, default=0, metavar="N",
                    help="count instructions of N requests under callgrind instead")
    a = ap.parse_args()
    if a.instructions:
        instructions(a.sluice, a.instructions)
        return
    two = os.cpu_count() >= 2
    pin = (lambda cpu: ["taskset", "-c", str(cpu)]) if two else (lambda cpu: [])
    procs = []

    def start(cmd, cpu):
        p = subprocess.Popen(pin(cpu) + cmd, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        procs.append(p)
        return p

    up = free_port()
    ports = {"off": free_port(), "on": free_port()}
    with tempfile.TemporaryDirectory(prefix="sluice-prom-cost-") as root:
        try:
            start([a.sluice, "bench", "upstream", "--listen", "127.0.0.1:%d" % up], 1)
            gws = {}
            for name in ("off", "on"):
                conf = gateway_dir(root, name, ports[name], up, name == "on")
                gws[name] = start([a.sluice, "run", "-c", conf], 1)
            for port in (up, ports["off"], ports["on"]):
                if not wait_port(port):
                    sys.exit("port %d does not answer" % port)
            res = {"off": [], "on": []}
            for rnd in range(a.rounds):
                for name in (("off", "on") if rnd % 2 == 0 else ("on", "off")):
                    c0 = cpu_ticks(gws[name].pid)
                    out = subprocess.run(pin(0) + ["wrk", "-t1", "-c16", "-d%ds" % a.duration,
                                                   "http://127.0.0.1:%d/hello" % ports[name]],
                                         capture_output=True, text=True).stdout
                    c1 = cpu_ticks(gws[name].pid)
                    m = re.search(r"(\d+) requests in", out)
                    if not m or "Non-2xx" in out:
                        sys.exit("wrk against %s: %s" % (name, out))
                    res[name].append((c1 - c0) * 1e6 / os.sysconf("SC_CLK_TCK") / int(m.group(1)))
            for name in ("off", "on"):
                print("%-3s CPU us/request: %s" % (name, " ".join("%.1f" % x for x in res[name])))
            ratios = sorted(b / x for x, b in zip(res["off"], res["on"]))
            mid = len(ratios) // 2
            median = ratios[mid] if len(ratios) % 2 else (ratios[mid - 1] + ratios[mid]) / 2
            print("on/off per round: %s; median %.3f"
                  % (" ".join("%.3f" % r for r in ratios), median))
        finally:
            for p in procs:
                p.send_signal(signal.SIGTERM)
            for p in procs:
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    p.kill()


if __name__ == "__main__":
    main()
