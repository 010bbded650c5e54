"""TLS to upstreams (`scheme: https`): Debian's nginx as the upstream, with certificates made
by `openssl` for the test. Verification on (the CA trusted through
apisix.ssl.ssl_trusted_certificate, or given in tls.ca_certs) and off, a wrong name refused,
the server name the upstream sees, client certificates (inline and by tls.client_cert_id),
kept-alive connections, session resumption, https health checks, and the Admin API's checks.

nginx echoes what it saw in response headers: X-SNI ($ssl_server_name), X-Conn ($connection,
one number per TCP connection), X-Reused ($ssl_session_reused: "r" for a resumed session),
X-Client-Verify and X-Client-DN (the client certificate), X-Node (its port).
"""

import hashlib
import os

import pytest

import harness
from fake_upstream import Download, pattern_crc
from harness import get, parse_samples, scrape
from nginx_tls import NginxTls, make_pki, read_text as _read


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(str(tmp_path_factory.mktemp("pki")))


@pytest.fixture
def make_nginx(tmp_path, pki):
    made = []

    def make(servers, **kw):
        n = NginxTls(tmp_path / ("nginx%d" % len(made)), pki, servers, **kw)
        made.append(n)
        return n

    yield make
    for n in made:
        n.stop()


def _trusting(pki):
    """config.yaml's apisix.ssl.ssl_trusted_certificate naming the test CA."""
    return {"apisix": {"ssl": {"ssl_trusted_certificate": os.path.join(pki, "ca.pem")}}}


def _route(uri, nodes, rid, **upstream):
    up = {"type": "roundrobin", "scheme": "https", "nodes": {n: 1 for n in nodes}}
    up.update(upstream)
    return {"id": rid, "uri": uri, "upstream": up}


def _gateway(make_gateway, pki, routes, **kw):
    return make_gateway(routes=routes, config=_trusting(pki), **kw)


# --------------------------------------------------------------------------- verification


def test_verify_off_is_the_default_and_any_certificate_passes(make_gateway, make_nginx, pki):
    """APISIX verifies no upstream certificate unless tls.verify says so: an upstream whose
    certificate no trusted CA signed still answers."""
    ng = make_nginx([{"cert": "other-server"}])
    gw = _gateway(make_gateway, pki, [_route("/t", [ng.node()], "t")])
    r = get(gw.port, "/t")
    assert r.status == 200, r
    assert r.body == b"tls upstream\n"
    assert r.header("X-SNI") is None  # an IP node and pass_host pass with Host 127.0.0.1


def test_verify_on_trusts_ssl_trusted_certificate(make_gateway, make_nginx, pki):
    good = make_nginx([{"cert": "server"}])
    bad = make_nginx([{"cert": "other-server"}])
    tls = {"verify": True}
    gw = _gateway(make_gateway, pki, [
        _route("/good", [good.node()], "good", tls=tls, pass_host="rewrite",
               upstream_host="upstream.test"),
        _route("/bad", [bad.node()], "bad", tls=tls, pass_host="rewrite",
               upstream_host="upstream.test"),
    ])
    r = get(gw.port, "/good")
    assert r.status == 200, r
    assert r.header("X-SNI") == "upstream.test"
    r = get(gw.port, "/bad")
    assert r.status == 502, r
    log = gw.log_text()
    # The failed try is logged with the node and OpenSSL's reason, as a refused connect is.
    assert "node %s: TLS handshake failed: upstream SSL certificate verify error:" % bad.node() \
        in log, gw.log_tail()
    assert "unable to get local issuer certificate" in log or "self-signed" in log, gw.log_tail()


