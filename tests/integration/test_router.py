"""Issue 2, point 5: the router, per COMPAT.md "Routing", end to end.

One gateway serves every route below; each route points at its own port of one fake upstream,
so the port that answers names the route that matched (no dependence on other features).
"""

import pytest

from fake_upstream import FakeUpstream
from harness import NOT_FOUND_BODY, Gateway, Client, get, http, route

# (name, route fields). Names double as route ids.
ROUTES = [
    ("exact", {"uri": "/exact/b"}),
    ("exact_children", {"uri": "/exact/*"}),
    ("only", {"uri": "/only"}),
    ("pre", {"uri": "/pre*"}),
    ("lp_shallow", {"uri": "/lp/*", "priority": 10}),
    ("lp_deep", {"uri": "/lp/deep/*"}),
    ("prio_low", {"uri": "/prio", "priority": 1}),
    ("prio_high", {"uri": "/prio", "priority": 5}),
    ("prio2_low", {"uri": "/prio2/*"}),
    ("prio2_high", {"uri": "/prio2/*", "priority": 3}),
    ("uris", {"uris": ["/u1", "/u2/*"]}),
    ("m_get", {"uri": "/m", "methods": ["GET"]}),
    ("m_post", {"uri": "/m", "methods": ["POST", "PUT"]}),
    ("h_exact", {"uri": "/h", "hosts": ["foo.com"]}),
    ("h_wild", {"uri": "/h", "hosts": ["*.foo.com"]}),
    ("h_none", {"uri": "/h", "priority": 100}),
    ("h2_exact", {"uri": "/h2", "hosts": ["a.foo.com"]}),
    ("h2_wild", {"uri": "/h2", "hosts": ["*.foo.com"], "priority": 100}),
    ("hp_host", {"uri": "/hp/*", "hosts": ["foo.com"]}),
    ("hp_nohost_deep", {"uri": "/hp/deep/*"}),
    ("single_host", {"uri": "/sh", "host": "single.com"}),
    ("ra_local", {"uri": "/ra", "remote_addrs": ["127.0.0.0/8"]}),
    ("ra_other", {"uri": "/ra", "remote_addrs": ["10.0.0.0/8"], "priority": 10}),
    ("ra_single_other", {"uri": "/ra2", "remote_addr": "192.168.0.1"}),
    ("ra_exact_ip", {"uri": "/ra3", "remote_addrs": ["127.0.0.1"]}),
    ("v_eq", {"uri": "/v/eq", "vars": [["arg_x", "==", "1"]]}),
    ("v_ne", {"uri": "/v/ne", "vars": [["arg_x", "~=", "1"]]}),
    ("v_gt", {"uri": "/v/gt", "vars": [["arg_n", ">", 10]]}),
    ("v_ge", {"uri": "/v/ge", "vars": [["arg_n", ">=", 10]]}),
    ("v_lt", {"uri": "/v/lt", "vars": [["arg_n", "<", 10]]}),
    ("v_le", {"uri": "/v/le", "vars": [["arg_n", "<=", 10]]}),
    ("v_re", {"uri": "/v/re", "vars": [["http_x_tok", "~~", "^ab+c$"]]}),
    ("v_rei", {"uri": "/v/rei", "vars": [["http_x_tok", "~*", "^ab+c$"]]}),
    ("v_in", {"uri": "/v/in", "vars": [["arg_c", "in", ["a", "b"]]]}),
    ("v_has", {"uri": "/v/has", "vars": [["http_x_list", "has", "b"]]}),
    ("v_eqnum", {"uri": "/v/eqnum", "vars": [["arg_n", "==", 10]]}),
    ("v_nenum", {"uri": "/v/nenum", "vars": [["arg_n", "~=", 10]]}),
    ("v_ipm", {"uri": "/v/ipm", "vars": [["remote_addr", "ipmatch", ["127.0.0.0/24"]]]}),
    ("v_ipm_no", {"uri": "/v/ipm-no", "vars": [["remote_addr", "ipmatch", ["10.0.0.0/8"]]]}),
    ("v_not", {"uri": "/v/not", "vars": [["arg_x", "!", "==", "1"]]}),
    ("v_or", {"uri": "/v/or", "vars": ["OR", ["arg_x", "==", "1"], ["arg_y", "==", "2"]]}),
    ("v_and", {"uri": "/v/and", "vars": [["arg_x", "==", "1"], ["arg_y", "==", "2"]]}),
    ("v_andor", {"uri": "/v/andor", "vars": [
        "AND", ["arg_x", "==", "1"], ["OR", ["arg_y", "==", "2"], ["arg_z", "==", "3"]]]}),
    ("v_cookie", {"uri": "/v/cookie", "vars": [["cookie_sid", "==", "abc"]]}),
    ("v_uri", {"uri": "/v/uri/*", "vars": [["uri", "~~", "^/v/uri/z$"]]}),
    ("v_host", {"uri": "/v/host", "vars": [["host", "==", "vhost.com"]]}),
    ("v_method", {"uri": "/v/method", "vars": [["request_method", "==", "PATCH"]]}),
    ("v_port", {"uri": "/v/port", "vars": [["server_port", "==", "@PORT@"]]}),
    ("v_dash", {"uri": "/v/dash", "vars": [["http_x_dashed_name", "==", "ok"]]}),
    ("v_ft_hi", {"uri": "/v/ft", "vars": [["arg_x", "==", "1"]], "priority": 10}),
    ("v_ft_lo", {"uri": "/v/ft"}),
    ("status0", {"uri": "/st", "status": 0}),
    ("status1", {"uri": "/st1", "status": 1}),
    ("svc_route", {"uri": "/svc", "service_id": "s1", "upstream": None}),
    ("svc_own", {"uri": "/svc-own", "service_id": "s1"}),
    ("svc2_route", {"uri": "/svc2", "service_id": "s2", "upstream": None}),
    ("svc_noup", {"uri": "/svc-noup", "service_id": "s3", "upstream": None}),
]

