"""Test harness for Sluice's integration tests: ports, the Gateway process, HTTP clients.

Everything here talks to the real `build/sluice` binary over loopback. Nothing uses fixed
ports or fixed paths, so several runs can share a machine.
"""

import json
import os
import re
import secrets
import signal
import socket
import subprocess
import tempfile
import time
import zlib

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SLUICE_BIN = os.environ.get("SLUICE_BIN", os.path.join(REPO, "build", "sluice"))
READY_TIMEOUT = float(os.environ.get("SLUICE_READY_TIMEOUT", "10"))
NOT_FOUND_BODY = b'{"error_msg":"404 Route Not Found"}\n'
# The APISIX 2.x default admin key (CVE-2020-13945); Sluice's built-in default.
WELL_KNOWN_ADMIN_KEY = "edd1c9f034335f136f87ad84b625c8f1"
ADMIN_PREFIX = "/apisix/admin"
OMIT = type("Omit", (), {"__repr__": lambda self: "OMIT"})()  # "leave this key out"
DEFAULT = type("Default", (), {"__repr__": lambda self: "DEFAULT"})()  # "the usual value"


# --------------------------------------------------------------------------- ports


def _ephemeral_range():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo, hi = (int(x) for x in f.read().split())
            return lo, hi
    except (OSError, ValueError):
        return 32768, 60999


def _port_slice():
    """This test process's own slice of the ports outside the kernel's ephemeral range (below
    it; above it where the range starts too low to leave room below).

    A port the kernel picks for bind(0) is freed when the picker closes it, and the kernel may
    pick it again: for the next free_port() of the same test (two listeners of one gateway on
    one port: seen in CI), for another pytest-xdist worker, or as the local port of any
    outgoing connection. Ports outside the ephemeral range are never picked by the kernel;
    giving each xdist worker its own slice of them keeps the workers apart, and a cursor
    within the slice keeps one process from handing out a port twice until it wraps."""
    lo, hi = _ephemeral_range()
    if lo - 15000 >= 2000:
        base, top = 15000, lo  # below the range (Linux's default range starts at 32768)
    elif 65535 - hi >= 2000:
        base, top = hi + 1, 65536  # a range that starts low may leave room above it
    else:
        return None
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0") or 0)
    # Slot 0 is the process without xdist (a serial run), slots 1.. the workers gw0, gw1, ...
    index = int(worker[2:]) + 1 if worker.startswith("gw") and worker[2:].isdigit() else 0
    slots = max(count + 1, index + 1, 4)
    width = (top - base) // slots
    start = base + index * width
    return start, start + width


_PORTS = {"slice": None, "cursor": None}


