"""Issue 8, item 6: Admin safety.

1. Every Admin API route, enumerated programmatically, is refused without credentials: 401
   `missing apikey` with no key, `wrong apikey` with a wrong one (header, ?api_key=, cookie
   x_api_key), on the admin port and under /apisix/admin on the proxy port; the store is
   unchanged afterwards (every kind's list compared with the admin key before and after).
2. No key or secret is echoed: a wrong key never comes back in a header or body, a 401 never
   carries a configured key, malformed JSON gets `invalid request body: ...` without the JSON
   library's or the store's own text, and the log holds no key.
3. Trusted proxies (nginx's realip: nginx_config.http.real_ip_from / real_ip_header /
   real_ip_recursive): only a TCP peer inside real_ip_from may name the client, for routing
   (remote_addrs), allow_admin and the X-Real-IP / X-Forwarded-For sent upstream. Sluice's
   default trusts nobody.

test_admin_auth.py covers the keys, roles and allow_admin on a handful of routes; this file
is the exhaustive sweep and the proxy-header trust.

One admin gateway serves the whole sweep (module scope) so that its ~930 test ids stay cheap.
"""

import json
import os
import re
import subprocess

import pytest

from fake_upstream import FakeUpstream
from harness import (OMIT, WELL_KNOWN_ADMIN_KEY, AdminClient, Client, Gateway, admin_request,
                     admin_route, admin_upstream, http, route, sorted_list)

DEAD = "127.0.0.1:1"  # upstream node of stored objects that never carry traffic
# APISIX's error_msg and the start of its description, then how to pass a key and where the
# keys live (APISIX's getting-started runs without a key; Sluice never does).
KEY_HINT = (": send an admin key in the X-API-KEY header (or as ?api_key=); the keys are "
            "deployment.admin.admin_key in conf/config.yaml, where the shipped file has "
            "APISIX's well-known default key (accepted from loopback clients only)")
MISSING = {"error_msg": "failed to check token", "description": "missing apikey" + KEY_HINT}
WRONG = {"error_msg": "failed to check token", "description": "wrong apikey" + KEY_HINT}
WRONG_KEY = "wrong-key-SECRET123"
SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "runtime error:", "ERROR: LeakSanitizer",
                     "WARNING: ThreadSanitizer")

KINDS = ["routes", "services", "upstreams", "consumers", "ssls", "global_rules",
         "plugin_configs", "plugin_metadata", "stream_routes", "protos", "consumer_groups",
         "secrets"]
# The id of "one" object: secrets are addressed <manager>/<id>.
ONE = {k: "1" for k in KINDS}
ONE["secrets"] = "vault/1"


# --------------------------------------------------------------------------- helpers


def _make_cert(d):
    """A self-signed EC certificate and key (PEM) for test.com (EC: fast to generate)."""
    crt, key = os.path.join(d, "c.pem"), os.path.join(d, "k.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "30",
                    "-subj", "/CN=test.com", "-addext", "subjectAltName=DNS:test.com",
                    "-keyout", key, "-out", crt], check=True, capture_output=True)
    with open(crt) as c, open(key) as k:
        return c.read(), k.read()


def body_for(kind, cert, n=1):
    """A valid body for `kind` (so that a write let through would really land); the route
    body for kinds that have no valid body here (plugin_metadata: no plugin exists)."""
    if kind == "services":
        return {"name": "s%d" % n, "upstream": admin_upstream(DEAD)}
    if kind == "upstreams":
        return admin_upstream(DEAD, name="u%d" % n)
    if kind == "consumers":
        return {"username": "1", "desc": "d%d" % n}
    if kind in ("plugin_configs", "consumer_groups"):
        return {"plugins": {}, "desc": "d%d" % n}
    if kind == "global_rules":
        return {"plugins": {}}
    if kind == "ssls":
        return {"cert": cert[0], "key": cert[1], "snis": ["n%d.test.com" % n]}
    if kind == "stream_routes":
        return {"server_port": 9100 + n, "upstream": admin_upstream(DEAD)}
    if kind == "protos":
        return {"content": 'syntax = "proto3"; package p%d; message A { string a = 1; }' % n}
    if kind == "secrets":
        return {"uri": "http://127.0.0.1:8200", "prefix": "kv/apisix%d" % n,
                "token": "vault-token-%d" % n}
    return admin_route("/safety/%d" % n, DEAD, name="r%d" % n)


def _sub_path(kind):
    """A sub path PATCH would really write on (desc exists on these kinds), else sub/path."""
    if kind in ("routes", "services", "upstreams", "consumers", "plugin_configs",
                "consumer_groups"):
        return "desc"
    return "sub/path"


