"""What the kit measures: the upstream, Sluice, nginx, HAProxy and gateways at a URL.

Every target proxies `GET /hello` to the same upstream with one worker. Scenario 1 is the
articles' route without plugins; scenario 2 adds limit-count and prometheus on
APISIX-compatible gateways (Sluice, and a URL peer whose Admin API the kit may use), and
their nearest equivalents on nginx and HAProxy (`SCENARIO2_NGINX`, `SCENARIO2_HAPROXY`):
a per-client request-rate limit no test reaches and the server's own metrics endpoint.
Each target tells which scenarios it runs, where each is served (`url_for`), and what its
scenario 2 is (`scenario2`, for the report).
"""

import json
import os
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.request

from .procs import Process, free_port, pid_alive

ADMIN_KEY = "edd1c9f034335f136f87ad84b625c8f1"

# The articles' scenario 2 plugins (APISIX benchmark/run.sh).
SCENARIO2_PLUGINS = {
    "limit-count": {"count": 2000000000000, "time_window": 60, "rejected_code": 503,
                    "key": "remote_addr"},
    "prometheus": {},
}


def route_body(up_host, up_port, scenario):
    return {
        "uri": "/hello",
        "plugins": SCENARIO2_PLUGINS if scenario == 2 else {},
        "upstream": {"type": "roundrobin", "nodes": {"%s:%d" % (up_host, up_port): 1}},
    }


def _tool_version(cmd, pattern):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
    except OSError:
        return None
    m = re.search(pattern, p.stdout + p.stderr)
    return m.group(1) if m else None


