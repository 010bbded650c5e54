"""What `sluice bench tls` runs: the certificates, and Sluice and nginx serving HTTPS.

Both gateways terminate TLS with the same certificate and key files (ECDSA P-256 and
RSA-2048, self-signed for `localhost`, made with the openssl command at the start of a run),
the same protocols (TLSv1.2 and TLSv1.3) and TLS 1.2 ciphers (Sluice's default list, which
is APISIX's), the server's cipher preference, and the same session cache: Sluice's defaults
(src/tls/context.cc: a server-side cache of 80k sessions, 10 minutes, no session tickets)
against nginx's `ssl_session_cache shared:SSL:20m; ssl_session_timeout 10m;
ssl_session_tickets off;` (about 80k sessions too). Both proxy plaintext to the same
upstream, as in scenario 1, and both also keep their plaintext listener (the reference).

Sluice takes its certificate as an `ssls` object through the Admin API (`snis: [localhost]`),
replaced by a PUT when the measurement changes the key type; nginx reads the files and has
one HTTPS port per key type. Clients name `localhost` in SNI (wrk sends the URL's host).
"""

import os
import socket
import ssl
import subprocess
import time

from . import targets
from .procs import Process, free_port

SNI = "localhost"

# Sluice's default apisix.ssl.ssl_ciphers (src/config/gateway_config.h), given to both.
CIPHERS = ("ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
           "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
           "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:"
           "DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384")

KEY_TYPES = {
    "ecdsa": ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"],
    "rsa": ["-newkey", "rsa:2048"],
}


def make_certs(workdir):
    """{"ecdsa": (crt, key), "rsa": (crt, key)}: self-signed for localhost, in workdir."""
    out = {}
    for kind, newkey in KEY_TYPES.items():
        crt = os.path.join(workdir, "%s.crt" % kind)
        key = os.path.join(workdir, "%s.key" % kind)
        cmd = ["openssl", "req", "-x509", *newkey, "-nodes", "-keyout", key, "-out", crt,
               "-days", "30", "-subj", "/CN=%s" % SNI, "-addext", "subjectAltName=DNS:%s" % SNI]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        except OSError as e:
            raise RuntimeError("the openssl command is needed to make the certificates: %s" % e)
        if p.returncode != 0:
            raise RuntimeError("%s failed: %s" % (" ".join(cmd), p.stderr[-1000:]))
        out[kind] = (crt, key)
    return out


def _read(path):
    with open(path) as f:
        return f.read()