# Ports that only services/upstreams (not routes) point at.
EXTRA = ["svc1_up", "svc2_up"]

# (method, path, host, headers, expected): expected is a route name, 404 or 503.
CASES = [
    ("GET", "/exact/b", None, [], "exact"),
    ("GET", "/exact/b?x=1", None, [], "exact"),
    ("GET", "/exact/b/", None, [], "exact_children"),
    ("GET", "/exact/c", None, [], "exact_children"),
    ("GET", "/exact/", None, [], "exact_children"),
    ("GET", "/exact", None, [], 404),
    ("GET", "/only", None, [], "only"),
    ("GET", "/only/", None, [], 404),
    ("GET", "/onlyx", None, [], 404),
    ("GET", "/pre", None, [], "pre"),
    ("GET", "/prefix", None, [], "pre"),
    ("GET", "/pre/x/y", None, [], "pre"),
    ("GET", "/lp/deep/x", None, [], "lp_deep"),
    ("GET", "/lp/deep/", None, [], "lp_deep"),
    ("GET", "/lp/deep", None, [], "lp_shallow"),
    ("GET", "/lp/other", None, [], "lp_shallow"),
    ("GET", "/prio", None, [], "prio_high"),
    ("GET", "/prio2/x", None, [], "prio2_high"),
    ("GET", "/u1", None, [], "uris"),
    ("GET", "/u2/x", None, [], "uris"),
    ("GET", "/u2", None, [], 404),
    ("GET", "/u3", None, [], 404),
    ("GET", "/m", None, [], "m_get"),
    ("POST", "/m", None, [], "m_post"),
    ("PUT", "/m", None, [], "m_post"),
    ("DELETE", "/m", None, [], 404),
    ("GET", "/h", "foo.com", [], "h_exact"),
    ("GET", "/h", "FOO.COM", [], "h_exact"),
    ("GET", "/h", "foo.com:9999", [], "h_exact"),
    ("GET", "/h", "a.foo.com", [], "h_wild"),
    ("GET", "/h", "a.b.foo.com", [], "h_wild"),
    ("GET", "/h", "bar.com", [], "h_none"),
    ("GET", "/h", "xfoo.com", [], "h_none"),
    ("GET", "/h", None, [], "h_none"),
    ("GET", "/h2", "a.foo.com", [], "h2_exact"),
    ("GET", "/h2", "b.foo.com", [], "h2_wild"),
    ("GET", "/h2", "foo.com", [], 404),
    ("GET", "/hp/deep/x", "foo.com", [], "hp_host"),
    ("GET", "/hp/deep/x", "bar.com", [], "hp_nohost_deep"),
    ("GET", "/exact/b", "foo.com", [], "exact"),
    ("GET", "/sh", "single.com", [], "single_host"),
    ("GET", "/sh", "other.com", [], 404),
    ("GET", "/ra", None, [], "ra_local"),
    ("GET", "/ra2", None, [], 404),
    ("GET", "/ra3", None, [], "ra_exact_ip"),
    ("GET", "/v/eq?x=1", None, [], "v_eq"),
    ("GET", "/v/eq?x=2", None, [], 404),
    ("GET", "/v/eq", None, [], 404),
    ("GET", "/v/ne?x=2", None, [], "v_ne"),
    ("GET", "/v/ne?x=1", None, [], 404),
    ("GET", "/v/gt?n=11", None, [], "v_gt"),
    ("GET", "/v/gt?n=100", None, [], "v_gt"),
    ("GET", "/v/gt?n=10", None, [], 404),
    ("GET", "/v/gt?n=9", None, [], 404),
    ("GET", "/v/ge?n=10", None, [], "v_ge"),
    ("GET", "/v/ge?n=9", None, [], 404),
    ("GET", "/v/lt?n=9", None, [], "v_lt"),
    ("GET", "/v/lt?n=10", None, [], 404),
    ("GET", "/v/lt?n=100", None, [], 404),
    ("GET", "/v/le?n=10", None, [], "v_le"),
    ("GET", "/v/le?n=11", None, [], 404),
    ("GET", "/v/re", None, [("X-Tok", "abbbc")], "v_re"),
    ("GET", "/v/re", None, [("X-Tok", "ABBC")], 404),
    ("GET", "/v/re", None, [], 404),
    ("GET", "/v/rei", None, [("X-Tok", "ABBC")], "v_rei"),
    ("GET", "/v/rei", None, [("X-Tok", "xyz")], 404),
    ("GET", "/v/in?c=b", None, [], "v_in"),
    ("GET", "/v/in?c=d", None, [], 404),
    # `has` tests membership of an array; http_* variables are strings, so APISIX (and
    # lua-resty-expr's has_element) never matches them: the route loads but stays unmatched.
    ("GET", "/v/has", None, [("X-List", "a"), ("X-List", "b")], 404),
    ("GET", "/v/has", None, [("X-List", "b")], 404),
    ("GET", "/v/eqnum?n=10", None, [], "v_eqnum"),
    ("GET", "/v/eqnum?n=10.0", None, [], "v_eqnum"),
    ("GET", "/v/eqnum?n=ten", None, [], 404),
    ("GET", "/v/nenum?n=ten", None, [], "v_nenum"),
    ("GET", "/v/nenum?n=10", None, [], 404),
    ("GET", "/v/ipm", None, [], "v_ipm"),
    ("GET", "/v/ipm-no", None, [], 404),
    ("GET", "/v/not?x=2", None, [], "v_not"),
    ("GET", "/v/not?x=1", None, [], 404),
    ("GET", "/v/or?y=2", None, [], "v_or"),
    ("GET", "/v/or?x=1", None, [], "v_or"),
    ("GET", "/v/or?x=3", None, [], 404),
    ("GET", "/v/and?x=1&y=2", None, [], "v_and"),
    ("GET", "/v/and?x=1", None, [], 404),
    ("GET", "/v/andor?x=1&z=3", None, [], "v_andor"),
    ("GET", "/v/andor?x=1&z=4", None, [], 404),
    ("GET", "/v/andor?y=2", None, [], 404),
    ("GET", "/v/cookie", None, [("Cookie", "a=1; sid=abc; b=2")], "v_cookie"),
    ("GET", "/v/cookie", None, [("Cookie", "sid=abcd")], 404),
    ("GET", "/v/uri/z", None, [], "v_uri"),
    ("GET", "/v/uri/y", None, [], 404),
    ("GET", "/v/host", "vhost.com", [], "v_host"),
    ("GET", "/v/host", "other.com", [], 404),
    ("PATCH", "/v/method", None, [], "v_method"),
    ("GET", "/v/method", None, [], 404),
    ("GET", "/v/port", None, [], "v_port"),
    ("GET", "/v/dash", None, [("X-Dashed-Name", "ok")], "v_dash"),
    ("GET", "/v/ft?x=1", None, [], "v_ft_hi"),
    ("GET", "/v/ft?x=2", None, [], "v_ft_lo"),
    ("GET", "/st", None, [], 404),
    ("GET", "/st1", None, [], "status1"),
    ("GET", "/svc", "svc.com", [], "svc1_up"),
    ("GET", "/svc", "other.com", [], 404),
    ("GET", "/svc-own", "svc.com", [], "svc_own"),
    ("GET", "/svc2", None, [], "svc2_up"),
    ("GET", "/svc-noup", None, [], 503),
    ("GET", "/nothing/here", None, [], 404),
]