def _enumerate():
    """Every admin request to try: (id, method, path, body_kind, kinds_it_could_touch).

    body_kind: None (no body), a kind name (that kind's valid body) or "route"."""
    out = []
    for k in KINDS:
        one = "/%s/%s" % (k, ONE[k])
        sub = "%s/%s" % (one, _sub_path(k))
        out += [("%s-list" % k, "GET", "/" + k, None, [k]),
                ("%s-get" % k, "GET", one, None, [k]),
                ("%s-put" % k, "PUT", one, k, [k]),
                ("%s-post" % k, "POST", "/" + k, k, [k]),
                ("%s-patch" % k, "PATCH", one, k, [k]),
                ("%s-patch-sub" % k, "PATCH", sub, "desc", [k]),
                ("%s-patch-sub-path" % k, "PATCH", one + "/sub/path", "desc", [k]),
                ("%s-delete" % k, "DELETE", one, None, [k])]
    everything = list(KINDS)
    out += [
        ("plugins-list", "GET", "/plugins/list", None, everything),
        ("plugins-one", "GET", "/plugins/x", None, everything),
        ("plugins-all", "GET", "/plugins?all=true", None, everything),
        ("plugins-reload", "PUT", "/plugins/reload", None, everything),
        ("root", "GET", "/apisix/admin", None, everything),
        ("root-slash", "GET", "/apisix/admin/", None, everything),
        ("unknown-kind-get", "GET", "/widgets/1", None, everything),
        ("unknown-kind-put", "PUT", "/widgets/1", "route", everything),
        ("dotdot-get", "GET", "/apisix/admin/routes/../upstreams", None, everything),
        ("dotdot-delete", "DELETE", "/apisix/admin/routes/../upstreams/1", None, everything),
        ("dotdot-put", "PUT", "/apisix/admin/upstreams/../routes/1", "route", everything),
        ("pct-dotdot-get", "GET", "/apisix/admin/routes/%2e%2e/upstreams", None, everything),
        ("dot-get", "GET", "/apisix/admin/./routes", None, everything),
        ("trailing-slash-list", "GET", "/apisix/admin/routes/", None, everything),
        ("trailing-slash-put", "PUT", "/apisix/admin/routes/1/", "route", everything),
        ("trailing-slash-delete", "DELETE", "/apisix/admin/routes/1/", None, everything),
        ("double-slash-list", "GET", "/apisix/admin//routes", None, everything),
        ("double-slash-delete", "DELETE", "/apisix/admin//routes/1", None, everything),
        ("double-slash-id-put", "PUT", "/apisix/admin/routes//1", "route", everything),
        ("double-slash-post", "POST", "/apisix/admin/routes//", "route", everything),
    ]
    return out


REQUESTS = _enumerate()
CREDENTIALS = ["none", "header", "query", "cookie"]
PORTS = ["admin-port", "proxy-port"]


def _with_query(path, q):
    return path + ("&" if "?" in path else "?") + q


def _body(body_kind, cert):
    if body_kind is None:
        return None
    if body_kind == "desc":
        return "changed-by-an-intruder"
    if body_kind == "route":
        return admin_route("/intruder", DEAD)
    return body_for(body_kind, cert, n=7)


def _send(port, method, path, body, cred, key=WRONG_KEY):
    headers = []
    if cred == "header":
        headers.append(("X-API-KEY", key))
    elif cred == "query":
        path = _with_query(path, "api_key=" + key)
    elif cred == "cookie":
        headers.append(("Cookie", "a=b; x_api_key=%s" % key))
    return admin_request(port, method, path, body=body, key=None, headers=headers)


def _snapshot(client, kinds=KINDS):
    """Every kind's list with the admin key (keys, values, revisions), in key order."""
    out = {}
    for k in kinds:
        r = client.request("GET", "/" + k)
        assert r.status == 200, "GET /%s with the admin key: %r" % (k, r)
        out[k] = sorted_list(r.json)
    return out


def _finish(gw):
    """Stops a gateway we started (SIGTERM by PID); fails on a sanitizer report or an
    unclean exit."""
    was_alive = gw.alive()
    rc = gw.stop()
    log = gw.log_text()
    print("\n--- sluice log (%s, exit %s) ---\n%s" % (gw.dir, rc,
                                                     "\n".join(log.splitlines()[-60:])))
    problems = [m for m in SANITIZER_MARKERS if m in log]
    assert not problems, "sanitizer report in the gateway's log: %s" % problems
    assert not was_alive or rc == 0, "gateway exited with %r on SIGTERM" % (rc,)


def _assert_no_secret(raw, keys, what):
    low = raw.lower()
    for k in keys:
        if k:
            assert k.lower().encode() not in low, "%s echoes %r: %r" % (what, k, raw[:600])


# --------------------------------------------------------------------------- module gateway