def served_cert(port, timeout=2.0):
    """The DER certificate a handshake to 127.0.0.1:port with SNI localhost is served, or
    None when the handshake fails."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            with ctx.wrap_socket(s, server_hostname=SNI) as t:
                return t.getpeercert(binary_form=True)
    except (OSError, ssl.SSLError):
        return None


def wait_cert(port, crt_path, timeout=10.0):
    want = ssl.PEM_cert_to_DER_cert(_read(crt_path))
    deadline = time.monotonic() + timeout
    got = None
    while time.monotonic() < deadline:
        got = served_cert(port)
        if got == want:
            return
        time.sleep(0.05)
    raise RuntimeError("port %d did not serve %s within %.0f s (%s)" % (
        port, crt_path, timeout, "another certificate" if got else "no handshake"))


def check_localhost():
    """wrk connects to the first address `localhost` resolves to; the gateways listen on
    127.0.0.1."""
    try:
        first = socket.getaddrinfo(SNI, 443, type=socket.SOCK_STREAM)[0][4][0]
    except OSError as e:
        raise RuntimeError("cannot resolve localhost: %s" % e)
    if first != "127.0.0.1":
        raise RuntimeError("localhost resolves to %s first; the TLS benchmark needs "
                           "127.0.0.1 (wrk sends the URL's host as SNI and connects to the "
                           "first address)" % first)


SLUICE_SSL = """\
    enable: true
    listen:
      - ip: 127.0.0.1
        port: {port}
    ssl_protocols: TLSv1.2 TLSv1.3
    ssl_ciphers: {ciphers}"""


class TlsSluice(targets.Sluice):
    """Sluice with its HTTPS listener on a free port; the certificate is `ssls/1`."""

    def __init__(self, binary, upstream, workdir, certs, cpus):
        self.tls_port = free_port()
        super().__init__(binary, upstream, workdir, 1, cpus,
                         ssl_yaml=SLUICE_SSL.format(port=self.tls_port, ciphers=CIPHERS))
        self.certs = certs
        self.cert_kind = None
        self.process = self.processes[0]

    def use_cert(self, kind):
        """Serves the `kind` pair on the HTTPS port; returns that port."""
        if kind != self.cert_kind:
            crt, key = self.certs[kind]
            status, body = targets.admin_put(self.admin_url, targets.ADMIN_KEY,
                                             "/apisix/admin/ssls/1",
                                             {"cert": _read(crt), "key": _read(key),
                                              "snis": [SNI]})
            if status not in (200, 201):
                raise RuntimeError("Sluice: PUT /apisix/admin/ssls/1 answered %s: %s" % (
                    status, body[:300]))
            wait_cert(self.tls_port, crt)
            self.cert_kind = kind
        return self.tls_port


NGINX_TLS = """\
worker_processes 1;
pid {dir}/proxy.pid;
error_log {dir}/proxy-error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    keepalive_requests 100000000;
    upstream up {{
        server 127.0.0.1:{up_port};
        keepalive 32;
    }}
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_ciphers {ciphers};
    ssl_prefer_server_ciphers on;
    ssl_session_cache shared:SSL:20m;
    ssl_session_timeout 10m;
    ssl_session_tickets off;
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        listen 127.0.0.1:{ecdsa_port} ssl backlog=4096;
        ssl_certificate {ecdsa_crt};
        ssl_certificate_key {ecdsa_key};
        location /hello {{
            proxy_pass http://up;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }}
    }}
    server {{
        listen 127.0.0.1:{rsa_port} ssl backlog=4096;
        ssl_certificate {rsa_crt};
        ssl_certificate_key {rsa_key};
        location /hello {{
            proxy_pass http://up;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }}
    }}
}}
"""


class TlsNginx(targets.Target):
    """nginx, one worker: plaintext as scenario 1's, and one HTTPS port per key type."""
    kind = "nginx"

    def __init__(self, upstream, workdir, certs, cpus):
        super().__init__("nginx")
        d = os.path.join(workdir, "nginx")
        os.makedirs(d, exist_ok=True)
        self.port = free_port()
        self.tls_ports = {"ecdsa": free_port(), "rsa": free_port()}
        conf = os.path.join(d, "nginx.conf")
        with open(conf, "w") as f:
            f.write(NGINX_TLS.format(
                dir=d, port=self.port, up_port=upstream.port, ciphers=CIPHERS,
                ecdsa_port=self.tls_ports["ecdsa"], rsa_port=self.tls_ports["rsa"],
                ecdsa_crt=certs["ecdsa"][0], ecdsa_key=certs["ecdsa"][1],
                rsa_crt=certs["rsa"][0], rsa_key=certs["rsa"][1]))
        binary = targets.nginx_binary()
        self.version = "nginx " + (targets._tool_version([binary, "-v"], r"nginx/(\S+)") or "?")
        self.process = Process("nginx", [binary, "-p", d, "-e", os.path.join(d, "start.log"),
                                         "-c", conf, "-g", "daemon off;"], self.port,
                               os.path.join(workdir, "nginx.log"), cpus=cpus)
        self.processes.append(self.process)
        self.pids = [self.process.pid]
        self.url = "http://127.0.0.1:%d/hello" % self.port
        self.certs = certs
        for kind, port in self.tls_ports.items():
            wait_cert(port, certs[kind][0])

    def setup(self, scenario):
        targets.wait_serving(self.url, scenario)

    def use_cert(self, kind):
        return self.tls_ports[kind]