@pytest.fixture(scope="module")
def router_env(tmp_path_factory):
    up = FakeUpstream(name="router")
    ports = {}
    for name, _ in ROUTES:
        ports[name] = up.add_listener()
    for name in EXTRA:
        ports[name] = up.add_listener()
    node = lambda name: {"type": "roundrobin", "nodes": {"127.0.0.1:%d" % ports[name]: 1}}
    gw = Gateway(tmp_path_factory.mktemp("router"), workers=2)
    routes = []
    for name, fields in ROUTES:
        r = {"id": name}
        r.update(fields)
        if "vars" in r and r["vars"] == [["server_port", "==", "@PORT@"]]:
            r["vars"] = [["server_port", "==", str(gw.port)]]
        if "upstream" not in r:
            r["upstream"] = node(name)
        elif r["upstream"] is None:
            del r["upstream"]
        routes.append(r)
    gw.routes = routes
    gw.services = [
        {"id": "s1", "hosts": ["svc.com"], "upstream": node("svc1_up")},
        {"id": "s2", "upstream_id": "u2"},
        {"id": "s3"},
    ]
    gw.upstreams = [dict(node("svc2_up"), id="u2")]
    try:
        gw.start()
    except Exception:
        up.stop()
        gw.stop()
        raise
    by_port = {p: n for n, p in ports.items()}
    yield gw, by_port
    rc = gw.stop()
    print("--- sluice log ---\n" + gw.log_tail(150))
    up.stop()
    assert rc == 0