def test_verify_checks_the_name(make_gateway, make_nginx, pki):
    """The name verified is the server name sent: a certificate for upstream.test does not
    pass for wrong.test; an IP node under pass_host node is checked against the IP SAN."""
    ng = make_nginx([{"cert": "server"}])
    tls = {"verify": True}
    gw = _gateway(make_gateway, pki, [
        _route("/wrong", [ng.node()], "wrong", tls=tls, pass_host="rewrite",
               upstream_host="wrong.test"),
        _route("/alt", [ng.node()], "alt", tls=tls, pass_host="rewrite",
               upstream_host="alt.test:8443"),
        _route("/ip", [ng.node()], "ip", tls=tls, pass_host="node"),
    ])
    r = get(gw.port, "/wrong")
    assert r.status == 502, r
    assert "upstream SSL certificate verify error: (62:hostname mismatch)" in gw.log_text(), \
        gw.log_tail()
    r = get(gw.port, "/alt")  # the Host's port is not part of the name
    assert r.status == 200, r
    assert r.header("X-SNI") == "alt.test"
    assert r.header("X-Host") == "alt.test:8443"
    r = get(gw.port, "/ip")
    assert r.status == 200, r
    assert r.header("X-SNI") is None  # RFC 6066: no address as SNI
    assert r.header("X-Host") == ng.node()


def test_verify_with_tls_ca_certs(make_gateway, make_nginx, pki):
    """tls.ca_certs (APISIX 3.19) replaces ssl_trusted_certificate for its upstream."""
    ng = make_nginx([{"cert": "other-server"}])
    gw = _gateway(make_gateway, pki, [
        _route("/own", [ng.node()], "own", pass_host="rewrite", upstream_host="upstream.test",
               tls={"verify": True, "ca_certs": [_read(os.path.join(pki, "other-ca.pem"))]}),
        _route("/shared", [ng.node()], "shared", pass_host="rewrite",
               upstream_host="upstream.test", tls={"verify": True}),
    ])
    assert get(gw.port, "/own").status == 200
    assert get(gw.port, "/shared").status == 502


def test_a_refused_certificate_is_a_failed_try(make_gateway, make_nginx, pki):
    """Like a refused connect: the next node is tried, and the request succeeds there."""
    bad = make_nginx([{"cert": "other-server"}])
    good = make_nginx([{"cert": "server"}])
    gw = _gateway(make_gateway, pki, [
        _route("/t", [bad.node(), good.node()], "t", tls={"verify": True}, pass_host="rewrite",
               upstream_host="upstream.test", retries=1)])
    for _ in range(4):
        r = get(gw.port, "/t")
        assert r.status == 200, r
        assert r.header("X-Node") == str(good.port)


# --------------------------------------------------------------------------- server name


def test_server_name_follows_the_host_sent(make_gateway, make_nginx, pki):
    """nginx's proxy_ssl_name $upstream_host, as APISIX sets it: the Host sent upstream, port
    removed, under every pass_host."""
    ng = make_nginx([{"cert": "server"}])
    gw = _gateway(make_gateway, pki, [
        _route("/pass", [ng.node()], "pass"),
        _route("/rewrite", [ng.node()], "rw", pass_host="rewrite",
               upstream_host="alt.test"),
        {"id": "node", "uri": "/node", "upstream": {
            "type": "roundrobin", "scheme": "https", "pass_host": "node",
            "nodes": [{"host": "localhost", "port": ng.port, "weight": 1}]}},
    ])
    r = get(gw.port, "/pass", host="upstream.test:9080")
    assert r.status == 200 and r.header("X-SNI") == "upstream.test", r
    r = get(gw.port, "/pass", host="alt.test")
    assert r.header("X-SNI") == "alt.test", r
    r = get(gw.port, "/rewrite", host="ignored.test")
    assert r.header("X-SNI") == "alt.test", r
    r = get(gw.port, "/node")
    assert r.status == 200, r
    assert r.header("X-SNI") == "localhost"
    assert r.header("X-Host") == "localhost:%d" % ng.port


# --------------------------------------------------------------------------- client certificates


def test_client_certificate_inline(make_gateway, make_nginx, pki):
    ng = make_nginx([{"cert": "server", "mtls": True}])
    tls = {"client_cert": _read(os.path.join(pki, "client.pem")),
           "client_key": _read(os.path.join(pki, "client.key"))}
    gw = _gateway(make_gateway, pki, [
        _route("/with", [ng.node()], "with", tls=tls),
        _route("/without", [ng.node()], "without"),
    ])
    r = get(gw.port, "/with")
    assert r.status == 200, r
    assert r.header("X-Client-Verify") == "SUCCESS"
    assert r.header("X-Client-DN") == "CN=sluice-client"
    # nginx answers 400 "No required SSL certificate was sent" when there is none.
    assert get(gw.port, "/without").status == 400


