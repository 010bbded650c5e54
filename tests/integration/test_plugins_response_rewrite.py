"""response-rewrite on the real gateway: APISIX's documented examples (upstream and ports
changed), the status, headers (flat and add/set/remove) and body of upstream answers with a
fixed length and chunked, `vars` on the response, regex `filters`, base64 bodies, HEAD, the
gateway's own answers (a limit-count rejection on the route, a 404 under a global rule), and
the Admin API's 400s with APISIX's texts."""

import json

import pytest

import fake_upstream as fu
from harness import Client, admin_route, expect_error, free_port, get

ERR = "failed to check the configuration of plugin response-rewrite err: "
HELLO = b"hello world\n"


def _put(gw, rid, uri, up, conf, **extra):
    r = gw.admin("PUT", "/routes/%s" % rid,
                 admin_route(uri, up, plugins={"response-rewrite": conf}, **extra))
    assert r.status in (200, 201), r
    return r


def _hello(upstream, path="/hello", chunked=False, status=200, headers=()):
    """The upstream answers `path` with "hello world\\n", by length or in two chunks."""
    headers = [("Content-Type", "text/plain")] + list(headers)
    if chunked:
        upstream.route(path, fu.Chunked([b"hello ", b"world\n"], status=status, headers=headers))
    else:
        upstream.route(path, fu.Fixed(status, headers, HELLO))


def _framed(r, body):
    """The body arrived whole and its framing said its length."""
    assert r.body == body, r
    if r.framing == "length":
        assert int(r.header("content-length")) == len(body), r


# --------------------------------------------------------------------------- the doc's examples


# "Rewrite Header and Body", verbatim but for the upstream.
def test_doc_rewrite_header_and_body(make_gateway, upstream):
    gw = make_gateway(admin=True)
    r = gw.admin("PUT", "/routes", {
        "id": "response-rewrite-route",
        "methods": ["GET"],
        "uri": "/headers",
        "plugins": {
            "response-rewrite": {
                "body": "{\"code\":\"ok\",\"message\":\"new json body\"}",
                "headers": {
                    "set": {
                        "X-Server-id": 3,
                        "X-Server-status": "on",
                        "X-Server-balancer-addr": "$balancer_ip:$balancer_port"
                    }
                },
                "vars": [["status", "==", 200]]
            }
        },
        "upstream": {"type": "roundrobin", "nodes": {upstream.addr: 1}}
    })
    assert r.status in (200, 201), r
    got = get(gw.port, "/headers")
    assert got.status == 200, got
    assert got.header("x-server-id") == "3"
    assert got.header("x-server-status") == "on"
    assert got.header("x-server-balancer-addr") == upstream.addr, got
    _framed(got, b'{"code":"ok","message":"new json body"}')


# The same example with the one variable Sluice has: the upstream's IP.
def test_doc_rewrite_header_and_body_balancer_ip(make_gateway, upstream):
    gw = make_gateway(admin=True)
    upstream.route("/missing", fu.Fixed(404, [("Content-Type", "text/plain")], b"nope\n"))
    r = gw.admin("PUT", "/routes", {
        "id": "response-rewrite-route",
        "methods": ["GET"],
        "uris": ["/headers", "/missing"],
        "plugins": {
            "response-rewrite": {
                "body": "{\"code\":\"ok\",\"message\":\"new json body\"}",
                "headers": {
                    "set": {
                        "X-Server-id": 3,
                        "X-Server-status": "on",
                        "X-Server-balancer-addr": "$balancer_ip"
                    }
                },
                "vars": [["status", "==", 200]]
            }
        },
        "upstream": {"type": "roundrobin", "nodes": {upstream.addr: 1}}
    })
    assert r.status in (200, 201), r
    got = get(gw.port, "/headers")
    assert got.status == 200, got
    assert (got.header("x-server-id"), got.header("x-server-status"),
            got.header("x-server-balancer-addr")) == ("3", "on", "127.0.0.1"), got
    _framed(got, b'{"code":"ok","message":"new json body"}')
    # vars: only 200s are rewritten
    got = get(gw.port, "/missing")
    assert got.status == 404 and got.header("x-server-id") is None, got
    _framed(got, b"nope\n")