class Sweep:
    """The shared admin gateway, seeded with one object of every kind that has a body."""

    def __init__(self, gw, cert):
        self.gw = gw
        self.cert = cert
        self.client = AdminClient(gw.admin_port, key=gw.admin_key)
        for k in KINDS:
            if k == "plugin_metadata":
                continue  # no plugin exists, so no metadata can be stored
            path = "/consumers" if k == "consumers" else "/%s/%s" % (k, ONE[k])
            r = self.client.request("PUT", path, body_for(k, cert))
            assert r.status in (200, 201), "seeding %s: %r" % (k, r)
        self.baseline = _snapshot(self.client)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    d = tmp_path_factory.mktemp("safety-sweep")
    cert = _make_cert(str(d))
    gw = Gateway(d / "gw", admin=True, workers=2)
    gw.start()
    try:
        s = Sweep(gw, cert)
        yield s
        s.client.close()
    finally:
        _finish(gw)


# --------------------------------------------------------------------------- 1. refused


def test_store_is_seeded(sweep):
    """The sweep is meaningful only if DELETE/PUT/PATCH of id 1 would change something."""
    for k in KINDS:
        if k == "plugin_metadata":
            continue
        assert sweep.baseline[k]["total"] == 1, "%s not seeded: %r" % (k, sweep.baseline[k])


@pytest.mark.parametrize("cred", CREDENTIALS)
@pytest.mark.parametrize("where", PORTS)
@pytest.mark.parametrize("rid,method,path,body_kind,kinds", REQUESTS,
                         ids=[r[0] for r in REQUESTS])
def test_refused_without_credentials(sweep, rid, method, path, body_kind, kinds, where, cred):
    gw = sweep.gw
    port = gw.admin_port if where == "admin-port" else gw.port
    full = path if path.startswith("/apisix/") else "/apisix/admin" + path
    r = _send(port, method, full, _body(body_kind, sweep.cert), cred)
    expected = MISSING if cred == "none" else WRONG
    if rid == "pct-dotdot-get":
        # Escaped dot segments are refused by the request parser before any route or the
        # Admin API sees the path (docs/routing.md): a 400, earlier than the key check.
        expected, want = {"error_msg": "400 Bad Request"}, 400
    else:
        want = 401
    assert r.status == want, "%s %s (%s, %s): %r" % (method, full, where, cred, r)
    assert r.json == expected, r
    assert r.body.endswith(b"\n"), r
    # 2. Nothing secret comes back: not the key we sent, not a configured key.
    _assert_no_secret(r.resp.raw_head + r.body, [WRONG_KEY, gw.admin_key, gw.viewer_key],
                      "a 401")
    assert _snapshot(sweep.client, kinds) == {k: sweep.baseline[k] for k in kinds}, \
        "%s %s without a valid key changed the store" % (method, full)


def test_control_every_enumerated_request_passes_auth_with_the_key(tmp_path, sweep):
    """The control for the sweep: with the admin key, none of these requests is refused by
    auth (so each 401 above comes from the key check, not from a path nobody serves)."""
    gw = Gateway(tmp_path / "control", admin=True)
    gw.start()
    try:
        with AdminClient(gw.admin_port, key=gw.admin_key) as c:
            for k in KINDS:
                if k != "plugin_metadata":
                    path = "/consumers" if k == "consumers" else "/%s/%s" % (k, ONE[k])
                    assert c.request("PUT", path, body_for(k, sweep.cert)).status in (200, 201)
        wrote = []
        for where, port in (("admin-port", gw.admin_port), ("proxy-port", gw.port)):
            for rid, method, path, body_kind, _ in REQUESTS:
                full = path if path.startswith("/apisix/") else "/apisix/admin" + path
                r = admin_request(port, method, full, body=_body(body_kind, sweep.cert),
                                  key=gw.admin_key)
                assert r.status not in (401, 403), "%s %s (%s) refused with the admin key: " \
                    "%r" % (method, full, where, r)
                if method != "GET" and 200 <= r.status < 300:
                    wrote.append(rid)
        # The writes the sweep tries really write when allowed (PUT/PATCH/DELETE of id 1).
        for k in ("routes", "upstreams", "consumers", "secrets"):
            for verb in ("put", "patch", "patch-sub", "delete"):
                if (k, verb) in (("secrets", "patch-sub"),):
                    continue
                assert "%s-%s" % (k, verb) in wrote, "%s-%s did not write with the key" % (
                    k, verb)
    finally:
        _finish(gw)


# --------------------------------------------------------------------------- 2. no echo


