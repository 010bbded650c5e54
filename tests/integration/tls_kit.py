"""TLS helpers for the integration tests: a CA and leaf certificates made with the openssl CLI,
Python `ssl` clients that speak HTTP/1.1 over TLS, openssl s_client runs, and the bytes of a
real ClientHello (for the hostile-input tests).

Certificates (Certs.make(dir)): `ca` (RSA-2048, signs everything below except what `ca2`
signs), `ca2` (ECDSA, a second, unrelated CA), and leaves, each `<name>.pem` / `<name>.key`:

    a_rsa, a_ec     a.test (RSA-2048 and ECDSA P-256: two pairs of one object)
    wild            *.w.test            any       any.test (served by the `*` object)
    open            open.test           secure    secure.test      secure2   secure2.test
    skip            skip.test           swap1, swap2  swap.test (two serials: a rotation)
    admin           localhost, 127.0.0.1 (the Admin API's certificate)
    client          CN=client-1,O=Sluice Test (a client certificate signed by `ca`)
    client_ca2      CN=client-2 (signed by `ca2`)
    intruder        CN=intruder, self-signed (no CA knows it)
"""

import base64
import os
import re
import socket
import ssl
import subprocess

import harness

LEAVES = [
    # name, subject, SANs, key type, issuer, serial
    ("a_rsa", "/CN=a.test", "DNS:a.test", "rsa", "ca", 1001),
    ("a_ec", "/CN=a.test", "DNS:a.test", "ec", "ca", 1002),
    ("wild", "/CN=*.w.test", "DNS:*.w.test", "ec", "ca", 1003),
    ("any", "/CN=any.test", "DNS:any.test", "ec", "ca", 1004),
    ("open", "/CN=open.test", "DNS:open.test", "ec", "ca", 1005),
    ("secure", "/CN=secure.test", "DNS:secure.test", "ec", "ca", 1006),
    ("secure2", "/CN=secure2.test", "DNS:secure2.test", "ec", "ca", 1007),
    ("skip", "/CN=skip.test", "DNS:skip.test", "ec", "ca", 1008),
    ("swap1", "/CN=swap.test", "DNS:swap.test", "ec", "ca", 1009),
    ("swap2", "/CN=swap.test", "DNS:swap.test", "ec", "ca", 1010),
    ("admin", "/CN=localhost", "DNS:localhost,IP:127.0.0.1", "ec", "ca", 1011),
    ("client", "/O=Sluice Test/CN=client-1", None, "ec", "ca", 0x5EC0DE),
    ("client_ca2", "/CN=client-2", None, "ec", "ca2", 2001),
    ("intruder", "/CN=intruder", None, "ec", None, 3001),
]


def _openssl(*args, cwd):
    p = subprocess.run(["openssl"] + list(args), cwd=cwd, capture_output=True, timeout=60)
    if p.returncode != 0:
        raise AssertionError("openssl %s failed: %s" % (" ".join(args), p.stderr.decode()))


def _keygen_args(kind):
    return ["rsa:2048"] if kind == "rsa" else ["ec", "-pkeyopt", "ec_paramgen_curve:P-256"]


class Certs:
    """Paths and texts of the certificates above, made once per test session."""

    def __init__(self, d):
        self.dir = str(d)

    @classmethod
    def make(cls, d):
        d = str(d)
        os.makedirs(d, exist_ok=True)
        ca_ext = os.path.join(d, "ca.ext")
        with open(ca_ext, "w") as f:
            f.write("basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n"
                    "subjectKeyIdentifier=hash\n")
        for name, kind, subj in (("ca", "rsa", "/CN=Sluice Test CA"),
                                 ("ca2", "ec", "/CN=Sluice Other CA")):
            _openssl("req", "-x509", "-newkey", *_keygen_args(kind), "-nodes", "-keyout",
                     name + ".key", "-out", name + ".pem", "-days", "30", "-subj", subj,
                     "-addext", "basicConstraints=critical,CA:TRUE",
                     "-addext", "keyUsage=critical,keyCertSign,cRLSign", cwd=d)
        for name, subj, sans, kind, issuer, serial in LEAVES:
            ext = os.path.join(d, name + ".ext")
            with open(ext, "w") as f:
                f.write("basicConstraints=CA:FALSE\n"
                        "extendedKeyUsage=serverAuth,clientAuth\n")
                if sans:
                    f.write("subjectAltName=%s\n" % sans)
            _openssl("req", "-new", "-newkey", *_keygen_args(kind), "-nodes", "-keyout",
                     name + ".key", "-out", name + ".csr", "-subj", subj, cwd=d)
            sign = ["-CA", issuer + ".pem", "-CAkey", issuer + ".key"] if issuer else \
                ["-signkey", name + ".key"]
            _openssl("x509", "-req", "-in", name + ".csr", *sign, "-set_serial", str(serial),
                     "-days", "30", "-sha256", "-extfile", ext, "-out", name + ".pem", cwd=d)
        return cls(d)

    def path(self, name, ext="pem"):
        return os.path.join(self.dir, "%s.%s" % (name, ext))

    def cert(self, name):
        with open(self.path(name)) as f:
            return f.read()

    def key(self, name):
        with open(self.path(name, "key")) as f:
            return f.read()

    def der(self, name):
        return ssl.PEM_cert_to_DER_cert(self.cert(name))

    def ssl_body(self, name, snis, **extra):
        """An Admin API `ssls` body serving leaf `name` for `snis`."""
        body = {"cert": self.cert(name), "key": self.key(name), "snis": list(snis)}
        body.update(extra)
        return body

    def which(self, der, names):
        """The one of `names` whose certificate is `der` (None when none is)."""
        for n in names:
            if self.der(n) == der:
                return n
        return None


