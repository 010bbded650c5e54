"""Issue 21, item 9: APISIX's own documentation, run against Sluice.

Every example of APISIX's getting-started, admin-api and terminology pages and of the
limit-count, prometheus, proxy-rewrite and response-rewrite pages is sent here as published:
the command text is copied from the page and run by bash with curl, with only the ports
(admin 9180, proxy 9080, Prometheus 9091) and the upstream addresses (httpbin.org,
127.0.0.1:1980, ...) replaced by the test's own. Each test names its page and
section (pages: github.com/apache/apisix, docs/en/latest/; the commit read is given per page)
and asserts what that page says the answer is, then that the data plane behaves as the page
says. Where Sluice differs on purpose, the test asserts Sluice's answer and the difference is
a row of the table in docs/admin-api.md ("Differences from APISIX").

Tests that do not count requests share one gateway per worker (`shared`), wiped before each
test; tests whose limit-count counters must start at zero get a gateway of their own.
"""

import json
import os
import re
import subprocess
import tempfile
import textwrap
import time

import pytest

from fake_upstream import FakeUpstream, _body_allowed, _drain, build_head
from harness import (OMIT, WELL_KNOWN_ADMIN_KEY, Gateway, get, http, parse_head,
                     wait_until)
from nginx_tls import NginxTls, make_pki

# What the doc pages call their upstreams, and which fake upstream stands in for each. The
# fake upstream answers with a JSON description of the request it received ("upstream" is
# its name, "target" the request target, "headers" the header list).
UPSTREAM_A = ("httpbin.org:80", "httpbin.org:443", "127.0.0.1:1980", "127.0.0.1:80",
              "127.0.0.1:8080")
UPSTREAM_B = ("127.0.0.1:1981", "mock.api7.ai:443", "foo.com:80")
UPSTREAM_C = ("127.0.0.1:1982",)
KINDS = ("routes", "services", "plugin_configs", "upstreams", "consumers", "consumer_groups",
         "global_rules")


class HttpbinEcho:
    """The fake upstream's JSON description of the request, ending with a newline as
    httpbin's answers do (the pages' `... | grep | wc -l` pipelines count lines)."""

    def handle(self, up, conn, req):
        _drain(conn, req)
        echo = req.as_json(up)
        # httpbin's load balancer adds a trace id to the request it echoes back.
        echo["headers"].append(["X-Amzn-Trace-Id", "Root=1-6500095d-1041b05e2ba9c6b37232dbc7"])
        body = (json.dumps(echo) + "\n").encode()
        headers = [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
        conn.send(build_head(200, headers) + (body if _body_allowed(req, 200) else b""))
        return True


# --------------------------------------------------------------------------- the runner


class Answer:
    """What curl got: the last response head and the body (heads printed by -i removed)."""

    def __init__(self, rc, status, headers, body, stderr):
        self.rc, self.status, self.headers, self.body, self.stderr = \
            rc, status, headers, body, stderr

    def header(self, name):
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)

    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        return "<curl rc=%d %s %r %r>" % (self.rc, self.status, self.body[:400],
                                           self.stderr[-200:])


class Doc:
    """Runs a documentation command with its ports and upstream addresses replaced."""

    def __init__(self, gw, ups):
        self.gw = gw
        self.ups = ups
        self.map = {
            "127.0.0.1:9180": "127.0.0.1:%d" % gw.admin_port,
            "127.0.0.1:9080": "127.0.0.1:%d" % gw.port,
            "127.0.0.1:9091": "127.0.0.1:%d" % gw.prometheus_port,
            "{apisix_listen_address}": "127.0.0.1:%d" % gw.admin_port,
            "127.0.0.1:20001": "127.0.0.1:%d" % gw.dead_port,  # a node nothing listens on
        }
        for names, up in zip((UPSTREAM_A, UPSTREAM_B, UPSTREAM_C), ups):
            for name in names:
                tls = name.endswith(":443") and getattr(up, "tls_addr", None)
                self.map[name] = tls or up.addr
        # One pass, longest first: a replaced port is never rewritten again.
        self.rx = re.compile("|".join(re.escape(k) + r"(?![0-9])"
                                      for k in sorted(self.map, key=len, reverse=True)))
        self.env = dict(os.environ, admin_key=WELL_KNOWN_ADMIN_KEY,
                        ADMIN_API_KEY=WELL_KNOWN_ADMIN_KEY)

    def addr(self, doc_addr):
        """The address that stands in for the page's doc_addr."""
        return self.map[doc_addr]

    def subst(self, text):
        return self.rx.sub(lambda m: self.map[m.group(0)], textwrap.dedent(text).strip())

    def sh(self, cmd, check=True):
        """A shell line from the page (pipelines included); returns stdout, stripped."""
        p = subprocess.run(["bash", "-c", self.subst(cmd)], env=self.env, capture_output=True,
                           timeout=120)
        assert p.returncode == 0 or not check, p
        return p.stdout.decode().strip()

    def run(self, cmd):
        """One curl command from the page; returns its Answer."""
        cmd = self.subst(cmd)
        cmd = cmd[2:] if cmd.startswith("$ ") else cmd
        assert cmd.startswith("curl "), cmd
        with tempfile.TemporaryDirectory(prefix="sluice-doc-") as d:
            h, b = os.path.join(d, "h"), os.path.join(d, "b")
            line = "curl -sS -D %s -o %s %s" % (h, b, cmd[5:])
            p = subprocess.run(["bash", "-c", line], env=self.env, capture_output=True,
                               timeout=30)
            heads = []
            if os.path.exists(h):
                for block in open(h, "rb").read().split(b"\r\n\r\n"):
                    if block.startswith(b"HTTP/"):
                        heads.append(parse_head(block + b"\r\n\r\n"))
            body = open(b, "rb").read() if os.path.exists(b) else b""
        while body.startswith(b"HTTP/") and b"\r\n\r\n" in body:  # printed by -i
            body = body.split(b"\r\n\r\n", 1)[1]
        last = heads[-1] if heads else None
        return Answer(p.returncode, last.status if last else None,
                      last.headers if last else [], body, p.stderr.decode(errors="replace"))

    def admin(self, method, path, body=None):
        """A request the page does not show (reading state back), with the page's key."""
        return self.gw.admin(method, path, body, key=WELL_KNOWN_ADMIN_KEY)


def echoed(answer):
    """The fake upstream's description of the request it got (fails on any other answer)."""
    assert answer.status == 200, answer
    return json.loads(answer.body)


def sent_header(echo, name):
    """The values of header `name` as the upstream received it."""
    return [v for k, v in echo["headers"] if k.lower() == name.lower()]


def refused_plugin(r, name):
    """Sluice's answer to a plugin it does not ship: 400 naming it (APISIX's text; the
    consumer API prefixes "invalid plugins configuration: ", as APISIX's does)."""
    assert r.status == 400, r
    body = r.json() if callable(r.json) else r.json  # an Answer or an AdminResult
    assert body["error_msg"].endswith("unknown plugin [%s]" % name), r


def value_of(doc, path):
    r = doc.admin("GET", path)
    assert r.status == 200, r
    return r.json["value"]


def statuses(doc, path, n, **kw):
    return [get(doc.gw.port, path, **kw).status for _ in range(n)]


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def ups(tmp_path_factory):
    made = [FakeUpstream(name=name, default=HttpbinEcho())
            for name in ("httpbin.org", "mock.api7.ai", "node-1982")]
    # The pages' :443 upstreams are https: nginx over TLS in front of the first two.
    pki = make_pki(str(tmp_path_factory.mktemp("docs-pki")))
    front = NginxTls(tmp_path_factory.mktemp("docs-tls"), pki,
                     [{"cert": "server", "proxy": up.port, "proxy_at": "/"} for up in made[:2]])
    for up, port in zip(made, front.ports):
        up.tls_addr = "127.0.0.1:%d" % port
    yield made
    front.stop()
    for up in made:
        up.stop()


def _gateway(workdir, config=None, env=None):
    # The pages' commands carry APISIX's well-known key (or $admin_key, set to it): the
    # gateway keeps Sluice's default key list, which accepts that key from loopback.
    gw = Gateway(workdir, admin=True, admin_keys=OMIT, workers=2, config=config, env=env)
    gw.start()
    return gw


def _stop(gw):
    rc = gw.stop()
    print("\n--- sluice log (exit %s) ---\n%s" % (rc, gw.log_tail(150)))
    assert rc == 0, "gateway exited with %r" % rc


@pytest.fixture(scope="module")
def shared_gw(tmp_path_factory):
    gw = _gateway(tmp_path_factory.mktemp("docs-shared"))
    yield gw
    _stop(gw)


def _wipe(gw):
    for kind in KINDS:
        r = gw.admin("GET", "/" + kind, key=WELL_KNOWN_ADMIN_KEY)
        assert r.status == 200, r
        for item in r.json.get("list") or []:
            key = item["key"].rsplit("/", 1)[1]
            d = gw.admin("DELETE", "/%s/%s?force=true" % (kind, key), key=WELL_KNOWN_ADMIN_KEY)
            assert d.status == 200, d


@pytest.fixture
def shared(shared_gw, ups):
    """The module's gateway with an empty store."""
    assert shared_gw.alive(), shared_gw.log_tail()
    _wipe(shared_gw)
    return Doc(shared_gw, ups)


@pytest.fixture
def fresh(tmp_path, ups):
    """A gateway of its own (limit-count counters start at zero)."""
    gw = _gateway(tmp_path / "gw")
    yield Doc(gw, ups)
    _stop(gw)


@pytest.fixture
def quickstart(tmp_path, ups):
    """A gateway configured as APISIX's quickstart script configures APISIX (the setup the
    getting-started pages assume): deployment.admin.admin_key_required false, so the
    pages' Admin API commands carry no key."""
    gw = _gateway(tmp_path / "gw", config={"deployment": {"admin": {
        "admin_key_required": False}}})
    yield Doc(gw, ups)
    _stop(gw)


# =========================================================================== getting-started
# getting-started/configure-routes.md (5fa8020), load-balancing.md (3b96117),
# rate-limiting.md (67efdb4), key-authentication.md (15f379a)

def test_gs_readme(quickstart):
    doc = quickstart
    # getting-started/README.md (09b89d4), "Verify the Installation": the Server header.
    # APISIX: "Server: APISIX/3.16.0". Difference: Sluice names itself (sluice/<version>).
    out = doc.sh('curl "http://127.0.0.1:9080" --head | grep Server')
    assert re.fullmatch(r"Server: sluice/\S+", out), out
    # "You can also check the Admin API": JSON (no key: the quickstart's configuration).
    out = doc.sh('curl "http://127.0.0.1:9180/apisix/admin/routes" | head -c 200')
    assert json.loads(out) == {"list": [], "total": 0}, out
    # "Configure Your First Route" -> 201 (the page shows no status; PUT of a new id).
    r = doc.run('''
        curl -i "http://127.0.0.1:9180/apisix/admin/routes/1" -X PUT -d '
        {
          "uri": "/get",
          "upstream": {
            "type": "roundrobin",
            "nodes": {
              "httpbin.org:80": 1
            }
          }
        }'
        ''')
    assert r.status == 201, r
    assert echoed(doc.run('curl "http://127.0.0.1:9080/get"'))["target"] == "/get"
    # "Add a Plugin": limit-count 5 per 60 s, 429 -> 200; then requests 1-5 answer 200
    # and 6-7 answer 429.
    r = doc.run('''
        curl -i "http://127.0.0.1:9180/apisix/admin/routes/1" -X PATCH -d '
        {
          "plugins": {
            "limit-count": {
              "count": 5,
              "time_window": 60,
              "rejected_code": 429,
              "key_type": "var",
              "key": "remote_addr"
            }
          }
        }'
        ''')
    assert r.status == 200, r
    out = doc.sh('''
        for i in $(seq 1 7); do
          echo "Request $i:"
          curl -s -o /dev/null -w "HTTP %{http_code}\\n" "http://127.0.0.1:9080/get"
        done
        ''')
    want = "".join("Request %d:\nHTTP %d\n" % (i, 200 if i <= 5 else 429) for i in range(1, 8))
    assert out == want.strip(), out


GS_CREATE_ROUTE = '''
curl -i "http://127.0.0.1:9180/apisix/admin/routes" -X PUT -d '
{
  "id": "getting-started-ip",
  "uri": "/ip",
  "upstream": {
    "type": "roundrobin",
    "nodes": {
      "httpbin.org:80": 1
    }
  }
}'
'''


def test_gs_configure_routes(quickstart):
    doc = quickstart
    # configure-routes.md, "Create a Route": "You will receive an HTTP/1.1 201 Created".
    r = doc.run(GS_CREATE_ROUTE)
    assert r.status == 201, r
    assert r.json()["value"]["uri"] == "/ip"
    assert r.json()["key"] == "/apisix/routes/getting-started-ip"
    # configure-routes.md, "Validate": the request reaches httpbin.org/ip.
    echo = echoed(doc.run('curl "http://127.0.0.1:9080/ip"'))
    assert (echo["upstream"], echo["target"]) == ("httpbin.org", "/ip"), echo


LB_CREATE_ROUTE = '''
curl -i "http://127.0.0.1:9180/apisix/admin/routes" -X PUT -d '
{
  "id": "getting-started-headers",
  "uri": "/headers",
  "upstream" : {
    "type": "roundrobin",
    "nodes": {
      "httpbin.org:443": 1,
      "mock.api7.ai:443": 1
    },
    "pass_host": "node",
    "scheme": "https"
  }
}'
'''
LB_VALIDATE = '''
hc=$(seq 100 | xargs -i curl "http://127.0.0.1:9080/headers" -sL | grep "httpbin" | wc -l); echo httpbin.org: $hc, mock.api7.ai: $((100 - $hc))
'''


