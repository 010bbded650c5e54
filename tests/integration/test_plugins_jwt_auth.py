"""jwt-auth: APISIX's documented example run verbatim through the Admin API (only the admin
key, ports and the upstream's address changed), tokens signed by PyJWT (Debian's python3-jwt):
HS256 from a header, the query and a cookie; 401s with APISIX's exact bodies; RS256, ES256 and
EdDSA consumers with public keys; hide_credentials as the upstream sees it; a consumer change
applied without a restart; and the Admin API's 400s for bad consumer confs."""

import base64
import hashlib
import hmac
import json
import time

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from harness import admin_route, curl, expect_error, get

ERR = "failed to check the configuration of plugin jwt-auth err: "
FAR = 4102444800  # 2100-01-01


def _echo(r):
    assert r.status == 200, r
    return r.json()


def _values(echo, name):
    return [v for k, v in echo["headers"] if k.lower() == name.lower()]


def _pem(key):
    return key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()


def _consumer(gw, username, conf):
    r = gw.admin("PUT", "/consumers/%s" % username,
                 {"username": username, "plugins": {"jwt-auth": conf}})
    assert r.status in (200, 201), r


def _route(gw, upstream, conf=None, uri="/*", rid=1):
    r = gw.admin("PUT", "/routes/%s" % rid,
                 admin_route(uri, upstream, plugins={"jwt-auth": conf or {}}))
    assert r.status in (200, 201), r


def _get(gw, target, token=None, where="header", **kw):
    headers = list(kw.pop("headers", ()))
    if token is not None and where == "header":
        headers.append(("Authorization", token))
    if token is not None and where == "cookie":
        headers.append(("Cookie", "jwt=" + token))
    if token is not None and where == "query":
        target += ("&" if "?" in target else "?") + "jwt=" + token
    return get(gw.port, target, headers=headers, **kw)


def _eventually(fn, timeout=5.0):
    """Admin writes reach the workers asynchronously: retry until fn() holds."""
    deadline = time.time() + timeout
    while True:
        r = fn()
        if r or time.time() > deadline:
            return r
        time.sleep(0.05)