@pytest.mark.parametrize("where", PORTS)
def test_wrong_key_everywhere_at_once_is_not_echoed(sweep, where):
    gw = sweep.gw
    port = gw.admin_port if where == "admin-port" else gw.port
    r = admin_request(port, "PUT", "/apisix/admin/routes/1?api_key=" + WRONG_KEY,
                      body=admin_route("/x", DEAD), key=WRONG_KEY,
                      headers=[("Cookie", "x_api_key=" + WRONG_KEY)])
    assert r.status == 401 and r.json == WRONG, r
    _assert_no_secret(r.resp.raw_head + r.body, [WRONG_KEY, gw.admin_key, gw.viewer_key],
                      "a 401")
    assert _snapshot(sweep.client, ["routes"])["routes"] == sweep.baseline["routes"]


def test_viewer_refusal_does_not_echo_keys(sweep):
    gw = sweep.gw
    r = gw.admin("DELETE", "/routes/1", key=gw.viewer_key)
    assert r.status in (401, 403), r
    _assert_no_secret(r.resp.raw_head + r.body, [gw.admin_key, gw.viewer_key], "a refusal")
    assert _snapshot(sweep.client, ["routes"])["routes"] == sweep.baseline["routes"]


MALFORMED = {
    "open-brace": b"{",
    "truncated": b'{"uri":',
    "trailing-garbage": b'{"uri":"/a","upstream":{"nodes":{"127.0.0.1:1":1}}}garbage',
    "bad-literal": b"nul",
    "open-array": b"[1,2",
    "not-utf8": b"\xff\xfe{}",
    "lone-surrogate": b'{"uri":"\\ud800"}',
    "single-quotes": b"{'uri':'/a'}",
    "trailing-comma": b'{"uri":"/a",}',
    "nan": b'{"priority":NaN}',
    "deep": b"[" * 200 + b"]" * 200,
    # lua-cjson takes raw control characters inside strings (and so does Sluice, see
    # test_admin_validation.py), but not outside them; a raw NUL is refused everywhere.
    "control-char": b'{"uri":\x01"/a"}',
    "nul-in-string": b'{"uri":"/a\x00"}',
}
LIBRARY_TEXT = ["json.exception", "parse_error", "syntax error while parsing", "nlohmann",
                "sqlite", "exception", "what()", "std::"]


@pytest.mark.parametrize("target", ["PUT /routes/1", "POST /routes", "PATCH /routes/1",
                                    "PATCH /routes/1/desc", "PUT /upstreams/1",
                                    "PUT /secrets/vault/1"])
@pytest.mark.parametrize("name", list(MALFORMED))
def test_malformed_json_gets_no_library_text(sweep, name, target):
    method, path = target.split(" ")
    r = sweep.gw.admin(method, path, raw_body=MALFORMED[name])
    assert r.status == 400, r
    assert isinstance(r.json, dict), r
    assert r.error_msg.startswith("invalid request body: "), r
    low = r.body.lower()
    for word in LIBRARY_TEXT:
        assert word.encode() not in low, "library text %r in %r" % (word, r.body)
    _assert_no_secret(r.resp.raw_head + r.body, [sweep.gw.admin_key, sweep.gw.viewer_key],
                      "a 400")
    kind = path.split("/")[1]
    assert _snapshot(sweep.client, [kind])[kind] == sweep.baseline[kind]


def test_log_holds_no_key(sweep):
    gw = sweep.gw
    for cred in ("header", "query", "cookie"):
        assert _send(gw.admin_port, "GET", "/apisix/admin/routes", None, cred).status == 401
    assert gw.admin("PUT", "/routes/1", raw_body=b"{").status == 400
    log = gw.log_text()
    for k in (WRONG_KEY, gw.admin_key, gw.viewer_key):
        assert k not in log, "the gateway's log holds the key %r" % k


def test_store_unchanged_after_everything(sweep):
    """Runs last in this file: the whole store, every kind, as it was after seeding."""
    assert _snapshot(sweep.client) == sweep.baseline


# --------------------------------------------------------------------------- 3. trusted proxies

# Who the gateway thinks the client is, read off which /who route matched: each route sends to
# its own listener of one echo upstream, and the echo reports the port it was reached on.
IDENTITIES = [("127.0.0.1", ["127.0.0.1"], 10), ("1.1.1.1", ["1.1.1.1"], 10),
              ("10.0.0.5", ["10.0.0.5"], 10), ("10.0.0.9", ["10.0.0.9"], 10),
              ("10.1.2.3", ["10.1.2.3"], 10), ("2001:db8::7", ["2001:db8::/32"], 10),
              ("other-10/8", ["10.0.0.0/8"], 5)]


