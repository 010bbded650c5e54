"""hmac-auth against a real gateway through the Admin API, signed with hmac_client.py (a client
written from APISIX's docs): APISIX's documented examples (consumer john, credential
cred-john-hmac-auth with key_id john-key,
the default route conf, hide_credentials, validate_request_body with the docs' body and Digest,
signed_headers), a tampered request, a replayed request whose Date is outside clock_skew, a
body that does not match its Digest, an algorithm the route does not allow, an unknown key_id,
the two explained failures' texts, anonymous_consumer, and the Admin API's 400s."""

import json
import time

import pytest

import hmac_client as hc
from harness import admin_route, http

CANNOT = b'{"message":"client request can\'t be validated"}\n'


@pytest.fixture
def hgw(make_gateway):
    return make_gateway(admin=True, workers=2)


def _ok(r):
    assert r.status in (200, 201), r
    return r


def _setup(gw, upstream, conf=None, uri="/get", methods=("GET",)):
    # APISIX's docs: consumer john with a custom_id label, the key on its credential.
    _ok(gw.admin("PUT", "/consumers", {"username": "john", "labels": {"custom_id": "495aec6a"}}))
    _ok(gw.admin("PUT", "/consumers/john/credentials", {
        "id": "cred-john-hmac-auth",
        "plugins": {"hmac-auth": {"key_id": "john-key", "secret_key": "john-secret-key"}}}))
    _ok(gw.admin("PUT", "/routes/hmac-auth-route", admin_route(
        uri, upstream, methods=list(methods), plugins={"hmac-auth": conf or {}})))


def _send(gw, method, target, headers, body=None):
    return http(gw.port, method, target, list(headers.items()), body=body)


def _signed(method, target, **kw):
    return hc.signed_headers("john-key", "john-secret-key", method, target, **kw)


def _seen(resp):
    return {k.lower(): v for k, v in json.loads(resp.body)["headers"]}


def _refused(r, body=CANNOT):
    assert r.status == 401, r
    assert r.body == body, r
    assert r.header("www-authenticate") is None, r  # APISIX's hmac-auth sends no challenge


def test_doc_route_good_signature(hgw, upstream):
    _setup(hgw, upstream)
    headers = _signed("GET", "/get")
    r = _send(hgw, "GET", "/get", headers)
    assert r.status == 200, r
    seen = _seen(r)
    assert seen["x-consumer-username"] == "john"
    assert seen["x-consumer-custom-id"] == "495aec6a"
    assert seen["x-credential-identifier"] == "cred-john-hmac-auth"
    assert seen["authorization"] == headers["Authorization"]  # kept without hide_credentials
    # Every algorithm the default conf allows; the query string is part of @request-target.
    for algo in ("hmac-sha1", "hmac-sha512"):
        h = _signed("GET", "/get?a=1&b=%20", algorithm=algo)
        assert _send(hgw, "GET", "/get?a=1&b=%20", h).status == 200, algo


def test_tampered_request(hgw, upstream):
    _setup(hgw, upstream, uri="/get*")
    headers = _signed("GET", "/get?a=1", extra={"X-Amount": "10"},
                      names=["@request-target", "date", "x-amount"])
    assert _send(hgw, "GET", "/get?a=1", headers).status == 200
    _refused(_send(hgw, "GET", "/get?a=2", headers))  # another query
    _refused(_send(hgw, "GET", "/getx?a=1", headers))  # another path
    forged = dict(headers, **{"X-Amount": "1000"})
    _refused(_send(hgw, "GET", "/get?a=1", forged))  # a signed header changed
    bad_sig = dict(headers)
    bad_sig["Authorization"] = headers["Authorization"].replace('signature="', 'signature="A')
    _refused(_send(hgw, "GET", "/get?a=1", bad_sig))


def test_replayed_date_outside_clock_skew(hgw, upstream):
    _setup(hgw, upstream)
    old = hc.http_date(time.time() - 301)
    _refused(_send(hgw, "GET", "/get", _signed("GET", "/get", date=old)))
    future = hc.http_date(time.time() + 301)
    _refused(_send(hgw, "GET", "/get", _signed("GET", "/get", date=future)))
    # APISIX's docs' own request, Date and all, is long outside the window.
    _refused(_send(hgw, "GET", "/get", {
        "Date": "Fri, 06 Sep 2024 06:41:29 GMT",
        "Authorization": 'Signature keyId="john-key",algorithm="hmac-sha256",'
                         'headers="@request-target date",'
                         'signature="wWfKQvPDr0wHQ4IHdluB4IzeNZcj0bGJs2wvoCOT5rM="'}))
    # A wider clock_skew takes the same old request.
    _ok(hgw.admin("PUT", "/routes/hmac-auth-route", admin_route(
        "/get", upstream, plugins={"hmac-auth": {"clock_skew": 600}})))
    assert _send(hgw, "GET", "/get", _signed("GET", "/get", date=old)).status == 200
    # No Date at all, or one not in IMF-fixdate form.
    h = _signed("GET", "/get", names=["@request-target"])
    del h["Date"]
    _refused(_send(hgw, "GET", "/get", h))
    rfc850 = time.strftime("%A, %d-%b-%y %H:%M:%S GMT", time.gmtime())
    _refused(_send(hgw, "GET", "/get", _signed("GET", "/get", date=rfc850)))


