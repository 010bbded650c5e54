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

import json
import os
import time
import urllib.error
import urllib.request

from . import targets
from .procs import free_port

ORIGIN = "http://bench.example"

# limit-req that never refuses nor delays the kit's load (a few 10,000 requests/s on one
# connection pool), so that the figure is the plugin's bookkeeping, not rejections.
LIMIT_REQ = {"rate": 1000000, "burst": 100000, "key": "remote_addr", "nodelay": True}

# variant: the route's plugins on Sluice ({up} in a value: the kit's upstream, host:port)
VARIANT_PLUGINS = {
    "plain": {},
    "traffic": {"cors": {}, "request-id": {}, "limit-req": LIMIT_REQ},
    "cache-hit": {"proxy-cache": {"cache_strategy": "memory", "cache_zone": "memory_cache",
                                  "cache_ttl": 3600}},
}

# `--each`: one plugin at a time, set up so that it does its work and lets the request
# through (limits never reached, a fault that matches nothing, a breaker that never trips).
EACH_PLUGINS = {
    "cors": {"cors": {}},
    "request-id": {"request-id": {}},
    "limit-req": {"limit-req": LIMIT_REQ},
    "limit-conn": {"limit-conn": {"conn": 100000, "burst": 0, "default_conn_delay": 0.1,
                                  "key": "remote_addr"}},
    "limit-count": {"limit-count": {"count": 1000000000, "time_window": 60}},
    "real-ip": {"real-ip": {"source": "http_x_forwarded_for",
                            "trusted_addresses": ["127.0.0.0/8"]}},
    "fault-injection": {"fault-injection": {"abort": {
        "http_status": 403, "vars": [[["arg_fault", "==", "yes"]]]}}},
    "api-breaker": {"api-breaker": {"break_response_code": 502,
                                    "unhealthy": {"http_statuses": [500], "failures": 3}}},
    "request-validation": {"request-validation": {"header_schema": {
        "type": "object", "required": ["x-bench"],
        "properties": {"x-bench": {"type": "string", "minLength": 1}}}}},
    "traffic-split": {"traffic-split": {"rules": [{"weighted_upstreams": [
        {"upstream": {"type": "roundrobin", "nodes": {"{up}": 1}}, "weight": 1}]}]}},
    "proxy-mirror": {"proxy-mirror": {"host": "http://{up}"}},
    "gzip": {"gzip": {"types": "*", "min_length": 1}},
    "brotli": {"brotli": {"types": "*", "min_length": 1}},
}
VARIANT_PLUGINS.update({"each-" + k: v for k, v in EACH_PLUGINS.items()})

# variant: the headers every request of it carries
VARIANT_HEADERS = {v: {} for v in VARIANT_PLUGINS}
VARIANT_HEADERS.update({
    "traffic": {"Origin": ORIGIN},
    "each-cors": {"Origin": ORIGIN},
    "each-real-ip": {"X-Forwarded-For": "192.0.2.7"},
    "each-request-validation": {"X-Bench": "1"},
    "each-gzip": {"Accept-Encoding": "gzip"},
    "each-brotli": {"Accept-Encoding": "br"},
})


def plugins_of(variant, up):
    """The variant's plugins with `{up}` replaced by the upstream's host:port."""
    return json.loads(json.dumps(VARIANT_PLUGINS[variant]).replace("{up}", up))


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
    if variant in ("traffic", "each-cors") and h.get("access-control-allow-origin") != "*":
        return False
    if variant in ("traffic", "each-request-id") and not h.get("x-request-id"):
        return False
    if variant == "cache-hit":
        return h.get(CACHE_HEADER[gw_name].lower()) == "HIT"
    if variant == "each-gzip":
        return h.get("content-encoding") == "gzip"
    if variant == "each-brotli":
        return h.get("content-encoding") == "br"
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
            body["plugins"] = plugins_of(variant, "127.0.0.1:%d" % self.upstream.port)
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
    proxy_cache_path {dir}/cache levels=1:2 keys_zone=bench_cache:10m inactive=1h;
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
            proxy_cache bench_cache;
            proxy_cache_valid 200 1h;
            add_header X-Cache-Status $upstream_cache_status;
            proxy_pass http://up;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }}
    }}
}}
"""


class TrafficNginx(targets.NginxTarget):
    """nginx, one worker: plain, traffic-equivalent and proxy_cache ports."""

    def __init__(self, upstream, workdir, cpus):
        super().__init__(workdir)
        # nginx's workers (`nobody` under a root master) write proxy_cache files below its
        # dir: they must be able to pass through the kit's private work dir.
        for path in (workdir, self.dir):
            os.chmod(path, 0o711)
        ports = {"plain": free_port(), "traffic": free_port(), "cache-hit": free_port()}
        self.start(NGINX_TRAFFIC.format(dir=self.dir, port=ports["plain"],
                                        traffic_port=ports["traffic"],
                                        cache_port=ports["cache-hit"], up_port=upstream.port),
                   ports["plain"], cpus)
        self.urls = {v: "http://127.0.0.1:%d/hello" % p for v, p in ports.items()}

    def use_variant(self, variant):
        url = self.urls[variant]
        wait_variant(self.name, variant, url)
        return url