class Echoes:
    def __init__(self):
        self.up = FakeUpstream(name="realip")
        self.port_of = {"lo": self.up.port}
        for name, _, _ in IDENTITIES:
            self.port_of[name] = self.up.add_listener()
        self.port_of["ten"] = self.up.add_listener()
        self.name_of = {p: n for n, p in self.port_of.items()}

    def node(self, name):
        return "127.0.0.1:%d" % self.port_of[name]

    def routes(self):
        rs = [route("/lo", self.node("lo"), rid="lo", remote_addrs=["127.0.0.1"]),
              route("/ten", self.node("ten"), rid="ten", remote_addrs=["10.0.0.0/8"])]
        for i, (name, addrs, prio) in enumerate(IDENTITIES):
            rs.append(route("/who", self.node(name), rid="who%d" % i, remote_addrs=addrs,
                            priority=prio))
        return rs


class Seen:
    """What one proxied request looked like: status, which route, what the upstream got."""

    def __init__(self, resp, echoes):
        self.resp = resp
        self.status = resp.status
        self.who = self.x_real_ip = self.xff = None
        if resp.status == 200:
            d = json.loads(resp.body)
            self.who = echoes.name_of.get(d["port"])
            hdrs = d["headers"]
            self.x_real_ip = [v for k, v in hdrs if k.lower() == "x-real-ip"]
            self.xff = [v for k, v in hdrs if k.lower() == "x-forwarded-for"]

    def xff_last(self):
        assert len(self.xff) == 1, "X-Forwarded-For sent upstream as %r" % (self.xff,)
        return self.xff[0].split(",")[-1].strip()

    def __repr__(self):
        return "<Seen %d who=%s x-real-ip=%r xff=%r body=%r>" % (
            self.status, self.who, self.x_real_ip, self.xff, self.resp.body[:200])


class Fleet:
    """Gateways started on first use, one per configuration, all stopped at module end."""

    def __init__(self, base):
        self.base = base
        self.echoes = Echoes()
        self.gws = {}
        self.failed = {}

    def _get(self, name, http_conf, **kw):
        """The running gateway `name`; a start that failed fails every later use too."""
        if name in self.failed:
            raise AssertionError("gateway %s failed to start earlier: %s" % (
                name, self.failed[name]))
        if name not in self.gws:
            cfg = {"nginx_config": {"http": http_conf}} if http_conf is not None else None
            gw = Gateway(os.path.join(self.base, name), config=cfg, **kw)
            self.gws[name] = gw
            try:
                gw.start()
            except AssertionError as e:
                self.failed[name] = str(e)[:2000]
                raise
        return self.gws[name]

    def yaml_gw(self, name, http_conf):
        return self._get(name, http_conf, routes=self.echoes.routes())

    def admin_gw(self, name, http_conf, **kw):
        return self._get(name, http_conf, admin=True, **kw)

    def ask(self, gw, path, headers=()):
        return Seen(http(gw.port, "GET", path, headers=list(headers)), self.echoes)

    def close(self):
        errors = []
        for gw in self.gws.values():
            try:
                _finish(gw)
            except AssertionError as e:
                errors.append(str(e))
        self.echoes.up.stop()
        assert not errors, errors


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    f = Fleet(str(tmp_path_factory.mktemp("safety-realip")))
    yield f
    f.close()


TRUST_LO = {"real_ip_from": ["127.0.0.1"]}
XFF_TRUST = {"real_ip_from": ["127.0.0.1", "10.0.0.0/8"], "real_ip_header": "X-Forwarded-For"}


def _assert_peer_kept(seen, why):
    """The gateway still took 127.0.0.1 (the TCP peer) for the client."""
    assert seen.status == 200 and seen.who == "127.0.0.1", "%s: %r" % (why, seen)
    assert seen.x_real_ip == ["127.0.0.1"], "%s: X-Real-IP upstream %r" % (why, seen)
    assert seen.xff_last() == "127.0.0.1", "%s: %r" % (why, seen)


# ---- a. the default trusts nobody


@pytest.mark.parametrize("header", ["X-Real-IP", "X-Forwarded-For"])
def test_default_ignores_forwarding_headers_for_routing(fleet, header):
    gw = fleet.yaml_gw("default", None)
    h = [(header, "10.1.2.3")]
    ten = fleet.ask(gw, "/ten", h)
    assert ten.status == 404, "default config trusted %s from 127.0.0.1: %r" % (header, ten)
    lo = fleet.ask(gw, "/lo", h)
    assert lo.status == 200 and lo.who == "lo", lo
    assert lo.x_real_ip == ["127.0.0.1"], lo
    assert lo.xff_last() == "127.0.0.1", lo
    if header == "X-Forwarded-For":
        assert lo.xff == ["10.1.2.3, 127.0.0.1"], "the client's list is kept, peer appended"
    _assert_peer_kept(fleet.ask(gw, "/who", h), "default, %s" % header)


