"""basic-auth against a real gateway through the Admin API: APISIX's documented consumer and
route (consumer `foo`, password `bar`, route /hello) with curl's -u, an unknown user, a wrong
password, malformed headers (401 with APISIX's texts and `WWW-Authenticate: Basic
realm='basic'`), hide_credentials (the upstream does not see Authorization), the consumer
headers the upstream gets, anonymous_consumer, a password changed while the gateway runs, and
the Admin API's 400 for a consumer conf APISIX's schema refuses."""

import base64
import json

import pytest

from harness import admin_route, curl, http


@pytest.fixture
def bgw(make_gateway):
    return make_gateway(admin=True, workers=2)


def _ok(r):
    assert r.status in (200, 201), r
    return r


def _setup(gw, upstream, route_conf=None, consumers=(("foo", "foo", "bar"),)):
    for name, user, password in consumers:
        _ok(gw.admin("PUT", "/consumers", {
            "username": name, "plugins": {"basic-auth": {"username": user, "password": password}}}))
    _ok(gw.admin("PUT", "/routes/1", admin_route(
        "/hello", upstream, methods=["GET"], plugins={"basic-auth": route_conf or {}})))


def _basic(user, password):
    return "Basic " + base64.b64encode(("%s:%s" % (user, password)).encode()).decode()


def _seen(resp):
    """The headers the echo upstream received, lower-cased names."""
    return {k.lower(): v for k, v in json.loads(resp.body)["headers"]}


def _refused(r, message):
    assert r.status == 401, r
    assert r.body == b'{"message":"%s"}\n' % message.encode(), r
    assert r.header("www-authenticate") == "Basic realm='basic'", r


def test_doc_example(bgw, upstream):
    # APISIX's docs: consumer foo with basic-auth foo/bar, route /hello with basic-auth {}.
    _setup(bgw, upstream)
    url = "http://127.0.0.1:%d/hello" % bgw.port
    _refused(curl(url), "Missing authorization in request")
    _refused(curl(url, "-ubar:bar"), "Invalid user authorization")  # no such user
    _refused(curl(url, "-ufoo:foo"), "Invalid user authorization")  # wrong password
    r = curl(url, "-ufoo:bar")
    assert r.status == 200, r
    seen = {k.lower(): v for k, v in r.json()["headers"]}
    assert seen["x-consumer-username"] == "foo"
    assert seen["authorization"] == _basic("foo", "bar")  # kept without hide_credentials
    assert "x-credential-identifier" not in seen  # the consumer's own plugins, no credential


def test_malformed_headers(bgw, upstream):
    _setup(bgw, upstream)
    for value in ["Basic !!!", "Bearer abc", "Basic Zm9vYmFy",  # no colon
                  "Basic Zm9vOmJhcg=x", "xBasic Zm9vOmJhcg==", "Basic"]:
        _refused(http(bgw.port, "GET", "/hello", [("Authorization", value)]),
                 "Invalid authorization in request")
    # The first ':' splits, the scheme's case does not matter (RFC 7617, RFC 7235).
    r = http(bgw.port, "GET", "/hello", [("Authorization", "basic Zm9vOmJhcg==")])
    assert r.status == 200, r


def test_password_with_colon(bgw, upstream):
    _setup(bgw, upstream, consumers=[("carol", "carol", "p:a:ss")])
    r = http(bgw.port, "GET", "/hello", [("Authorization", _basic("carol", "p:a:ss"))])
    assert r.status == 200, r
    _refused(http(bgw.port, "GET", "/hello", [("Authorization", _basic("carol", "p"))]),
             "Invalid user authorization")


def test_hide_credentials(bgw, upstream):
    _setup(bgw, upstream, {"hide_credentials": True})
    r = http(bgw.port, "GET", "/hello", [("Authorization", _basic("foo", "bar"))])
    assert r.status == 200, r
    seen = _seen(r)
    assert "authorization" not in seen
    assert seen["x-consumer-username"] == "foo"


def test_client_cannot_forge_consumer_headers(bgw, upstream):
    _setup(bgw, upstream)
    r = http(bgw.port, "GET", "/hello", [("Authorization", _basic("foo", "bar")),
                                          ("X-Consumer-Username", "admin"),
                                          ("X-Credential-Identifier", "x")])
    assert r.status == 200, r
    seen = _seen(r)
    assert seen["x-consumer-username"] == "foo"
    assert "x-credential-identifier" not in seen


def test_anonymous_consumer(bgw, upstream):
    _ok(bgw.admin("PUT", "/consumers", {"username": "anon"}))
    _setup(bgw, upstream, {"anonymous_consumer": "anon"})
    r = http(bgw.port, "GET", "/hello")
    assert r.status == 200, r
    assert _seen(r)["x-consumer-username"] == "anon"
    r = http(bgw.port, "GET", "/hello", [("Authorization", _basic("foo", "bar"))])
    assert _seen(r)["x-consumer-username"] == "foo"
    _ok(bgw.admin("PUT", "/routes/1", admin_route(
        "/hello", upstream, plugins={"basic-auth": {"anonymous_consumer": "ghost"}})))
    _refused(http(bgw.port, "GET", "/hello"), "Invalid user authorization")


def test_password_change_takes_effect(bgw, upstream):
    _setup(bgw, upstream)
    assert http(bgw.port, "GET", "/hello", [("Authorization", _basic("foo", "bar"))]).status == 200
    _ok(bgw.admin("PUT", "/consumers", {
        "username": "foo", "plugins": {"basic-auth": {"username": "foo", "password": "baz"}}}))
    _refused(http(bgw.port, "GET", "/hello", [("Authorization", _basic("foo", "bar"))]),
             "Invalid user authorization")
    assert http(bgw.port, "GET", "/hello", [("Authorization", _basic("foo", "baz"))]).status == 200


def test_admin_refuses_bad_confs(bgw, upstream):
    r = bgw.admin("PUT", "/consumers", {"username": "foo",
                                        "plugins": {"basic-auth": {"username": "foo"}}})
    assert r.status == 400, r
    assert 'property "password" is required' in r.error_msg, r
    assert "basic-auth" in r.error_msg, r
    r = bgw.admin("PUT", "/routes/1", admin_route(
        "/hello", upstream, plugins={"basic-auth": {"hide_credentials": "yes"}}))
    assert r.status == 400, r
    assert r.error_msg.endswith('property "hide_credentials" validation failed: wrong type: '
                                'expected boolean, got string'), r


def test_credential(bgw, upstream):
    # The 3.7+ form: the conf on a credential of the consumer.
    _ok(bgw.admin("PUT", "/consumers", {"username": "johndoe"}))
    _ok(bgw.admin("PUT", "/consumers/johndoe/credentials", {
        "id": "cred-john-basic-auth",
        "plugins": {"basic-auth": {"username": "johndoe", "password": "john-key"}}}))
    _ok(bgw.admin("PUT", "/routes/1", admin_route("/hello", upstream,
                                                   plugins={"basic-auth": {}})))
    r = http(bgw.port, "GET", "/hello", [("Authorization", _basic("johndoe", "john-key"))])
    assert r.status == 200, r
    seen = _seen(r)
    assert seen["x-consumer-username"] == "johndoe"
    assert seen["x-credential-identifier"] == "cred-john-basic-auth"
    _refused(http(bgw.port, "GET", "/hello", [("Authorization", _basic("johndoe", "x"))]),
             "Invalid user authorization")
