"""A TLS upstream for the integration tests: Debian's nginx serving HTTPS with certificates
made by the `openssl` CLI (make_pki), echoing in response headers what TLS it saw, and
optionally passing requests on to a plain fake upstream. Stopped by PID (its own session)."""

import os
import shutil
import signal
import socket
import ssl
import subprocess

import harness
from harness import free_port

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def read_text(path):
    with open(path) as f:
        return f.read()


def make_pki(d):
    """Certificates in directory `d`: ca.pem signs server.pem (upstream.test, alt.test,
    127.0.0.1) and client.pem; other-ca.pem signs other-server.pem (the same names) and
    other-client.pem. Returns `d`."""
    ext = os.path.join(d, "san.ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=DNS:upstream.test,DNS:alt.test,IP:127.0.0.1\n")
    for ca in ("ca", "other-ca"):
        _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                 "-days", "2", "-subj", "/CN=sluice-test-%s" % ca, "-keyout", ca + ".key",
                 "-out", ca + ".pem", cwd=d)
    for name, ca, extra in (("server", "ca", ["-extfile", ext]),
                            ("other-server", "other-ca", ["-extfile", ext]),
                            ("client", "ca", []), ("other-client", "other-ca", [])):
        _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                 "-subj", "/CN=sluice-" + name, "-keyout", name + ".key", "-out", name + ".csr",
                 cwd=d)
        _openssl("x509", "-req", "-in", name + ".csr", "-CA", ca + ".pem", "-CAkey", ca + ".key",
                 "-CAcreateserial", "-days", "2", "-out", name + ".pem", *extra, cwd=d)
    return d


NGINX_CONF = """\
worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/error.log info;
events {{ worker_connections 256; }}
http {{
    log_format tls '$connection $ssl_session_reused "$ssl_server_name" $ssl_client_verify '
                   '"$http_user_agent" $request_uri';
    access_log {dir}/access.log tls;
    keepalive_requests 100000;
    ssl_session_cache shared:tls:1m;
    ssl_protocols {protocols};
{servers}
}}
"""

NGINX_SERVER = """\
    server {{
        listen 127.0.0.1:{port} ssl;
        ssl_certificate {pki}/{cert}.pem;
        ssl_certificate_key {pki}/{cert}.key;
{client}
        client_max_body_size 0;
        location /status {{ return {status}; }}
{locations}
    }}
"""

ECHO_LOCATION = """        location / {
            add_header X-SNI $ssl_server_name;
            add_header X-Conn $connection;
            add_header X-Reused $ssl_session_reused;
            add_header X-Client-Verify $ssl_client_verify;
            add_header X-Client-DN $ssl_client_s_dn;
            add_header X-Node $server_port;
            add_header X-Host $http_host;
            return 200 "tls upstream\\n";
        }
"""

PROXY_LOCATION = """        location %s {
            proxy_pass http://127.0.0.1:%d/;
            proxy_http_version 1.1;
            proxy_request_buffering off;
            proxy_buffering off;
            add_header X-Conn $connection;
        }
"""


class NginxTls:
    """One nginx serving TLS on one port per entry of `servers`: dicts with `cert` (a pki
    name), optional `mtls` (require a client certificate signed by ca.pem), `proxy` (the
    port of a plain fake upstream that requests under `proxy_at`, default /fake/, are passed
    on to, streamed). Other paths are answered by nginx: X-* headers say what TLS it saw."""

    def __init__(self, workdir, pki, servers, protocols="TLSv1.2 TLSv1.3"):
        self.dir = str(workdir)
        os.makedirs(self.dir, exist_ok=True)
        self.pki, self.servers, self.protocols = pki, servers, protocols
        self.ports = [free_port() for _ in servers]
        self.down = set()
        conf = self.write_conf()
        self.log = open(os.path.join(self.dir, "stderr.log"), "ab")
        self.proc = subprocess.Popen([NGINX, "-p", self.dir, "-e", os.path.join(self.dir, "e.log"),
                                      "-c", conf, "-g", "daemon off;"], stdout=self.log,
                                     stderr=self.log, stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        for port in self.ports:
            assert harness.wait_port(port, proc=self.proc), self.error_log()
        self.port = self.ports[0]

    def write_conf(self):
        blocks = []
        for port, s in zip(self.ports, self.servers):
            client = ""
            if s.get("mtls"):
                client = ("        ssl_client_certificate %s/ca.pem;\n"
                          "        ssl_verify_client on;\n" % self.pki)
            locations = ""
            at = s.get("proxy_at", "/fake/")
            if s.get("proxy"):
                locations += PROXY_LOCATION % (at, s["proxy"])
            if not s.get("proxy") or at != "/":
                locations += ECHO_LOCATION
            blocks.append(NGINX_SERVER.format(port=port, pki=self.pki, cert=s["cert"],
                                              client=client, locations=locations,
                                              status=503 if port in self.down else 200))
        conf = os.path.join(self.dir, "nginx.conf")
        with open(conf, "w") as f:
            f.write(NGINX_CONF.format(dir=self.dir, servers="".join(blocks),
                                      protocols=self.protocols))
        return conf

    def status_of(self, port):
        """What /status answers on `port` now (no verification: only the status matters)."""
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
            with ctx.wrap_socket(raw, server_hostname="upstream.test") as s:
                s.sendall(b"GET /status HTTP/1.0\r\nHost: upstream.test\r\n\r\n")
                return int(s.recv(64).split()[1])

    def set_down(self, i, down):
        """Node i's /status answers 503 (down) or 200: a reload with the new configuration."""
        port = self.ports[i]
        (self.down.add if down else self.down.discard)(port)
        self.write_conf()
        self.proc.send_signal(signal.SIGHUP)
        want = 503 if down else 200
        assert harness.wait_until(lambda: self.status_of(port) == want, 10), self.error_log()

    def node(self, i=0):
        return "127.0.0.1:%d" % self.ports[i]

    def access_lines(self):
        path = os.path.join(self.dir, "access.log")
        return read_text(path).splitlines() if os.path.exists(path) else []

    def error_log(self):
        path = os.path.join(self.dir, "error.log")
        return read_text(path) if os.path.exists(path) else ""

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)  # its own session: master and worker
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self.log.close()