def _b64(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def _body(message):
    return ('{"message":"%s"}\n' % message).encode()


@pytest.fixture
def jw_gw(make_gateway):
    return make_gateway(admin=True, workers=2)


# --------------------------------------------------------------------------- the docs' example


def test_doc_example_hs256(jw_gw, upstream):
    """APISIX's jwt-auth.md: consumer jack with key + secret, a route with jwt-auth {}."""
    gw = jw_gw
    r = curl(gw.url("/apisix/admin/consumers", port=gw.admin_port), "-X", "PUT",
             "-H", "X-API-KEY: %s" % gw.admin_key, "-d", """
{
    "username": "jack",
    "plugins": {
        "jwt-auth": {
            "key": "user-key",
            "secret": "my-secret-key"
        }
    }
}""")
    assert r.rc == 0 and r.status in (200, 201), r
    r = curl(gw.url("/apisix/admin/routes/1", port=gw.admin_port), "-X", "PUT",
             "-H", "X-API-KEY: %s" % gw.admin_key, "-d", """
{
    "methods": ["GET"],
    "uri": "/index.html",
    "plugins": {
        "jwt-auth": {}
    },
    "upstream": {
        "type": "roundrobin",
        "nodes": {
            "%s": 1
        }
    }
}""" % upstream.addr)
    assert r.rc == 0 and r.status in (200, 201), r
    token = jwt.encode({"key": "user-key", "exp": FAR}, "my-secret-key", algorithm="HS256")

    # Without a token: APISIX's 401 and body.
    r = _eventually(lambda: (lambda x: x if x.status == 401 else None)(
        curl(gw.url("/index.html"))))
    assert r.status == 401 and r.body == _body("Missing JWT token in request"), r
    for where in ("header", "query", "cookie"):
        assert _eventually(lambda: _get(gw, "/index.html", token, where).status == 200), where
        echo = _echo(_get(gw, "/index.html", token, where))
        assert _values(echo, "X-Consumer-Username") == ["jack"], (where, echo)
    echo = _echo(_get(gw, "/index.html", "Bearer " + token))
    assert _values(echo, "X-Consumer-Username") == ["jack"], echo
    # Without hide_credentials the token goes upstream as it came.
    assert _values(echo, "Authorization") == ["Bearer " + token], echo


def test_401_messages(jw_gw, upstream):
    gw = jw_gw
    _consumer(gw, "jack", {"key": "user-key", "secret": "my-secret-key"})
    _route(gw, upstream)
    good = jwt.encode({"key": "user-key", "exp": FAR}, "my-secret-key", algorithm="HS256")
    assert _eventually(lambda: _get(gw, "/a", good).status == 200)
    cases = [
        (None, "Missing JWT token in request"),
        ("not.a.jwt", "JWT token invalid"),
        (good + "=", "JWT token invalid"),
        (good + ".x", "JWT token invalid"),
        (jwt.encode({"exp": FAR}, "my-secret-key", algorithm="HS256"),
         "missing user key in JWT token"),
        (jwt.encode({"key": "nobody", "exp": FAR}, "my-secret-key", algorithm="HS256"),
         "Invalid user key in JWT token"),
        (jwt.encode({"key": "user-key", "exp": FAR}, "wrong-secret", algorithm="HS256"),
         "failed to verify jwt"),
        (jwt.encode({"key": "user-key", "exp": FAR}, None, algorithm="none"),
         "failed to verify jwt"),
        (jwt.encode({"key": "user-key", "exp": FAR}, "my-secret-key", algorithm="HS512"),
         "failed to verify jwt"),
        (jwt.encode({"key": "user-key", "exp": int(time.time()) - 100}, "my-secret-key",
                    algorithm="HS256"), "failed to verify jwt"),
        (jwt.encode({"key": "user-key", "nbf": int(time.time()) + 100, "exp": FAR},
                    "my-secret-key", algorithm="HS256"), "failed to verify jwt"),
    ]
    for token, message in cases:
        r = _get(gw, "/a", token)
        assert r.status == 401, (message, r)
        assert r.body == _body(message), (message, r)
    # A token without exp is accepted, as in APISIX.
    r = _get(gw, "/a", jwt.encode({"key": "user-key"}, "my-secret-key", algorithm="HS256"))
    assert r.status == 200, r


def test_public_key_consumers(jw_gw, upstream):
    gw = jw_gw
    keys = {
        "RS256": rsa.generate_private_key(public_exponent=65537, key_size=2048),
        "ES256": ec.generate_private_key(ec.SECP256R1()),
        "EdDSA": ed25519.Ed25519PrivateKey.generate(),
    }
    for alg, key in keys.items():
        _consumer(gw, "user_" + alg.lower(),
                  {"key": alg + "-key", "algorithm": alg, "public_key": _pem(key)})
    _route(gw, upstream)
    for alg, key in keys.items():
        token = jwt.encode({"key": alg + "-key", "exp": FAR}, key, algorithm=alg)
        r = _eventually(lambda: (lambda x: x if x.status == 200 else None)(_get(gw, "/p", token)))
        assert r is not None, alg
        assert _values(_echo(r), "X-Consumer-Username") == ["user_" + alg.lower()], alg
    rs_pem = _pem(keys["RS256"])
    # HS256 with the RSA consumer's public key as the secret: refused (alg confusion). PyJWT
    # will not use a PEM as an HMAC secret, so the token is put together by hand.
    si = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode()) + "." + \
        _b64(json.dumps({"key": "RS256-key", "exp": FAR}).encode())
    forged = si + "." + _b64(hmac.new(rs_pem.encode(), si.encode(), hashlib.sha256).digest())
    r = _get(gw, "/p", forged)
    assert r.status == 401 and r.body == _body("failed to verify jwt"), r
    # Signed by another P-256 key: refused.
    wrong = jwt.encode({"key": "ES256-key", "exp": FAR},
                       ec.generate_private_key(ec.SECP256R1()), algorithm="ES256")
    r = _get(gw, "/p", wrong)
    assert r.status == 401 and r.body == _body("failed to verify jwt"), r


def test_hide_credentials(jw_gw, upstream):
    gw = jw_gw
    _consumer(gw, "jack", {"key": "user-key", "secret": "my-secret-key"})
    _route(gw, upstream, {"hide_credentials": True})
    token = jwt.encode({"key": "user-key", "exp": FAR}, "my-secret-key", algorithm="HS256")
    assert _eventually(lambda: _get(gw, "/h", token).status == 200)
    echo = _echo(_get(gw, "/h", "Bearer " + token))
    assert _values(echo, "Authorization") == [], echo
    assert _values(echo, "X-Consumer-Username") == ["jack"], echo
    echo = _echo(_get(gw, "/h?a=1&jwt=%s&b=2" % token))
    assert echo["target"] == "/h?a=1&b=2", echo
    echo = _echo(_get(gw, "/h", headers=[("Cookie", "a=1; jwt=%s; b=2" % token)]))
    assert _values(echo, "Cookie") == ["a=1; b=2"], echo