def test_default_control_routes_match_their_own_clients(fleet):
    """Without headers the peer decides: /lo matches, /ten does not."""
    gw = fleet.yaml_gw("default", None)
    assert fleet.ask(gw, "/ten").status == 404
    assert fleet.ask(gw, "/lo").status == 200


@pytest.mark.parametrize("header", ["X-Real-IP", "X-Forwarded-For"])
@pytest.mark.parametrize("where", PORTS)
def test_default_allow_admin_ignores_forwarding_headers(fleet, header, where):
    gw = fleet.admin_gw("admin-default", None, allow_admin=["10.0.0.0/8"])
    port = gw.admin_port if where == "admin-port" else gw.port
    r = admin_request(port, "GET", "/apisix/admin/routes", key=gw.admin_key,
                      headers=[(header, "10.1.2.3")])
    assert r.status == 403, "allow_admin 10/8 let 127.0.0.1 in via %s: %r" % (header, r)
    r = admin_request(port, "PUT", "/apisix/admin/routes/1", body=admin_route("/x", DEAD),
                      key=gw.admin_key, headers=[(header, "10.1.2.3")])
    assert r.status == 403, r


# ---- b. real_ip_from 127.0.0.1, X-Real-IP


def test_trusted_x_real_ip_decides_routing_and_upstream_headers(fleet):
    gw = fleet.yaml_gw("trust-lo", TRUST_LO)
    h = [("X-Real-IP", "10.1.2.3")]
    ten = fleet.ask(gw, "/ten", h)
    assert ten.status == 200 and ten.who == "ten", ten
    assert ten.x_real_ip == ["10.1.2.3"], ten
    assert ten.xff_last() == "10.1.2.3", ten
    assert fleet.ask(gw, "/lo", h).status == 404, "the peer still matched remote_addrs"
    who = fleet.ask(gw, "/who", h)
    assert who.who == "10.1.2.3" and who.x_real_ip == ["10.1.2.3"], who
    # Without the header the peer is the client, as before.
    assert fleet.ask(gw, "/ten").status == 404
    _assert_peer_kept(fleet.ask(gw, "/who"), "trusted peer, no header")


def test_trusted_x_real_ip_ipv6(fleet):
    gw = fleet.yaml_gw("trust-lo", TRUST_LO)
    who = fleet.ask(gw, "/who", [("X-Real-IP", "2001:db8::7")])
    assert who.who == "2001:db8::7", who
    assert who.x_real_ip == ["2001:db8::7"], who


@pytest.mark.parametrize("value", ["nonsense", "10.1.2.3, 10.1.2.4", "10.1.2.3:80", "",
                                   "10.1.2.3 10.1.2.4", "10.1.2", "010.1.2.3x", "::g",
                                   "10.1.2.3/8", "[2001:db8::7]", "10.1.2.3;", "two-lines"])
def test_trusted_garbage_x_real_ip_keeps_the_peer(fleet, value):
    """X-Real-IP must be exactly one valid address (stricter than nginx, which would take
    "10.1.2.3:80" with its port, the last of a list, and the first of two lines)."""
    gw = fleet.yaml_gw("trust-lo", TRUST_LO)
    h = [("X-Real-IP", value)]
    if value == "two-lines":
        h = [("X-Real-IP", "10.1.2.3"), ("X-Real-IP", "10.1.2.4")]
    assert fleet.ask(gw, "/ten", h).status == 404, "X-Real-IP %r was taken" % value
    _assert_peer_kept(fleet.ask(gw, "/who", h), "X-Real-IP %r" % value)


def test_trusted_client_is_decided_per_request_on_a_keep_alive_connection(fleet):
    """One connection, several requests: each request's own header decides, nothing of an
    earlier request's client sticks to the connection."""
    gw = fleet.yaml_gw("trust-lo", TRUST_LO)
    steps = [([("X-Real-IP", "10.1.2.3")], "10.1.2.3"), ([], "127.0.0.1"),
             ([("X-Real-IP", "bad")], "127.0.0.1"), ([("X-Real-IP", "1.1.1.1")], "1.1.1.1"),
             ([("X-Real-IP", "10.1.2.3:80")], "127.0.0.1")]
    with Client(gw.port) as c:
        for headers, want in steps:
            seen = Seen(c.request("GET", "/who", headers), fleet.echoes)
            assert seen.who == want and seen.x_real_ip == [want], (headers, seen)


def test_custom_real_ip_header(fleet):
    """real_ip_header may name any header (nginx allows it); the others then name nobody."""
    gw = fleet.yaml_gw("custom-header", {"real_ip_from": ["127.0.0.1"],
                                         "real_ip_header": "X-Client-IP"})
    seen = fleet.ask(gw, "/who", [("x-client-ip", "10.1.2.3")])
    assert seen.who == "10.1.2.3" and seen.x_real_ip == ["10.1.2.3"], seen
    for other in ("X-Real-IP", "X-Forwarded-For"):
        _assert_peer_kept(fleet.ask(gw, "/who", [(other, "10.1.2.3")]),
                          "real_ip_header X-Client-IP, %s sent" % other)