def _case_id(case):
    method, path, host, headers, expected = case
    hs = ",".join("%s=%s" % h for h in headers)
    return "%s %s%s%s->%s" % (method, path, "@" + host if host else "",
                              "[" + hs + "]" if hs else "", expected)


@pytest.mark.parametrize("case", CASES, ids=[_case_id(c) for c in CASES])
def test_route_matching(router_env, case):
    gw, by_port = router_env
    method, path, host, headers, expected = case
    r = http(gw.port, method, path, headers=headers, host=host or "127.0.0.1")
    if expected == 404:
        assert r.status == 404, "matched %s" % (by_port.get(r.json().get("port"))
                                                 if r.status == 200 else r)
        assert r.body == NOT_FOUND_BODY
        return
    if expected == 503:
        assert r.status == 503, r
        return
    assert r.status == 200, r
    got = by_port.get(r.json()["port"])
    assert got == expected


def test_not_found_reply(router_env):
    gw, _ = router_env
    with Client(gw.port) as c:
        r = c.get("/definitely/not/routed")
        assert r.status == 404
        assert r.body == b'{"error_msg":"404 Route Not Found"}\n'
        assert (r.header("content-type") or "").startswith("application/json")
        assert r.header("content-length") == str(len(r.body)) or r.framing == "chunked"
        # A 404 does not cost the keep-alive connection.
        assert c.get("/exact/b").status == 200


def test_many_routes_still_route_correctly(make_gateway, upstream):
    n = 3000
    routes = [route("/many/%d" % i, upstream, rid="m%d" % i) for i in range(n)]
    routes += [route("/pfx/%d/*" % i, upstream, rid="p%d" % i) for i in range(n)]
    gw = make_gateway(routes=routes, workers=1)
    for i in range(0, n, 97):
        assert get(gw.port, "/many/%d" % i).json()["path"] == "/many/%d" % i
        assert get(gw.port, "/pfx/%d/deep/er" % i).status == 200
        assert get(gw.port, "/many/%dx" % i).status == 404
