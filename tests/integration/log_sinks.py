"""Receivers for the logger plugins' tests, on loopback, each on a free port: an HTTP sink
(scriptable statuses, a hanging mode, connection counting), a TCP sink (one payload per
connection), a UDP sink (one payload per datagram) and an RFC 5424 syslog receiver over TCP
or UDP (one message per line)."""

import json
import re
import socket
import ssl
import threading
import time

from harness import free_port


class _Server:
    """A listening socket served by a thread; stop() closes everything it opened."""

    def __init__(self, udp=False, port=None, tls=None):
        """tls: (certfile, keyfile) to serve TLS; port: a given one (a sink coming back)."""
        self.port = port or free_port()
        self.udp = udp
        self.tls = None
        if tls:
            self.tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.tls.load_cert_chain(*tls)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM if udp else socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", self.port))
        if not udp:
            self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.lock = threading.Lock()
        self.stopping = False
        self.tls_failures = 0
        self.conns = []
        self.threads = []
        t = threading.Thread(target=self._loop, daemon=True)
        t.start()
        self.threads.append(t)

    @property
    def addr(self):
        return "127.0.0.1:%d" % self.port

    def _loop(self):
        while not self.stopping:
            try:
                if self.udp:
                    data, _ = self.sock.recvfrom(65536)
                    self.on_datagram(data)
                    continue
                conn, _ = self.sock.accept()
            except (socket.timeout, OSError):
                continue
            if self.tls:
                conn.settimeout(5)
                try:
                    conn = self.tls.wrap_socket(conn, server_side=True)
                except (ssl.SSLError, OSError):
                    conn.close()
                    self.tls_failures += 1
                    continue
            conn.settimeout(0.2)
            with self.lock:
                self.conns.append(conn)
            t = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            t.start()
            self.threads.append(t)

    def _serve(self, conn):
        raise NotImplementedError

    def on_datagram(self, data):
        raise NotImplementedError

    def stop(self):
        self.stopping = True
        for t in self.threads:
            t.join(timeout=3)
        self.sock.close()
        with self.lock:
            for c in self.conns:
                c.close()


def wait_for(pred, timeout=10.0, step=0.02):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(step)
    return pred()


class HttpSink(_Server):
    """Records each POST (path, headers, body, connection number). `statuses` is a list of the
    statuses the next requests get (200 once it is empty); `hang` makes it read requests and
    never answer."""

    def __init__(self, statuses=(), hang=False, **kw):
        self.posts = []
        self.statuses = list(statuses)
        self.hang = hang
        self.accepted = 0
        super().__init__(**kw)

    def _serve(self, conn):
        with self.lock:
            self.accepted += 1
            n = self.accepted
        buf = b""
        while not self.stopping:
            try:
                chunk = conn.recv(65536)
            except (socket.timeout, ssl.SSLWantReadError):
                continue
            except OSError:
                return
            if not chunk:
                return
            buf += chunk
            while b"\r\n\r\n" in buf:
                head, rest = buf.split(b"\r\n\r\n", 1)
                lines = head.decode("latin-1").split("\r\n")
                headers = {}
                for line in lines[1:]:
                    k, v = line.split(":", 1)
                    headers[k.strip().lower()] = v.strip()
                length = int(headers.get("content-length", "0"))
                if len(rest) < length:
                    break
                body, buf = rest[:length], rest[length:]
                with self.lock:
                    self.posts.append({"line": lines[0], "headers": headers, "body": body,
                                       "conn": n})
                    status = self.statuses.pop(0) if self.statuses else 200
                if self.hang:
                    continue
                text = b"ok" if status < 400 else b"boom"
                conn.sendall(b"HTTP/1.1 %d X\r\nContent-Length: %d\r\n\r\n%s"
                             % (status, len(text), text))

    def bodies(self):
        with self.lock:
            return [p["body"] for p in self.posts]

    def entries(self):
        """Every entry of every POST, whichever the shape (object, array, lines)."""
        out = []
        for b in self.bodies():
            text = b.decode()
            if text.startswith("["):
                out.extend(json.loads(text))
            else:
                out.extend(json.loads(line) for line in text.split("\n"))
        return out


class TcpSink(_Server):
    """One payload per connection, recorded when the peer closes it."""

    def __init__(self, **kw):
        self.payloads = []
        super().__init__(**kw)

    def _serve(self, conn):
        buf = b""
        while not self.stopping:
            try:
                chunk = conn.recv(65536)
            except (socket.timeout, ssl.SSLWantReadError):
                continue
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
            self.on_bytes(buf)
        with self.lock:
            self.payloads.append(buf)

    def on_bytes(self, buf):
        pass


class UdpSink(_Server):
    def __init__(self):
        self.payloads = []
        super().__init__(udp=True)

    def on_datagram(self, data):
        with self.lock:
            self.payloads.append(data)


RFC5424 = re.compile(r"^<46>1 (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) (\S+) apisix (\d+) - - "
                     r"(\{.*\})$")


class SyslogReceiver(_Server):
    """rsyslog-style: TCP messages are newline-framed (non-transparent framing), each UDP
    datagram is a message. `messages` holds each line."""

    def __init__(self, udp=False, **kw):
        self.messages = []
        super().__init__(udp=udp, **kw)

    def _serve(self, conn):
        buf = b""
        while not self.stopping:
            try:
                chunk = conn.recv(65536)
            except (socket.timeout, ssl.SSLWantReadError):
                continue
            except OSError:
                return
            if not chunk:
                return
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                with self.lock:
                    self.messages.append(line.decode())

    def on_datagram(self, data):
        with self.lock:
            self.messages.extend(x for x in data.decode().split("\n") if x)