def test_gs_load_balancing(quickstart):
    doc = quickstart
    # load-balancing.md, "Enable Load Balancing": APISIX answers 201.
    # The :443 stand-ins are TLS (nginx in front of the fake upstreams).
    r = doc.run(LB_CREATE_ROUTE)
    assert r.status == 201, r
    # load-balancing.md, "Validate": 100 requests spread almost equally (51 / 49).
    out = doc.sh(LB_VALIDATE)
    m = re.fullmatch(r"httpbin.org: (\d+), mock.api7.ai: (\d+)", out)
    assert m and abs(int(m.group(1)) - int(m.group(2))) <= 10, out


RL_ENABLE = '''
curl -i "http://127.0.0.1:9180/apisix/admin/routes/getting-started-ip" -X PATCH -d '
{
  "plugins": {
    "limit-count": {
        "count": 2,
        "time_window": 10,
        "rejected_code": 503
     }
  }
}'
'''
RL_VALIDATE = '''
count=$(seq 100 | xargs -i curl "http://127.0.0.1:9080/ip" -I -sL | grep "503" | wc -l); echo \\"200\\": $((100 - $count)), \\"503\\": $count
'''
RL_DISABLE = '''
curl -i "http://127.0.0.1:9180/apisix/admin/routes/getting-started-ip" -X PATCH -d '
{
    "plugins": {
        "limit-count": {
            "_meta": {
                "disable": true
            }
        }
    }
}'
'''