# --------------------------------------------------------------------------- Python clients


def client_ctx(cafile=None, cert=None, key=None, min_version=None, max_version=None,
               ciphers=None, alpn=None, sigalgs=None):
    """A client context: verifying against `cafile` (host names included) or not at all."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if cafile:
        ctx.load_verify_locations(cafile)
    else:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if cert:
        ctx.load_cert_chain(cert, key)
    if min_version:
        ctx.minimum_version = min_version
    if max_version:
        ctx.maximum_version = max_version
    if ciphers:
        ctx.set_ciphers(ciphers)
    if alpn:
        ctx.set_alpn_protocols(alpn)
    return ctx


class TlsClient:
    """One TLS connection to the gateway speaking HTTP/1.1 (harness.Client over TLS). The
    handshake happens in the constructor: a refused one raises ssl.SSLError or OSError."""

    def __init__(self, port, sni, ctx=None, session=None, timeout=10.0):
        self.port = port
        raw = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            self.sock = (ctx or client_ctx()).wrap_socket(raw, server_hostname=sni,
                                                          session=session)
        except BaseException:
            raw.close()
            raise
        self.reader = harness.Reader(self.sock)
        self.sni = sni

    def request(self, method, path, headers=(), body=None, host=None):
        host = host or self.sni or "127.0.0.1"
        self.sock.sendall(harness.build_request(method, path, headers, body, host))
        return harness.read_response(self.reader, method)

    def get(self, path="/", **kw):
        return self.request("GET", path, **kw)

    @property
    def session(self):
        return self.sock.session

    @property
    def reused(self):
        return self.sock.session_reused

    def peer_der(self):
        return self.sock.getpeercert(binary_form=True)

    def closed_by_peer(self, timeout=3.0):
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except socket.timeout:
            return False
        except (ssl.SSLError, OSError):
            return True

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def https_get(port, sni, path="/", ctx=None, host=None, headers=(), timeout=10.0):
    """One request on a fresh TLS connection (Connection: close)."""
    with TlsClient(port, sni, ctx, timeout=timeout) as c:
        return c.request("GET", path, list(headers) + [("Connection", "close")], host=host)


def refused(fn):
    """True when fn() fails the way a refused handshake (or a TLS 1.3 client certificate
    refused after the client's Finished) does: an SSL error, a reset, or EOF before any
    answer."""
    try:
        fn()
    except (ssl.SSLError, ConnectionError, EOFError, socket.timeout, OSError):
        return True
    return False


def served(port, sni, ctx=None):
    """The DER certificate the gateway serves for `sni` (None: no SNI sent)."""
    with TlsClient(port, sni, ctx) as c:
        return c.peer_der()


# --------------------------------------------------------------------------- openssl s_client


class SClient:
    def __init__(self, rc, out):
        self.rc = rc
        self.out = out

    def server_cert_der(self):
        m = re.search(r"-----BEGIN CERTIFICATE-----\n(.*?)-----END CERTIFICATE-----",
                      self.out, re.S)
        return base64.b64decode("".join(m.group(1).split())) if m else None

    def handshake_ok(self):
        return re.search(r"^(New|Reused), TLSv1\.[0-3], Cipher is", self.out, re.M) is not None

    def reused(self):
        return re.search(r"^Reused, TLSv1\.[23]", self.out, re.M) is not None

    def alpn(self):
        m = re.search(r"^ALPN protocol: (\S+)", self.out, re.M)
        if m:
            return m.group(1)
        return None if "No ALPN negotiated" in self.out else "?"

    def __repr__(self):
        return "<s_client rc=%s\n%s>" % (self.rc, self.out[-3000:])


def s_client(port, *args, request=None, timeout=15):
    """openssl s_client against the gateway's port. `request` (bytes) is written after the
    handshake and s_client keeps reading until the server closes (-ign_eof); without it stdin
    is empty and s_client stops after the handshake."""
    cmd = ["openssl", "s_client", "-connect", "127.0.0.1:%d" % port] + list(args)
    if request is not None:
        cmd.append("-ign_eof")
    try:
        p = subprocess.run(cmd, input=request or b"", capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"") + (e.stderr or b"")
        return SClient("timeout", out.decode(errors="replace"))
    return SClient(p.returncode, (p.stdout + p.stderr).decode(errors="replace"))


def http_request_bytes(host, path="/", close=True):
    return ("GET %s HTTP/1.1\r\nHost: %s\r\n%s\r\n" % (
        path, host, "Connection: close\r\n" if close else "")).encode()


# --------------------------------------------------------------------------- raw ClientHello


def client_hello(sni="a.test", **ctx_kw):
    """The bytes of the ClientHello Python's OpenSSL sends for `sni` (one TLS record)."""
    ctx = client_ctx(**ctx_kw)
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(incoming, outgoing, server_hostname=sni)
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()