@pytest.mark.parametrize("http_conf,key", [
    ({"real_ip_from": ["127.0.0.1", "not-an-ip"]}, "real_ip_from[1]"),
    ({"real_ip_from": ["10.0.0.0/33"]}, "real_ip_from[0]"),
    ({"real_ip_from": "127.0.0.1"}, "real_ip_from"),
    ({"real_ip_from": ["127.0.0.1"], "real_ip_recursive": "yes"}, "real_ip_recursive"),
], ids=["bad-entry", "bad-prefix", "not-a-list", "bad-recursive"])
def test_bad_trusted_proxy_config_refuses_to_start(tmp_path, http_conf, key):
    """A typo in the trusted list must not start a gateway that trusts something else."""
    gw = Gateway(tmp_path / "gw", config={"nginx_config": {"http": http_conf}})
    gw.start(wait=False)
    rc = gw.wait_exit(10)
    try:
        assert rc is not None and rc != 0, "started with %r (rc %r)" % (http_conf, rc)
        assert "nginx_config.http." + key in gw.log_text(), gw.log_tail()
    finally:
        gw.stop()


def test_trusted_x_real_ip_config_ignores_x_forwarded_for(fleet):
    """real_ip_header is X-Real-IP (the default): an X-Forwarded-For names nobody."""
    gw = fleet.yaml_gw("trust-lo", TRUST_LO)
    h = [("X-Forwarded-For", "10.1.2.3")]
    assert fleet.ask(gw, "/ten", h).status == 404
    who = fleet.ask(gw, "/who", h)
    assert who.who == "127.0.0.1" and who.x_real_ip == ["127.0.0.1"], who
    assert who.xff == ["10.1.2.3, 127.0.0.1"], who


@pytest.mark.parametrize("where", PORTS)
def test_trusted_x_real_ip_decides_allow_admin(fleet, where):
    gw = fleet.admin_gw("admin-trust-lo", TRUST_LO, allow_admin=["10.0.0.0/8"])
    port = gw.admin_port if where == "admin-port" else gw.port
    h = [("X-Real-IP", "10.1.2.3")]
    r = admin_request(port, "GET", "/apisix/admin/routes", key=gw.admin_key, headers=h)
    assert r.status == 200, "X-Real-IP 10.1.2.3 from a trusted peer: %r" % r
    r = admin_request(port, "GET", "/apisix/admin/routes", key=gw.admin_key)
    assert r.status == 403, "no header: 127.0.0.1 is outside allow_admin: %r" % r
    r = admin_request(port, "GET", "/apisix/admin/routes", key=None, headers=h)
    assert r.status == 401 and r.json == MISSING, "admitted, but the key is still needed: %r" % r
    r = admin_request(port, "GET", "/apisix/admin/routes", key=gw.admin_key,
                      headers=[("X-Real-IP", "10.1.2.3:80")])
    assert r.status == 403, "a garbage X-Real-IP must not admit: %r" % r
    r = admin_request(port, "GET", "/apisix/admin/routes", key=gw.admin_key,
                      headers=[("X-Real-IP", "192.0.2.1")])
    assert r.status == 403, "a trusted peer naming an outside client: %r" % r


def test_well_known_key_refused_for_a_forwarded_non_loopback_client(fleet):
    """The well-known key is for loopback clients; behind a trusted proxy on loopback the
    client is the forwarded address, which is not loopback."""
    gw = fleet.admin_gw("admin-wk", TRUST_LO, admin_keys=OMIT,
                        allow_admin=["127.0.0.0/24", "10.0.0.0/8"])
    r = gw.admin("GET", "/routes", key=WELL_KNOWN_ADMIN_KEY)
    assert r.status == 200, "control: loopback with the well-known key: %r" % r
    r = gw.admin("GET", "/routes", key=WELL_KNOWN_ADMIN_KEY,
                 headers=[("X-Real-IP", "10.1.2.3")])
    assert r.status in (401, 403), "the well-known key worked for client 10.1.2.3: %r" % r
    r = gw.admin("PUT", "/routes/1", admin_route("/wk", DEAD), key=WELL_KNOWN_ADMIN_KEY,
                 headers=[("X-Real-IP", "10.1.2.3")])
    assert r.status in (401, 403), r
    assert gw.admin("GET", "/routes", key=WELL_KNOWN_ADMIN_KEY).json["total"] == 0


# ---- c. X-Forwarded-For, recursive and not

NONREC = [False, "off"]
REC = [True, "on"]