# "Rewrite Header With RegEx Filter": the echoing upstream's body names the request's
# X-Amzn-Trace-Id; the filter renames it.
@pytest.mark.parametrize("chunked", [False, True])
def test_doc_regex_filter(make_gateway, make_upstream, chunked):
    upstream = make_upstream("echo")
    upstream.route("/headers", fu.Echo(chunked=chunked))
    gw = make_gateway(admin=True)
    r = gw.admin("PUT", "/routes", {
        "id": "response-rewrite-route",
        "methods": ["GET"],
        "uri": "/headers",
        "plugins": {
            "response-rewrite": {
                "filters": [{
                    "regex": "X-Amzn-Trace-Id",
                    "scope": "global",
                    "replace": "X-Amzn-Trace-Id-Replace"
                }]
            }
        },
        "upstream": {"type": "roundrobin", "nodes": {upstream.addr: 1}}
    })
    assert r.status in (200, 201), r
    trace = "Root=1-6500095d-1041b05e2ba9c6b37232dbc7"
    got = get(gw.port, "/headers", headers={"X-Amzn-Trace-Id": trace})
    assert got.status == 200, got
    headers = dict(got.json()["headers"])
    assert headers.get("X-Amzn-Trace-Id-Replace") == trace, got
    assert "X-Amzn-Trace-Id" not in headers, got
    # The upstream's Content-Length described the old body: it is not passed on.
    assert got.framing in ("chunked", "length"), got
    if got.framing == "length":
        assert int(got.header("content-length")) == len(got.body), got


# "Decode Body from Base64"
def test_doc_decode_body_from_base64(make_gateway, upstream):
    gw = make_gateway(admin=True)
    r = gw.admin("PUT", "/routes", {
        "id": "response-rewrite-route",
        "methods": ["GET"],
        "uri": "/get",
        "plugins": {
            "response-rewrite": {
                "body": "SGVsbG8gV29ybGQ=",
                "body_base64": True
            }
        },
        "upstream": {"type": "roundrobin", "nodes": {upstream.addr: 1}}
    })
    assert r.status in (200, 201), r
    got = get(gw.port, "/get")
    assert got.status == 200, got
    _framed(got, b"Hello World")


# "Rewrite Response and Its Connection with Execution Phases": the doc's key-auth rejection
# becomes a limit-count one here (Sluice has no key-auth yet); either way the gateway's own
# answer is rewritten.
def test_doc_rewrites_the_gateways_own_rejection(make_gateway, upstream):
    gw = make_gateway(admin=True)
    r = gw.admin("PUT", "/routes", {
        "id": "response-rewrite-route",
        "uri": "/get",
        "plugins": {
            "limit-count": {"count": 1, "time_window": 60},
            "response-rewrite": {
                "status_code": 200,
                "body": "{\"code\": 200, \"msg\": \"success\"}"
            }
        },
        "upstream": {"type": "roundrobin", "nodes": {upstream.addr: 1}}
    })
    assert r.status in (200, 201), r
    first, second = get(gw.port, "/get"), get(gw.port, "/get")
    for got in (first, second):
        assert got.status == 200, got
        _framed(got, b'{"code": 200, "msg": "success"}')
        assert got.header("x-ratelimit-limit") == "1", got
    assert second.header("x-ratelimit-remaining") == "0"
    assert len(upstream.requests_for("/get")) == 1, "the rejected request reached the upstream"


# --------------------------------------------------------------------------- APISIX's own tests


# t/plugin/response-rewrite.t TEST 4-5 and 6-7: flat headers ("" removes), and a new body that
# drops the upstream's length, encoding and cache validators.
def test_flat_headers_and_a_new_body(make_gateway, upstream):
    gw = make_gateway(admin=True)
    upstream.route("/with_header", fu.Fixed(200, [
        ("X-Server-id", "100"), ("Content-Type", "application/xml"),
        ("Content-Encoding", "gzip"), ("Last-Modified", "Wed, 21 Oct 2015 07:28:00 GMT"),
        ("ETag", '"33a64df551425fcc55e4d42a148795d9f25f89d4"')], b"abcd"))
    _put(gw, 1, "/with_header", upstream, {
        "headers": {"X-Server-id": 3, "X-Server-status": "on", "Content-Type": ""},
        "body": "new body\n"})
    got = get(gw.port, "/with_header")
    assert got.status == 200, got
    assert got.header("content-type") is None, got
    assert (got.header("x-server-status"), got.header("x-server-id")) == ("on", "3"), got
    _framed(got, b"new body\n")

    _put(gw, 1, "/with_header", upstream, {"body": "new body2\n"})
    got = get(gw.port, "/with_header")
    assert got.header("x-server-id") == "100" and \
        got.header("content-type") == "application/xml", got
    for gone in ("content-encoding", "last-modified", "etag"):
        assert got.header(gone) is None, "%s describes the old body: %r" % (gone, got)
    assert got.framing == "length" and got.header("content-length") == "10", got
    _framed(got, b"new body2\n")


