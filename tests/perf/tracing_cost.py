#!/usr/bin/python3
"""CPU per request with a tracer sampling every request, against the same route without it.

    /usr/bin/python3 tests/perf/tracing_cost.py [--plugin opentelemetry|zipkin]
                     [--sluice build/sluice] [--rounds 6] [--duration 4]

http_logger_cost.py's method, for the tracing plugins: two Sluice processes (1 worker each,
apisix.yaml, access log off) route /hello to the built-in upstream (`sluice bench upstream`);
the second's route carries the tracer at 100% sampling (opentelemetry: sampler always_on,
plugin_attr.opentelemetry.collector at a small HTTP sink written here; zipkin: sample_ratio 1,
its endpoint at the sink), so every request makes a server span and a client span and every
span is exported. wrk -t1 -c16 asks each in turn, the order alternating per round. CPU per
request is each gateway's utime + stime (/proc/PID/stat: every thread, the exporter's sender
thread included) over the requests wrk completed. Prints both series and the per-round on/off
ratios with their median (the issue's budget: 1.15). Gateways and the upstream on CPU 1, wrk
and the sink on CPU 0 when there are two. Everything it starts is stopped by PID.
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

SINK = r'''
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200); self.send_header("content-length", "0"); self.end_headers()
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
'''


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


def gateway_dir(root, name, port, upstream, sink, plugin):
    d = os.path.join(root, name)
    os.makedirs(d)
    route = ("routes:\n- id: '1'\n  uri: /hello\n  upstream:\n    type: roundrobin\n"
             "    nodes:\n      '127.0.0.1:%d': 1\n" % upstream)
    attr = ""
    if sink and plugin == "opentelemetry":
        route += "  plugins:\n    opentelemetry:\n      sampler: {name: always_on}\n"
        attr = "  opentelemetry: {collector: {address: '127.0.0.1:%d'}}\n" % sink
    elif sink:
        route += ("  plugins:\n    zipkin:\n      endpoint: http://127.0.0.1:%d/api/v2/spans\n"
                  "      sample_ratio: 1\n" % sink)
    with open(os.path.join(d, "apisix.yaml"), "w") as f:
        f.write(route + "#END\n")
    with open(os.path.join(d, "config.yaml"), "w") as f:
        f.write("apisix:\n  node_listen: [%d]\n  ssl: {enable: false}\n"
                "nginx_config:\n  worker_processes: 1\n  error_log_level: warn\n"
                "  http: {enable_access_log: false}\n"
                "deployment:\n  role: data_plane\n  role_data_plane: {config_provider: yaml}\n"
                "plugin_attr:\n  prometheus: {enable_export_server: false}\n" % port + attr)
    return os.path.join(d, "config.yaml")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--plugin", default="opentelemetry", choices=["opentelemetry", "zipkin"])
    ap.add_argument("--sluice", default=os.path.join(REPO, "build", "sluice"))
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--duration", type=int, default=4)
    a = ap.parse_args()
    two = os.cpu_count() >= 2
    pin = (lambda cpu: ["taskset", "-c", str(cpu)]) if two else (lambda cpu: [])
    procs = []

    def start(cmd, cpu):
        p = subprocess.Popen(pin(cpu) + cmd, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        procs.append(p)
        return p

    up, sink = free_port(), free_port()
    ports = {"off": free_port(), "on": free_port()}
    with tempfile.TemporaryDirectory(prefix="sluice-tracing-cost-") as root:
        try:
            start([a.sluice, "bench", "upstream", "--listen", "127.0.0.1:%d" % up], 1)
            sink_py = os.path.join(root, "sink.py")
            with open(sink_py, "w") as f:
                f.write(SINK)
            start(["/usr/bin/python3", sink_py, str(sink)], 0)
            gws = {}
            for name in ("off", "on"):
                conf = gateway_dir(root, name, ports[name], up, sink if name == "on" else None,
                                   a.plugin)
                gws[name] = start([a.sluice, "run", "-c", conf], 1)
            for port in (up, sink, ports["off"], ports["on"]):
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
            print("%s on/off per round: %s; median %.3f (budget 1.15)"
                  % (a.plugin, " ".join("%.3f" % r for r in ratios), median))
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