def test_client_certificate_by_id_over_the_admin_api(make_gateway, make_nginx, pki):
    ng = make_nginx([{"cert": "server", "mtls": True}])
    gw = make_gateway(admin=True, config=_trusting(pki))
    client = {"type": "client", "cert": _read(os.path.join(pki, "client.pem")),
              "key": _read(os.path.join(pki, "client.key"))}
    server = {"snis": ["upstream.test"], "cert": _read(os.path.join(pki, "server.pem")),
              "key": _read(os.path.join(pki, "server.key"))}
    assert gw.admin("PUT", "/ssls/c1", client).status == 201
    assert gw.admin("PUT", "/ssls/s1", server).status == 201
    up = {"type": "roundrobin", "scheme": "https", "nodes": {ng.node(): 1},
          "pass_host": "rewrite", "upstream_host": "upstream.test",
          "tls": {"client_cert_id": "c1", "verify": True}}
    # APISIX's admin texts (apisix/upstream.lua check_upstream_conf).
    r = gw.admin("PUT", "/upstreams/u1", dict(up, tls={"client_cert_id": "nope"}))
    assert r.status == 400, r
    assert r.error_msg == \
        "failed to fetch ssl info by ssl id [nope], response code: 404", r
    r = gw.admin("PUT", "/upstreams/u1", dict(up, tls={"client_cert_id": "s1"}))
    assert r.status == 400, r
    assert r.error_msg == "failed to fetch ssl info by ssl id [s1], wrong ssl type", r
    r = gw.admin("PUT", "/routes/r0", {"uri": "/r0", "upstream": dict(
        up, tls={"client_cert_id": "s1"})})
    assert r.status == 400, r
    assert r.error_msg == "failed to fetch ssl info by ssl id [s1], wrong ssl type", r
    assert gw.admin("PUT", "/upstreams/u1", up).status == 201
    assert gw.admin("PUT", "/routes/r1", {"uri": "/r1", "upstream_id": "u1"}).status == 201

    def ok():
        r = get(gw.port, "/r1")
        return r.status == 200 and r.header("X-Client-Verify") == "SUCCESS"
    assert harness.wait_until(ok, 5), get(gw.port, "/r1")
    # The ssl goes away (APISIX's Admin API lets it): the route answers 502, and says why.
    assert gw.admin("DELETE", "/ssls/c1").status == 200
    assert harness.wait_until(lambda: get(gw.port, "/r1").status == 502, 5)
    assert "failed to get ssl cert: ssl id [c1] not exits" in gw.log_text(), gw.log_tail()


def test_inline_client_key_is_sealed_at_rest(make_gateway, make_nginx, pki):
    """The Admin API stores tls.client_key sealed with the keyring (APISIX's default one
    here), as APISIX's check_upstream_conf does; the upstream still gets the certificate."""
    ng = make_nginx([{"cert": "server", "mtls": True}])
    gw = make_gateway(admin=True, config=_trusting(pki))
    key = _read(os.path.join(pki, "client.key"))
    up = {"type": "roundrobin", "scheme": "https", "nodes": {ng.node(): 1},
          "tls": {"client_cert": _read(os.path.join(pki, "client.pem")), "client_key": key}}
    r = gw.admin("PUT", "/routes/r1", {"uri": "/r1", "upstream": up})
    assert r.status == 201, r
    sealed = r.value["upstream"]["tls"]["client_key"]
    assert "PRIVATE KEY" not in sealed and sealed != key, sealed[:80]
    assert gw.admin("GET", "/routes/r1").value["upstream"]["tls"]["client_key"] == sealed

    def ok():
        r = get(gw.port, "/r1")
        return r.status == 200 and r.header("X-Client-Verify") == "SUCCESS"
    assert harness.wait_until(ok, 5), get(gw.port, "/r1")