def test_gs_rate_limiting(quickstart):
    doc = quickstart
    assert doc.run(GS_CREATE_ROUTE).status == 201  # the page's prerequisite
    # rate-limiting.md, "Enable Rate Limiting". The page says "201 OK"; a PATCH of an
    # existing route answers 200 (apisix/admin/init.lua; admin-api.md's PATCH examples).
    r = doc.run(RL_ENABLE)
    assert r.status == 200, r
    assert r.json()["value"]["plugins"]["limit-count"]["count"] == 2
    # "Validate": out of 100 requests, 2 pass and 98 are rejected with 503. (The window is
    # 10 s: on a machine so loaded that 100 curls take longer, each new window lets 2 more
    # through, and only that bound is checked.)
    t0 = time.monotonic()
    out = doc.sh(RL_VALIDATE)
    took = time.monotonic() - t0
    if took < 9.5:
        assert out == '"200": 2, "503": 98', out
    else:
        passed = int(re.fullmatch(r'"200": (\d+), "503": \d+', out).group(1))
        assert 2 <= passed <= 2 * (int(took // 10) + 1), (out, took)
    # "Disable Rate Limiting" with _meta.disable, then "Validate": all 100 pass.
    r = doc.run(RL_DISABLE)
    assert r.status == 200, r
    assert doc.sh(RL_VALIDATE) == '"200": 100, "503": 0'


def test_gs_key_authentication(quickstart):
    doc = quickstart
    assert doc.run(GS_CREATE_ROUTE).status == 201  # the page's prerequisite
    # key-authentication.md, "Create a Consumer": "HTTP/1.1 201 OK" (201: a new consumer).
    r = doc.run('''
        curl -i "http://127.0.0.1:9180/apisix/admin/consumers" -X PUT -d '
        {
          "username": "tom",
          "plugins": {
            "key-auth": {
              "key": "secret-key"
            }
          }
        }'
        ''')
    assert r.status == 201, r
    assert value_of(doc, "/consumers/tom")["plugins"]["key-auth"]["key"] == "secret-key"
    # "Enable Authentication". The page says "201 Created"; a PATCH of an existing route
    # answers 200 (apisix/admin/init.lua; as in rate-limiting.md above).
    r = doc.run('''
        curl -i "http://127.0.0.1:9180/apisix/admin/routes/getting-started-ip" -X PATCH -d '
        {
          "plugins": {
            "key-auth": {}
          }
        }'
        ''')
    assert r.status == 200, r
    assert "key-auth" in r.json()["value"]["plugins"], r
    # "Validate" 1: no key -> 401 Unauthorized. (The page's 3.1.0 head shows text/plain;
    # 3.x answers key-auth's JSON message.)
    r = doc.run('curl -i "http://127.0.0.1:9080/ip"')
    assert (r.status, r.json()) == (401, {"message": "Missing API key in request"}), r
    # 2: a wrong key -> 401 Unauthorized.
    r = doc.run('''curl -i "http://127.0.0.1:9080/ip" -H 'apikey: wrong-key\'''')
    assert (r.status, r.json()) == (401, {"message": "Invalid API key in request"}), r
    # 3: the right key -> 200 OK, proxied as tom.
    echo = echoed(doc.run('''curl -i "http://127.0.0.1:9080/ip" -H 'apikey: secret-key\''''))
    assert echo["target"] == "/ip" and sent_header(echo, "X-Consumer-Username") == ["tom"], \
        echo
    # "Disable Authentication" with _meta.disable (200: the route exists), then a request
    # without any key -> 200 OK.
    r = doc.run('''
        curl "http://127.0.0.1:9180/apisix/admin/routes/getting-started-ip" -X PATCH -d '
        {
          "plugins": {
            "key-auth": {
              "_meta": {
                "disable": true
              }
            }
          }
        }'
        ''')
    assert r.status == 200, r
    echo = echoed(doc.run('curl -i "http://127.0.0.1:9080/ip"'))
    assert sent_header(echo, "X-Consumer-Username") == [], echo


# =========================================================================== admin-api.md
# admin-api.md (001d14a; the 2.x-era page whose commands use the proxy port 9080 and the
# well-known key: Sluice serves the Admin API under /apisix/admin on the proxy port too).

AA_CREATE_ROUTE = '''
$ curl http://127.0.0.1:9080/apisix/admin/routes/1 -H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1' -X PUT -i -d '
{
    "uri": "/index.html",
    "hosts": ["foo.com", "*.bar.com"],
    "remote_addrs": ["127.0.0.0/8"],
    "methods": ["PUT", "GET"],
    "enable_websocket": true,
    "upstream": {
        "type": "roundrobin",
        "nodes": {
            "127.0.0.1:1980": 1
        }
    }
}'
'''


def test_admin_api_route_create(shared):
    doc = shared
    # admin-api.md, Route, "Example API usage": "Create a route" -> 201 Created.
    r = doc.run(AA_CREATE_ROUTE)
    assert r.status == 201, r
    assert r.json()["value"]["hosts"] == ["foo.com", "*.bar.com"]
    # The route matches by host, client address and method, as its fields say.
    for host in ("foo.com", "a.bar.com"):
        r = get(doc.gw.port, "/index.html", host=host)
        assert r.status == 200 and r.json()["upstream"] == "httpbin.org", (host, r)
    assert get(doc.gw.port, "/index.html", host="bar.org").status == 404
    assert http(doc.gw.port, "POST", "/index.html", host="foo.com", body=b"").status == 404
    assert http(doc.gw.port, "PUT", "/index.html", host="foo.com", body=b"").status == 200


def test_admin_api_route_ttl(shared):
    doc = shared
    # admin-api.md, Route: "Create a route expires after 60 seconds" -> 201 Created.
    r = doc.run('''
        $ curl http://127.0.0.1:9080/apisix/admin/routes/2?ttl=60 -H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1' -X PUT -i -d '
        {
            "uri": "/aa/index.html",
            "upstream": {
                "type": "roundrobin",
                "nodes": {
                    "127.0.0.1:1980": 1
                }
            }
        }'
        ''')
    assert r.status == 201, r
    assert get(doc.gw.port, "/aa/index.html").status == 200
    # Still there well within its 60 seconds (test_admin_store.py waits out a short ttl).
    assert value_of(doc, "/routes/2")["uri"] == "/aa/index.html"


def _patch_steps(doc, base, v3=False):
    """admin-api.md's PATCH examples for the nodes of a route, a service or an upstream
    (`base` is the object's Admin API path). v3: the 3.x page's form of the same commands
    (the Admin API port, $admin_key)."""
    n = "/upstream/nodes" if "upstreams" not in base else "/nodes"
    pre = '$ curl http://127.0.0.1:9080/apisix/admin%s ' \
          "-H'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1' -X PATCH -i -d '" % base
    if v3:
        pre = 'curl http://127.0.0.1:9180/apisix/admin%s \\\n' \
              '-H "X-API-KEY: $admin_key" -X PATCH -i -d \'' % base
    inner = (lambda s: s) if "upstreams" in base else \
        (lambda s: '{\n    "upstream": ' + s + '\n}')

    def nodes():
        v = value_of(doc, base)
        return v["nodes"] if "upstreams" in base else v["upstream"]["nodes"]

    a, b, c = (doc.addr(x) for x in ("127.0.0.1:1980", "127.0.0.1:1981", "127.0.0.1:1982"))
    # "Add an upstream node": nodes become {1980: 1, 1981: 1}.
    r = doc.run(pre + inner('{\n    "nodes": {\n        "127.0.0.1:1981": 1\n    }\n}') + "'")
    assert r.status == 200, r
    assert nodes() == {a: 1, b: 1}
    # "Update the weight of an upstream node": {1980: 1, 1981: 10}.
    r = doc.run(pre + inner('{\n    "nodes": {\n        "127.0.0.1:1981": 10\n    }\n}') + "'")
    assert r.status == 200, r
    assert nodes() == {a: 1, b: 10}
    # "Delete an upstream node": a null removes 1980.
    r = doc.run(pre + inner('{\n    "nodes": {\n        "127.0.0.1:1980": null\n    }\n}') + "'")
    assert r.status == 200, r
    assert nodes() == {b: 10}
    # "Replace upstream nodes" through the sub path: {1982: 1}, the old nodes gone.
    r = doc.run(pre.replace(base, base + n) + '\n{\n    "127.0.0.1:1982": 1\n}\'')
    assert r.status == 200, r
    assert nodes() == {c: 1}


def test_admin_api_route_patch(shared):
    doc = shared
    assert doc.run(AA_CREATE_ROUTE).status == 201
    # admin-api.md, Route, the PATCH examples on route 1's nodes.
    _patch_steps(doc, "/routes/1")
    r = get(doc.gw.port, "/index.html", host="foo.com")
    assert r.status == 200 and r.json()["upstream"] == "node-1982", r
    # "Replace methods of the Route -- array": ["GET", "POST"], the old list gone.
    r = doc.run('''
        $ curl http://127.0.0.1:9080/apisix/admin/routes/1 -H'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1' -X PATCH -i -d '{
            "methods": ["GET", "POST"]
        }'
        ''')
    assert r.status == 200, r
    assert value_of(doc, "/routes/1")["methods"] == ["GET", "POST"]
    assert http(doc.gw.port, "PUT", "/index.html", host="foo.com", body=b"").status == 404
    # "Replace methods of the Route -- sub path". The page's body has " PATCH" with a
    # leading space and claims the result ["POST", "DELETE", "PATCH"]; APISIX's schema
    # (schema_def.lua, methods: an enum) refuses " PATCH", and so does Sluice.
    r = doc.run('''
        $ curl http://127.0.0.1:9080/apisix/admin/routes/1/methods -H'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1' -X PATCH -i -d'["POST", "DELETE", " PATCH"]'
        ''')
    assert r.status == 400, r
    assert r.json()["error_msg"].startswith(
        'invalid configuration: property "methods" validation failed'), r
    assert value_of(doc, "/routes/1")["methods"] == ["GET", "POST"]
    # "disable route" / "enable route" with status 0 / 1.
    r = doc.run('''
        $ curl http://127.0.0.1:9080/apisix/admin/routes/1 -H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1' -X PATCH -i -d '
        {
            "status": 0
        }'
        ''')
    assert r.status == 200 and r.json()["value"]["status"] == 0, r
    assert get(doc.gw.port, "/index.html", host="foo.com").status == 404
    r = doc.run('''
        $ curl http://127.0.0.1:9080/apisix/admin/routes/1 -H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1' -X PATCH -i -d '
        {
            "status": 1
        }'
        ''')
    assert r.status == 200 and r.json()["value"]["status"] == 1, r
    assert get(doc.gw.port, "/index.html", host="foo.com").status == 200


def test_admin_api_service(shared):
    doc = shared
    # admin-api.md, Service, "Example API usage": PUT services/201 -> 201 Created.
    r = doc.run('''
        $ curl http://127.0.0.1:9080/apisix/admin/services/201  -H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1' -X PUT -i -d '
        {
            "plugins": {
                "limit-count": {
                    "count": 2,
                    "time_window": 60,
                    "rejected_code": 503,
                    "key": "remote_addr"
                }
            },
            "enable_websocket": true,
            "upstream": {
                "type": "roundrobin",
                "nodes": {
                    "127.0.0.1:1980": 1
                }
            }
        }'
        ''')
    assert r.status == 201, r
    assert r.json()["value"]["plugins"]["limit-count"]["count"] == 2
    # The four PATCH examples on the service's nodes.
    _patch_steps(doc, "/services/201")


def test_admin_api_consumer(shared):
    doc = shared
    # admin-api.md, Consumer, "Example API usage". The page's 2.x answer is 200 with a
    # prevNode (jack existed); a PUT that creates the consumer answers 201 (resource.lua).
    r = doc.run('''
        $ curl http://127.0.0.1:9080/apisix/admin/consumers  -H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1' -X PUT -i -d '
        {
            "username": "jack",
            "plugins": {
                "key-auth": {
                    "key": "auth-one"
                },
                "limit-count": {
                    "count": 2,
                    "time_window": 60,
                    "rejected_code": 503,
                    "key": "remote_addr"
                }
            }
        }'
        ''')
    assert r.status == 201, r
    assert r.json()["key"] == "/apisix/consumers/jack", r
    plugins = value_of(doc, "/consumers/jack")["plugins"]
    assert plugins["key-auth"]["key"] == "auth-one", plugins
    assert (plugins["limit-count"]["count"], plugins["limit-count"]["rejected_code"]) == \
        (2, 503), plugins


def test_admin_api_upstream_nodes(shared):
    doc = shared
    # admin-api.md, Upstream, "Example 1: Create an Upstream and modify the data in nodes".
    r = doc.run('''
        $ curl http://127.0.0.1:9080/apisix/admin/upstreams/100  -H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1' -i -X PUT -d '
        {
            "type":"roundrobin",
            "nodes":{
                "127.0.0.1:1980": 1
            }
        }'
        ''')
    assert r.status == 201, r
    _patch_steps(doc, "/upstreams/100")


def test_admin_api_upstream_https(shared):
    doc = shared
    # admin-api.md, Upstream, "Example 2: Proxy client request to https Upstream service":
    # the request goes over TLS (httpbin.org:443's stand-in is nginx over TLS in front of the
    # fake upstream).
    r = doc.run('''
        $ curl -i http://127.0.0.1:9080/apisix/admin/routes/1 -H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1' -X PUT -d '
        {
            "uri": "/get",
            "upstream": {
                "type": "roundrobin",
                "scheme": "https",
                "nodes": {
                    "httpbin.org:443": 1
                }
            }
        }'
        ''')
    assert r.status == 201, r
    echo = echoed(doc.run("$ curl http://127.0.0.1:9080/get"))
    assert (echo["upstream"], echo["target"]) == ("httpbin.org", "/get"), echo


def test_admin_api_upstream_node_priority(shared):
    doc = shared
    # admin-api.md, Upstream, the note on node priority: the page's route object (shown
    # without a command; PUT here as routes/1). The priority -1 node is a backup only.
    body = json.loads(doc.subst('''
        {
          "uri": "/hello",
          "upstream": {
            "type": "roundrobin",
            "nodes": [
              { "host": "127.0.0.1", "port": 1980, "weight": 2000 },
              { "host": "127.0.0.1", "port": 1981, "weight": 1, "priority": -1 }
            ],
            "checks": {
              "active": {
                "http_path": "/status",
                "healthy": {
                  "interval": 1,
                  "successes": 1
                },
                "unhealthy": {
                  "interval": 1,
                  "http_failures": 1
                }
              }
            }
          }
        }'''))
    a, b = doc.ups[0], doc.ups[1]
    body["upstream"]["nodes"][0]["port"] = a.port  # the page's ports, replaced
    body["upstream"]["nodes"][1]["port"] = b.port
    assert doc.admin("PUT", "/routes/1", body).status == 201
    got = {get(doc.gw.port, "/hello").json()["upstream"] for _ in range(20)}
    assert got == {"httpbin.org"}, got


def test_admin_api_plugin_metadata(shared):
    doc = shared
    # admin-api.md, Plugin Metadata: PUT for example-plugin -> APISIX 201 (example-plugin
    # is in APISIX's default plugin list). Difference: Sluice has no example-plugin.
    r = doc.run('''
        $ curl http://127.0.0.1:9080/apisix/admin/plugin_metadata/example-plugin  -H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1' -i -X PUT -d '
        {
            "skey": "val",
            "ikey": 1
        }'
        ''')
    refused_plugin(r, "example-plugin")


def test_admin_api_plugins(shared):
    doc = shared
    # admin-api.md, Plugin, "Example API usage": the list of plugin names.
    r = doc.run('''
        $ curl "http://127.0.0.1:9080/apisix/admin/plugins/list" -H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1'
        ''')
    assert r.status == 200, r
    names = r.json()
    assert isinstance(names, list) and {"key-auth", "limit-count", "prometheus",
                                        "proxy-rewrite", "response-rewrite"} <= set(names), \
        names
    # The schema of key-auth: an object schema (the page prints 2.x's, whose only
    # property was "disable"; 3.x's names header, query and hide_credentials).
    r = doc.run('''
        $ curl "http://127.0.0.1:9080/apisix/admin/plugins/key-auth" -H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1'
        ''')
    assert r.status == 200 and r.json()["type"] == "object", r
    assert {"header", "query", "hide_credentials"} <= set(r.json()["properties"]), r
    # The same request for limit-count answers its schema too.
    r = doc.run('''
        $ curl "http://127.0.0.1:9080/apisix/admin/plugins/limit-count" -H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1'
        ''')
    assert r.status == 200 and r.json().get("type") == "object", r
    # "/apisix/admin/plugins?all=true": every plugin with name, priority, schema, version.
    r = doc.admin("GET", "/apisix/admin/plugins?all=true")
    assert r.status == 200, r
    assert {"key-auth", "limit-count", "prometheus", "proxy-rewrite",
            "response-rewrite"} <= set(r.json), r
    assert r.json["limit-count"]["priority"] == 1002, r
    assert r.json["key-auth"]["priority"] == 2500, r


# --------------------------------------------------------------------------- admin-api.md, 3.x
# The 3.x page (apache/apisix docs/en/latest/admin-api.md as stored, 108,129 characters):
# the Admin API port 9180, $admin_key. Its route, service and upstream examples are the
# 2.x page's requests in this form; the sections new in 3.x follow.

V3 = "curl http://127.0.0.1:9180/apisix/admin"


def test_admin_api_v3_examples(shared):
    doc = shared
    # "Route", "Example API usage": "Create a route" -> 201, then the PATCH examples.
    r = doc.run(V3 + '''/routes/1 -H "X-API-KEY: $admin_key" -X PUT -i -d '
        {
            "uri": "/index.html",
            "hosts": ["foo.com", "*.bar.com"],
            "remote_addrs": ["127.0.0.0/8"],
            "methods": ["PUT", "GET"],
            "enable_websocket": true,
            "upstream": {
                "type": "roundrobin",
                "nodes": {
                    "127.0.0.1:1980": 1
                }
            }
        }'
        ''')
    assert r.status == 201, r
    _patch_steps(doc, "/routes/1", v3=True)
    # "Service", "Create a service" -> 201, then its PATCH examples.
    r = doc.run(V3 + '''/services/201  \\
        -H "X-API-KEY: $admin_key" -X PUT -i -d '
        {
            "plugins": {
                "limit-count": {
                    "count": 2,
                    "time_window": 60,
                    "rejected_code": 503,
                    "key": "remote_addr"
                }
            },
            "enable_websocket": true,
            "upstream": {
                "type": "roundrobin",
                "nodes": {
                    "127.0.0.1:1980": 1
                }
            }
        }'
        ''')
    assert r.status == 201, r
    _patch_steps(doc, "/services/201", v3=True)
    # "Upstream", "Create an Upstream and modify the data in nodes".
    r = doc.run(V3 + '''/upstreams/100  \\
        -H "X-API-KEY: $admin_key" -i -X PUT -d '
        {
            "type":"roundrobin",
            "nodes":{
                "127.0.0.1:1980": 1
            }
        }'
        ''')
    assert r.status == 201, r
    _patch_steps(doc, "/upstreams/100", v3=True)


def test_admin_api_v3_force_delete(shared):
    doc = shared
    # "Force Delete": an upstream and a route using it; the answers the page prints.
    r = doc.run('''
        $ curl http://127.0.0.1:9180/apisix/admin/upstreams/1 -H "X-API-KEY: $admin_key" -X PUT -d '{
            "nodes": {
                "127.0.0.1:8080": 1
            },
            "type": "roundrobin"
        }'
        ''')
    assert r.status == 201, r
    r = doc.run('''
        $ curl http://127.0.0.1:9180/apisix/admin/routes/1 -H "X-API-KEY: $admin_key" -X PUT -d '{
            "uri": "/*",
            "upstream_id": 1
        }'
        ''')
    assert r.status == 201, r
    v = r.json()["value"]  # the page: upstream_id 1, uri /*, id "1" and the two times
    assert (r.json()["key"], v["upstream_id"], v["uri"], v["id"]) == (
        "/apisix/routes/1", 1, "/*", "1"), r
    assert isinstance(v["create_time"], int) and isinstance(v["update_time"], int), r
    in_use = {"error_msg": "can not delete this upstream, route [1] is still using it now"}
    r = doc.run('$ curl http://127.0.0.1:9180/apisix/admin/upstreams/1 '
                '-H "X-API-KEY: $admin_key" -X DELETE')
    assert (r.status, r.json()) == (400, in_use), r
    r = doc.run('$ curl "http://127.0.0.1:9180/apisix/admin/upstreams/1?force=anyvalue" '
                '-H "X-API-KEY: $admin_key" -X DELETE')
    assert (r.status, r.json()) == (400, in_use), r
    r = doc.run('$ curl "http://127.0.0.1:9180/apisix/admin/upstreams/1?force=true" '
                '-H "X-API-KEY: $admin_key" -X DELETE')
    assert (r.status, r.json()) == (200, {"deleted": "1", "key": "/apisix/upstreams/1"}), r


def test_admin_api_v3_list_queries(shared):
    doc = shared
    # Routes for the list queries to find (the page assumes some exist): one named "test-a"
    # on /foo bound to service 1, one named "other" on /bar.
    assert doc.admin("PUT", "/services/1", {
        "upstream": {"nodes": {doc.addr("127.0.0.1:1980"): 1}}}).status == 201
    assert doc.admin("PUT", "/routes/a", {"uri": "/foo", "name": "test-a",
                                          "service_id": "1"}).status == 201
    assert doc.admin("PUT", "/routes/b", {"uri": "/bar", "name": "other", "upstream": {
        "nodes": {doc.addr("127.0.0.1:1980"): 1}}}).status == 201
    # "Support paging query": {"total": ..., "list": [...]}.
    r = doc.run('''
        curl "http://127.0.0.1:9180/apisix/admin/routes?page=1&page_size=10" \\
        -H "X-API-KEY: $admin_key" -X GET
        ''')
    assert r.status == 200 and r.json()["total"] == 2 and len(r.json()["list"]) == 2, r
    # "Support filtering query": name contains "test", uri contains "foo", and `label=`.
    # The page says the empty label sets no restriction and shows total 1; APISIX's code
    # (admin/resource.lua, filter) treats the empty string as a label to match, so a route
    # without that label is left out: total 0. Sluice does what the code does.
    r = doc.run('''
        curl 'http://127.0.0.1:9180/apisix/admin/routes?name=test&uri=foo&label=' \\
        -H "X-API-KEY: $admin_key" -X GET
        ''')
    assert r.status == 200 and r.json()["total"] == 0, r
    r = doc.admin("GET", "/routes?name=test&uri=foo")  # the same without the label
    assert [i["key"] for i in r.json["list"]] == ["/apisix/routes/a"], r


def test_admin_api_v3_reference_filter(shared):
    doc = shared
    assert doc.admin("PUT", "/services/1", {
        "upstream": {"nodes": {doc.addr("127.0.0.1:1980"): 1}}}).status == 201
    assert doc.admin("PUT", "/routes/a", {"uri": "/foo", "service_id": "1"}).status == 201
    assert doc.admin("PUT", "/routes/b", {"uri": "/bar", "upstream": {
        "nodes": {doc.addr("127.0.0.1:1980"): 1}}}).status == 201
    # "Support reference filtering query" (3.13): only the route with service_id 1.
    r = doc.run('''
        curl 'http://127.0.0.1:9180/apisix/admin/routes?filter=service_id%3D1' \\
        -H "X-API-KEY: $admin_key" -X GET
        ''')
    assert r.status == 200 and [i["key"] for i in r.json()["list"]] == ["/apisix/routes/a"], r


def test_admin_api_v3_credential(shared):
    doc = shared
    # "Credential", "Example API usage" (prerequisite: consumer jack, PUT here). The page
    # prints 200 and the stored value; a PUT that creates the credential answers 201
    # (resource.lua; COMPAT.md), with the page's key and value.
    assert doc.admin("PUT", "/consumers", {"username": "jack"}).status == 201
    r = doc.run(V3 + '''/consumers/jack/credentials/auth-one  \\
        -H "X-API-KEY: $admin_key" -X PUT -i -d '
        {
            "plugins": {
                "key-auth": {
                    "key": "auth-one"
                }
            }
        }'
        ''')
    assert r.status == 201, r
    assert r.json()["key"] == "/apisix/consumers/jack/credentials/auth-one", r
    assert value_of(doc, "/consumers/jack/credentials/auth-one")["plugins"] == {
        "key-auth": {"key": "auth-one"}}
    assert "plugins" not in value_of(doc, "/consumers/jack")  # the credential is apart


def test_admin_api_v3_plugins(shared):
    doc = shared
    # "Plugin", "Example API usage": the list, then key-auth's schema as the page prints
    # it (its properties and their defaults; the page's is the schema with _meta injected).
    r = doc.run('''
        curl "http://127.0.0.1:9180/apisix/admin/plugins/list" \\
        -H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1'
        ''')
    assert r.status == 200 and "proxy-rewrite" in r.json(), r
    r = doc.run('curl "http://127.0.0.1:9180/apisix/admin/plugins/key-auth?subsystem=http" '
                "-H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1'")
    assert r.status == 200 and r.json()["type"] == "object", r
    props = r.json()["properties"]
    assert {k: props.get(k) for k in ("header", "query", "hide_credentials")} == {
        "header": {"default": "apikey", "type": "string"},
        "query": {"default": "apikey", "type": "string"},
        "hide_credentials": {"default": False, "type": "boolean"}}, props


def test_admin_api_v3_secrets(shared):
    doc = shared
    # "Secret", "When Secret Manager is Vault": the page prints 200 and the stored value;
    # a PUT that creates the key answers 201 (APISIX's resource.lua; COMPAT.md).
    r = doc.run('''
        curl -i http://127.0.0.1:9180/apisix/admin/secrets/vault/test2 \\
        -H "X-API-KEY: $admin_key" -X PUT -d '
        {
            "uri": "http://xxx/get",
            "prefix" : "apisix",
            "token" : "apisix"
        }'
        ''')
    assert r.status == 201, r
    want = {"id": "vault/test2", "token": "apisix", "prefix": "apisix", "uri": "http://xxx/get"}
    assert r.json()["key"] == "/apisix/secrets/vault/test2", r
    assert {k: r.json()["value"].get(k) for k in want} == want, r
    # "When Secret Manager is AWS" -> 201, the value as printed.
    r = doc.run('''
        curl -i http://127.0.0.1:9180/apisix/admin/secrets/aws/test3 \\
        -H "X-API-KEY: $admin_key" -X PUT -d '
        {
            "endpoint_url": "http://127.0.0.1:4566",
            "region": "us-east-1",
            "access_key_id": "access",
            "secret_access_key": "secret",
            "session_token": "token"
        }'
        ''')
    assert r.status == 201 and r.json()["value"]["id"] == "aws/test3", r
    assert r.json()["value"]["region"] == "us-east-1", r
    # "When Secret Manager is GCP": APISIX stores it. Difference: Sluice knows only the
    # vault and aws managers: 400.
    r = doc.run('''
        curl -i http://127.0.0.1:9180/apisix/admin/secrets/gcp/test4 \\
        -H "X-API-KEY: $admin_key" -X PUT -d '
        {
            "auth_config" : {
                "client_email": "email@apisix.iam.gserviceaccount.com",
                "private_key": "private_key",
                "project_id": "apisix-project",
                "token_uri": "https://oauth2.googleapis.com/token",
                "entries_uri": "https://secretmanager.googleapis.com/v1",
                "scope": ["https://www.googleapis.com/auth/cloud-platform"]
            }
        }'
        ''')
    assert (r.status, r.json()) == (400, {"error_msg": "invalid secret manager: gcp"}), r
    for sid in ("vault/test2", "aws/test3"):  # the shared gateway's wipe does not list secrets
        assert doc.admin("DELETE", "/secrets/" + sid).status == 200


def test_admin_api_v3_schema_validate(shared):
    doc = shared
    # "Schema validation": APISIX answers 400 with the schema error, stores nothing.
    r = doc.run('''
        curl http://127.0.0.1:9180/apisix/admin/schema/validate/routes \\
            -H "X-API-KEY: $admin_key" -X POST -i -d '{
            "uri": 1980,
            "upstream": {
                "scheme": "https",
                "type": "roundrobin",
                "nodes": {
                    "nghttp2.org": 1
                }
            }
        }'
        ''')
    assert (r.status, r.json()) == (400, {"error_msg": 'property "uri" validation failed: '
                                           'wrong type: expected string, got number'}), r


# =========================================================================== terminology
# terminology/route.md (016e6d9), service.md (016e6d9), upstream.md (036fe58),
# consumer.md (036fe58), plugin-config.md (089bdeb), global-rule.md (4b956e2),
# plugin.md (03ba874), script.md (5cfe00e)


def test_terminology_route(shared):
    doc = shared
    # route.md, "Example": the route proxying /index.html to 127.0.0.1:1980 -> 201 Created
    # (the page shows a 2.x body; 3.x answers {"key", "value"}).
    r = doc.run('''
        curl http://127.0.0.1:9180/apisix/admin/routes/1 \\
        -H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1' -X PUT -i -d '
        {
            "uri": "/index.html",
            "upstream": {
                "type": "roundrobin",
                "nodes": {
                    "127.0.0.1:1980": 1
                }
            }
        }'
        ''')
    assert r.status == 201, r
    assert r.json()["key"] == "/apisix/routes/1"
    assert r.json()["value"]["upstream"]["nodes"] == {doc.addr("127.0.0.1:1980"): 1}
    echo = json.loads(get(doc.gw.port, "/index.html").body)
    assert (echo["upstream"], echo["target"]) == ("httpbin.org", "/index.html"), echo


def test_terminology_service(fresh):
    doc = fresh
    # service.md, "Examples" 1: a Service with limit-count (2 per 60 s) -> 201.
    r = doc.run('''
        curl http://127.0.0.1:9180/apisix/admin/services/200 \\
        -H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1' -X PUT -d '
        {
            "plugins": {
                "limit-count": {
                    "count": 2,
                    "time_window": 60,
                    "rejected_code": 503,
                    "key": "remote_addr"
                }
            },
            "upstream": {
                "type": "roundrobin",
                "nodes": {
                    "127.0.0.1:1980": 1
                }
            }
        }'
        ''')
    assert r.status == 201, r
    # 2: routes 100 and 101 bound to it -> 201 each.
    for rid, uri in (("100", "/index.html"), ("101", "/foo/index.html")):
        r = doc.run('''
            curl http://127.0.0.1:9180/apisix/admin/routes/%s \\
            -H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1' -X PUT -d '
            {
                "methods": ["GET"],
                "uri": "%s",
                "service_id": "200"
            }'
            ''' % (rid, uri))
        assert r.status == 201, r
    # Both use the service's upstream and its limit-count.
    assert statuses(doc, "/index.html", 3) == [200, 200, 503]
    # Route 102 has its own limit-count (2000 per 60 s): "the one defined in the Route is
    # given the higher priority"; it keeps the service's upstream.
    r = doc.run('''
        curl http://127.0.0.1:9180/apisix/admin/routes/102 \\
        -H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1' -X PUT -d '
        {
            "uri": "/bar/index.html",
            "id": "102",
            "service_id": "200",
            "plugins": {
                "limit-count": {
                    "count": 2000,
                    "time_window": 60,
                    "rejected_code": 503,
                    "key": "remote_addr"
                }
            }
        }'
        ''')
    assert r.status == 201, r
    got = [get(doc.gw.port, "/bar/index.html") for _ in range(3)]
    assert [(x.status, x.header("X-RateLimit-Limit")) for x in got] == [(200, "2000")] * 3
    assert got[0].json()["upstream"] == "httpbin.org"


def test_terminology_upstream(fresh):
    doc = fresh
    # upstream.md, "Configuration": an Upstream object (chash on remote_addr) -> 201.
    r = doc.run('''
        curl http://127.0.0.1:9180/apisix/admin/upstreams/1 \\
        -H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1' -X PUT -d '
        {
            "type": "chash",
            "key": "remote_addr",
            "nodes": {
                "127.0.0.1:80": 1,
                "foo.com:80": 2
            }
        }'
        ''')
    assert r.status == 201, r
    # A route referencing it by upstream_id (an integer) -> 201; one client, one node.
    r = doc.run('''
        curl http://127.0.0.1:9180/apisix/admin/routes/1 \\
        -H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1' -X PUT -d '
        {
            "uri": "/index.html",
            "upstream_id": 1
        }'
        ''')
    assert r.status == 201, r
    got = {get(doc.gw.port, "/index.html").json()["upstream"] for _ in range(6)}
    assert len(got) == 1, got
    # The upstream bound directly, with limit-count 2 per 60 s -> 201; then 200, 200, 503.
    r = doc.run('''
        curl http://127.0.0.1:9180/apisix/admin/routes/1 \\
        -H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1' -X PUT -d '
        {
            "uri": "/index.html",
            "plugins": {
                "limit-count": {
                    "count": 2,
                    "time_window": 60,
                    "rejected_code": 503,
                    "key": "remote_addr"
                }
            },
            "upstream": {
                "type": "roundrobin",
                "nodes": {
                    "127.0.0.1:1980": 1
                }
            }
        }'
        ''')
    assert r.status == 200, r
    assert statuses(doc, "/index.html", 3) == [200, 200, 503]
    # "Example", the health check: the page's body lacks the comma after "nodes" {...}:
    # APISIX answers 400 "invalid request body: ..." (admin/init.lua); so does Sluice.
    r = doc.run('''
        curl http://127.0.0.1:9180/apisix/admin/routes/1 \\
        -H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1' -X PUT -d '
        {
            "uri": "/index.html",
            "plugins": {
                "limit-count": {
                    "count": 2,
                    "time_window": 60,
                    "rejected_code": 503,
                    "key": "remote_addr"
                }
            },
            "upstream": {
                 "nodes": {
                    "127.0.0.1:1980": 1
                }
                "type": "roundrobin",
                "retries": 2,
                "checks": {
                    "active": {
                        "http_path": "/status",
                        "host": "foo.com",
                        "healthy": {
                            "interval": 2,
                            "successes": 1
                        },
                        "unhealthy": {
                            "interval": 1,
                            "http_failures": 2
                        }
                    }
                }
            }
        }'
        ''')
    assert r.status == 400 and r.json()["error_msg"].startswith("invalid request body"), r
    # "Consumer": a key-auth consumer -> 201 ...
    r = doc.run('''
        curl http://127.0.0.1:9180/apisix/admin/consumers \\
        -H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1' -X PUT -d '
        {
            "username": "jack",
            "plugins": {
               "key-auth": {
                    "key": "auth-jack"
                }
            }
        }'
        ''')
    assert r.status == 201, r
    # ... and route 1 with key-auth, chash on the consumer (route 1 exists: 200).
    r = doc.run('''
        curl http://127.0.0.1:9180/apisix/admin/routes/1 \\
        -H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1' -X PUT -d '
        {
            "plugins": {
                "key-auth": {}
            },
            "upstream": {
                "nodes": {
                    "127.0.0.1:1980": 1,
                    "127.0.0.1:1981": 1
                },
                "type": "chash",
                "hash_on": "consumer"
            },
            "uri": "/server_port"
        }'
        ''')
    assert r.status == 200, r
    # "the consumer_name passed for authentication will be used as the hash value": jack's
    # requests all reach one node.
    cmd = 'curl http://127.0.0.1:9080/server_port -H "apikey: auth-jack"'
    got = [echoed(doc.run(cmd)) for _ in range(6)]
    assert len({e["upstream"] for e in got}) == 1, got
    assert sent_header(got[0], "X-Consumer-Username") == ["jack"], got[0]


def test_terminology_upstream_hash_on(shared):
    doc = shared
    # upstream.md, "Cookie": chash on cookie sid -> 201; one cookie, one node.
    r = doc.run('''
        curl http://127.0.0.1:9180/apisix/admin/routes/1 \\
        -H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1' -X PUT -d '
        {
            "uri": "/hash_on_cookie",
            "upstream": {
                "key": "sid",
                "type": "chash",
                "hash_on": "cookie",
                "nodes": {
                    "127.0.0.1:1980": 1,
                    "127.0.0.1:1981": 1
                }
            }
        }'
        ''')
    assert r.status == 201, r
    cmd = '''
         curl http://127.0.0.1:9080/hash_on_cookie \\
         -H "Cookie: sid=3c183a30cffcda1408daf1c61d47b274"
        '''
    assert len({echoed(doc.run(cmd))["upstream"] for _ in range(4)}) == 1
    # "Header": chash on the Content-Type header -> 201; one header value, one node.
    r = doc.run('''
        curl http://127.0.0.1:9180/apisix/admin/routes/1 \\
        -H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1' -X PUT -d '
        {
            "uri": "/hash_on_header",
            "upstream": {
                "key": "content-type",
                "type": "chash",
                "hash_on": "header",
                "nodes": {
                    "127.0.0.1:1980": 1,
                    "127.0.0.1:1981": 1
                }
            }
        }'
        ''')
    assert r.status == 200, r
    cmd = '''
         curl http://127.0.0.1:9080/hash_on_header \\
         -H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1' \\
         -H "Content-Type: application/json"
        '''
    assert len({echoed(doc.run(cmd))["upstream"] for _ in range(4)}) == 1


def test_terminology_consumer(fresh):
    doc = fresh
    # consumer.md, "Example" 1: a consumer with key-auth and limit-count -> 201 (a new
    # consumer; the page shows no answer).
    r = doc.run('''
        curl http://127.0.0.1:9180/apisix/admin/consumers \\
        -H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1' -X PUT -d '
        {
            "username": "jack",
            "plugins": {
                "key-auth": {
                    "key": "auth-one"
                },
                "limit-count": {
                    "count": 2,
                    "time_window": 60,
                    "rejected_code": 503,
                    "key": "remote_addr"
                }
            }
        }'
        ''')
    assert r.status == 201, r
    # 2: the route with key-auth -> 201.
    r = doc.run('''
        curl http://127.0.0.1:9180/apisix/admin/routes/1 \\
        -H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1' -X PUT -d '
        {
            "plugins": {
                "key-auth": {}
            },
            "upstream": {
                "nodes": {
                    "127.0.0.1:1980": 1
                },
                "type": "roundrobin"
            },
            "uri": "/hello"
        }'
        ''')
    assert r.status == 201, r
    # 3: "the first two return to normal"; "The third test returns 503".
    cmd = "curl http://127.0.0.1:9080/hello -H 'apikey: auth-one' -I"
    assert [doc.run(cmd).status for _ in range(3)] == [200, 200, 503]
    # consumer-restriction, 1: jack on the blacklist (route 1 exists: 200).
    r = doc.run('''
        curl http://127.0.0.1:9180/apisix/admin/routes/1 \\
        -H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1' -X PUT -d '
        {
            "plugins": {
                "key-auth": {},
                "consumer-restriction": {
                    "blacklist": [
                        "jack"
                    ]
                }
            },
            "upstream": {
                "nodes": {
                    "127.0.0.1:1980": 1
                },
                "type": "roundrobin"
            },
            "uri": "/hello"
        }'
        ''')
    assert r.status == 200, r
    # 2: "Repeated tests, all return 403".
    assert [doc.run(cmd).status for _ in range(3)] == [403] * 3


def test_terminology_plugin_config(fresh):
    doc = fresh
    # plugin-config.md: a Plugin Config with limit-count (2 per 60 s) -> 201 ...
    r = doc.run('''
        curl http://127.0.0.1:9180/apisix/admin/plugin_configs/1 -H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1' -X PUT -i -d '
        {
            "desc": "blah",
            "plugins": {
                "limit-count": {
                    "count": 2,
                    "time_window": 60,
                    "rejected_code": 503
                }
            }
        }'
        ''')
    assert r.status == 201, r
    # ... bound to a route by plugin_config_id (an integer) -> 201; its plugins run.
    r = doc.run('''
        curl http://127.0.0.1:9180/apisix/admin/routes/1 -H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1' -X PUT -i -d '
        {
            "uris": ["/index.html"],
            "plugin_config_id": 1,
            "upstream": {
                "type": "roundrobin",
                "nodes": {
                    "127.0.0.1:1980": 1
                }
            }
        }'
        ''')
    assert r.status == 201, r
    assert statuses(doc, "/index.html", 3) == [200, 200, 503]


def test_terminology_plugin_config_merge(fresh):
    doc = fresh
    # plugin-config.md, the merge example (objects shown without commands, PUT here): the
    # plugin config with ip-restriction and limit-count (2) -> 201; the route with its own
    # proxy-rewrite and limit-count (20) -> 201.
    conf = {"desc": "I am plugin_config 1", "plugins": {
        "ip-restriction": {"whitelist": ["127.0.0.0/24", "113.74.26.106"]},
        "limit-count": {"count": 2, "time_window": 60, "rejected_code": 503}}}
    assert doc.admin("PUT", "/plugin_configs/1", conf).status == 201
    route = {"uris": ["/index.html"], "plugin_config_id": 1,
             "upstream": {"type": "roundrobin", "nodes": {doc.addr("127.0.0.1:1980"): 1}},
             "plugins": {"proxy-rewrite": {"uri": "/test/add", "host": "apisix.iresty.com"},
                         "limit-count": {"count": 20, "time_window": 60,
                                         "rejected_code": 503, "key": "remote_addr"}}}
    assert doc.admin("PUT", "/routes/1", route).status == 201
    # "the effective configuration": the route's limit-count (20) wins over the plugin
    # config's (2), proxy-rewrite runs ...
    got = [get(doc.gw.port, "/index.html") for _ in range(3)]
    assert [(x.status, x.header("X-RateLimit-Limit")) for x in got] == [(200, "20")] * 3
    echo = got[0].json()
    assert echo["target"] == "/test/add" and sent_header(echo, "Host") == ["apisix.iresty.com"]
    # ... and the plugin config's ip-restriction applies: a client outside 127.0.0.0/24
    # (127.0.1.1, still loopback) is refused with ip-restriction's 403.
    out = doc.sh('curl -s --interface 127.0.1.1 -w " %{http_code}" '
                 '"http://127.0.0.1:9080/index.html"')
    assert out == '{"message":"Your IP address is not allowed"}\n 403', out


def test_terminology_global_rule(fresh):
    doc = fresh
    # global-rule.md, "Example": limit-count on every request -> 201.
    r = doc.run('''
        curl -X PUT \\
          http://{apisix_listen_address}/apisix/admin/global_rules/1 \\
          -H 'Content-Type: application/json' \\
          -H "X-API-KEY: $admin_key" \\
          -d '{
                "plugins": {
                    "limit-count": {
                        "time_window": 60,
                        "policy": "local",
                        "count": 2,
                        "key": "remote_addr",
                        "rejected_code": 503
                    }
                }
            }'
        ''')
    assert r.status == 201, r
    # "You can also list all the Global rules".
    r = doc.run('curl http://{apisix_listen_address}/apisix/admin/global_rules '
                '-H "X-API-KEY: $admin_key"')
    assert r.status == 200 and r.json()["total"] == 1, r
    assert r.json()["list"][0]["value"]["plugins"]["limit-count"]["count"] == 2
    # It applies to every route (two routes, not on the page, share the one counter).
    for rid in ("a", "b"):
        assert doc.admin("PUT", "/routes/" + rid, {
            "uri": "/" + rid, "upstream": {"nodes": {doc.addr("127.0.0.1:1980"): 1}}}
        ).status == 201
    assert [get(doc.gw.port, p).status for p in ("/a", "/b", "/a")] == [200, 200, 503]


def test_terminology_plugin(shared):
    doc = shared
    # plugin.md, "Dynamically control whether the plugin is executed": the page's route
    # (shown as JSON; PUT here as routes/1) with proxy-rewrite filtered on arg_version.
    route = json.loads(doc.subst('''
        {
            "uri": "/get",
            "plugins": {
                "proxy-rewrite": {
                    "_meta": {
                        "filter": [
                            ["arg_version", "==", "v2"]
                        ]
                    },
                    "uri": "/anything"
                }
            },
            "upstream": {
                "type": "roundrobin",
                "nodes": {
                    "httpbin.org:80": 1
                }
            }
        }'''))
    assert doc.admin("PUT", "/routes/1", route).status == 201
    # Without the parameter the plugin is skipped: upstream /get, Host httpbin.org.
    # (curl fails on the page's stray "/dev/null" URL, exit 3, and goes on to the next.)
    out = doc.sh('curl -v /dev/null http://127.0.0.1:9080/get -H"host:httpbin.org"',
                 check=False)
    echo = json.loads(out.splitlines()[-1])
    assert echo["target"] == "/get" and sent_header(echo, "Host") == ["httpbin.org"], echo
    # With version=v2 it runs: upstream /anything?version=v2.
    out = doc.sh('curl -v /dev/null http://127.0.0.1:9080/get?version=v2 -H"host:httpbin.org"',
                 check=False)
    echo = json.loads(out.splitlines()[-1])
    assert echo["target"] == "/anything?version=v2", echo
    # "Hot reload": PUT /apisix/admin/plugins/reload -> 200.
    r = doc.run('curl http://127.0.0.1:9180/apisix/admin/plugins/reload '
                '-H "X-API-KEY: $admin_key" -X PUT')
    assert r.status == 200, r
    # "Disable the plugin": proxy-rewrite with _meta.disable is skipped.
    route["plugins"]["proxy-rewrite"] = {"_meta": {"disable": True}, "uri": "/anything"}
    assert doc.admin("PUT", "/routes/1", route).status == 200
    assert get(doc.gw.port, "/get?version=v2").json()["target"] == "/get?version=v2"


def test_terminology_plugin_metadata(shared):
    doc = shared
    # plugin-metadata.md (1fed1f9), "Example usage": http-logger's log_format -> APISIX
    # 201 (docs/loggers.md; its effect is tested in test_loggers.py).
    r = doc.run('''
        curl http://127.0.0.1:9180/apisix/admin/plugin_metadata/http-logger \\
        -H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1' -X PUT -d '
        {
            "log_format": {
                "host": "$host",
                "@timestamp": "$time_iso8601",
                "client_ip": "$remote_addr"
            }
        }'
        ''')
    assert r.status in (200, 201), r


def test_terminology_secret(tmp_path, ups):
    # secret.md (05fda0a). "Use environment variables", step 1: JACK_AUTH_KEY=abc is
    # exported before the instance starts (so this test starts its own gateway).
    gw = _gateway(tmp_path / "gw", env={"JACK_AUTH_KEY": "abc"})
    try:
        _terminology_secret(Doc(gw, ups))
    finally:
        _stop(gw)


def _terminology_secret(doc):
    # Step 2: a key-auth consumer whose key is $ENV://JACK_AUTH_KEY -> 201 (a new one).
    r = doc.run('''
        curl http://127.0.0.1:9180/apisix/admin/consumers \\
        -H "X-API-KEY: $admin_key" -X PUT -d '
        {
            "username": "jack",
            "plugins": {
                "key-auth": {
                    "key": "$ENV://JACK_AUTH_KEY"
                }
            }
        }'
        ''')
    assert r.status == 201, r
    # The key is the variable's value, not the reference (a key-auth route, not on the
    # page, to show it): abc authenticates jack.
    assert doc.admin("PUT", "/routes/your_route", {
        "uri": "/your_route", "plugins": {"key-auth": {}},
        "upstream": {"nodes": {doc.addr("127.0.0.1:1980"): 1}}}).status == 201
    echo = echoed(doc.run("curl -i http://127.0.0.1:9080/your_route -H 'apikey: abc'"))
    assert sent_header(echo, "X-Consumer-Username") == ["jack"], echo
    # "Use HashiCorp Vault", step 2: the page's body has a full-width comma after "uri"
    # (not JSON): APISIX answers 400 "invalid request body: ..." and so does Sluice.
    r = doc.run('''
        curl http://127.0.0.1:9180/apisix/admin/secrets/vault/1 \\
        -H "X-API-KEY: $admin_key" -X PUT -d '
        {
            "uri": "https://127.0.0.1:8200"，
            "prefix": "apisix",
            "token": "root"
        }'
        ''')
    assert r.status == 400 and r.json()["error_msg"].startswith("invalid request body"), r
    # The same with an ASCII comma: stored (201).
    r = doc.run('''
        curl http://127.0.0.1:9180/apisix/admin/secrets/vault/1 \\
        -H "X-API-KEY: $admin_key" -X PUT -d '
        {
            "uri": "https://127.0.0.1:8200",
            "prefix": "apisix",
            "token": "root"
        }'
        ''')
    assert r.status == 201, r
    # "Use AWS Secrets Manager", step 2 -> 201.
    r = doc.run('''
        curl http://127.0.0.1:9180/apisix/admin/secrets/aws/1 \\
        -H "X-API-KEY: $admin_key" -X PUT -d '
        {
            "endpoint_url": "http://127.0.0.1:4566",
            "region": "us-east-1",
            "access_key_id": "access",
            "secret_access_key": "secret",
            "session_token": "token"
        }'
        ''')
    assert r.status == 201, r
    # Step 3 of both: key-auth consumers with $secret:// keys -> 200 (jack exists), stored
    # as given. "Verification": APISIX fetches the key ("value") from the manager.
    # Difference: Sluice serves no secret manager yet (docs/admin-api.md: secrets are
    # validated and stored, not served): the reference is named in the log and the key
    # authenticates no request, so the page's key gets key-auth's 401.
    for ref in ("$secret://vault/1/jack/auth-key", "$secret://aws/1/jack/auth-key"):
        r = doc.run('''
            curl http://127.0.0.1:9180/apisix/admin/consumers \\
            -H "X-API-KEY: $admin_key" -X PUT -d '
            {
                "username": "jack",
                "plugins": {
                    "key-auth": {
                        "key": "%s"
                    }
                }
            }'
            ''' % ref)
        assert r.status == 200, r
        assert value_of(doc, "/consumers/jack")["plugins"]["key-auth"]["key"] == ref
        assert wait_until(lambda: ref in doc.gw.log_text()), doc.gw.log_tail()
        r = doc.run('''
            curl -i http://127.0.0.1:9080/your_route -H 'apikey: value'
            ''')
        assert (r.status, r.json()) == (401, {"message": "Invalid API key in request"}), r


def test_terminology_consumer_group(fresh):
    doc = fresh
    # consumer-group.md (02ee41f), "Example": the group company_a with limit-count -> 201.
    r = doc.run('''
        curl http://127.0.0.1:9180/apisix/admin/consumer_groups/company_a \\
        -H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1' -X PUT -d '
        {
            "plugins": {
                "limit-count": {
                    "count": 200,
                    "time_window": 60,
                    "rejected_code": 503,
                    "group": "grp_company_a"
                }
            }
        }'
        ''')
    assert r.status == 201, r
    # A key-auth consumer in that group -> 201.
    r = doc.run('''
        curl http://127.0.0.1:9180/apisix/admin/consumers \\
        -H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1' -X PUT -d '
        {
            "username": "jack",
            "plugins": {
                "key-auth": {
                    "key": "auth-one"
                }
            },
            "group_id": "company_a"
        }'
        ''')
    assert r.status == 201, r
    # The group's quota applies to jack's requests (a key-auth route, not on the page).
    assert doc.admin("PUT", "/routes/1", {
        "uri": "/hello", "plugins": {"key-auth": {}},
        "upstream": {"nodes": {doc.addr("127.0.0.1:1980"): 1}}}).status == 201
    r = get(doc.gw.port, "/hello", headers=[("apikey", "auth-one")])
    assert (r.status, r.header("X-RateLimit-Limit"), r.header("X-RateLimit-Remaining")) == \
        (200, "200", "199"), r
    # "When APISIX can't find the Consumer Group with the group_id ... 400".
    r = doc.admin("PUT", "/consumers", {"username": "jack", "group_id": "company_b"})
    assert r.status == 400 and "company_b" in r.json["error_msg"], r
    # The merge example (objects shown without commands, PUT here): group bar and consumer
    # foo -> 201 each; "the body in response-rewrite keeps world" (a basic-auth route, not
    # on the page, to show it).
    assert doc.admin("PUT", "/consumer_groups/bar", {
        "plugins": {"response-rewrite": {"body": "hello"}}}).status == 201
    assert doc.admin("PUT", "/consumers", {
        "username": "foo", "group_id": "bar",
        "plugins": {"basic-auth": {"username": "foo", "password": "bar"},
                    "response-rewrite": {"body": "world"}}}).status == 201
    assert doc.admin("PUT", "/routes/2", {
        "uri": "/world", "plugins": {"basic-auth": {}},
        "upstream": {"nodes": {doc.addr("127.0.0.1:1980"): 1}}}).status == 201
    assert doc.sh('curl -s -u foo:bar "http://127.0.0.1:9080/world"') == "world"


def test_terminology_credential(fresh):
    doc = fresh
    # credential.md (207617f), "Example" 1: consumer jack without an auth plugin -> 201.
    r = doc.run('''
        curl http://127.0.0.1:9180/apisix/admin/consumers \\
        -H "X-API-KEY: $admin_key" -X PUT -d '
        {
            "username": "jack"
        }'
        ''')
    assert r.status == 201, r
    # 2: two key-auth credentials -> 201 each.
    for name, key in (("key-auth-one", "auth-one"), ("key-auth-two", "auth-two")):
        r = doc.run('''
            curl http://127.0.0.1:9180/apisix/admin/consumers/jack/credentials/%s \\
            -H "X-API-KEY: $admin_key" -X PUT -d '
            {
                "plugins": {
                    "key-auth": {
                        "key": "%s"
                    }
                }
            }'
            ''' % (name, key))
        assert r.status == 201, r
    # 3: the key-auth route -> 201.
    r = doc.run('''
        curl http://127.0.0.1:9180/apisix/admin/routes/1 \\
        -H "X-API-KEY: $admin_key" -X PUT -d '
        {
            "plugins": {
                "key-auth": {}
            },
            "upstream": {
                "nodes": {
                    "127.0.0.1:1980": 1
                },
                "type": "roundrobin"
            },
            "uri": "/hello"
        }'
        ''')
    assert r.status == 201, r
    # 4: "Test the request with the auth-one and auth-two keys, and they both respond
    # correctly": 200 each, as jack, through the credential that matched.
    for name, key in (("key-auth-one", "auth-one"), ("key-auth-two", "auth-two")):
        assert doc.run("curl http://127.0.0.1:9080/hello -H 'apikey: %s' -I" % key).status \
            == 200
        echo = json.loads(get(doc.gw.port, "/hello", headers=[("apikey", key)]).body)
        assert sent_header(echo, "X-Consumer-Username") == ["jack"], echo
        assert sent_header(echo, "X-Credential-Identifier") == [name], echo
    # limit-count for the consumer -> 200 (jack exists).
    r = doc.run('''
        curl http://127.0.0.1:9180/apisix/admin/consumers \\
        -H "X-API-KEY: $admin_key" -X PUT -d '
        {
            "username": "jack",
            "plugins": {
                "limit-count": {
                    "count": 2,
                    "time_window": 60,
                    "rejected_code": 503,
                    "key": "remote_addr"
                }
            }
        }'
        ''')
    assert r.status == 200 and r.json()["value"]["plugins"]["limit-count"]["count"] == 2, r
    # "Requesting the route more than 3 times in a row with each of the two keys, the test
    # returns 503": one quota for jack, whichever key.
    got = [doc.run("curl http://127.0.0.1:9080/hello -H 'apikey: %s' -I" % key).status
           for key in ("auth-one", "auth-two") for _ in range(3)]
    assert got == [200, 200, 503, 503, 503, 503], got


def test_terminology_router(tmp_path, ups):
    # router.md (1e4d4f2), "Configuration": apisix.router.http in config.yaml. Difference:
    # Sluice has one router, APISIX's default radixtree_host_uri; the key is named in the
    # start-up warning (as every unsupported key is), whatever its value.
    gw = _gateway(tmp_path / "gw", config={"apisix": {"router": {"http": "radixtree_uri"}}})
    try:
        assert "apisix.router is not supported yet" in gw.log_text(), gw.log_tail()
        doc = Doc(gw, ups)
        node = {"nodes": {doc.addr("127.0.0.1:1980"): 1}}
        # The page's matching rules (routes PUT here; the page shows none): an absolute
        # match (/foo/bar), a prefix match (/foo* matches /foo/, /foo/a and /foo/b), and
        # "First try an absolute match, if it didn't match, try prefix matching".
        for rid, uri in (("abs", "/foo/bar"), ("pre", "/foo*")):
            assert doc.admin("PUT", "/routes/" + rid, {
                "uri": uri, "upstream": node,
                "plugins": {"proxy-rewrite": {"headers": {"set": {"X-Route": rid}}}}}
            ).status == 201
        for path, rid in (("/foo/bar", "abs"), ("/foo/", "pre"), ("/foo/a", "pre"),
                          ("/foo/b", "pre"), ("/foo/bar/x", "pre")):
            echo = json.loads(get(gw.port, path).body)
            assert sent_header(echo, "X-Route") == [rid], (path, echo)
    finally:
        _stop(gw)


def test_terminology_script(shared):
    doc = shared
    # script.md: a route with a Lua `script` (the page shows only the field; uri and
    # upstream added). APISIX runs the script. Difference: Sluice runs no Lua and refuses
    # the field rather than store a route whose script would never run.
    route = {"uri": "/script", "upstream": {"nodes": {doc.addr("127.0.0.1:1980"): 1}},
             "script": "local _M = {} \n function _M.access(api_ctx) \n ngx.log(ngx.INFO,"
                       "\"hit access phase\") \n end \nreturn _M"}
    r = doc.admin("PUT", "/routes/1", route)
    assert (r.status, r.json) == (
        400, {"error_msg": "invalid configuration: script is not supported"}), r


# =========================================================================== plugins
# plugins/limit-count.md (00f49ad), prometheus.md (0099cc4), proxy-rewrite.md (latest, read
# 2026-12-01), response-rewrite.md (0789f10)

LC_ROUTE = '''
curl "http://127.0.0.1:9180/apisix/admin/routes" -X PUT \\
  -H "X-API-KEY: ${admin_key}" \\
  -d '{
    "id": "limit-count-route",
    "uri": "/get",
    "plugins": {
      "limit-count": {
        "count": 1,
        "time_window": 30,
        "rejected_code": 429,
        "key_type": "var",
        "key": "remote_addr"
      }
    },
    "upstream": {
      "type": "roundrobin",
      "nodes": {
        "httpbin.org:80": 1
      }
    }
  }'
'''


def test_limit_count_by_remote_address(fresh):
    doc = fresh
    # limit-count.md, "Apply Rate Limiting by Remote Address": -> 201; then 200, then 429.
    r = doc.run(LC_ROUTE)
    assert r.status == 201, r
    first = doc.run('curl -i "http://127.0.0.1:9080/get"')
    assert first.status == 200, first
    assert (first.header("X-RateLimit-Limit"), first.header("X-RateLimit-Remaining")) == \
        ("1", "0"), first.headers
    assert doc.run('curl -i "http://127.0.0.1:9080/get"').status == 429


def test_limit_count_by_remote_address_and_consumer(fresh):
    doc = fresh
    # limit-count.md, "Apply Rate Limiting by Remote Address and Consumer Name": consumer
    # john and its key-auth credential, then jane and hers -> 201 each (the credential's id
    # is in the body: APISIX's credentials.lua takes it "from the uri or payload").
    for name in ("john", "jane"):
        r = doc.run('''
            curl "http://127.0.0.1:9180/apisix/admin/consumers" -X PUT \\
              -H "X-API-KEY: ${admin_key}" \\
              -d '{
                "username": "%s"
              }'
            ''' % name)
        assert r.status == 201, r
        r = doc.run('''
            curl "http://127.0.0.1:9180/apisix/admin/consumers/%s/credentials" -X PUT \\
              -H "X-API-KEY: ${admin_key}" \\
              -d '{
                "id": "cred-%s-key-auth",
                "plugins": {
                  "key-auth": {
                    "key": "%s-key"
                  }
                }
              }'
            ''' % (name, name, name))
        assert r.status == 201, r
        assert r.json()["key"] == "/apisix/consumers/%s/credentials/cred-%s-key-auth" % (
            name, name), r
    # The route with key-auth and limit-count on "$remote_addr $consumer_name" -> 201.
    r = doc.run('''
        curl "http://127.0.0.1:9180/apisix/admin/routes" -X PUT \\
          -H "X-API-KEY: ${admin_key}" \\
          -d '{
            "id": "limit-count-route",
            "uri": "/get",
            "plugins": {
              "key-auth": {},
              "limit-count": {
                "count": 1,
                "time_window": 30,
                "rejected_code": 429,
                "key_type": "var_combination",
                "key": "$remote_addr $consumer_name"
              }
            },
            "upstream": {
              "type": "roundrobin",
              "nodes": {
                "httpbin.org:80": 1
              }
            }
          }'
        ''')
    assert r.status == 201, r
    # jane: 200, then 429 within the window; john: 200 (his own quota), then 429.
    for key in ("jane-key", "john-key"):
        cmd = '''curl -i "http://127.0.0.1:9080/get" -H 'apikey: %s\'''' % key
        assert [doc.run(cmd).status for _ in range(2)] == [200, 429], key


def test_limit_count_share_quota_among_routes(fresh):
    doc = fresh
    # limit-count.md, "Share Quota among Routes": a service with limit-count in group srv1
    # -> 201; two routes on it, each rewriting its URI to /get -> 201.
    r = doc.run('''
        curl "http://127.0.0.1:9180/apisix/admin/services" -X PUT \\
          -H "X-API-KEY: ${admin_key}" \\
          -d '{
            "id": "limit-count-service",
            "plugins": {
              "limit-count": {
                "count": 1,
                "time_window": 30,
                "rejected_code": 429,
                "group": "srv1"
              }
            },
            "upstream": {
              "type": "roundrobin",
              "nodes": {
                "httpbin.org:80": 1
              }
            }
          }'
        ''')
    assert r.status == 201, r
    for n in ("1", "2"):
        r = doc.run('''
            curl "http://127.0.0.1:9180/apisix/admin/routes" -X PUT \\
              -H "X-API-KEY: ${admin_key}" \\
              -d '{
                "id": "limit-count-route-%s",
                "service_id": "limit-count-service",
                "uri": "/get%s",
                "plugins": {
                  "proxy-rewrite": {
                    "uri": "/get"
                  }
                }
              }'
            ''' % (n, n))
        assert r.status == 201, r
    # /get1 -> 200 (forwarded as /get); /get2 within 30 s -> 429: one shared quota.
    assert echoed(doc.run('curl -i "http://127.0.0.1:9080/get1"'))["target"] == "/get"
    assert doc.run('curl -i "http://127.0.0.1:9080/get2"').status == 429


def test_limit_count_redis_policies(shared):
    doc = shared
    # limit-count.md, "Share Quota Among APISIX Nodes with a Redis Server" / "... with a
    # Redis Cluster": the routes -> 201 (their Redis addresses are the page's
    # placeholders; test_plugins_redis.py runs the policies against real Redis servers).
    r = doc.run('''
        curl "http://127.0.0.1:9180/apisix/admin/routes" -X PUT \\
          -H "X-API-KEY: ${admin_key}" \\
          -d '{
            "id": "limit-count-route",
            "uri": "/get",
            "plugins": {
              "limit-count": {
                "count": 1,
                "time_window": 30,
                "rejected_code": 429,
                "key": "remote_addr",
                "policy": "redis",
                "redis_host": "192.168.xxx.xxx",
                "redis_port": 6379,
                "redis_password": "p@ssw0rd",
                "redis_database": 1
              }
            },
            "upstream": {
              "type": "roundrobin",
              "nodes": {
                "httpbin.org:80": 1
              }
            }
          }'
        ''')
    assert r.status == 201, r
    r = doc.run('''
        curl "http://127.0.0.1:9180/apisix/admin/routes" -X PUT \\
          -H "X-API-KEY: ${admin_key}" \\
          -d '{
            "id": "limit-count-route",
            "uri": "/get",
            "plugins": {
              "limit-count": {
                "count": 1,
                "time_window": 30,
                "rejected_code": 429,
                "key": "remote_addr",
                "policy": "redis-cluster",
                "redis_cluster_nodes": [
                  "192.168.xxx.xxx:6379",
                  "192.168.xxx.xxx:16379"
                ],
                "redis_password": "p@ssw0rd",
                "redis_cluster_name": "redis-cluster-1",
                "redis_cluster_ssl": true
              }
            },
            "upstream": {
              "type": "roundrobin",
              "nodes": {
                "httpbin.org:80": 1
              }
            }
          }'
        ''')
    assert r.status == 200, r
    assert value_of(doc, "/routes/limit-count-route")["plugins"]["limit-count"][
        "redis_cluster_name"] == "redis-cluster-1"


def test_limit_count_anonymous_consumer(fresh):
    doc = fresh
    # limit-count.md, "Rate Limit with Anonymous Consumer", in the page's order: consumer
    # john (limit-count 3 per 30 s), john's key-auth credential, consumer anonymous
    # (1 per 30 s) -> 201 each.
    consumer = '''
        curl "http://127.0.0.1:9180/apisix/admin/consumers" -X PUT \\
          -H "X-API-KEY: ${admin_key}" \\
          -d '{
            "username": "%s",
            "plugins": {
              "limit-count": {
                "count": %d,
                "time_window": 30,
                "rejected_code": 429
              }
            }
          }'
        '''
    assert doc.run(consumer % ("john", 3)).status == 201
    r = doc.run('''
        curl "http://127.0.0.1:9180/apisix/admin/consumers/john/credentials" -X PUT \\
          -H "X-API-KEY: ${admin_key}" \\
          -d '{
            "id": "cred-john-key-auth",
            "plugins": {
              "key-auth": {
                "key": "john-key"
              }
            }
          }'
        ''')
    assert r.status == 201, r
    assert doc.run(consumer % ("anonymous", 1)).status == 201
    # The route whose key-auth lets unauthenticated requests through as anonymous -> 201.
    r = doc.run('''
        curl "http://127.0.0.1:9180/apisix/admin/routes" -X PUT \\
          -H "X-API-KEY: ${admin_key}" \\
          -d '{
            "id": "key-auth-route",
            "uri": "/anything",
            "plugins": {
              "key-auth": {
                "anonymous_consumer": "anonymous"
              }
            },
            "upstream": {
              "type": "roundrobin",
              "nodes": {
                "httpbin.org:80": 1
              }
            }
          }'
        ''')
    assert r.status == 201, r
    # Five requests with john's key: "200: 3, 429: 2" (the page's wc pads the counts).
    out = doc.sh('''
        resp=$(seq 5 | xargs -I{} curl "http://127.0.0.1:9080/anything" -H 'apikey: john-key' -o /dev/null -s -w "%{http_code}\\n") && \\
          count_200=$(echo "$resp" | grep "200" | wc -l) && \\
          count_429=$(echo "$resp" | grep "429" | wc -l) && \\
          echo "200": $count_200, "429": $count_429
        ''')
    assert out == "200: 3, 429: 2", out
    # Five anonymous requests: "200: 1, 429: 4".
    out = doc.sh('''
        resp=$(seq 5 | xargs -I{} curl "http://127.0.0.1:9080/anything" -o /dev/null -s -w "%{http_code}\\n") && \\
          count_200=$(echo "$resp" | grep "200" | wc -l) && \\
          count_429=$(echo "$resp" | grep "429" | wc -l) && \\
          echo "200": $count_200, "429": $count_429
        ''')
    assert out == "200: 1, 429: 4", out


def test_limit_count_custom_headers(fresh):
    doc = fresh
    # limit-count.md, "Customize Rate Limiting Headers": plugin metadata naming the three
    # headers -> APISIX 201. Difference: Sluice does not support these metadata fields
    # yet and refuses them (400) rather than keep names it would not use.
    r = doc.run('''
        curl "http://127.0.0.1:9180/apisix/admin/plugin_metadata/limit-count" -X PUT \\
          -H "X-API-KEY: ${admin_key}" \\
          -d '{
            "limit_header": "X-Custom-RateLimit-Limit",
            "remaining_header": "X-Custom-RateLimit-Remaining",
            "reset_header": "X-Custom-RateLimit-Reset"
          }'
        ''')
    assert r.status == 400 and "not supported by Sluice yet" in r.json()["error_msg"], r
    # The route -> 201; the request answers 200 with the default header names.
    assert doc.run(LC_ROUTE).status == 201
    r = doc.run('curl -i "http://127.0.0.1:9080/get"')
    assert r.status == 200, r
    assert r.header("X-RateLimit-Limit") == "1" and r.header("X-RateLimit-Remaining") == "0"
    assert 0 < int(r.header("X-RateLimit-Reset")) <= 30, r.headers
    assert r.header("X-Custom-RateLimit-Limit") is None


def test_prometheus(shared):
    doc = shared
    # prometheus.md, "Enabling the Plugin": route 1 on /hello with prometheus -> 201.
    r = doc.run('''
        curl http://127.0.0.1:9080/apisix/admin/routes/1  -H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1' -X PUT -d '
        {
            "uri": "/hello",
            "plugins": {
                "prometheus":{}
            },
            "upstream": {
                "type": "roundrobin",
                "nodes": {
                    "127.0.0.1:80": 1
                }
            }
        }'
        ''')
    assert r.status == 201, r
    for _ in range(4):
        assert get(doc.gw.port, "/hello").status == 200
    # "Fetching metrics": the page's sample has, for route 1 on /hello,
    # apisix_http_status{code="200",route="1",matched_uri="/hello",...,node="127.0.0.1"}.
    line = 'apisix_http_status{code="200",route="1",matched_uri="/hello",matched_host="",' \
           'service="",consumer="",node="127.0.0.1"}'

    def count():
        r = doc.run("curl -i http://127.0.0.1:9091/apisix/prometheus/metrics")
        assert r.status == 200, r
        text = r.body.decode()
        assert "# TYPE apisix_http_latency histogram" in text
        m = re.search("^" + re.escape(line) + r" (\S+)$", text, re.M)
        return float(m.group(1)) if m else 0

    assert wait_until(lambda: count() >= 4), count()
    before = count()
    # "Disable Plugin": the route without it -> 200; its requests are no longer counted.
    r = doc.run('''
        curl http://127.0.0.1:9080/apisix/admin/routes/1  -H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1' -X PUT -d '
        {
            "uri": "/hello",
            "plugins": {},
            "upstream": {
                "type": "roundrobin",
                "nodes": {
                    "127.0.0.1:80": 1
                }
            }
        }'
        ''')
    assert r.status == 200, r
    for _ in range(3):
        assert get(doc.gw.port, "/hello").status == 200
    time.sleep(0.3)  # the log phase runs after the answer
    assert count() == before


RR_ROUTE = '''
curl http://127.0.0.1:9080/apisix/admin/routes/1  -H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1' -X PUT -d '
{
    "methods": ["GET"],
    "uri": "/test/index.html",
    "plugins": {
        "response-rewrite": {
            "body": "{\\"code\\":\\"ok\\",\\"message\\":\\"new json body\\"}",
            "headers": {
                "X-Server-id": 3,
                "X-Server-status": "on",
                "X-Server-balancer_addr": "$balancer_ip:$balancer_port"
            },
            "vars":[
                [ "status","==","200" ]
            ]
        }
    },
    "upstream": {
        "type": "roundrobin",
        "nodes": {
            "127.0.0.1:80": 1
        }
    }
}'
'''


def test_response_rewrite(shared):
    doc = shared
    # response-rewrite.md, "How To Enable" -> 201.
    r = doc.run(RR_ROUTE)
    assert r.status == 201, r
    # "Test Plugin": 200, the three headers (balancer address: the upstream node's) and
    # the new body, whatever the upstream sent.
    r = doc.run("curl -X GET -i  http://127.0.0.1:9080/test/index.html")
    assert r.status == 200, r
    assert (r.header("X-Server-id"), r.header("X-Server-status"),
            r.header("X-Server-balancer_addr")) == ("3", "on", doc.addr("127.0.0.1:80")), r
    assert r.body == b'{"code":"ok","message":"new json body"}', r
    # "Disable Plugin": the route without it -> 200; the upstream's answer comes through.
    r = doc.run('''
        curl http://127.0.0.1:9080/apisix/admin/routes/1  -H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1' -X PUT -d '
        {
            "methods": ["GET"],
            "uri": "/test/index.html",
            "upstream": {
                "type": "roundrobin",
                "nodes": {
                    "127.0.0.1:80": 1
                }
            }
        }'
        ''')
    assert r.status == 200, r
    r = doc.run("curl -X GET -i  http://127.0.0.1:9080/test/index.html")
    assert echoed(r)["target"] == "/test/index.html" and r.header("X-Server-id") is None


def _pr_route(body):
    """proxy-rewrite.md's route command around the page's JSON body."""
    return '''
        curl "http://127.0.0.1:9180/apisix/admin/routes" -X PUT \\
          -H "X-API-KEY: ${admin_key}" \\
          -d '%s'
        ''' % textwrap.dedent(body).strip()


def test_proxy_rewrite_host(shared):
    doc = shared
    # proxy-rewrite.md, "Rewrite Host Header" -> 201; the upstream gets Host myapisix.demo.
    r = doc.run(_pr_route('''
        {
            "id": "proxy-rewrite-route",
            "methods": ["GET"],
            "uri": "/headers",
            "plugins": {
              "proxy-rewrite": {
                "host": "myapisix.demo"
              }
            },
            "upstream": {
              "type": "roundrobin",
              "nodes": {
                "httpbin.org:80": 1
              }
            }
          }'''))
    assert r.status == 201, r
    echo = echoed(doc.run('curl "http://127.0.0.1:9080/headers"'))
    assert sent_header(echo, "Host") == ["myapisix.demo"], echo
    assert sent_header(echo, "X-Forwarded-Host") == ["127.0.0.1"], echo


PR_SET_HEADERS = _pr_route('''
    {
        "id": "proxy-rewrite-route",
        "methods": ["GET"],
        "uri": "/",
        "plugins": {
          "proxy-rewrite": {
            "uri": "/anything",
            "headers": {
              "set": {
                "X-Api-Version": "v1",
                "X-Api-Engine": "apisix"
              }
            }
          }
        },
        "upstream": {
          "type": "roundrobin",
          "nodes": {
            "httpbin.org:80": 1
          }
        }
      }''')
PR_ADD_HEADERS = _pr_route('''
    {
        "id": "proxy-rewrite-route",
        "methods": ["GET"],
        "uri": "/",
        "plugins": {
          "proxy-rewrite": {
            "uri": "/headers",
            "headers": {
              "add": {
                "X-Api-Version": "v1",
                "X-Api-Engine": "apisix"
              }
            }
          }
        },
        "upstream": {
          "type": "roundrobin",
          "nodes": {
            "httpbin.org:80": 1
          }
        }
      }''')
# The pages' request for both examples: its -H sends the header line `"X-Api-Version": "v2"`,
# whose name has quotes in it, so it is not a valid field name (RFC 9110 5.1: a token).
# nginx, and so APISIX and Sluice, drop such a line (ignore_invalid_headers, on by default)
# and serve the request: the page shows a 200.
PR_QUOTED_HEADER = '''curl "http://127.0.0.1:9080/" -H '"X-Api-Version": "v2"\''''


def test_proxy_rewrite_uri_and_set_headers(shared):
    doc = shared
    # proxy-rewrite.md, "Rewrite URI And Set Headers" -> 201. The page's answer: the
    # upstream gets /anything with X-Api-Version v1 (overwriting the client's) and
    # X-Api-Engine apisix. (The page's own request: the test below.)
    r = doc.run(PR_SET_HEADERS)
    assert r.status == 201, r
    echo = echoed(doc.run('''curl "http://127.0.0.1:9080/" -H 'X-Api-Version: v2\''''))
    assert echo["target"] == "/anything", echo
    assert sent_header(echo, "X-Api-Version") == ["v1"], echo
    assert sent_header(echo, "X-Api-Engine") == ["apisix"], echo


def test_proxy_rewrite_uri_and_set_headers_page_request(shared):
    doc = shared
    # proxy-rewrite.md, "Rewrite URI And Set Headers", "Send a request to verify": 200.
    assert doc.run(PR_SET_HEADERS).status == 201
    echo = echoed(doc.run(PR_QUOTED_HEADER))
    assert echo["target"] == "/anything", echo
    assert sent_header(echo, "X-Api-Version") == ["v1"], echo
    assert sent_header(echo, "X-Api-Engine") == ["apisix"], echo


def test_proxy_rewrite_uri_and_append_headers(shared):
    doc = shared
    # proxy-rewrite.md, "Rewrite URI And Append Headers" -> 201. The page's answer
    # ("X-Api-Version": "v1,v2"): the client's value and the added one both reach the
    # upstream (httpbin joins them with a comma). Sent here under the header's real name.
    r = doc.run(PR_ADD_HEADERS)
    assert r.status == 201, r
    echo = echoed(doc.run('''curl "http://127.0.0.1:9080/" -H 'X-Api-Version: v2\''''))
    assert echo["target"] == "/headers", echo
    assert sorted(sent_header(echo, "X-Api-Version")) == ["v1", "v2"], echo
    assert sent_header(echo, "X-Api-Engine") == ["apisix"], echo


def test_proxy_rewrite_uri_and_append_headers_page_request(shared):
    doc = shared
    # proxy-rewrite.md, "Rewrite URI And Append Headers", "Send a request to verify": 200.
    # With the quoted name dropped, only the added v1 can arrive (the page's "v1,v2" could
    # not come from its own request).
    assert doc.run(PR_ADD_HEADERS).status == 201
    echo = echoed(doc.run(PR_QUOTED_HEADER))
    assert echo["target"] == "/headers", echo
    assert sent_header(echo, "X-Api-Version") == ["v1"], echo
    assert sent_header(echo, "X-Api-Engine") == ["apisix"], echo


def test_proxy_rewrite_remove_header(shared):
    doc = shared
    # proxy-rewrite.md, "Remove Existing Header" -> 201; User-Agent is not forwarded.
    r = doc.run(_pr_route('''
        {
            "id": "proxy-rewrite-route",
            "methods": ["GET"],
            "uri": "/headers",
            "plugins": {
              "proxy-rewrite": {
                "headers": {
                  "remove":[
                    "User-Agent"
                  ]
                }
              }
            },
            "upstream": {
              "type": "roundrobin",
              "nodes": {
                "httpbin.org:80": 1
              }
            }
          }'''))
    assert r.status == 201, r
    echo = echoed(doc.run('curl "http://127.0.0.1:9080/headers"'))
    assert sent_header(echo, "User-Agent") == [] and sent_header(echo, "Accept") == ["*/*"]


def test_proxy_rewrite_regex_uri(shared):
    doc = shared
    # proxy-rewrite.md, "Rewrite URI Using RegEx" -> 201; /test/user/agent -> /user-agent.
    r = doc.run(_pr_route('''
        {
            "id": "proxy-rewrite-route",
            "uri": "/test/*",
            "plugins": {
              "proxy-rewrite": {
                "regex_uri": ["^/test/(.*)/(.*)", "/$1-$2"]
              }
            },
            "upstream": {
              "type": "roundrobin",
              "nodes": {
                "httpbin.org:80": 1
              }
            }
          }'''))
    assert r.status == 201, r
    echo = echoed(doc.run('curl "http://127.0.0.1:9080/test/user/agent"'))
    assert echo["target"] == "/user-agent", echo


def test_proxy_rewrite_url_parameters(shared):
    doc = shared
    # proxy-rewrite.md, "Add URL Parameters" -> 201; upstream gets ?arg1=apisix&arg2=plugin.
    r = doc.run(_pr_route('''
        {
            "id": "proxy-rewrite-route",
            "methods": ["GET"],
            "uri": "/get",
            "plugins": {
              "proxy-rewrite": {
                "uri": "/get?arg1=apisix&arg2=plugin"
              }
            },
            "upstream": {
              "type": "roundrobin",
              "nodes": {
                "httpbin.org:80": 1
              }
            }
          }'''))
    assert r.status == 201, r
    echo = echoed(doc.run('curl "http://127.0.0.1:9080/get"'))
    assert echo["target"] == "/get?arg1=apisix&arg2=plugin", echo


def test_proxy_rewrite_method(shared):
    doc = shared
    # proxy-rewrite.md, "Rewrite HTTP Method" -> 201; a GET /get arrives as POST /anything.
    r = doc.run(_pr_route('''
        {
            "id": "proxy-rewrite-route",
            "methods": ["GET"],
            "uri": "/get",
            "plugins": {
              "proxy-rewrite": {
                "uri": "/anything",
                "method":"POST"
              }
            },
            "upstream": {
              "type": "roundrobin",
              "nodes": {
                "httpbin.org:80": 1
              }
            }
          }'''))
    assert r.status == 201, r
    echo = echoed(doc.run('curl "http://127.0.0.1:9080/get"'))
    assert (echo["method"], echo["target"]) == ("POST", "/anything"), echo


def test_proxy_rewrite_consumer_name(shared):
    doc = shared
    # proxy-rewrite.md, "Forward Consumer Names to Upstream": consumer JohnDoe -> 201.
    r = doc.run('''
        curl "http://127.0.0.1:9180/apisix/admin/consumers" -X PUT \\
          -H "X-API-KEY: ${admin_key}" \\
          -d '{
            "username": "JohnDoe"
          }'
        ''')
    assert r.status == 201, r
    # Its key-auth credential -> 201.
    r = doc.run('''
        curl "http://127.0.0.1:9180/apisix/admin/consumers/JohnDoe/credentials" -X PUT \\
          -H "X-API-KEY: ${admin_key}" \\
          -d '{
            "id": "cred-john-key-auth",
            "plugins": {
              "key-auth": {
                "key": "john-key"
              }
            }
          }'
        ''')
    assert r.status == 201, r
    # The route with key-auth and proxy-rewrite -> 201. The page's node "httpbin.org" has
    # no port (80 for http); its stand-in is the one for httpbin.org:80.
    r = doc.run('''
        curl "http://127.0.0.1:9180/apisix/admin/routes" -X PUT \\
          -H "X-API-KEY: ${admin_key}" \\
          -d '{
            "id": "consumer-restricted-route",
            "uri": "/get",
            "plugins": {
              "key-auth": {},
              "proxy-rewrite": {
                "headers": {
                  "set": {
                    "X-Apisix-Consumer": "$consumer_name"
                  },
                  "remove": [ "Apikey" ]
                }
              }
            },
            "upstream" : {
              "nodes": {
                "httpbin.org":1
              }
            }
          }'
        '''.replace('"httpbin.org":1', '"httpbin.org:80":1'))
    assert r.status == 201, r
    # As JohnDoe: 200, the upstream sees X-Apisix-Consumer: JohnDoe and no Apikey.
    echo = echoed(doc.run('''curl -i "http://127.0.0.1:9080/get" -H 'apikey: john-key\''''))
    assert sent_header(echo, "X-Apisix-Consumer") == ["JohnDoe"], echo
    assert sent_header(echo, "Apikey") == [], echo
    # Without the credential: the page says 403 Forbidden; key-auth answers a missing key
    # with 401 (apisix/plugins/key-auth.lua, every version: `return 401, {message = ...}`).
    r = doc.run('curl -i "http://127.0.0.1:9080/get"')
    assert (r.status, r.json()) == (401, {"message": "Missing API key in request"}), r


# --------------------------------------------------------------------------- newer plugin pages
# The newer response-rewrite.md (as stored, 13,784 characters: "Examples" with ${admin_key})
# and prometheus.md (24,107 characters: "Examples", ${ADMIN_API_KEY}).


def test_response_rewrite_header_and_body(shared):
    doc = shared
    # response-rewrite.md, "Rewrite Header and Body" -> 201; 200 with the three headers
    # (headers.set) and the new body, for a 200 from the upstream (vars).
    r = doc.run('''
        curl "http://127.0.0.1:9180/apisix/admin/routes" -X PUT \\
          -H "X-API-KEY: ${admin_key}" \\
          -d '{
            "id": "response-rewrite-route",
            "methods": ["GET"],
            "uri": "/headers",
            "plugins": {
              "response-rewrite": {
                "body": "{\\"code\\":\\"ok\\",\\"message\\":\\"new json body\\"}",
                "headers": {
                  "set": {
                    "X-Server-id": 3,
                    "X-Server-status": "on",
                    "X-Server-balancer-addr": "$balancer_ip:$balancer_port"
                  }
                },
                "vars": [
                  [ "status","==",200 ]
                ]
              }
            },
            "upstream": {
              "type": "roundrobin",
              "nodes": {
                "httpbin.org:80": 1
              }
            }
          }'
        ''')
    assert r.status == 201, r
    r = doc.run('curl -i "http://127.0.0.1:9080/headers"')
    assert r.status == 200, r
    assert (r.header("X-Server-id"), r.header("X-Server-status"),
            r.header("X-Server-balancer-addr")) == ("3", "on", doc.addr("httpbin.org:80")), r
    assert r.body == b'{"code":"ok","message":"new json body"}', r


def test_response_rewrite_regex_filter(shared):
    doc = shared
    # response-rewrite.md, "Rewrite Header With RegEx Filter" -> 201; the body the
    # upstream sent has X-Amzn-Trace-Id replaced by X-Amzn-Trace-Id-Replace.
    r = doc.run('''
        curl "http://127.0.0.1:9180/apisix/admin/routes" -X PUT \\
          -H "X-API-KEY: ${admin_key}" \\
          -d '{
            "id": "response-rewrite-route",
            "methods": ["GET"],
            "uri": "/headers",
            "plugins":{
              "response-rewrite":{
                "filters":[
                  {
                    "regex":"X-Amzn-Trace-Id",
                    "scope":"global",
                    "replace":"X-Amzn-Trace-Id-Replace"
                  }
                ]
              }
            },
            "upstream": {
              "type": "roundrobin",
              "nodes": {
                "httpbin.org:80": 1
              }
            }
          }'
        ''')
    assert r.status == 201, r
    echo = echoed(doc.run('curl -i "http://127.0.0.1:9080/headers"'))
    assert sent_header(echo, "X-Amzn-Trace-Id-Replace") == [
        "Root=1-6500095d-1041b05e2ba9c6b37232dbc7"], echo
    assert sent_header(echo, "X-Amzn-Trace-Id") == [], echo


def test_response_rewrite_base64_body(shared):
    doc = shared
    # response-rewrite.md, "Decode Body from Base64" -> 201; the answer is "Hello World".
    r = doc.run('''
        curl "http://127.0.0.1:9180/apisix/admin/routes" -X PUT \\
          -H "X-API-KEY: ${admin_key}" \\
          -d '{
            "id": "response-rewrite-route",
            "methods": ["GET"],
            "uri": "/get",
            "plugins":{
              "response-rewrite": {
                "body": "SGVsbG8gV29ybGQ=",
                "body_base64": true
                }
            },
            "upstream": {
              "type": "roundrobin",
              "nodes": {
                "httpbin.org:80": 1
              }
            }
          }'
        ''')
    assert r.status == 201, r
    assert doc.sh('curl "http://127.0.0.1:9080/get"') == "Hello World"


def test_response_rewrite_with_key_auth(shared):
    doc = shared
    # response-rewrite.md, "Rewrite Response and Its Connection with Execution Phases":
    # consumer jack -> 201; its key-auth credential -> 201; the route with key-auth and
    # response-rewrite (status 200 and a new body) -> 201.
    r = doc.run('''
        curl "http://127.0.0.1:9180/apisix/admin/consumers" -X PUT \\
          -H "X-API-KEY: ${admin_key}" \\
          -d '{
            "username": "jack"
          }'
        ''')
    assert r.status == 201, r
    r = doc.run('''
        curl "http://127.0.0.1:9180/apisix/admin/consumers/jack/credentials" -X PUT \\
          -H "X-API-KEY: ${admin_key}" \\
          -d '{
            "id": "cred-jack-key-auth",
            "plugins": {
              "key-auth": {
                "key": "jack-key"
              }
            }
          }'
        ''')
    assert r.status == 201, r
    r = doc.run('''
        curl "http://127.0.0.1:9180/apisix/admin/routes" -X PUT \\
           -H "X-API-KEY: ${admin_key}" \\
           -d '{
            "id": "response-rewrite-route",
            "uri": "/get",
            "plugins": {
              "key-auth": {},
              "response-rewrite": {
                "status_code": 200,
                "body": "{\\"code\\": 200, \\"msg\\": \\"success\\"}"
              }
            },
            "upstream": {
              "type": "roundrobin",
              "nodes": {
                "httpbin.org:80": 1
              }
            }
          }'
        ''')
    assert r.status == 201, r
    # With the valid key: 200 {"code": 200, "msg": "success"}.
    r = doc.run('''curl -i "http://127.0.0.1:9080/get" -H 'apikey: jack-key\'''')
    assert (r.status, r.body) == (200, b'{"code": 200, "msg": "success"}'), r
    # Without any key: "still ... 200 OK ... of the same, instead of 401 Unauthorized from
    # the key-auth Plugin" (response-rewrite's header and body filters run after key-auth's
    # answer).
    r = doc.run('curl -i "http://127.0.0.1:9080/get"')
    assert (r.status, r.body) == (200, b'{"code": 200, "msg": "success"}'), r


def test_prometheus_get_metrics(shared):
    doc = shared
    # prometheus.md (newer), "Get APISIX Metrics": the export server answers the text
    # exposition.
    r = doc.run('curl "http://127.0.0.1:9091/apisix/prometheus/metrics"')
    assert r.status == 200, r
    text = r.body.decode()
    assert "# TYPE apisix_node_info gauge" in text and "# TYPE apisix_http_status counter" \
        in text, text[:2000]


def test_prometheus_public_api(tmp_path, ups):
    # prometheus.md (newer), "Expose APISIX Metrics on Public API Endpoint": the export
    # server disabled in config.yaml, then a route with public-api: the metrics are served
    # on 9080 (tests/integration/test_plugins_public_api.py has the plugin's own page).
    gw = _gateway(tmp_path / "gw", config={"plugin_attr": {"prometheus": {
        "enable_export_server": False}}})
    try:
        doc = Doc(gw, ups)
        r = doc.run('''
            curl "http://127.0.0.1:9180/apisix/admin/routes/prometheus-metrics" -X PUT \\
              -H "X-API-KEY: ${ADMIN_API_KEY}" \\
              -d '{
                "uri": "/apisix/prometheus/metrics",
                "plugins": {
                  "public-api": {}
                }
              }'
            ''')
        assert r.status in (200, 201), r
        r = doc.run('curl "http://127.0.0.1:9080/apisix/prometheus/metrics"')
        assert r.status == 200, r
        assert "# TYPE apisix_node_info gauge" in r.body.decode(), r
        assert doc.run('curl "http://127.0.0.1:9091/apisix/prometheus/metrics"').rc == 7, \
            "the export server still listens"  # curl's "failed to connect"
    finally:
        _stop(gw)


def test_prometheus_upstream_health(fresh):
    doc = fresh
    # prometheus.md (newer), "Monitor Upstream Health Statuses": 127.0.0.1:20001 is a node
    # nothing listens on (the gateway's dead port here) -> 201; then apisix_upstream_status
    # shows httpbin.org's node healthy (1) and 127.0.0.1:20001 unhealthy (0).
    dead = doc.gw.dead_port
    r = doc.run('''
        curl "http://127.0.0.1:9180/apisix/admin/routes" -X PUT \\
          -H "X-API-KEY: ${ADMIN_API_KEY}" \\
          -d '{
            "id": "prometheus-route",
            "uri": "/get",
            "plugins": {
              "prometheus": {}
            },
            "upstream": {
              "type": "roundrobin",
              "nodes": {
                "httpbin.org:80": 1,
                "127.0.0.1:20001": 1
              },
              "checks": {
                "active": {
                  "timeout": 5,
                  "http_path": "/status",
                  "healthy": {
                    "interval": 2,
                    "successes": 1
                  },
                  "unhealthy": {
                    "interval": 1,
                    "http_failures": 2
                  }
                },
                "passive": {
                  "healthy": {
                    "http_statuses": [200, 201],
                    "successes": 3
                  },
                  "unhealthy": {
                    "http_statuses": [500],
                    "http_failures": 3,
                    "tcp_failures": 3
                  }
                }
              }
            }
          }'
        ''')
    assert r.status == 201, r
    up = doc.ups[0]
    want = ['apisix_upstream_status{name="/apisix/routes/prometheus-route",ip="127.0.0.1",'
            'port="%d"} %d' % (port, v) for port, v in ((up.port, 1), (dead, 0))]

    def lines():
        text = doc.run('curl "http://127.0.0.1:9091/apisix/prometheus/metrics"').body.decode()
        return [line for line in want if line in text.splitlines()]

    assert wait_until(lambda: lines() == want, timeout=15), lines()


def test_prometheus_extra_labels(tmp_path, ups):
    # prometheus.md (newer), "Add Extra Labels for Metrics": config.yaml's
    # plugin_attr.prometheus.metrics.http_status.extra_labels, a route named extra-label,
    # a request, and the metric with upstream_addr and route_name labels after the
    # standard ones.
    gw = _gateway(tmp_path / "gw", config={"plugin_attr": {"prometheus": {"metrics": {
        "http_status": {"extra_labels": [{"upstream_addr": "$upstream_addr"},
                                         {"route_name": "$route_name"}]}}}}})
    try:
        doc = Doc(gw, ups)
        assert "not supported" not in gw.log_text(), gw.log_tail()
        r = doc.run('''
            curl "http://127.0.0.1:9180/apisix/admin/routes" -X PUT \\
              -H "X-API-KEY: ${ADMIN_API_KEY}" \\
              -d '{
                "id": "prometheus-route",
                "uri": "/get",
                "name": "extra-label",
                "plugins": {
                  "prometheus": {}
                },
                "upstream": {
                  "nodes": {
                    "httpbin.org:80": 1
                  }
                }
              }'
            ''')
        assert r.status == 201, r
        assert doc.run('curl -i "http://127.0.0.1:9080/get"').status == 200
        line = 'apisix_http_status{code="200",route="prometheus-route",matched_uri="/get",' \
               'matched_host="",service="",consumer="",node="127.0.0.1",' \
               'upstream_addr="%s",route_name="extra-label"} 1' % doc.addr("httpbin.org:80")

        def found():
            r = doc.run('curl "http://127.0.0.1:9091/apisix/prometheus/metrics"')
            return line in r.body.decode().splitlines()

        assert wait_until(found), "no %s" % line
    finally:
        _stop(gw)


def test_prometheus_stream_route(shared):
    doc = shared
    # prometheus.md (newer), "Monitor TCP/UDP Traffic with Prometheus": a stream route with
    # prometheus (stream_plugins enabled in the page's config.yaml). Difference: Sluice
    # serves no stream proxy and has no stream plugins: the plugin is refused by name.
    r = doc.run('''
        curl "http://127.0.0.1:9180/apisix/admin/stream_routes" -X PUT \\
          -H "X-API-KEY: ${ADMIN_API_KEY}" \\
          -d '{
            "id": "prometheus-route",
            "plugins": {
              "prometheus":{}
            },
            "upstream": {
              "type": "roundrobin",
              "nodes": {
                "httpbin.org:80": 1
              }
            }
          }'
        ''')
    refused_plugin(r, "prometheus")
