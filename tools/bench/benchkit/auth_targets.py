"""What `sluice bench auth` runs: Sluice with consumers and one route whose plugins change
between measurements, and nginx with a plain port and a static-key port.

Sluice (one worker) gets CONSUMERS consumers through the Admin API, each with a key-auth key
and a jwt-auth key + secret, so that both plugins look a credential up among many. The
measured consumer, `bench`, is one of them. Route 1 (`/hello`, the kit's upstream, as in
scenario 1) is PUT again with no plugin, `key-auth: {}` or `jwt-auth: {}` before each
measurement, and the kit waits until the gateway answers as that variant should.

nginx (one worker) serves two ports proxying to the same upstream: one plain (scenario 1's
configuration) and one that refuses a request whose `apikey` header is not the key, with a
`map` and `if ... return 401` (no auth_request subrequest): the cheapest key check nginx can
do, the floor for key-auth.
"""

import base64
import hashlib
import hmac
import json
import time
import urllib.error
import urllib.request

from . import targets
from .procs import free_port

KEY = "bench-api-key-0001"          # the measured consumer's key-auth key
JWT_KEY = "bench-jwt-key"           # its jwt-auth key (the token's "key" claim)
JWT_SECRET = "bench-jwt-secret-0123456789abcdef"
CONSUMER = "bench"
WRONG_KEY = "not-a-key"

# variant: the route's plugins on Sluice
VARIANT_PLUGINS = {
    "plain": {},
    "key-auth": {"key-auth": {}},
    "jwt-auth": {"jwt-auth": {}},
}


def _b64url(raw):
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def hs256_token(key, secret, exp):
    """A compact JWS (HS256) with the claims jwt-auth reads: `key` and `exp`."""
    def part(obj):
        return _b64url(json.dumps(obj, separators=(",", ":")).encode())
    signing_input = part({"alg": "HS256", "typ": "JWT"}) + "." + part({"key": key, "exp": exp})
    sig = hmac.new(secret.encode(), signing_input.encode(), hashlib.sha256).digest()
    return signing_input + "." + _b64url(sig)


def make_token():
    """The token wrk sends: valid for a year, made once per kit run."""
    return hs256_token(JWT_KEY, JWT_SECRET, int(time.time()) + 365 * 86400)


def variant_headers(variant, token):
    """The headers an authorised request of `variant` carries."""
    if variant == "key-auth":
        return {"apikey": KEY}
    if variant == "jwt-auth":
        return {"Authorization": "Bearer " + token}
    return {}


def status_of(url, headers=None, timeout=2.0):
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            r.read()
            return r.status
    except urllib.error.HTTPError as e:
        e.read()
        return e.code
    except (OSError, urllib.error.URLError):
        return None


def consumer_body(i):
    """Consumer i of the many; i == 0 is the measured one."""
    if i == 0:
        name, key, jkey, secret = CONSUMER, KEY, JWT_KEY, JWT_SECRET
    else:
        name = "user%04d" % i
        key, jkey, secret = "key-%04d-%s" % (i, "x" * 8), "jwt-%04d" % i, "secret-%04d" % i
    return name, {"username": name, "plugins": {"key-auth": {"key": key},
                                                "jwt-auth": {"key": jkey, "secret": secret}}}


class AuthSluice(targets.Sluice):
    """Sluice with `consumers` consumers; route 1's plugins follow use_variant()."""

    def __init__(self, binary, upstream, workdir, cpus, consumers, token):
        super().__init__(binary, upstream, workdir, 1, cpus)
        self.process = self.processes[0]
        self.token = token
        self.variant = None
        t0 = time.monotonic()
        for i in range(consumers):
            name, body = consumer_body(i)
            status, text = targets.admin_put(self.admin_url, targets.ADMIN_KEY,
                                             "/apisix/admin/consumers/" + name, body)
            if status not in (200, 201):
                raise RuntimeError("Sluice: PUT /apisix/admin/consumers/%s answered %s: %s" % (
                    name, status, text[:300]))
        self.consumers_put_s = time.monotonic() - t0

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
            wait_answers(self.url, variant, self.token)
            self.variant = variant
        return self.url


def wait_answers(url, variant, token, timeout=10.0):
    """Until an authorised request gets 200 and, for an auth variant, one without
    credentials gets 401."""
    good = variant_headers(variant, token)
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = (status_of(url, good), status_of(url))
        if last[0] == 200 and (last[1] == 401 if good else True):
            return
        time.sleep(0.05)
    raise RuntimeError("%s did not serve the %s variant within %.0f s (authorised, bare: %r)"
                       % (url, variant, timeout, last))


NGINX_AUTH = """\
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
    map $http_apikey $key_ok {{
        default 0;
        "{key}" 1;
    }}
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        location /hello {{
            proxy_pass http://up;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }}
    }}
    server {{
        listen 127.0.0.1:{key_port} backlog=4096;
        location /hello {{
            if ($key_ok = 0) {{
                return 401;
            }}
            proxy_pass http://up;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }}
    }}
}}
"""


class AuthNginx(targets.NginxTarget):
    """nginx, one worker: scenario 1's proxy on one port, the static key check on another."""

    def __init__(self, upstream, workdir, cpus):
        super().__init__(workdir)
        self.port, self.key_port = free_port(), free_port()
        self.start(NGINX_AUTH.format(dir=self.dir, port=self.port, key_port=self.key_port,
                                     up_port=upstream.port, key=KEY), self.port, cpus)
        self.url = "http://127.0.0.1:%d/hello" % self.port
        self.key_url = "http://127.0.0.1:%d/hello" % self.key_port

    def use_variant(self, variant):
        url = self.key_url if variant == "key-auth" else self.url
        wait_answers(url, variant, None)
        return url