def test_doc_hide_credentials(hgw, upstream):
    _setup(hgw, upstream, {"hide_credentials": True})
    r = _send(hgw, "GET", "/get", _signed("GET", "/get"))
    assert r.status == 200, r
    seen = _seen(r)
    assert "authorization" not in seen
    assert seen["x-consumer-username"] == "john"


def test_doc_validate_request_body(hgw, upstream):
    _setup(hgw, upstream, {"validate_request_body": True}, uri="/post", methods=("POST",))
    body = '{"name": "world"}'
    headers = _signed("POST", "/post", body=body)
    # The docs' Digest for this body.
    assert headers["Digest"] == "SHA-256=78qzJuLwSpZ8HacsTdFCQJWxzPMOf8bYctRk2ySLpS8="
    r = _send(hgw, "POST", "/post", headers, body=body.encode())
    assert r.status == 200, r
    assert json.loads(r.body)["body_len"] == len(body)
    _refused(_send(hgw, "POST", "/post", headers, body=b'{"name": "World"}'))  # mismatch
    no_digest = _signed("POST", "/post")
    _refused(_send(hgw, "POST", "/post", no_digest, body=body.encode()))


def test_algorithm_not_allowed(hgw, upstream):
    _setup(hgw, upstream, {"allowed_algorithms": ["hmac-sha256"]})
    assert _send(hgw, "GET", "/get", _signed("GET", "/get")).status == 200
    _refused(_send(hgw, "GET", "/get", _signed("GET", "/get", algorithm="hmac-sha1")))
    _refused(_send(hgw, "GET", "/get", _signed("GET", "/get", algorithm="hmac-sha512")))


def test_doc_signed_headers(hgw, upstream):
    _setup(hgw, upstream, {"signed_headers": ["date", "x-custom-header-a", "x-custom-header-b"]})
    extra = {"x-custom-header-a": "hello123", "x-custom-header-b": "world456"}
    names = ["@request-target", "date", "x-custom-header-a", "x-custom-header-b"]
    assert _send(hgw, "GET", "/get", _signed("GET", "/get", extra=extra, names=names)).status == 200
    _refused(_send(hgw, "GET", "/get", _signed("GET", "/get", extra=extra)))


def test_unknown_key_and_explained_failures(hgw, upstream):
    _setup(hgw, upstream)
    h = hc.signed_headers("nobody", "john-secret-key", "GET", "/get")
    _refused(_send(hgw, "GET", "/get", h))
    _refused(_send(hgw, "GET", "/get", {}),
             b'{"message":"client request can\'t be validated: missing Authorization header"}\n')
    _refused(_send(hgw, "GET", "/get", {"Authorization": "Basic Zm9vOmJhcg=="}),
             b'{"message":"client request can\'t be validated: Authorization header does not '
             b'start with \'Signature\'"}\n')
    dup = _signed("GET", "/get")
    dup["Authorization"] += ',keyId="john-key"'  # a parameter given twice
    _refused(_send(hgw, "GET", "/get", dup))


def test_anonymous_consumer(hgw, upstream):
    _ok(hgw.admin("PUT", "/consumers", {"username": "anon"}))
    _setup(hgw, upstream, {"anonymous_consumer": "anon"})
    r = _send(hgw, "GET", "/get", {})
    assert r.status == 200, r
    assert _seen(r)["x-consumer-username"] == "anon"
    assert _seen(_send(hgw, "GET", "/get", _signed("GET", "/get")))["x-consumer-username"] == "john"


def test_key_on_the_consumer_itself(hgw, upstream):
    # The 3.x form without credentials: the conf in the consumer's own plugins.
    _ok(hgw.admin("PUT", "/consumers", {"username": "jack", "plugins": {
        "hmac-auth": {"key_id": "jack-key", "secret_key": "jack-secret-key"}}}))
    _ok(hgw.admin("PUT", "/routes/1", admin_route("/get", upstream,
                                                   plugins={"hmac-auth": {}})))
    h = hc.signed_headers("jack-key", "jack-secret-key", "GET", "/get")
    r = _send(hgw, "GET", "/get", h)
    assert r.status == 200, r
    assert _seen(r)["x-consumer-username"] == "jack"
    assert "x-credential-identifier" not in _seen(r)


def test_admin_refuses_bad_confs(hgw, upstream):
    r = hgw.admin("PUT", "/consumers", {"username": "john",
                                        "plugins": {"hmac-auth": {"key_id": "john-key"}}})
    assert r.status == 400, r
    assert 'property "secret_key" is required' in r.error_msg, r
    r = hgw.admin("PUT", "/routes/1", admin_route(
        "/get", upstream, plugins={"hmac-auth": {"clock_skew": 0}}))
    assert r.status == 400, r
    assert r.error_msg.endswith(
        'property "clock_skew" validation failed: expected 0 to be at least 1'), r
    r = hgw.admin("PUT", "/routes/1", admin_route(
        "/get", upstream, plugins={"hmac-auth": {"allowed_algorithms": ["hmac-md5"]}}))
    assert r.status == 400, r
    r = hgw.admin("PUT", "/routes/1", admin_route(
        "/get", upstream, plugins={"hmac-auth": {"realm": "hmac"}}))
    assert r.status == 400, r
    assert "not supported yet" in r.error_msg, r
