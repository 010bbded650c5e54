"""What `sluice bench traffic` runs: Sluice with one route whose plugins change between
measurements, and nginx with one port per equivalent configuration.

Sluice (one worker): route 1 (`/hello`, the kit's upstream, as in scenario 1) is PUT again
with the variant's plugins before each measurement, and the kit waits until the gateway
answers as that variant should (a cache variant: until a request is a HIT).

nginx (one worker) serves three ports proxying to the same upstream: scenario 1's plain
proxy; the same with what the traffic variant does written in nginx's own directives (the CORS
headers APISIX's cors sends by default, `$request_id` to the upstream and the client, and a
`limit_req` zone as generous as the Sluice variant's); and a `proxy_cache` whose hits the
cache variant is compared with.
"""

import os
import time
import urllib.error
import urllib.request

from . import targets
from .procs import Process, free_port

ORIGIN = "http://bench.example"

# limit-req that never refuses nor delays the kit's load (a few 10,000 requests/s on one
# connection pool), so that the figure is the plugin's bookkeeping, not rejections.
LIMIT_REQ = {"rate": 1000000, "burst": 100000, "key": "remote_addr", "nodelay": True}

# variant: the route's plugins on Sluice
VARIANT_PLUGINS = {
    "plain": {},
    "traffic": {"cors": {}, "request-id": {}, "limit-req": LIMIT_REQ},
    "cache-hit": {"proxy-cache": {"cache_strategy": "memory", "cache_zone": "memory_cache",
                                  "cache_ttl": 3600}},
}

# variant: the headers every request of it carries
VARIANT_HEADERS = {
    "plain": {},
    "traffic": {"Origin": ORIGIN},
    "cache-hit": {},
}

CACHE_HEADER = {"Sluice": "Apisix-Cache-Status", "nginx": "X-Cache-Status"}


def head_of(url, headers=None, timeout=2.0):
    """(status, {lower-case name: value}) of a GET, or (None, {}) when it failed."""
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            r.read()
            return r.status, {k.lower(): v for k, v in r.headers.items()}
    except urllib.error.HTTPError as e:
        e.read()
        return e.code, {k.lower(): v for k, v in e.headers.items()}
    except (OSError, urllib.error.URLError):
        return None, {}


def serves(gw_name, variant, url):
    """Whether `url` answers as `variant` does on gateway `gw_name`."""
    status, h = head_of(url, VARIANT_HEADERS[variant])
    if status != 200:
        return False
    if variant == "traffic":
        return h.get("access-control-allow-origin") == "*" and bool(h.get("x-request-id"))
    if variant == "cache-hit":
        return h.get(CACHE_HEADER[gw_name].lower()) == "HIT"
    return True


def wait_variant(gw_name, variant, url, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if serves(gw_name, variant, url):
            return
        time.sleep(0.05)
    raise RuntimeError("%s did not serve the %s variant within %.0f s (last answer: %r)" % (
        url, variant, timeout, head_of(url, VARIANT_HEADERS[variant])))


class TrafficSluice(targets.Sluice):
    """Sluice, one worker; route 1's plugins follow use_variant()."""

    def __init__(self, binary, upstream, workdir, cpus):
        super().__init__(binary, upstream, workdir, 1, cpus)
        self.variant = None

    def use_variant(self, variant):
        """Route 1 with `variant`'s plugins, served as such; returns the URL to load."""
        if variant != self.variant:
            body = targets.route_body("127.0.0.1", self.upstream.port, 1)
            body["plugins"] = VARIANT_PLUGINS[variant]
            status, text = targets.admin_put(self.admin_url, targets.ADMIN_KEY,
                                             "/apisix/admin/routes/1", body)
            if status not in (200, 201):
                raise RuntimeError("Sluice: PUT /apisix/admin/routes/1 answered %s: %s" % (
                    status, text[:300]))
            wait_variant(self.name, variant, self.url)
            self.variant = variant
        return self.url


NGINX_TRAFFIC = """\
worker_processes 1;
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
    limit_req_zone $binary_remote_addr zone=bench:1m rate=1000000r/s;
    proxy_cache_path {dir}/cache levels=1:2 keys_zone=bench:10m inactive=1h;
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        location /hello {{
            proxy_pass http://up;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }}
    }}
    server {{
        listen 127.0.0.1:{traffic_port} backlog=4096;
        location /hello {{
            limit_req zone=bench burst=100000 nodelay;
            add_header Access-Control-Allow-Origin "*" always;
            add_header Access-Control-Allow-Methods "*" always;
            add_header Access-Control-Allow-Headers "*" always;
            add_header Access-Control-Max-Age "5" always;
            add_header X-Request-Id $request_id always;
            proxy_set_header X-Request-Id $request_id;
            proxy_pass http://up;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }}
    }}
    server {{
        listen 127.0.0.1:{cache_port} backlog=4096;
        location /hello {{
            proxy_cache bench;
            proxy_cache_valid 200 1h;
            add_header X-Cache-Status $upstream_cache_status;
            proxy_pass http://up;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }}
    }}
}}
"""


class TrafficNginx(targets.Target):
    """nginx, one worker: plain, traffic-equivalent and proxy_cache ports."""
    kind = "nginx"

    def __init__(self, upstream, workdir, cpus):
        super().__init__("nginx")
        d = os.path.join(workdir, "nginx")
        os.makedirs(d, exist_ok=True)
        ports = {"plain": free_port(), "traffic": free_port(), "cache-hit": free_port()}
        conf = os.path.join(d, "nginx.conf")
        with open(conf, "w") as f:
            f.write(NGINX_TRAFFIC.format(dir=d, port=ports["plain"],
                                         traffic_port=ports["traffic"],
                                         cache_port=ports["cache-hit"],
                                         up_port=upstream.port))
        binary = targets.nginx_binary()
        self.version = "nginx " + (targets._tool_version([binary, "-v"], r"nginx/(\S+)") or "?")
        self.process = Process("nginx", [binary, "-p", d, "-e", os.path.join(d, "start.log"),
                                         "-c", conf, "-g", "daemon off;"], ports["plain"],
                               os.path.join(workdir, "nginx.log"), cpus=cpus)
        self.processes.append(self.process)
        self.pids = [self.process.pid]
        self.urls = {v: "http://127.0.0.1:%d/hello" % p for v, p in ports.items()}

    def use_variant(self, variant):
        url = self.urls[variant]
        wait_variant(self.name, variant, url)
        return url

