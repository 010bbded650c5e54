"""What the *_cost.py scripts share: CPU per request of one route with a feature on, against
the same route with it off, measured the same way for every feature.

Two Sluice processes (1 worker each, apisix.yaml, access log off) route /hello to the built-in
upstream (`sluice bench upstream`); each gets its own route plugins and plugin_attr lines.
wrk -t1 -c16 asks each in turn, the order alternating per round. CPU per request is each
gateway's utime + stime (/proc/PID/stat: every thread, a sender thread included) over the
requests wrk completed. Prints both series and the per-round on/off ratios with their median.
Gateways and the upstream on CPU 1, wrk and the sink on CPU 0 when there are two. With
`sink`, a small HTTP server (on CPU 0) takes POSTs (loggers' batches, spans). Everything it
starts is stopped by PID.
"""

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_SLUICE = os.path.join(REPO, "build", "sluice")

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


def gateway_dir(root, name, port, upstream, plugins="", attrs=""):
    """config.yaml and apisix.yaml for one gateway. `plugins`: lines under the route's
    `plugins:` (indented 4), none when empty; `attrs`: lines under plugin_attr (indented 2)
    besides prometheus's."""
    d = os.path.join(root, name)
    os.makedirs(d)
    route = ("routes:\n- id: '1'\n  uri: /hello\n  upstream:\n    type: roundrobin\n"
             "    nodes:\n      '127.0.0.1:%d': 1\n" % upstream)
    if plugins:
        route += "  plugins:\n" + plugins
    with open(os.path.join(d, "apisix.yaml"), "w") as f:
        f.write(route + "#END\n")
    with open(os.path.join(d, "config.yaml"), "w") as f:
        f.write("apisix:\n  node_listen: [%d]\n  ssl: {enable: false}\n"
                "nginx_config:\n  worker_processes: 1\n  error_log_level: warn\n"
                "  http: {enable_access_log: false}\n"
                "deployment:\n  role: data_plane\n  role_data_plane: {config_provider: yaml}\n"
                "plugin_attr:\n" % port + (attrs or "  prometheus: {enable_export_server: false}\n"))
    return os.path.join(d, "config.yaml")


def median(xs):
    xs = sorted(xs)
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2


def run(sluice, setup, rounds, duration, label, budget=None, sink=False):
    """`setup(sink_port)` -> {"off": (plugins, attrs), "on": (plugins, attrs)}. Returns the
    median on/off ratio."""
    two = os.cpu_count() >= 2
    pin = (lambda cpu: ["taskset", "-c", str(cpu)]) if two else (lambda cpu: [])
    procs = []

    def start(cmd, cpu):
        p = subprocess.Popen(pin(cpu) + cmd, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        procs.append(p)
        return p

    up, sink_port = free_port(), free_port() if sink else None
    ports = {"off": free_port(), "on": free_port()}
    with tempfile.TemporaryDirectory(prefix="sluice-cost-") as root:
        try:
            start([sluice, "bench", "upstream", "--listen", "127.0.0.1:%d" % up], 1)
            wait = [up, ports["off"], ports["on"]]
            if sink:
                sink_py = os.path.join(root, "sink.py")
                with open(sink_py, "w") as f:
                    f.write(SINK)
                start(["/usr/bin/python3", sink_py, str(sink_port)], 0)
                wait.append(sink_port)
            confs = setup(sink_port)
            gws = {}
            for name in ("off", "on"):
                plugins, attrs = confs[name]
                conf = gateway_dir(root, name, ports[name], up, plugins, attrs)
                gws[name] = start([sluice, "run", "-c", conf], 1)
            for port in wait:
                if not wait_port(port):
                    sys.exit("port %d does not answer" % port)
            res = {"off": [], "on": []}
            for rnd in range(rounds):
                for name in (("off", "on") if rnd % 2 == 0 else ("on", "off")):
                    c0 = cpu_ticks(gws[name].pid)
                    out = subprocess.run(pin(0) + ["wrk", "-t1", "-c16", "-d%ds" % duration,
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
            med = median(ratios)
            print("%son/off per round: %s; median %.3f%s"
                  % (label + " " if label else "", " ".join("%.3f" % r for r in ratios), med,
                     " (budget %.2f)" % budget if budget else ""))
            return med
        finally:
            for p in procs:
                p.send_signal(signal.SIGTERM)
            for p in procs:
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    p.kill()