# TEST 8-9: a redirect
def test_status_code_and_location(make_gateway, upstream):
    gw = make_gateway(admin=True)
    _hello(upstream)
    _put(gw, 1, "/hello", upstream, {"headers": {"Location": "https://www.iresty.com"},
                                     "status_code": 302})
    got = get(gw.port, "/hello")
    assert got.status == 302, got
    assert got.header("location") == "https://www.iresty.com", got
    _framed(got, HELLO)  # status_code alone keeps the upstream's body


# TEST 18-20: vars on the status
def test_vars_on_the_response_status(make_gateway, upstream):
    gw = make_gateway(admin=True)
    _hello(upstream)
    upstream.route("/server_error", fu.Fixed(500, [], b"boom\n"))
    _put(gw, 1, ["/server_error", "/hello"], upstream, {
        "body": "new body3\n", "status_code": 403, "vars": [["status", "==", 500]]})
    got = get(gw.port, "/server_error")
    assert got.status == 403, got
    _framed(got, b"new body3\n")
    got = get(gw.port, "/hello")
    assert got.status == 200, got
    _framed(got, HELLO)


# t/plugin/response-rewrite2.t: filters
@pytest.mark.parametrize("chunked", [False, True])
@pytest.mark.parametrize("filters,expect", [
    ([{"regex": "hello", "replace": "test"}], b"test world\n"),
    ([{"regex": "l", "replace": "t", "scope": "global"}], b"hetto wortd\n"),
    ([{"regex": "hello", "replace": ""}], b" world\n"),
    ([{"regex": "\\w\\S+$", "replace": "*"}], b"hello *\n"),
    ([{"regex": "hello", "replace": "HELLO"}, {"regex": "L", "replace": "T"}], b"HETLO world\n"),
    ([{"regex": "test", "replace": "TEST"}], HELLO),
    ([{"regex": "(\\w+) (\\w+)", "replace": "$2 $1"}], b"world hello\n"),
])
def test_filters(make_gateway, upstream, chunked, filters, expect):
    gw = make_gateway(admin=True)
    _hello(upstream, chunked=chunked)
    _put(gw, 1, "/hello", upstream, {"vars": [["status", "==", 200]], "filters": filters})
    with Client(gw.port) as c:
        for _ in range(2):  # the framing is right: the connection carries a second request
            got = c.get("/hello")
            assert got.status == 200, got
            _framed(got, expect)


def test_filters_on_a_large_body_in_many_pieces(make_gateway, upstream):
    gw = make_gateway(admin=True)
    chunks = [("line %05d: hello\n" % i).encode() for i in range(5000)]
    upstream.route("/big", fu.Chunked(chunks))
    _put(gw, 1, "/big", upstream, {"filters": [{"regex": "hello", "replace": "bye",
                                                "scope": "global"}]})
    got = get(gw.port, "/big")
    assert got.status == 200, got
    _framed(got, b"".join(chunks).replace(b"hello", b"bye"))


# --------------------------------------------------------------------------- headers and body


@pytest.mark.parametrize("chunked", [False, True])
def test_headers_add_set_remove(make_gateway, upstream, chunked):
    gw = make_gateway(admin=True)
    _hello(upstream, chunked=chunked, headers=[("X-Up", "u"), ("X-Gone", "g")])
    _put(gw, 1, "/hello", upstream, {"headers": {
        "add": ["X-Add: 1", "X-Add: 2", "X-Client: $remote_addr"],
        "set": {"X-Up": "over", "X-Status": "$status", "X-Route": "$route_id"},
        "remove": ["X-Gone"]}})
    got = get(gw.port, "/hello")
    assert got.status == 200, got
    assert got.header_all("x-add") == ["1", "2"], got
    assert got.header_all("x-up") == ["over"], got
    assert got.header("x-gone") is None, got
    assert (got.header("x-client"), got.header("x-status"), got.header("x-route")) == \
        ("127.0.0.1", "200", "1"), got
    _framed(got, HELLO)


@pytest.mark.parametrize("chunked", [False, True])
def test_body_on_fixed_and_chunked_answers(make_gateway, upstream, chunked):
    gw = make_gateway(admin=True)
    _hello(upstream, chunked=chunked)
    _put(gw, 1, "/hello", upstream, {"body": "replaced\n"})
    with Client(gw.port) as c:
        for _ in range(2):
            got = c.get("/hello")
            assert got.status == 200, got
            assert got.framing == "length" and got.header("content-length") == "9", got
            _framed(got, b"replaced\n")


def test_body_on_an_empty_answer(make_gateway, upstream):
    gw = make_gateway(admin=True)
    upstream.route("/empty", fu.Fixed(200, [], b""))
    _put(gw, 1, "/empty", upstream, {"body": "now there is one\n"})
    got = get(gw.port, "/empty")
    _framed(got, b"now there is one\n")


