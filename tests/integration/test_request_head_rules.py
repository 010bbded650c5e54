"""Issue 20, item 5: what a request head may carry through the gateway.

- Header names with `_` are dropped, not forwarded, as nginx does with its default
  `underscores_in_headers off`; `nginx_config.http.underscores_in_headers: "on"` forwards them.
  The request itself is served (not a 400).
- A method outside nginx's alphabet (A-Z, `_`, `-`), such as `get`, is a 400 and never reaches
  the upstream: RFC 9110 methods are case-sensitive and nginx, so APISIX, answers 400.
"""

import pytest

from harness import Client, route

UNDERSCORED = [("X_Api_Key", "k1"), ("Transfer_Encoding", "chunked"), ("Content_Length", "3"),
               ("X-Plain", "p")]


def names(req):
    return [k.lower() for k, _ in req.headers]


def test_underscored_header_names_are_dropped_by_default(make_gateway, upstream):
    gw = make_gateway(routes=[route("/*", upstream)])
    with Client(gw.port) as c:
        r = c.request("GET", "/u", headers=UNDERSCORED)
        assert r.status == 200
        assert c.get("/after").status == 200  # the connection stays in step
    [seen] = upstream.requests_for("/u")
    assert "x-plain" in names(seen), seen.headers
    for n in ("x_api_key", "transfer_encoding", "content_length"):
        assert n not in names(seen), seen.headers
    assert seen.body_len in (None, 0)


def test_underscored_header_names_pass_when_switched_on(make_gateway, upstream):
    gw = make_gateway(routes=[route("/*", upstream)],
                      config={"nginx_config": {"http": {"underscores_in_headers": "on"}}})
    with Client(gw.port) as c:
        assert c.request("GET", "/u", headers=UNDERSCORED).status == 200
    [seen] = upstream.requests_for("/u")
    assert seen.header("X_Api_Key") == "k1"
    assert seen.header("Transfer_Encoding") == "chunked"
    # Forwarded, yet never framing: the upstream sees no body.
    assert seen.header("transfer-encoding") is None
    assert seen.body_len in (None, 0)


@pytest.mark.parametrize("method", ["get", "Get", "pOST", "GET2", "M.SEARCH"])
def test_methods_outside_nginx_alphabet_are_400_and_not_forwarded(make_gateway, upstream,
                                                                  method):
    gw = make_gateway(routes=[route("/*", upstream)])
    with Client(gw.port) as c:
        r = c.request(method, "/m")
        assert r.status == 400
        assert c.closed_by_peer()
    assert upstream.requests_for("/m") == []


@pytest.mark.parametrize("method", ["GET", "PROPFIND", "M-SEARCH", "BASELINE_CONTROL"])
def test_upper_case_methods_are_forwarded_verbatim(make_gateway, upstream, method):
    gw = make_gateway(routes=[route("/*", upstream)])
    with Client(gw.port) as c:
        assert c.request(method, "/m").status == 200
    [seen] = upstream.requests_for("/m")
    assert seen.method == method