def _xff_gw(fleet, recursive):
    conf = dict(XFF_TRUST, real_ip_recursive=recursive)
    return fleet.yaml_gw("xff-%s" % str(recursive).lower(), conf)


@pytest.mark.parametrize("recursive", NONREC + REC, ids=lambda v: "recursive=%r" % (v,))
@pytest.mark.parametrize("xff,nonrec,rec", [
    ("1.1.1.1, 10.0.0.5", "10.0.0.5", "1.1.1.1"),
    ("10.0.0.9, 10.0.0.5", "10.0.0.5", "10.0.0.9"),  # all trusted: the leftmost
    ("10.0.0.9,10.0.0.5", "10.0.0.5", "10.0.0.9"),
    ("1.1.1.1", "1.1.1.1", "1.1.1.1"),
    ("10.0.0.5, 1.1.1.1", "1.1.1.1", "1.1.1.1"),
    ("10.0.0.9, 1.1.1.1, 10.0.0.5", "10.0.0.5", "1.1.1.1"),
    ("10.0.0.9, 127.0.0.1", "127.0.0.1", "10.0.0.9"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_x_forwarded_for_picks_the_client(fleet, recursive, xff, nonrec, rec):
    gw = _xff_gw(fleet, recursive)
    want = rec if recursive in REC else nonrec
    seen = fleet.ask(gw, "/who", [("X-Forwarded-For", xff)])
    assert seen.status == 200 and seen.who == want, \
        "XFF %r, recursive=%r: client should be %s: %r" % (xff, recursive, want, seen)
    assert seen.x_real_ip == [want], seen
    assert seen.xff_last() == want, seen


@pytest.mark.parametrize("recursive", [False, True], ids=["nonrecursive", "recursive"])
def test_x_forwarded_for_over_two_header_lines(fleet, recursive):
    gw = _xff_gw(fleet, recursive)
    seen = fleet.ask(gw, "/who", [("X-Forwarded-For", "1.1.1.1"),
                                  ("X-Forwarded-For", "10.0.0.5")])
    want = "1.1.1.1" if recursive else "10.0.0.5"
    assert seen.who == want and seen.x_real_ip == [want], seen


@pytest.mark.parametrize("recursive", [False, True], ids=["nonrecursive", "recursive"])
def test_x_forwarded_for_config_ignores_x_real_ip(fleet, recursive):
    gw = _xff_gw(fleet, recursive)
    assert fleet.ask(gw, "/ten", [("X-Real-IP", "10.1.2.3")]).status == 404
    _assert_peer_kept(fleet.ask(gw, "/who", [("X-Real-IP", "10.1.2.3")]),
                      "real_ip_header X-Forwarded-For, X-Real-IP sent")


@pytest.mark.parametrize("value", ["nonsense", "1.1.1.1, nonsense", "", ",", "1.1.1.1:80"])
def test_x_forwarded_for_garbage_keeps_the_peer(fleet, value):
    gw = _xff_gw(fleet, False)
    h = [("X-Forwarded-For", value)]
    seen = fleet.ask(gw, "/who", h)
    assert seen.who == "127.0.0.1" and seen.x_real_ip == ["127.0.0.1"], \
        "XFF %r named a client: %r" % (value, seen)


# ---- d. real_ip_from without loopback


@pytest.mark.parametrize("header,conf", [
    ("X-Real-IP", {"real_ip_from": ["192.0.2.0/24"]}),
    ("X-Forwarded-For", {"real_ip_from": ["192.0.2.0/24"], "real_ip_header": "X-Forwarded-For",
                         "real_ip_recursive": True}),
], ids=["x-real-ip", "x-forwarded-for"])
def test_untrusted_peer_headers_ignored(fleet, header, conf):
    gw = fleet.yaml_gw("untrusted-%s" % header.lower(), conf)
    h = [(header, "10.1.2.3")]
    assert fleet.ask(gw, "/ten", h).status == 404, "a peer outside real_ip_from was believed"
    lo = fleet.ask(gw, "/lo", h)
    assert lo.status == 200, lo
    _assert_peer_kept(fleet.ask(gw, "/who", h), "peer outside real_ip_from, %s" % header)
    # The gateway did start with these keys and did not call them unsupported.
    log = gw.log_text()
    assert not re.search(r"real_ip_\w+ is not supported", log), log


def test_real_ip_keys_are_supported(fleet):
    """The trusted gateways above start without naming real_ip_* as unsupported."""
    gw = fleet.yaml_gw("trust-lo", TRUST_LO)
    _xff_gw(fleet, True)
    for g in (gw, fleet.gws["xff-true"]):
        assert not re.search(r"real_ip_\w+ is not supported", g.log_text()), g.log_tail()