@pytest.mark.parametrize("conf", [
    {"body": "replaced\n"},
    {"filters": [{"regex": "hello", "replace": "bye"}]},
])
def test_head_gets_no_body(make_gateway, upstream, conf):
    gw = make_gateway(admin=True)
    _hello(upstream)
    _put(gw, 1, "/hello", upstream, conf)
    with Client(gw.port) as c:
        got = c.request("HEAD", "/hello")
        assert got.status == 200 and got.body == b"", got
        if "body" in conf:
            assert got.header("content-length") == "9", got
        # Nothing stray on the connection: the next answer parses.
        got = c.get("/hello")
        assert got.status == 200, got
        _framed(got, b"replaced\n" if "body" in conf else b"bye world\n")


@pytest.mark.parametrize("path,conf,status", [
    ("/204", {"body": "abc"}, 204),
    ("/hello", {"body": "abc", "status_code": 204}, 204),
])
def test_no_length_on_a_204(make_gateway, upstream, path, conf, status):
    gw = make_gateway(admin=True)
    upstream.route("/204", fu.Fixed(204, [], b""))
    _hello(upstream)
    _put(gw, 1, path, upstream, conf)
    with Client(gw.port) as c:
        got = c.get(path)
        assert got.status == status and got.body == b"", got
        assert got.header("content-length") is None, "RFC 9110 8.6: %r" % got
        assert got.header("transfer-encoding") is None, got
        got = c.get(path)  # nothing stray on the connection
        assert got.status == status, got


@pytest.mark.parametrize("path", ["/hello", "/no-upstream"])
def test_set_replaces_the_gateways_server_and_date(make_gateway, upstream, path):
    gw = make_gateway(admin=True)
    _hello(upstream)
    _put(gw, 1, "/hello", upstream, {"headers": {"set": {"Server": "mine", "Date": "today"}}})
    r = gw.admin("PUT", "/routes/2", {"uri": "/no-upstream", "plugins": {
        "response-rewrite": {"headers": {"set": {"Server": "mine", "Date": "today"}}}}})
    assert r.status == 201, r
    got = get(gw.port, path)
    assert got.header_all("server") == ["mine"], got
    assert got.header_all("date") == ["today"], got


def test_vars_on_upstream_headers(make_gateway, upstream):
    gw = make_gateway(admin=True)
    _hello(upstream, "/flagged", headers=[("X-Flag", "1")])
    _hello(upstream, "/plain")
    _put(gw, 1, ["/flagged", "/plain"], upstream, {
        "headers": {"set": {"X-Seen": "${upstream_http_x_flag}"}},
        "vars": [["upstream_http_x_flag", "==", "1"], ["sent_http_content_type", "~~", "^text/"]]})
    got = get(gw.port, "/flagged")
    assert got.header("x-seen") == "1", got
    got = get(gw.port, "/plain")
    assert got.header("x-seen") is None, got


# --------------------------------------------------------------------------- gateway answers


def test_global_rule_rewrites_route_not_found(make_gateway, upstream):
    gw = make_gateway(admin=True)
    r = gw.admin("PUT", "/global_rules/1", {"plugins": {"response-rewrite": {
        "status_code": 200, "body": "{\"message\":\"nothing here\"}",
        "headers": {"set": {"X-Status-Was": "404"}},
        "vars": [["status", "==", 404]]}}})
    assert r.status in (200, 201), r
    _hello(upstream)
    _put(gw, 1, "/hello", upstream, {"headers": {"X-Route": "1"}})
    got = get(gw.port, "/nothing/here")
    assert got.status == 200 and got.header("x-status-was") == "404", got
    _framed(got, b'{"message":"nothing here"}')
    got = get(gw.port, "/hello")  # a 200 from the upstream: the global rule's vars say no
    assert got.status == 200 and got.header("x-status-was") is None, got
    assert got.header("x-route") == "1", got
    _framed(got, HELLO)


def test_limit_count_rejection_on_the_same_route(make_gateway, upstream):
    gw = make_gateway(admin=True)
    _hello(upstream)
    gw.admin("PUT", "/routes/1", admin_route("/hello", upstream, plugins={
        "limit-count": {"count": 1, "time_window": 60, "rejected_code": 429,
                        "rejected_msg": "Requests are too frequent, please try again later."},
        "response-rewrite": {"headers": {"set": {"Retry-After": "60", "X-Was": "$status"}},
                             "filters": [{"regex": "error_msg", "replace": "message"}],
                             "vars": [["status", "==", 429]]}}))
    got = get(gw.port, "/hello")
    assert got.status == 200 and got.header("retry-after") is None, got
    _framed(got, HELLO)
    got = get(gw.port, "/hello")
    assert got.status == 429, got
    assert (got.header("retry-after"), got.header("x-was")) == ("60", "429"), got
    assert got.json() == {"message": "Requests are too frequent, please try again later."}, got


