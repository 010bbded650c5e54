"""gRPC over TLS to the upstream (`scheme: grpcs`): a python3-grpcio server with a certificate
from a test CA, the gateway verifying it with the upstream's `tls` settings (as for https) and
offering only h2 by ALPN; a certificate the settings do not trust is a failed try, answered
UNAVAILABLE. Clients reach the gateway over h2c as in test_grpc.py.

APISIX facts relied on (apache/apisix docs/en/latest/grpc-proxy.md): `grpcs` is the route's
upstream scheme for gRPC servers behind TLS.
"""

import os

import grpc
import pytest

from nginx_tls import make_pki, read_text
from test_grpc import SERVICE, UNLIMITED, Backend, channel, gateway, method


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(str(tmp_path_factory.mktemp("pki")))


@pytest.fixture
def tls_backend(pki):
    creds = grpc.ssl_server_credentials([(
        read_text(os.path.join(pki, "server.key")).encode(),
        read_text(os.path.join(pki, "server.pem")).encode())])
    b = Backend(creds)
    yield b
    b.stop()


def grpcs_route(backend, ca, rid="grpcs"):
    up = {"type": "roundrobin", "scheme": "grpcs", "nodes": {backend.addr: 1},
          "tls": {"verify": True, "ca_certs": [ca]}}
    return {"id": rid, "uri": "/%s/*" % SERVICE, "upstream": up}


def test_grpcs_unary_streaming_and_keepalive(make_gateway, tls_backend, pki):
    ca = read_text(os.path.join(pki, "ca.pem"))
    gw = gateway(make_gateway, [grpcs_route(tls_backend, ca)])
    with channel(gw) as ch:
        resp, call = method(ch, "Unary").with_call(b"secure", timeout=10)
        assert resp == b"eruces"
        assert ("x-trailer", "t-6") in call.trailing_metadata()
        parts = list(method(ch, "Split", "unary_stream")(b"a,b", timeout=10))
        assert parts == [b"a", b"b"]
        big = b"z" * (4 << 20)
        assert method(ch, "Unary")(big, timeout=30) == big
        with pytest.raises(grpc.RpcError) as e:
            method(ch, "Fail")(b"w", timeout=10)
        assert e.value.code() == grpc.StatusCode.NOT_FOUND
    # One TLS connection, kept alive across the calls.
    assert len(set(tls_backend.peers)) == 1, tls_backend.peers


def test_grpcs_untrusted_certificate_is_unavailable(make_gateway, tls_backend, pki):
    other = read_text(os.path.join(pki, "other-ca.pem"))
    gw = gateway(make_gateway, [grpcs_route(tls_backend, other)])
    with channel(gw) as ch:
        with pytest.raises(grpc.RpcError) as e:
            method(ch, "Unary")(b"x", timeout=10)
        assert e.value.code() == grpc.StatusCode.UNAVAILABLE
    assert gw.wait_for_log(r"TLS handshake failed", timeout=2)
    assert tls_backend.peers == []


def test_grpcs_to_a_plaintext_server_fails_cleanly(make_gateway, pki):
    plain = Backend()
    try:
        ca = read_text(os.path.join(pki, "ca.pem"))
        gw = gateway(make_gateway, [grpcs_route(plain, ca)])
        with channel(gw) as ch:
            with pytest.raises(grpc.RpcError) as e:
                method(ch, "Unary")(b"x", timeout=10)
            assert e.value.code() == grpc.StatusCode.UNAVAILABLE
    finally:
        plain.stop()