def test_consumer_change_applies_live(jw_gw, upstream):
    gw = jw_gw
    _consumer(gw, "jack", {"key": "user-key", "secret": "old-secret"})
    _route(gw, upstream)
    old = jwt.encode({"key": "user-key", "exp": FAR}, "old-secret", algorithm="HS256")
    new = jwt.encode({"key": "user-key", "exp": FAR}, "new-secret", algorithm="HS256")
    assert _eventually(lambda: _get(gw, "/c", old).status == 200)
    _consumer(gw, "jack", {"key": "user-key", "secret": "new-secret"})
    assert _eventually(lambda: _get(gw, "/c", new).status == 200)
    r = _get(gw, "/c", old)
    assert r.status == 401 and r.body == _body("failed to verify jwt"), r
    r = gw.admin("DELETE", "/consumers/jack")
    assert r.status == 200, r
    r = _eventually(lambda: (lambda x: x if x.status == 401 else None)(_get(gw, "/c", new)))
    assert r is not None and r.body == _body("Invalid user key in JWT token"), r


def test_admin_refuses_bad_consumer_confs(jw_gw):
    gw = jw_gw
    cases = [
        ({"secret": "s"}, 'property "key" is required'),
        ({"key": "k", "algorithm": "RS256"}, "missing valid public key"),
        ({"key": "k", "algorithm": "ES256", "public_key": "junk"},
         "invalid public_key: not a PEM public key"),
        ({"key": "k", "secret": "not base64!", "base64_secret": True},
         "base64_secret required but the secret is not in base64 format"),
        ({"key": "k", "secret": "s", "algorithm": "XS256"},
         'property "algorithm" validation failed'),
    ]
    for conf, msg in cases:
        r = gw.admin("PUT", "/consumers/jack", {"username": "jack", "plugins": {"jwt-auth": conf}})
        # APISIX's admin/consumers.lua puts its own prefix before the plugin's error.
        expect_error(r, 400, "invalid plugins configuration: " + ERR + msg)
    r = gw.admin("PUT", "/routes/1", admin_route("/x", plugins={"jwt-auth": {"header": 1}}))
    expect_error(r, 400, ERR + 'property "header" validation failed')



def test_anonymous_consumer(jw_gw, upstream):
    """anonymous_consumer (APISIX 3.10+): a request without a valid token goes on as that
    consumer; one naming a consumer that does not exist gets APISIX's 401."""
    gw = jw_gw
    _consumer(gw, "jack", {"key": "user-key", "secret": "my-secret-key"})
    r = gw.admin("PUT", "/consumers/anonymous", {"username": "anonymous"})
    assert r.status in (200, 201), r
    _route(gw, upstream, {"anonymous_consumer": "anonymous"}, uri="/q")
    _route(gw, upstream, {"anonymous_consumer": "ghost"}, uri="/g", rid=2)
    token = jwt.encode({"key": "user-key", "exp": FAR}, "my-secret-key", algorithm="HS256")
    assert _eventually(lambda: _get(gw, "/q", token).status == 200)
    assert _values(_echo(_get(gw, "/q", token)), "X-Consumer-Username") == ["jack"]
    for bad in (None, "junk", token[:-2]):
        echo = _echo(_get(gw, "/q", bad))
        assert _values(echo, "X-Consumer-Username") == ["anonymous"], (bad, echo)
    r = _eventually(lambda: (lambda x: x if x.status == 401 else None)(_get(gw, "/g")))
    assert r is not None and r.body == _body("Invalid user authorization"), r


def test_credential(jw_gw, upstream):
    """APISIX 3.x's documented form: a consumer with a jwt-auth credential; the upstream is
    told the credential's id (X-Credential-Identifier). Needs the Admin API's credentials."""
    gw = jw_gw
    r = gw.admin("PUT", "/consumers", {"username": "jack"})
    assert r.status in (200, 201), r
    r = gw.admin("PUT", "/consumers/jack/credentials/cred-jack-jwt-auth",
                 {"plugins": {"jwt-auth": {"key": "jack-key", "secret": "jack-hs256-secret"}}})
    assert r.status in (200, 201), r
    _route(gw, upstream)
    token = jwt.encode({"key": "jack-key", "exp": FAR}, "jack-hs256-secret", algorithm="HS256")
    assert _eventually(lambda: _get(gw, "/c", token).status == 200)
    echo = _echo(_get(gw, "/c", token))
    assert _values(echo, "X-Consumer-Username") == ["jack"], echo
    assert _values(echo, "X-Credential-Identifier") == ["cred-jack-jwt-auth"], echo