def test_tls_fields_are_checked(make_gateway, pki):
    gw = make_gateway(admin=True)
    base = {"type": "roundrobin", "scheme": "https", "nodes": {"127.0.0.1:1": 1}}
    cases = [
        (dict(base, scheme="http", tls={"verify": True}), 'tls needs scheme "https"'),
        (dict(base, tls={"client_cert": _read(os.path.join(pki, "client.pem"))}),
         'invalid configuration: property "tls" validation failed: failed to validate '
         'dependent schema for "client_cert": property "client_key" is required'),
        (dict(base, tls={"client_cert": _read(os.path.join(pki, "client.pem")),
                         "client_key": _read(os.path.join(pki, "other-client.key"))}),
         "failed to handle cert-key pair: the key does not match the certificate"),
        (dict(base, tls={"verify": 1}),
         'invalid configuration: property "tls" validation failed: property "verify" '
         'validation failed: wrong type: expected boolean, got number'),
    ]
    for body, msg in cases:
        r = gw.admin("PUT", "/upstreams/x", body)
        assert r.status == 400, (body, r)
        assert msg in r.error_msg, r
    r = gw.admin("PUT", "/upstreams/x", dict(base, tls={"verify": False}))
    assert r.status == 201, r
    assert r.value["tls"] == {"verify": False}


# --------------------------------------------------------------------------- bodies


def test_bodies_stream_both_ways_over_tls(make_gateway, make_nginx, make_upstream, pki):
    """Large and chunked request bodies and large responses cross the TLS connection whole,
    and the connection serves the next request."""
    fake = make_upstream("fake")
    fake.route("/files/*", Download(6 << 20))
    fake.route("/chunked/*", Download(3 << 20, chunked=True))
    ng = make_nginx([{"cert": "server", "proxy": fake.port}])
    gw = _gateway(make_gateway, pki, [_route("/fake/*", [ng.node()], "f")], workers=1)
    body = os.urandom(3 << 20)
    with harness.Client(gw.port) as c:
        r = c.request("POST", "/fake/up", body=body)
        assert r.status == 200, r
        assert r.json()["body_sha256"] == hashlib.sha256(body).hexdigest()
        conn = r.header("X-Conn")
        pieces = [body[i:i + 65536] for i in range(0, len(body), 65536)]
        chunked = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"
        c.send(harness.build_request("POST", "/fake/up",
                                     headers={"Transfer-Encoding": "chunked"}) + chunked)
        r = c.read_response()
        assert r.status == 200, r
        assert r.json()["body_sha256"] == hashlib.sha256(body).hexdigest()
        for path, size in (("/fake/files/a", 6 << 20), ("/fake/chunked/b", 3 << 20)):
            c.send(harness.build_request("GET", path))
            resp = c.read_head()
            assert resp.status == 200, resp
            assert harness.crc_of_body(c.reader, resp) == (size, pattern_crc(size))
        r = c.get("/fake/up")
        assert r.status == 200 and r.header("X-Conn") == conn, r  # one TLS connection


# --------------------------------------------------------------------------- pooling, resumption


def _conns(responses):
    return {r.header("X-Conn") for r in responses}


def test_kept_alive_connections_are_reused(make_gateway, make_nginx, pki):
    ng = make_nginx([{"cert": "server"}])
    gw = _gateway(make_gateway, pki, [_route("/t", [ng.node()], "t")], workers=1)
    rs = [get(gw.port, "/t") for _ in range(30)]
    assert all(r.status == 200 for r in rs), rs
    assert len(_conns(rs)) == 1, _conns(rs)  # one worker, one request at a time: one connection


def test_pool_is_keyed_by_server_name_and_certificate(make_gateway, make_nginx, pki):
    """A connection made for one name or client certificate never serves another."""
    ng = make_nginx([{"cert": "server"}])
    tls = {"client_cert": _read(os.path.join(pki, "client.pem")),
           "client_key": _read(os.path.join(pki, "client.key"))}
    gw = _gateway(make_gateway, pki, [
        _route("/p", [ng.node()], "p"),
        _route("/c", [ng.node()], "c", tls=tls),
    ], workers=1)
    seen = {}
    for host in ("upstream.test", "alt.test", "upstream.test", "alt.test"):
        r = get(gw.port, "/p", host=host)
        assert r.status == 200 and r.header("X-SNI") == host, r
        seen.setdefault(host, set()).add(r.header("X-Conn"))
    r = get(gw.port, "/c", host="upstream.test")
    assert r.status == 200, r
    assert len(seen["upstream.test"]) == 1 and len(seen["alt.test"]) == 1, seen
    assert seen["upstream.test"] != seen["alt.test"]
    assert r.header("X-Conn") not in seen["upstream.test"]


