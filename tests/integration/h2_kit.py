"""A frame-level HTTP/2 client for tests, on python3-h2: it sends exactly the frames a test
asks for (also ones a polite client never would) and records every event the gateway's frames
produce, so a test can look for a GOAWAY, its error code, a RST_STREAM or a stalled stream.
"""

import socket
import ssl
import struct
import time

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings

ENHANCE_YOUR_CALM = 0xB
PROTOCOL_ERROR = 0x1
NO_ERROR = 0x0
CANCEL = 0x8
REFUSED_STREAM = 0x7
MAX_CONCURRENT_STREAMS = h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS


class H2Client:
    def __init__(self, port, host="127.0.0.1", tls_name=None, timeout=10.0, validate=True,
                 window=None, settings=None):
        raw = socket.create_connection((host, port), timeout=timeout)
        if tls_name:
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            ctx.set_alpn_protocols(["h2"])
            raw = ctx.wrap_socket(raw, server_hostname=tls_name)
            assert raw.selected_alpn_protocol() == "h2", raw.selected_alpn_protocol()
        self.sock = raw
        self.authority = "%s:%d" % (tls_name or host, port)
        self.scheme = "https" if tls_name else "http"
        cfg = h2.config.H2Configuration(client_side=True, validate_outbound_headers=validate,
                                        normalize_outbound_headers=validate,
                                        validate_inbound_headers=False)
        self.conn = h2.connection.H2Connection(config=cfg)
        self.conn.initiate_connection()
        if window is not None or settings:
            s = dict(settings or {})
            if window is not None:
                s[h2.settings.SettingCodes.INITIAL_WINDOW_SIZE] = window
            self.conn.update_settings(s)
        self.flush()
        self.events = []
        self.closed = False
        self.responses = {}  # stream id -> {"headers", "data", "ended", "reset"}

    # ---- sending

    def flush(self):
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def send_raw(self, data):
        self.sock.sendall(data)

    def request(self, path, method="GET", headers=(), body=None, end=True):
        sid = self.conn.get_next_available_stream_id()
        h = [(":method", method), (":path", path), (":scheme", self.scheme),
             (":authority", self.authority)] + list(headers)
        self.conn.send_headers(sid, h, end_stream=end and body is None)
        self.flush()
        self.responses[sid] = {"headers": None, "data": bytearray(), "ended": False,
                               "reset": None}
        if body is not None:
            self.send_body(sid, body, end)
        return sid

    def send_body(self, sid, body, end=True, timeout=30.0):
        """Sends `body` as the gateway's windows allow (its WINDOW_UPDATEs are waited for)."""
        view = memoryview(body)
        deadline = time.time() + timeout
        while view and time.time() < deadline:
            n = min(len(view), self.conn.local_flow_control_window(sid),
                    self.conn.max_outbound_frame_size)
            if n <= 0:
                if not self.pump(0.05):
                    break
                continue
            self.conn.send_data(sid, view[:n].tobytes())
            self.flush()
            view = view[n:]
        assert not view, "the gateway's window stayed shut with %d bytes left" % len(view)
        if end:
            self.conn.end_stream(sid)
            self.flush()

    # ---- receiving

    def pump(self, timeout=0.2):
        """Reads what is there within `timeout`; False once the connection closed."""
        if self.closed:
            return False
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(1 << 20)
        except (socket.timeout, ssl.SSLWantReadError):
            return True
        except (ConnectionResetError, BrokenPipeError, ssl.SSLError):
            self.closed = True
            return False
        if not data:
            self.closed = True
            return False
        try:
            events = self.conn.receive_data(data)
        except h2.exceptions.ProtocolError as e:
            self.events.append(e)
            self.closed = True
            return False
        for ev in events:
            self.events.append(ev)
            r = self.responses.get(getattr(ev, "stream_id", None))
            if isinstance(ev, h2.events.ResponseReceived) and r is not None:
                r["headers"] = dict((k.decode(), v.decode()) for k, v in ev.headers)
            elif isinstance(ev, h2.events.DataReceived) and r is not None:
                r["data"] += ev.data
                self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
            elif isinstance(ev, h2.events.StreamEnded) and r is not None:
                r["ended"] = True
            elif isinstance(ev, h2.events.StreamReset) and r is not None:
                r["reset"] = ev.error_code
        try:
            self.flush()
        except OSError:
            self.closed = True
        return True

    def wait(self, cond, timeout=10.0):
        end = time.time() + timeout
        while time.time() < end:
            if cond():
                return True
            if not self.pump() and not cond():
                return cond()
        return cond()

    def response(self, sid, timeout=10.0):
        r = self.responses[sid]
        self.wait(lambda: r["ended"] or r["reset"] is not None, timeout)
        return r

    def goaway(self):
        for ev in self.events:
            if isinstance(ev, h2.events.ConnectionTerminated):
                return ev
        return None

    def wait_closed(self, timeout=10.0):
        end = time.time() + timeout
        while time.time() < end and self.pump():
            pass
        return self.closed

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def frame(ftype, flags, sid, payload):
    """One raw frame (RFC 9113 4.1)."""
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + \
        struct.pack(">I", sid) + payload


HEADERS, RST_STREAM, PING, CONTINUATION = 0x1, 0x3, 0x6, 0x9
END_STREAM, END_HEADERS = 0x1, 0x4