def free_port():
    """A loopback port nobody listens on, from this process's own slice (see _port_slice),
    not handed out again until the cursor has gone round the whole slice. Falls back to the
    kernel's pick where the ephemeral range leaves no room outside it."""
    if _PORTS["slice"] is None:
        _PORTS["slice"] = _port_slice() or (0, 0)
        lo, hi = _PORTS["slice"]
        _PORTS["cursor"] = lo + (os.getpid() % max(hi - lo, 1))
    lo, hi = _PORTS["slice"]
    if hi > lo:
        for _ in range(hi - lo):
            port = _PORTS["cursor"]
            _PORTS["cursor"] = lo if port + 1 >= hi else port + 1
            # No SO_REUSEADDR: a port with a connection in TIME_WAIT is passed over too.
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    continue
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def can_connect(port, host="127.0.0.1", timeout=0.5):
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def wait_port(port, host="127.0.0.1", timeout=10.0, proc=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return False
        if can_connect(port, host):
            return True
        time.sleep(0.05)
    return False


# --------------------------------------------------------------------------- raw HTTP client


class Response:
    def __init__(self, version, status, reason, headers, raw_head):
        self.version = version
        self.status = status
        self.reason = reason
        self.headers = headers  # list of (name, value)
        self.raw_head = raw_head
        self.body = b""
        self.interim = []  # 1xx responses seen before this one
        self.framing = None  # "length" | "chunked" | "close" | "none"
        self.trailers = []

    def header(self, name):
        name = name.lower()
        for k, v in self.headers:
            if k.lower() == name:
                return v
        return None

    def header_all(self, name):
        name = name.lower()
        return [v for k, v in self.headers if k.lower() == name]

    def has_header(self, name):
        return self.header(name) is not None

    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        return "<Response %d %r body=%r>" % (self.status, self.headers, self.body[:200])


class Reader:
    """A buffered reader over a socket that keeps leftovers (pipelining needs them)."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = bytearray()

    def _fill(self):
        data = self.sock.recv(262144)
        if not data:
            raise EOFError("connection closed by peer")
        self.buf += data

    def read_until(self, delim, limit=1 << 20):
        start = 0
        while True:
            i = self.buf.find(delim, start)
            if i >= 0:
                out = bytes(self.buf[:i + len(delim)])
                del self.buf[:i + len(delim)]
                return out
            if len(self.buf) > limit:
                raise ValueError("no %r within %d bytes" % (delim, limit))
            start = max(0, len(self.buf) - len(delim) + 1)
            self._fill()

    def read_exact(self, n):
        while len(self.buf) < n:
            self._fill()
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    def read_some(self, n=262144):
        """Up to n bytes; b'' at EOF."""
        if self.buf:
            out = bytes(self.buf[:n])
            del self.buf[:n]
            return out
        return self.sock.recv(n)


def parse_head(raw):
    lines = raw[:-4].split(b"\r\n")
    version, status, *rest = lines[0].decode("latin-1").split(" ", 2)
    headers = []
    for line in lines[1:]:
        name, _, value = line.decode("latin-1").partition(":")
        headers.append((name.strip(), value.strip()))
    return Response(version, int(status), rest[0] if rest else "", headers, raw)


def read_head(reader):
    return parse_head(reader.read_until(b"\r\n\r\n"))


def body_framing(resp, method):
    if method == "HEAD" or resp.status in (204, 304) or 100 <= resp.status < 200:
        return "none"
    te = resp.header("transfer-encoding")
    if te is not None and te.lower().split(",")[-1].strip() == "chunked":
        return "chunked"
    if resp.header("content-length") is not None:
        return "length"
    return "close"


def iter_body(reader, resp, method="GET"):
    """Yields the body of resp in pieces as they arrive (chunk framing removed)."""
    resp.framing = body_framing(resp, method)
    if resp.framing == "none":
        return
    if resp.framing == "length":
        left = int(resp.header("content-length"))
        while left > 0:
            piece = reader.read_some(min(left, 262144))
            if not piece:
                raise EOFError("EOF with %d body bytes missing" % left)
            left -= len(piece)
            yield piece
        return
    if resp.framing == "chunked":
        while True:
            line = reader.read_until(b"\r\n", 4096)
            size = int(line.split(b";")[0].strip(), 16)
            if size == 0:
                break
            left = size
            while left > 0:
                piece = reader.read_some(min(left, 262144))
                if not piece:
                    raise EOFError("EOF inside a chunk")
                left -= len(piece)
                yield piece
            if reader.read_exact(2) != b"\r\n":
                raise ValueError("chunk data not followed by CRLF")
        while True:
            line = reader.read_until(b"\r\n", 8192)
            if line == b"\r\n":
                break
            name, _, value = line.decode("latin-1").partition(":")
            resp.trailers.append((name.strip(), value.strip()))
        return
    while True:  # close-delimited
        piece = reader.read_some()
        if not piece:
            return
        yield piece


def read_response(reader, method="GET", keep_interim=True):
    """Reads one final response (skipping and recording 1xx ones) with its whole body."""
    interim = []
    while True:
        resp = read_head(reader)
        if 100 <= resp.status < 200 and resp.status != 101:
            interim.append(resp)
            continue
        break
    resp.interim = interim
    resp.body = b"".join(iter_body(reader, resp, method))
    return resp


def build_request(method, path, headers=(), body=None, host="127.0.0.1",
                  version="HTTP/1.1"):
    headers = list(headers.items()) if isinstance(headers, dict) else list(headers)
    names = {k.lower() for k, _ in headers}
    out = ["%s %s %s\r\n" % (method, path, version)]
    if host is not None and "host" not in names:
        out.append("Host: %s\r\n" % host)
    for k, v in headers:
        out.append("%s: %s\r\n" % (k, v))
    if body is not None and "content-length" not in names and "transfer-encoding" not in names:
        out.append("Content-Length: %d\r\n" % len(body))
    out.append("\r\n")
    data = "".join(out).encode("latin-1")
    return data + (body or b"")


class Client:
    """One client connection to the gateway, speaking HTTP/1.1 by hand."""

    def __init__(self, port, host="127.0.0.1", timeout=10.0):
        self.port = port
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = Reader(self.sock)

    def send(self, data):
        self.sock.sendall(data)

    def request(self, method, path, headers=(), body=None, host="127.0.0.1",
                version="HTTP/1.1"):
        self.send(build_request(method, path, headers, body, host, version))
        return read_response(self.reader, method)

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def read_response(self, method="GET"):
        return read_response(self.reader, method)

    def read_head(self):
        return read_head(self.reader)

    def closed_by_peer(self, timeout=3.0):
        """True when the peer closes (EOF or reset) within timeout with no more bytes."""
        if self.reader.buf:
            return False
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            return False
        except ConnectionResetError:
            return True
        return data == b""

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def http(port, method, path, headers=(), body=None, host="127.0.0.1", timeout=10.0):
    """One request on a fresh connection."""
    headers = list(headers.items()) if isinstance(headers, dict) else list(headers)
    with Client(port, timeout=timeout) as c:
        return c.request(method, path, headers + [("Connection", "close")], body, host)


def get(port, path, **kw):
    return http(port, "GET", path, **kw)


# --------------------------------------------------------------------------- curl and wrk


class CurlResult:
    def __init__(self, rc, status, headers, body, stderr, heads):
        self.rc = rc
        self.status = status
        self.headers = headers
        self.body = body
        self.stderr = stderr
        self.heads = heads  # every response head curl saw (1xx included), parsed

    def header(self, name):
        name = name.lower()
        for k, v in self.headers:
            if k.lower() == name:
                return v
        return None

    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        return "<curl rc=%d status=%s body=%r stderr=%r>" % (
            self.rc, self.status, self.body[:200], self.stderr[-300:])


def curl(url, *args, timeout=15, data=None):
    """Runs curl; returns the last response head (status, headers) and the body."""
    with tempfile.TemporaryDirectory(prefix="sluice-curl-") as d:
        hfile, bfile = os.path.join(d, "h"), os.path.join(d, "b")
        cmd = ["curl", "-sS", "--max-time", str(timeout), "-D", hfile, "-o", bfile]
        cmd += list(args) + [url]
        p = subprocess.run(cmd, input=data, capture_output=True, timeout=timeout + 10)
        heads = []
        if os.path.exists(hfile):
            raw = open(hfile, "rb").read()
            for block in raw.split(b"\r\n\r\n"):
                if block.startswith(b"HTTP/"):
                    heads.append(parse_head(block + b"\r\n\r\n"))
        body = open(bfile, "rb").read() if os.path.exists(bfile) else b""
        last = heads[-1] if heads else None
        return CurlResult(p.returncode, last.status if last else None,
                          last.headers if last else [], body,
                          p.stderr.decode(errors="replace"), heads)


WRK_SCRIPT = r"""
local threads = {}
function setup(thread)
  table.insert(threads, thread)
end
function init(args)
  non2xx = 0
  statuses = {}
end
function response(status, headers, body)
  if status < 200 or status > 299 then
    non2xx = non2xx + 1
    statuses[status] = (statuses[status] or 0) + 1
  end
end
function done(summary, latency, requests)
  local bad = 0
  local detail = ""
  for _, t in ipairs(threads) do
    bad = bad + t:get("non2xx")
    for code, n in pairs(t:get("statuses")) do
      detail = detail .. " " .. code .. "=" .. n
    end
  end
  local e = summary.errors
  io.write(string.format("SLUICE_WRK requests=%d non2xx=%d connect=%d read=%d write=%d "
    .. "status=%d timeout=%d duration_us=%d\n", summary.requests, bad, e.connect, e.read,
    e.write, e.status, e.timeout, summary.duration))
  io.write("SLUICE_WRK_STATUSES" .. detail .. "\n")
end
"""


def run_wrk(url, threads=2, conns=16, duration=5, timeout_s=2, extra=()):
    """Runs wrk with a Lua reporter; returns a dict of counters plus the raw output."""
    with tempfile.TemporaryDirectory(prefix="sluice-wrk-") as d:
        script = os.path.join(d, "report.lua")
        with open(script, "w") as f:
            f.write(WRK_SCRIPT)
        cmd = ["wrk", "-t%d" % threads, "-c%d" % conns, "-d%ds" % duration,
               "--timeout", "%ds" % timeout_s, "-s", script] + list(extra) + [url]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=duration + 60)
    out = p.stdout + p.stderr
    m = re.search(r"SLUICE_WRK requests=(\d+) non2xx=(\d+) connect=(\d+) read=(\d+) "
                  r"write=(\d+) status=(\d+) timeout=(\d+) duration_us=(\d+)", out)
    if not m:
        raise AssertionError("could not parse wrk output (rc=%d):\n%s" % (p.returncode, out))
    keys = ["requests", "non2xx", "connect", "read", "write", "status", "timeout", "duration_us"]
    res = dict(zip(keys, map(int, m.groups())))
    res["statuses"] = re.search(r"SLUICE_WRK_STATUSES(.*)", out).group(1).strip()
    res["output"] = out
    res["rc"] = p.returncode
    return res


class WrkRun:
    """A wrk run in the background (start_wrk); stop() ends it early with SIGINT, which makes
    wrk print its summary (and run the reporter) as if the duration had run out."""

    def __init__(self, url, threads=2, conns=16, duration=60, timeout_s=2, extra=()):
        self._dir = tempfile.TemporaryDirectory(prefix="sluice-wrk-")
        script = os.path.join(self._dir.name, "report.lua")
        with open(script, "w") as f:
            f.write(WRK_SCRIPT)
        self.out_path = os.path.join(self._dir.name, "out")
        self._out = open(self.out_path, "w")
        cmd = ["wrk", "-t%d" % threads, "-c%d" % conns, "-d%ds" % duration,
               "--timeout", "%ds" % timeout_s, "-s", script] + list(extra) + [url]
        self.proc = subprocess.Popen(cmd, stdout=self._out, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        self.duration = duration

    def running(self):
        return self.proc.poll() is None

    def stop(self):
        """Stops wrk (SIGINT to its PID) and returns the counters as run_wrk does."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._out.close()
        with open(self.out_path) as f:
            out = f.read()
        self._dir.cleanup()
        return parse_wrk(out, self.proc.returncode)


def start_wrk(url, **kw):
    return WrkRun(url, **kw)


def parse_wrk(out, rc):
    m = re.search(r"SLUICE_WRK requests=(\d+) non2xx=(\d+) connect=(\d+) read=(\d+) "
                  r"write=(\d+) status=(\d+) timeout=(\d+) duration_us=(\d+)", out)
    if not m:
        raise AssertionError("could not parse wrk output (rc=%s):\n%s" % (rc, out))
    keys = ["requests", "non2xx", "connect", "read", "write", "status", "timeout", "duration_us"]
    res = dict(zip(keys, map(int, m.groups())))
    res["statuses"] = re.search(r"SLUICE_WRK_STATUSES(.*)", out).group(1).strip()
    res["output"] = out
    res["rc"] = rc
    return res


# --------------------------------------------------------------------------- streaming helpers


def crc_of_body(reader, resp, method="GET"):
    n = 0
    crc = 0
    for piece in iter_body(reader, resp, method):
        n += len(piece)
        crc = zlib.crc32(piece, crc)
    return n, crc


def vm_hwm_kib(pid):
    return _proc_status_kib(pid, "VmHWM")


def vm_rss_kib(pid):
    return _proc_status_kib(pid, "VmRSS")


def _proc_status_kib(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise KeyError(key)


# --------------------------------------------------------------------------- the gateway


def upstream_nodes(*ups, weights=None):
    """Map-form nodes for FakeUpstream objects or 'host:port' strings."""
    nodes = {}
    for i, u in enumerate(ups):
        addr = u if isinstance(u, str) else u.addr
        nodes[addr] = weights[i] if weights else 1
    return nodes


def route(uri, *ups, rid=None, **extra):
    """A route to the given upstreams (round-robin, weight 1)."""
    r = {"id": rid or re.sub(r"[^a-zA-Z0-9-_.]", "_", uri).strip("_") or "root"}
    if isinstance(uri, list):
        r["uris"] = uri
    else:
        r["uri"] = uri
    if ups:
        r["upstream"] = {"type": "roundrobin", "nodes": upstream_nodes(*ups)}
    r.update(extra)
    return r


class GatewayError(AssertionError):
    pass


class Gateway:
    """One `sluice run` process with its own config directory and ports.

    gw = Gateway(tmpdir, routes=[...]); gw.start(); ...; gw.stop()

    By default the gateway serves a standalone apisix.yaml (deployment.role data_plane,
    config_provider yaml). With admin=True it is a traditional node with the embedded store
    and the Admin API instead:

        gw = Gateway(tmpdir, admin=True); gw.start()
        gw.admin("PUT", "/routes/1", {...})          # -> AdminResult
        gw.restart() / gw.kill9(); gw.start()        # same data_dir, same ports

    admin_keys: None = an admin key and a viewer key made up for this gateway
    (gw.admin_key, gw.viewer_key); OMIT = no deployment.admin.admin_key at all (the built-in
    default, the well-known key); or a list of {name, key, role}. admin_listen: {ip, port}
    (default 127.0.0.1 and a free port; gw.admin_port). allow_admin: default
    ["127.0.0.0/24"]; OMIT leaves the key out. data_dir: default <workdir>/data written as
    sluice.data_dir; OMIT leaves the key out (Sluice's default: `data` beside config.yaml,
    which is the same directory).
    """

    PROBE_ID = "__sluice_probe"

    def __init__(self, workdir, routes=(), services=(), upstreams=(), workers=1,
                 listen=None, graceful_shutdown_timeout=5, log_level="info",
                 config=None, env=None, probe=True, binary=None, admin=False,
                 admin_keys=None, admin_listen=None, allow_admin=None, data_dir=None):
        self.dir = str(workdir)
        os.makedirs(self.dir, exist_ok=True)
        self.binary = binary or SLUICE_BIN
        self.workers = workers
        if listen is None:
            listen = [free_port()]
        self.listen = listen
        self.ports = [e["port"] if isinstance(e, dict) else e for e in listen]
        self.port = self.ports[0]
        self.graceful_shutdown_timeout = graceful_shutdown_timeout
        self.log_level = log_level
        self.extra_config = config or {}
        self.env = dict(os.environ)
        self.env.update(env or {})
        self.probe = probe
        self.https_port = free_port()
        self.dead_port = free_port()  # the probe route's upstream: nothing listens there
        # The prometheus export server's port: a free one, so gateways run side by side.
        self.prometheus_port = free_port()
        self.generation = 0
        self.routes, self.services, self.upstreams = list(routes), list(services), list(upstreams)
        self.config_path = os.path.join(self.dir, "config.yaml")
        self.apisix_path = os.path.join(self.dir, "apisix.yaml")
        self.log_path = os.path.join(self.dir, "sluice.log")
        self.proc = None
        self.exit_code = None
        self._log = None
        self.admin_enabled = admin
        self.admin_key = self.viewer_key = None
        self.admin_port = None
        if admin:
            self.probe = False  # nothing reads apisix.yaml in embedded mode
            if admin_keys is None:
                self.admin_key = "adm-" + secrets.token_hex(14)
                self.viewer_key = "vwr-" + secrets.token_hex(14)
                admin_keys = [{"name": "admin", "key": self.admin_key, "role": "admin"},
                              {"name": "viewer", "key": self.viewer_key, "role": "viewer"}]
            elif admin_keys is OMIT:
                self.admin_key = WELL_KNOWN_ADMIN_KEY
            else:
                for k in admin_keys:
                    if k.get("role") == "admin" and self.admin_key is None:
                        self.admin_key = k["key"]
                    if k.get("role") == "viewer" and self.viewer_key is None:
                        self.viewer_key = k["key"]
            self.admin_keys = admin_keys
            if admin_listen is None:
                admin_listen = {"ip": "127.0.0.1", "port": free_port()}
            self.admin_listen = admin_listen
            self.admin_port = admin_listen["port"]
            self.allow_admin = ["127.0.0.0/24"] if allow_admin is None else allow_admin
            self.data_dir_setting = os.path.join(self.dir, "data") if data_dir is None \
                else data_dir
            self.data_dir = os.path.join(self.dir, "data") if data_dir in (None, OMIT) \
                else str(data_dir)

    # ---- files

    def config_dict(self):
        cfg = {
            "apisix": {
                "node_listen": self.listen,
                "graceful_shutdown_timeout": self.graceful_shutdown_timeout,
                # The HTTPS listener is on by default (APISIX's 9443): a free port instead.
                "ssl": {"listen": [{"ip": "127.0.0.1", "port": self.https_port}]},
            },
            "nginx_config": {
                "worker_processes": self.workers,
                "error_log_level": self.log_level,
            },
            "deployment": {
                "role": "data_plane",
                "role_data_plane": {"config_provider": "yaml"},
            },
            "plugin_attr": {
                "prometheus": {"export_addr": {"ip": "127.0.0.1", "port": self.prometheus_port}},
            },
        }
        if self.admin_enabled:
            admin = {"admin_listen": self.admin_listen}
            if self.admin_keys is not OMIT:
                admin["admin_key"] = self.admin_keys
            if self.allow_admin is not OMIT:
                admin["allow_admin"] = self.allow_admin
            cfg["deployment"] = {
                "role": "traditional",
                "role_traditional": {"config_provider": "embedded"},
                "admin": admin,
            }
            if self.data_dir_setting is not OMIT:
                cfg["sluice"] = {"data_dir": str(self.data_dir_setting)}
        _deep_merge(cfg, self.extra_config)
        # SLUICE_TEST_IO_URING=off runs the whole suite on the plain system-call path (a test
        # that sets sluice.io_uring itself keeps its own).
        mode = os.environ.get("SLUICE_TEST_IO_URING")
        if mode and "io_uring" not in cfg.get("sluice", {}):
            cfg.setdefault("sluice", {})["io_uring"] = mode
        return cfg

    def write_config(self, cfg=None):
        _atomic_write(self.config_path, yaml.safe_dump(cfg or self.config_dict(),
                                                       sort_keys=False))

    def probe_path(self, generation=None):
        return "/__sluice_probe/%d" % (self.generation if generation is None else generation)

    def probe_route(self, generation=None):
        """A route only this generation of the file has; it answers 502 (nothing listens)."""
        return {
            "id": self.PROBE_ID,
            "uri": self.probe_path(generation),
            "upstream": {"type": "roundrobin",
                         "nodes": {"127.0.0.1:%d" % self.dead_port: 1},
                         "timeout": {"connect": 1, "send": 1, "read": 1}},
        }

    def probe_items_yaml(self, generation=None):
        """The probe route as a zero-indented YAML sequence item, to append under `routes:`."""
        return yaml.safe_dump([self.probe_route(generation)], sort_keys=False)

    def apisix_text(self, routes=None, services=None, upstreams=None):
        routes = list(self.routes if routes is None else routes)
        if self.probe:
            routes.append(self.probe_route())
        doc = {"routes": routes}
        services = self.services if services is None else services
        upstreams = self.upstreams if upstreams is None else upstreams
        if services:
            doc["services"] = list(services)
        if upstreams:
            doc["upstreams"] = list(upstreams)
        return yaml.safe_dump(doc, sort_keys=False, default_flow_style=False) + "#END\n"

    def write_apisix_text(self, text, atomic=True):
        if atomic:
            _atomic_write(self.apisix_path, text)
        else:
            with open(self.apisix_path, "w") as f:
                f.write(text)

    # ---- process

    def start(self, wait=True, write=True):
        if not os.path.exists(self.binary):
            raise GatewayError("gateway binary %s does not exist (build it: make build, or set "
                               "SLUICE_BIN)" % self.binary)
        if write:
            self.write_config()
            if not self.admin_enabled:
                self.generation += 1
                self.write_apisix_text(self.apisix_text())
        self._log = open(self.log_path, "ab")
        # The working directory is not the config's: apisix.yaml must be found next to
        # config.yaml, not in the cwd.
        cwd = os.path.join(self.dir, "cwd")
        os.makedirs(cwd, exist_ok=True)
        self.proc = subprocess.Popen([self.binary, "run", "-c", self.config_path],
                                     cwd=cwd, env=self.env, stdin=subprocess.DEVNULL,
                                     stdout=self._log, stderr=self._log,
                                     start_new_session=True)
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self, timeout=READY_TIMEOUT):
        deadline = time.monotonic() + timeout
        for port in self.ports:
            if not wait_port(port, timeout=max(0.1, deadline - time.monotonic()),
                             proc=self.proc):
                self._fail_start("port %d not accepting" % port)
        if self.admin_enabled:
            if not wait_port(self.admin_port, timeout=max(0.1, deadline - time.monotonic()),
                             proc=self.proc):
                self._fail_start("admin port %d not accepting" % self.admin_port)
            while True:  # the Admin API answers (any status: the key may be refused)
                try:
                    http(self.admin_port, "GET", "/apisix/admin/routes", timeout=3)
                    break
                except (OSError, EOFError, ValueError):
                    if time.monotonic() > deadline or not self.alive():
                        self._fail_start("admin API on port %d does not answer"
                                         % self.admin_port)
                    time.sleep(0.05)
        if self.probe and not self.wait_probe(self.generation,
                                              deadline - time.monotonic()):
            self._fail_start("probe route %s never matched" % self.probe_path())

    def _fail_start(self, why):
        rc = self.proc.poll()
        state = "exited with %s" % rc if rc is not None else "still running"
        raise GatewayError("gateway not ready within %.0fs: %s; process %s\n--- stderr ---\n%s"
                           % (READY_TIMEOUT, why, state, self.log_tail()))

    @property
    def pid(self):
        return self.proc.pid

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig):
        if self.alive():
            os.kill(self.proc.pid, sig)

    def wait_exit(self, timeout):
        try:
            self.exit_code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        return self.exit_code

    def stop(self, sig=None, timeout=15):
        """Signals the gateway (SIGTERM by default) and waits; SIGKILLs it after timeout.

        Returns the exit code.
        """
        sig = signal.SIGTERM if sig is None else sig
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            os.kill(self.proc.pid, sig)
            try:
                self.exit_code = self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                self.exit_code = "killed after %ss" % timeout
        else:
            self.exit_code = self.proc.returncode
        if self._log:
            self._log.close()
            self._log = None
        return self.exit_code

    def kill9(self):
        """SIGKILL by PID (no cleanup runs in the gateway), then reaps it."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.exit_code = self.proc.wait()
        if self._log:
            self._log.close()
            self._log = None
        return self.exit_code

    def restart(self, sig=None):
        """Stops (SIGTERM) and starts again with the same config, ports and data_dir."""
        rc = self.stop(sig=sig)
        self.start()
        return rc

    # ---- Admin API (admin=True)

    def admin(self, method, path, body=None, key=DEFAULT, headers=(), raw_body=None,
              port=None, timeout=15):
        """One Admin API request on a fresh connection; returns an AdminResult.

        path: "/routes/1" (prefixed with /apisix/admin) or a full "/apisix/..." target, query
        string included. body: any JSON value (serialised); raw_body: bytes sent as they are.
        key: DEFAULT = gw.admin_key in X-API-KEY; None = no key header.
        port: default the admin port (pass gw.port for the proxy port)."""
        return admin_request(port or self.admin_port, method, path, body=body,
                             key=self.admin_key if key is DEFAULT else key,
                             headers=headers, raw_body=raw_body, timeout=timeout)

    def admin_client(self, key=DEFAULT, port=None):
        """A keep-alive AdminClient (for loops of many requests)."""
        return AdminClient(port or self.admin_port,
                           key=self.admin_key if key is DEFAULT else key)

    def log_text(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode(errors="replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, lines=80):
        return "\n".join(self.log_text().splitlines()[-lines:])

    def wait_for_log(self, pattern, timeout=5.0, start=0):
        """Waits until the log (from byte offset `start`) matches the regex; returns the match."""
        rx = re.compile(pattern, re.I)
        deadline = time.monotonic() + timeout
        while True:
            m = rx.search(self.log_text()[start:])
            if m or time.monotonic() > deadline:
                return m
            time.sleep(0.05)

    def log_size(self):
        return len(self.log_text())

    # ---- config changes

    def wait_probe(self, generation, timeout=5.0):
        path = self.probe_path(generation)
        deadline = time.monotonic() + max(timeout, 0.1)
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                return False
            try:
                r = get(self.port, path, timeout=3)
                if r.status != 404:
                    return True
            except (OSError, EOFError, ValueError):
                pass
            time.sleep(0.05)
        return False

    def update_routes(self, routes=None, services=None, upstreams=None, timeout=5.0,
                      atomic=True):
        """Rewrites apisix.yaml (temp file + rename) and waits until it serves.

        Returns the seconds from the write to the moment the new probe route answered.
        """
        if routes is not None:
            self.routes = list(routes)
        if services is not None:
            self.services = list(services)
        if upstreams is not None:
            self.upstreams = list(upstreams)
        self.generation += 1
        text = self.apisix_text()
        t0 = time.monotonic()
        self.write_apisix_text(text, atomic=atomic)
        if not self.probe:
            return None
        if not self.wait_probe(self.generation, timeout):
            raise GatewayError("config generation %d not live within %.1fs\n--- stderr ---\n%s"
                               % (self.generation, timeout, self.log_tail()))
        return time.monotonic() - t0

    # ---- /proc

    def task_count(self):
        return len(os.listdir("/proc/%d/task" % self.pid))

    def vm_hwm_kib(self):
        return vm_hwm_kib(self.pid)

    def url(self, path="/", port=None):
        return "http://127.0.0.1:%d%s" % (port or self.port, path)


# --------------------------------------------------------------------------- Admin API



class AdminResult:
    """An Admin API answer. Unpacks as (status, headers, data): data is the parsed JSON body,
    or the raw bytes when the body is not JSON."""

    def __init__(self, resp):
        self.resp = resp
        self.status = resp.status
        self.headers = resp.headers
        self.body = resp.body
        try:
            self.json = json.loads(resp.body) if resp.body else None
            self.is_json = bool(resp.body)
        except ValueError:
            self.json = None
            self.is_json = False

    @property
    def data(self):
        return self.json if self.is_json else self.body

    def header(self, name):
        return self.resp.header(name)

    @property
    def error_msg(self):
        return self.json.get("error_msg") if isinstance(self.json, dict) else None

    @property
    def value(self):
        return self.json.get("value") if isinstance(self.json, dict) else None

    def __iter__(self):
        return iter((self.status, self.headers, self.data))

    def __repr__(self):
        return "<AdminResult %d %r>" % (self.status, self.body[:600])


def admin_target(path):
    return path if path.startswith("/apisix/") else ADMIN_PREFIX + path


def _admin_request_bytes(method, path, body, key, headers, raw_body, keep_alive):
    hdrs = list(headers.items()) if isinstance(headers, dict) else list(headers)
    if key is not None:
        hdrs.append(("X-API-KEY", key))
    data = raw_body
    if data is None and body is not None:
        data = json.dumps(body).encode()
    if data is not None and not any(k.lower() == "content-type" for k, _ in hdrs):
        hdrs.append(("Content-Type", "application/json"))
    if not keep_alive:
        hdrs.append(("Connection", "close"))
    if data is None and method in ("PUT", "POST", "PATCH"):
        data = b""
    return build_request(method, admin_target(path), hdrs, data)


def admin_request(port, method, path, body=None, key=None, headers=(), raw_body=None,
                  timeout=15):
    with Client(port, timeout=timeout) as c:
        c.send(_admin_request_bytes(method, path, body, key, headers, raw_body, False))
        return AdminResult(c.read_response(method))


class AdminClient:
    """Admin API requests over one keep-alive connection (reopened when the server closes
    it). A request that fails on the wire raises; it is never retried."""

    def __init__(self, port, key=None, timeout=15):
        self.port = port
        self.key = key
        self.timeout = timeout
        self.conn = None

    def request(self, method, path, body=None, key=DEFAULT, headers=(), raw_body=None):
        if self.conn is None:
            self.conn = Client(self.port, timeout=self.timeout)
        try:
            self.conn.send(_admin_request_bytes(method, path, body,
                                                self.key if key is DEFAULT else key,
                                                headers, raw_body, True))
            resp = self.conn.read_response(method)
        except Exception:
            self.close()
            raise
        if (resp.header("connection") or "").lower() == "close":
            self.close()
        return AdminResult(resp)

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def admin_upstream(*ups, **extra):
    """An upstream object (round-robin, weight 1) for FakeUpstreams or 'host:port' strings."""
    u = {"type": "roundrobin", "nodes": upstream_nodes(*ups)}
    u.update(extra)
    return u


def admin_route(uri, *ups, **extra):
    """A route body for the Admin API (no id: the URL carries it)."""
    r = {"uris" if isinstance(uri, list) else "uri": uri}
    if ups:
        r["upstream"] = admin_upstream(*ups)
    r.update(extra)
    return r


def expect_error(res, status, prefix=None, contains=()):
    """Asserts an APISIX-style error answer: the status, a JSON body whose error_msg starts
    with prefix, and a body ending with a newline."""
    assert res.status == status, "expected %d, got %r" % (status, res)
    assert isinstance(res.json, dict) and isinstance(res.error_msg, str), \
        "expected a JSON body with error_msg, got %r" % (res,)
    if prefix is not None:
        assert res.error_msg.startswith(prefix), \
            "error_msg %r does not start with %r" % (res.error_msg, prefix)
    for word in ([contains] if isinstance(contains, str) else contains):
        assert word in res.error_msg, "error_msg %r does not name %r" % (res.error_msg, word)
    assert res.body.endswith(b"\n"), "error body does not end with a newline: %r" % res.body
    return res


def sorted_list(res_json):
    """A v3 list answer with its items in key order (the API does not promise an order)."""
    out = dict(res_json)
    out["list"] = sorted(out.get("list") or [], key=lambda item: item.get("key", ""))
    return out


def wait_until(predicate, timeout=5.0, interval=0.05):
    """Polls predicate() until it returns something true; returns its last value."""
    deadline = time.monotonic() + timeout
    while True:
        v = predicate()
        if v or time.monotonic() > deadline:
            return v
        time.sleep(interval)


def _deep_merge(dst, src):
    for k, v in src.items():
        if isinstance(v, dict) and isinstance(dst.get(k), dict):
            _deep_merge(dst[k], v)
        else:
            dst[k] = v


def _atomic_write(path, text):
    d = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-", suffix=".yaml")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


# --------------------------------------------------------------------------- plugins


PROMETHEUS_PATH = "/apisix/prometheus/metrics"
_SAMPLE_RX = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+-?\d+)?$")
_LABEL_RX = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?')


def scrape(gw, timeout=10.0):
    """One GET of the gateway's Prometheus export server (gw.prometheus_port)."""
    return get(gw.prometheus_port, PROMETHEUS_PATH, timeout=timeout)