@pytest.mark.parametrize("protocols", ["TLSv1.2", "TLSv1.3"])
def test_new_connections_resume_the_kept_session(make_gateway, make_nginx, pki, protocols):
    """keepalive_pool.requests 1 closes each connection after one request: every request makes
    a new one, and from the second on it resumes the session of the one before."""
    ng = make_nginx([{"cert": "server"}], protocols=protocols)
    gw = _gateway(make_gateway, pki, [
        _route("/t", [ng.node()], "t", keepalive_pool={"size": 4, "idle_timeout": 60,
                                                        "requests": 1},
               tls={"verify": True}, pass_host="rewrite", upstream_host="upstream.test")],
        workers=1)
    rs = [get(gw.port, "/t") for _ in range(4)]
    assert all(r.status == 200 for r in rs), rs
    assert len(_conns(rs)) == 4, _conns(rs)
    assert [r.header("X-Reused") for r in rs] == [".", "r", "r", "r"], rs


# --------------------------------------------------------------------------- health checks


def _checks(**active):
    a = {"type": "https", "timeout": 1, "http_path": "/status",
         "healthy": {"interval": 1, "successes": 1},
         "unhealthy": {"interval": 1, "http_failures": 1, "tcp_failures": 1, "timeouts": 1}}
    a.update(active)
    return {"active": a}


def _nodes_serving(gw, path="/h", n=10):
    return {get(gw.port, path).header("X-Node") for _ in range(n)}


def _status(gw):
    out = {}
    for name, labels, value in parse_samples(scrape(gw).body.decode()):
        if name == "apisix_upstream_status":
            d = dict(labels)
            out[int(d["port"])] = value
    return out


def test_https_health_checks_take_a_node_out_and_bring_it_back(make_gateway, make_nginx, pki):
    ng = make_nginx([{"cert": "server"}, {"cert": "server"}])
    gw = _gateway(make_gateway, pki, [
        _route("/h", [ng.node(0), ng.node(1)], "h", pass_host="rewrite",
               upstream_host="upstream.test", checks=_checks())])
    a, b = (str(p) for p in ng.ports)
    assert harness.wait_until(lambda: _status(gw) == {ng.ports[0]: 1, ng.ports[1]: 1}, 5)
    assert _nodes_serving(gw) == {a, b}
    ng.set_down(1, True)
    assert harness.wait_until(lambda: _status(gw).get(ng.ports[1]) == 0, 5), _status(gw)
    assert _nodes_serving(gw) == {a}
    ng.set_down(1, False)
    assert harness.wait_until(lambda: _status(gw).get(ng.ports[1]) == 1, 5), _status(gw)
    assert _nodes_serving(gw) == {a, b}
    # Probes name the server as the proxied requests do (upstream_host here), and the CA of
    # ssl_trusted_certificate verifies it (https_verify_certificate defaults to true).
    probes = [l for l in ng.access_lines() if "sluice-health-check" in l]
    assert probes and all('"upstream.test"' in l for l in probes), probes[:3]


def test_https_health_checks_verify_certificates(make_gateway, make_nginx, pki):
    """A node whose certificate the trusted CA did not sign fails its probes unless
    https_verify_certificate is false."""
    good = make_nginx([{"cert": "server"}])
    bad = make_nginx([{"cert": "other-server"}])
    nodes = [good.node(), bad.node()]
    gw = _gateway(make_gateway, pki, [
        _route("/h", nodes, "h", pass_host="rewrite", upstream_host="upstream.test",
               checks=_checks()),
        _route("/n", nodes, "n", pass_host="rewrite", upstream_host="upstream.test",
               checks=_checks(https_verify_certificate=False)),
    ])

    def status():
        out = {}
        for name, labels, value in parse_samples(scrape(gw).body.decode()):
            if name == "apisix_upstream_status":
                d = dict(labels)
                out[(d["name"], int(d["port"]))] = value
        return out
    want = {("/apisix/routes/h", good.port): 1, ("/apisix/routes/h", bad.port): 0,
            ("/apisix/routes/n", good.port): 1, ("/apisix/routes/n", bad.port): 1}
    assert harness.wait_until(lambda: status() == want, 6), status()