def http_get(url, timeout=2.0):
    """(status, headers, body) of one GET, or (None, {}, error text)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()
    except (OSError, urllib.error.URLError) as e:
        return None, {}, str(e)


def admin_put(admin_url, key, path, body, timeout=5.0):
    req = urllib.request.Request(admin_url.rstrip("/") + path, data=json.dumps(body).encode(),
                                 method="PUT", headers={"Content-Type": "application/json"})
    if key:
        req.add_header("X-API-KEY", key)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def wait_serving(url, scenario, timeout=10.0, header="x-ratelimit-limit"):
    """Wait until url answers 200, and for scenario 2 carries `header`: the one its rate
    limit adds to every answer (limit-count's quota header on APISIX and Sluice), the proof
    that the limit runs on the measured requests."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        status, headers, body = http_get(url)
        lower = {k.lower(): v for k, v in headers.items()}
        if status == 200 and (scenario != 2 or header in lower):
            return
        last = (status, body[:200] if isinstance(body, bytes) else body)
        time.sleep(0.05)
    raise RuntimeError("%s did not serve scenario %d within %.0f s (last answer %r)" % (
        url, scenario, timeout, last))


class Target:
    kind = "?"
    scenario2 = None  # what scenario 2 runs on this target, in words (None: no scenario 2)

    def __init__(self, name):
        self.name = name
        self.version = None
        self.url = None
        self.pids = []  # processes whose CPU and RSS are this target's (empty: not ours)
        self.processes = []

    def scenarios(self):
        return [1]

    def url_for(self, scenario):
        """Where the load for `scenario` goes."""
        return self.url

    def setup(self, scenario):
        pass

    def stop(self):
        for p in reversed(self.processes):
            p.stop()


# --- the upstream -------------------------------------------------------------------------

NGINX_UPSTREAM = """\
worker_processes 1;
pid {dir}/upstream.pid;
error_log {dir}/upstream-error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    keepalive_requests 100000000;
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        location /hello {{ return 200 "hello world\\n"; }}
    }}
}}
"""


class Upstream(Target):
    """The upstream all gateways proxy to, measured directly as the ceiling."""
    kind = "direct"

    def __init__(self, kind, workdir, sluice_bin, cpus):
        super().__init__("direct (upstream)")
        self.port = free_port()
        self.impl = kind
        if kind == "nginx":
            conf = os.path.join(workdir, "upstream.conf")
            with open(conf, "w") as f:
                f.write(NGINX_UPSTREAM.format(dir=workdir, port=self.port))
            cmd = [nginx_binary(), "-p", workdir, "-e", os.path.join(workdir, "upstream-start.log"),
                   "-c", conf, "-g", "daemon off;"]
            self.version = "nginx " + (_tool_version([nginx_binary(), "-v"], r"nginx/(\S+)") or "?")
        else:
            cmd = [sluice_bin, "bench", "upstream", "--listen", "127.0.0.1:%d" % self.port]
            self.version = "sluice bench upstream"
        self.processes.append(Process("upstream", cmd, self.port,
                                      os.path.join(workdir, "upstream.log"), cpus=cpus))
        self.pids = [self.processes[0].pid]
        self.url = "http://127.0.0.1:%d/hello" % self.port


def nginx_binary():
    return shutil.which("nginx") or "/usr/sbin/nginx"


def have_nginx():
    return os.access(nginx_binary(), os.X_OK)


def have_haproxy():
    return shutil.which("haproxy") is not None


# --- Sluice ---------------------------------------------------------------------------------

SLUICE_CONFIG = """\
apisix:
  node_listen:
    - {port}
  ssl:
{ssl}
nginx_config:
  worker_processes: {workers}
  error_log_level: warn
  http:
{http}
deployment:
  role: traditional
  role_traditional:
    config_provider: embedded
  admin:
    admin_listen:
      ip: 127.0.0.1
      port: {admin_port}
    admin_key:
      - name: admin
        key: {key}
        role: admin
    allow_admin:
      - 127.0.0.0/24
sluice:
  data_dir: {data_dir}
  admin_audit_log: "off"  # one Admin API write per run; APISIX and nginx keep no audit log
plugin_attr:
  prometheus:
    export_addr:
      ip: 127.0.0.1
      port: {metrics_port}
"""


def access_log_yaml(path):
    """The lines under nginx_config.http (indented 4) for the access log at `path`, or off."""
    if path is None:
        return "    enable_access_log: false"
    return "    enable_access_log: true\n    access_log: %s" % path


ARTICLES_SCENARIO2 = ("limit-count (count 2000000000000 per 60 s, key remote_addr) + "
                      "prometheus, the articles' route")


class Sluice(Target):
    """Sluice on its embedded store; the route is created through the Admin API, as the
    articles create it on APISIX."""
    kind = "sluice"
    scenario2 = ARTICLES_SCENARIO2

    def __init__(self, binary, upstream, workdir, workers, cpus, name="Sluice",
                 ssl_yaml="    enable: false", access_log=None, subdir="sluice"):
        """`ssl_yaml`: the lines under apisix.ssl (indented 4); the HTTPS listener is off
        unless a caller (`sluice bench tls`) gives it a port. `access_log`: the access log's
        file; None turns it off, as the nginx targets' `access_log off` (`sluice bench
        accesslog` measures it on). `subdir`: the directory in workdir for its config and
        data."""
        super().__init__(name)
        d = os.path.join(workdir, subdir)
        os.makedirs(d, exist_ok=True)
        self.port, self.admin_port = free_port(), free_port()
        conf = os.path.join(d, "config.yaml")
        with open(conf, "w") as f:
            f.write(SLUICE_CONFIG.format(port=self.port, workers=workers,
                                         admin_port=self.admin_port, key=ADMIN_KEY,
                                         ssl=ssl_yaml, http=access_log_yaml(access_log),
                                         data_dir=os.path.join(d, "data"),
                                         metrics_port=free_port()))
        self.version = "sluice " + (_tool_version([binary, "version"], r"sluice (\S+)") or "?")
        p = Process("sluice", [binary, "run", "-c", conf], self.port,
                    os.path.join(workdir, "sluice.log"), cwd=d, cpus=cpus)
        self.processes.append(p)
        self.pids = [p.pid]
        self.upstream = upstream
        self.url = "http://127.0.0.1:%d/hello" % self.port
        self.admin_url = "http://127.0.0.1:%d" % self.admin_port

    def scenarios(self):
        return [1, 2]

    def setup(self, scenario):
        status, body = admin_put(self.admin_url, ADMIN_KEY, "/apisix/admin/routes/1",
                                 route_body("127.0.0.1", self.upstream.port, scenario))
        if status not in (200, 201):
            raise RuntimeError("%s: PUT /apisix/admin/routes/1 answered %s: %s" % (
                self.name, status, body[:300]))
        wait_serving(self.url, scenario)


# --- nginx ----------------------------------------------------------------------------------

# Scenario 2 on nginx, the nearest equivalent of limit-count + prometheus that Debian's nginx
# has: limit_req in a zone keyed by the client address (limit-count's key remote_addr) at a
# rate no test reaches (as the articles' count is), and stub_status, on a port of its own
# like APISIX's export server, as the metrics endpoint. limit_req's bucket is checked at
# millisecond resolution, so the burst lets a millisecond's requests through without delay.
# The header shows that limit_req ran for the answer ($limit_req_status: PASSED), as
# limit-count's X-RateLimit-* headers do (one header here, three there).
SCENARIO2_NGINX = ("limit_req (zone per $binary_remote_addr, rate 100000000r/s, burst "
                   "1000000 nodelay, X-Limit-Req-Status header) + stub_status on its own port")

NGINX_PROXY = """\
worker_processes {workers};
pid {dir}/proxy.pid;
error_log {dir}/proxy-error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    keepalive_requests 100000000;
    upstream up {{
        server 127.0.0.1:{up_port};
        keepalive 32;
    }}
    limit_req_zone $binary_remote_addr zone=per_client:10m rate=100000000r/s;
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        location /hello {{
            proxy_pass http://up;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }}
    }}
    server {{
        listen 127.0.0.1:{port2} backlog=4096;
        location /hello {{
            limit_req zone=per_client burst=1000000 nodelay;
            limit_req_status 503;
            add_header X-Limit-Req-Status $limit_req_status always;
            proxy_pass http://up;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }}
    }}
    server {{
        listen 127.0.0.1:{metrics_port};
        location = /nginx_status {{ stub_status; }}
    }}
}}
"""


class NginxTarget(Target):
    """nginx run from a configuration of the caller's, in workdir/nginx."""
    kind = "nginx"

    def __init__(self, workdir):
        super().__init__("nginx")
        self.workdir = workdir
        self.dir = os.path.join(workdir, "nginx")
        os.makedirs(self.dir, exist_ok=True)

    def start(self, conf_text, port, cpus):
        """Writes nginx.conf (conf_text, already formatted) and starts nginx; `port` is the
        one it is ready when listening on."""
        d = self.dir
        conf = os.path.join(d, "nginx.conf")
        with open(conf, "w") as f:
            f.write(conf_text)
        binary = nginx_binary()
        self.version = "nginx " + (_tool_version([binary, "-v"], r"nginx/(\S+)") or "?")
        self.process = Process("nginx", [binary, "-p", d, "-e", os.path.join(d, "start.log"),
                                         "-c", conf, "-g", "daemon off;"], port,
                               os.path.join(self.workdir, "nginx.log"), cpus=cpus)
        self.processes.append(self.process)
        self.pids = [self.process.pid]


class Nginx(NginxTarget):
    """nginx as a reverse proxy with upstream keep-alive; scenario 1 and scenario 2
    (SCENARIO2_NGINX) are two servers of the same process, so switching costs nothing."""
    scenario2 = SCENARIO2_NGINX

    def __init__(self, upstream, workdir, workers, cpus):
        super().__init__(workdir)
        self.port, self.port2, metrics_port = free_port(), free_port(), free_port()
        self.start(NGINX_PROXY.format(dir=self.dir, port=self.port, port2=self.port2,
                                      metrics_port=metrics_port, up_port=upstream.port,
                                      workers=workers), self.port, cpus)
        self.url = "http://127.0.0.1:%d/hello" % self.port
        self.metrics_url = "http://127.0.0.1:%d/nginx_status" % metrics_port

    def scenarios(self):
        return [1, 2]

    def url_for(self, scenario):
        return "http://127.0.0.1:%d/hello" % self.port2 if scenario == 2 else self.url

    def setup(self, scenario):
        wait_serving(self.url_for(scenario), scenario, header="x-limit-req-status")
        if scenario == 2:
            metrics_answer(self, b"Active connections")


def metrics_answer(target, expect):
    """Checks once that a target's metrics endpoint answers with what it should."""
    if getattr(target, "metrics_checked", False):
        return
    status, _, body = http_get(target.metrics_url)
    if status != 200 or expect not in (body if isinstance(body, bytes) else b""):
        raise RuntimeError("%s: the metrics endpoint %s answered %s: %r" % (
            target.name, target.metrics_url, status, body[:200]))
    target.metrics_checked = True


# --- HAProxy --------------------------------------------------------------------------------

HAPROXY_CONFIG = """\
global
    nbthread {workers}
    maxconn 4096
    log stderr format raw local0 err

defaults
    mode http
    timeout connect 5s
    timeout client 60s
    timeout server 60s
    timeout http-keep-alive 60s
    option http-keep-alive

frontend bench
    bind 127.0.0.1:{port}
    default_backend up

frontend bench2
    bind 127.0.0.1:{port2}
    stick-table type ip size 100k expire 60s store http_req_rate(60s)
    http-request track-sc0 src
    http-request deny deny_status 503 if {{ sc_http_req_rate(0) gt 2000000000000 }}
    http-response set-header X-Req-Rate %[sc_http_req_rate(0)]
    default_backend up

frontend metrics
    bind 127.0.0.1:{metrics_port}
    http-request use-service prometheus-exporter if {{ path /metrics }}

backend up
    http-reuse always
    server up1 127.0.0.1:{up_port} maxconn 1000
"""


# Scenario 2 on HAProxy, the nearest equivalent of limit-count + prometheus: a stick table
# counting each source address's requests over 60 s (limit-count's window and key), a deny
# at a rate no test reaches, a header carrying the counter (the proof it runs, as
# limit-count's X-RateLimit-* headers are), and the built-in Prometheus exporter on a port
# of its own.
SCENARIO2_HAPROXY = ("stick-table http_req_rate(60s) tracked per source, deny above "
                     "2000000000000, X-Req-Rate header + prometheus-exporter on its own port")


class HAProxy(Target):
    """HAProxy in HTTP mode, one thread, with server-side connection reuse; scenario 1 and
    scenario 2 (SCENARIO2_HAPROXY) are two frontends of the same process."""
    kind = "haproxy"
    scenario2 = SCENARIO2_HAPROXY

    def __init__(self, upstream, workdir, workers, cpus):
        super().__init__("HAProxy")
        self.port, self.port2, metrics_port = free_port(), free_port(), free_port()
        self.metrics_url = "http://127.0.0.1:%d/metrics" % metrics_port
        conf = os.path.join(workdir, "haproxy.cfg")
        with open(conf, "w") as f:
            f.write(HAPROXY_CONFIG.format(port=self.port, port2=self.port2,
                                          metrics_port=metrics_port, up_port=upstream.port,
                                          workers=workers))
        binary = shutil.which("haproxy")
        self.version = "HAProxy " + (_tool_version([binary, "-v"], r"version (\S+)") or "?")
        p = Process("haproxy", [binary, "-db", "-f", conf], self.port,
                    os.path.join(workdir, "haproxy.log"), cpus=cpus)
        self.processes.append(p)
        self.pids = [p.pid]
        self.url = "http://127.0.0.1:%d/hello" % self.port

    def scenarios(self):
        return [1, 2]

    def url_for(self, scenario):
        return "http://127.0.0.1:%d/hello" % self.port2 if scenario == 2 else self.url

    def setup(self, scenario):
        wait_serving(self.url_for(scenario), scenario, header="x-req-rate")
        if scenario == 2:
            metrics_answer(self, b"haproxy_process_")


# --- a gateway at a URL ---------------------------------------------------------------------

class UrlPeer(Target):
    """A gateway the user runs (a real APISIX, say). With its Admin API the kit creates the
    articles' route for both scenarios, pointing at the kit's upstream; without it the URL is
    measured as it stands, scenario 1 only. With a PID its CPU and RSS are accounted too."""
    kind = "url"
    scenario2 = ARTICLES_SCENARIO2

    def __init__(self, name, url, upstream, admin=None, key=None, pid=None):
        super().__init__(name)
        if not url.startswith("http://"):
            raise ValueError("--peer %s: only http:// URLs are supported, got %s" % (name, url))
        base = url.rstrip("/")
        self.url = base if base.count("/") > 2 else base + "/hello"
        self.admin = admin
        self.key = key
        self.upstream = upstream
        if pid is not None:
            if not pid_alive(pid):
                raise ValueError("--peer-pid %s=%d: no such process" % (name, pid))
            self.pids = [pid]
        status, headers, _ = http_get(self.url)
        server = {k.lower(): v for k, v in headers.items()}.get("server")
        self.version = server or "unknown"

    def scenarios(self):
        return [1, 2] if self.admin else [1]

    def setup(self, scenario):
        if not self.admin:
            wait_serving(self.url, 1)
            return
        status, body = admin_put(self.admin, self.key, "/apisix/admin/routes/1",
                                 route_body("127.0.0.1", self.upstream.port, scenario))
        if status not in (200, 201):
            raise RuntimeError("%s: PUT %s/apisix/admin/routes/1 answered %s: %s" % (
                self.name, self.admin, status, body[:300]))
        wait_serving(self.url, scenario)
