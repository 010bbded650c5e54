"""Issue 20, item 5: what a request head may carry through the gateway.

- A method outside nginx's alphabet (A-Z, `_`, `-`), such as `get`, is a 400 and never reaches
  the upstream: RFC 9110 methods are case-sensitive and nginx, so APISIX, answers 400.
"""

import pytest

from harness import Client, route

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