def test_failed_upstream_answer_is_rewritten(make_gateway):
    gw = make_gateway(admin=True)
    dead = "127.0.0.1:%d" % free_port()  # nothing listens there
    r = gw.admin("PUT", "/routes/1", {
        "uri": "/dead",
        "plugins": {"response-rewrite": {
            "status_code": 503, "body": "{\"message\":\"try later\"}",
            "headers": {"set": {"X-Upstream": "${upstream_status ?? none}"}},
            "vars": [["status", "==", 502]]}},
        "upstream": {"type": "roundrobin", "nodes": {dead: 1}}})
    assert r.status == 201, r
    got = get(gw.port, "/dead")
    assert got.status == 503, got
    assert got.header("x-upstream") == "none", got  # no upstream answered
    _framed(got, b'{"message":"try later"}')


# --------------------------------------------------------------------------- the Admin API


@pytest.mark.parametrize("conf,error", [
    ({"status_code": 599}, 'property "status_code" validation failed: expected 599 to be at most 598'),
    ({"body": 2}, 'property "body" validation failed: wrong type: expected string, got number'),
    ({"body": "1", "body_base64": True}, "invalid base64 content"),
    ({"headers": {"": 2}}, "invalid field length in header"),
    ({"headers": {"X-Name": {}}}, "invalid type as header value"),
    ({"body": "x", "filters": [{"regex": "l", "replace": "m"}]},
     "failed to validate dependent schema for body: value wasn't supposed to match schema"),
    ({"filters": []}, 'property "filters" validation failed: expect array to have at least 1 items'),
    ({"filters": [{"regex": "l"}]},
     'property "filters" validation failed: failed to validate item 1: property "replace" is required'),
    ({"filters": [{"regex": "hello", "replace": "HELLO", "options": "h"}]},
     'regex "hello" validation failed: unknown flag "h" (flags "h")'),
    ({"headers": {"add": ["X-A"]}},
     'property "headers" validation failed: object matches none of the required'),
    ({"vars": [["status", "=", 200]]}, "failed to validate the 'vars' expression: "),
    # Refused by Sluice, which could not make them take effect:
    ({"filters": [{"regex": "(", "replace": "x"}]}, 'regex "(" validation failed: '),
    ({"headers": {"X-A": "$request_time"}},
     'header "X-A": variable $request_time is not supported by Sluice'),
    ({"headers": {"X-A": "$http_user_agent"}}, 'header "X-A": variable $http_user_agent reads the request'),
    ({"headers": {"Content-Length": "1"}}, 'header "Content-Length" cannot be changed'),
])
def test_admin_refuses_bad_confs(admin_gw, upstream, conf, error):
    r = admin_gw.admin("PUT", "/routes/1",
                       admin_route("/x", upstream, plugins={"response-rewrite": conf}))
    expect_error(r, 400, ERR + error)
    assert admin_gw.admin("GET", "/routes/1").status == 404, "the refused route was stored"
    r = admin_gw.admin("PUT", "/global_rules/1", {"plugins": {"response-rewrite": conf}})
    expect_error(r, 400, ERR + error)


def test_admin_schema_and_list(admin_gw):
    r = admin_gw.admin("GET", "/plugins/response-rewrite")
    assert r.status == 200, r
    props = r.json["properties"]
    for p in ("status_code", "body", "body_base64", "headers", "vars", "filters"):
        assert p in props, r.json
    assert props["status_code"]["maximum"] == 598
    assert "response-rewrite" in admin_gw.admin("GET", "/plugins/list").json


def test_stored_conf_is_what_was_sent(admin_gw, upstream):
    conf = {"headers": {"X-Server-id": 3, "X-Server-status": "on", "Content-Type": ""},
            "body": "new body\n"}
    r = admin_gw.admin("PUT", "/routes/1",
                       admin_route("/with_header", upstream, plugins={"response-rewrite": conf}))
    assert r.status == 201, r
    stored = r.json["value"]["plugins"]["response-rewrite"]
    assert {k: stored.get(k) for k in conf} == conf, r
    r = admin_gw.admin("PATCH", "/routes/1/plugins/response-rewrite/status_code", 600)
    expect_error(r, 400, ERR + 'property "status_code" validation failed')
