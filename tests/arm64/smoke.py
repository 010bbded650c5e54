#!/usr/bin/python3
"""Smoke test of the aarch64 gateway under qemu-user: proxy, route change, clean exit.

    tests/arm64/smoke.py build-arm64/sluice

Starts the cross-built binary under qemu-aarch64-static (SLUICE_QEMU overrides the command)
on free loopback ports with its own config.yaml + apisix.yaml in a temp dir, in front of two
tiny upstreams that answer with their name and the path; proxies a request, rewrites
apisix.yaml atomically so the route moves to the other upstream and a new route appears,
waits for the change to serve, then sends SIGTERM and expects exit status 0. Exits non-zero
with the reason and the gateway's log on any failure; the gateway is killed by its PID on the
way out whatever happens.
"""

import http.client
import http.server
import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

EM_AARCH64 = 183
# Everything is slower under emulation; these are ceilings, not expected times.
READY_TIMEOUT = float(os.environ.get("SLUICE_ARM64_READY_TIMEOUT", "30"))
RELOAD_TIMEOUT = float(os.environ.get("SLUICE_ARM64_RELOAD_TIMEOUT", "10"))
EXIT_TIMEOUT = float(os.environ.get("SLUICE_ARM64_EXIT_TIMEOUT", "20"))


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def elf_machine(path):
    with open(path, "rb") as f:
        head = f.read(20)
    check(head[:4] == b"\x7fELF" and head[5] == 1, "%s is not a little-endian ELF file" % path)
    return int.from_bytes(head[18:20], "little")


def start_upstream(name):
    """A threaded HTTP server in this process answering '<name> <path>' to any GET."""

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            body = ("%s %s\n" % (name, self.path)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def get(port, path):
    """(status, body) of GET path on the gateway, or (None, error text)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read().decode("latin-1")
    except OSError as e:
        return None, repr(e)
    finally:
        conn.close()


def write_atomically(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def routes_yaml(routes):
    out = ["routes:"]
    for rid, uri, port in routes:
        out += [
            "  - id: %d" % rid,
            "    uri: %s" % uri,
            "    upstream:",
            "      type: roundrobin",
            "      nodes:",
            '        "127.0.0.1:%d": 1' % port,
        ]
    return "\n".join(out) + "\n#END\n"


def config_yaml(port):
    return (
        "apisix:\n"
        "  node_listen:\n"
        "    - ip: 127.0.0.1\n"
        "      port: %d\n"
        "nginx_config:\n"
        "  worker_processes: 1\n"
        "  error_log_level: info\n"
        "deployment:\n"
        "  role: data_plane\n"
        "  role_data_plane:\n"
        "    config_provider: yaml\n" % port
    )


def wait_until(timeout, probe):
    """Calls probe() until it returns a true value or timeout passes; returns the last value."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(0.1)


def run(binary, workdir, log):
    check(elf_machine(binary) == EM_AARCH64, "%s is not an aarch64 executable" % binary)
    up_a, up_b = start_upstream("upstream-a"), start_upstream("upstream-b")
    port_a, port_b = up_a.server_address[1], up_b.server_address[1]
    gw_port = free_port()

    conf = os.path.join(workdir, "config.yaml")
    routes = os.path.join(workdir, "apisix.yaml")
    write_atomically(conf, config_yaml(gw_port))
    write_atomically(routes, routes_yaml([(1, "/hello", port_a)]))

    qemu = shlex.split(os.environ.get("SLUICE_QEMU", "qemu-aarch64-static"))
    cmd = qemu + [binary, "run", "-c", conf]
    print("smoke: %s (gateway :%d, upstreams :%d :%d)" % (" ".join(cmd), gw_port, port_a, port_b))
    started = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=workdir)
    try:
        ready = wait_until(READY_TIMEOUT,
                           lambda: proc.poll() is not None or get(gw_port, "/hello")[0] == 200)
        check(proc.poll() is None, "gateway exited during start with status %s" % proc.returncode)
        check(ready, "gateway did not serve /hello within %.0f s" % READY_TIMEOUT)
        print("smoke: serving after %.1f s" % (time.monotonic() - started))

        status, body = get(gw_port, "/hello")
        check((status, body) == (200, "upstream-a /hello\n"), "GET /hello: %s %r" % (status, body))
        status, body = get(gw_port, "/added")
        check(status == 404, "GET /added before the change: want 404, got %s %r" % (status, body))

        # The route moves to upstream b and a second route appears, in one atomic rewrite.
        write_atomically(routes, routes_yaml([(1, "/hello", port_b), (2, "/added", port_a)]))
        changed = time.monotonic()
        want = (200, "upstream-b /hello\n")
        moved = wait_until(RELOAD_TIMEOUT, lambda: get(gw_port, "/hello") == want)
        check(moved, "route change not served within %.0f s: GET /hello -> %s" % (
            RELOAD_TIMEOUT, get(gw_port, "/hello")))
        print("smoke: route change served after %.1f s" % (time.monotonic() - changed))
        status, body = get(gw_port, "/added")
        check((status, body) == (200, "upstream-a /added\n"), "GET /added: %s %r" % (status, body))

        proc.send_signal(signal.SIGTERM)
        try:
            rc = proc.wait(timeout=EXIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise Failure("gateway still running %.0f s after SIGTERM" % EXIT_TIMEOUT)
        check(rc == 0, "gateway exited with status %s after SIGTERM, want 0" % rc)
        print("smoke: exit 0 after SIGTERM")

        # The worker's start-up verdict on io_uring: qemu-user has none, so the plain
        # system-call path is the one exercised here; on a native arm64 host, the batches.
        log.flush()
        with open(log.name) as f:
            text = f.read()
        batched = "socket calls batched through io_uring" in text
        plain = "io_uring not usable" in text
        check(batched != plain, "the worker logged neither (or both) of its io_uring verdicts")
        print("smoke: socket calls %s" % (
            "batched through io_uring" if batched else "made as plain system calls (no io_uring)"))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        up_a.shutdown()
        up_b.shutdown()


def main():
    if len(sys.argv) != 2:
        print("usage: %s path/to/aarch64/sluice" % sys.argv[0], file=sys.stderr)
        return 2
    binary = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory(prefix="sluice-arm64-smoke-") as workdir:
        log_path = os.path.join(workdir, "gateway.log")
        with open(log_path, "w") as log:
            try:
                run(binary, workdir, log)
            except (Failure, OSError) as e:
                log.flush()
                print("smoke: FAIL: %s" % e)
                with open(log_path) as f:
                    print("---- gateway log ----\n" + f.read() + "---- end ----")
                return 1
    print("smoke: PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