def parse_samples(text):
    """Every sample line of an exposition as (name, [(label, value), ...], float value),
    labels in the order they were rendered. Comment and blank lines are skipped."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE_RX.match(line)
        if not m:
            raise AssertionError("unparsable exposition line: %r" % line)
        labels = _LABEL_RX.findall(m.group(2) or "")
        out.append((m.group(1), labels, float(m.group(3))))
    return out


def sample_value(text, line_prefix):
    """The value of the one sample line that starts with line_prefix followed by a space
    (e.g. 'apisix_http_status{code="200",...}'); None when there is none."""
    found = [line for line in text.splitlines() if line.startswith(line_prefix + " ")]
    if not found:
        return None
    assert len(found) == 1, "several lines start with %r: %r" % (line_prefix, found)
    return float(found[0][len(line_prefix) + 1:].split()[0])


def get_from(source_ip, port, path, headers=(), timeout=10.0):
    """One GET on a fresh connection whose source address is source_ip (any 127.x address
    works on loopback), so that the gateway sees a different remote_addr."""
    headers = list(headers.items()) if isinstance(headers, dict) else list(headers)
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout,
                                    source_address=(source_ip, 0))
    try:
        sock.sendall(build_request("GET", path, headers + [("Connection", "close")]))
        return read_response(Reader(sock), "GET")
    finally:
        sock.close()
