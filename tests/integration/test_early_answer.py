"""An upstream that answers before the client has sent its whole body (a 413, a 401, even a
200) while the client pauses: the answer reaches the client at once, not at the body timeout,
the case is logged, and the client connection closes after the answer (issue: early upstream
answers withheld). A raw-socket upstream answers as soon as it has read the request head."""

import socket
import threading
import time

import pytest

from harness import Reader, free_port, read_response, route


class EarlyUpstream:
    """Answers `answer` as soon as a request head is in; then closes, or keeps reading."""

    def __init__(self, answer, close_after):
        self.answer = answer
        self.close_after = close_after
        self.port = free_port()
        self.addr = "127.0.0.1:%d" % self.port
        self.received = b""
        self._srv = socket.socket()
        self._srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._srv.bind(("127.0.0.1", self.port))
        self._srv.listen(8)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        self._srv.settimeout(0.2)
        while not self._stop.is_set():
            try:
                s, _ = self._srv.accept()
            except OSError:
                continue
            with s:
                s.settimeout(0.2)
                buf = b""
                while b"\r\n\r\n" not in buf and not self._stop.is_set():
                    try:
                        chunk = s.recv(65536)
                    except socket.timeout:
                        continue
                    if not chunk:
                        break
                    buf += chunk
                self.received += buf
                s.sendall(self.answer)
                if self.close_after:
                    continue
                while not self._stop.is_set():  # keep the connection, read what comes
                    try:
                        chunk = s.recv(65536)
                    except socket.timeout:
                        continue
                    if not chunk:
                        break
                    self.received += chunk

    def stop(self):
        self._stop.set()
        self._thread.join(5)
        self._srv.close()


CASES = {
    "413-and-close": (b"HTTP/1.1 413 Payload Too Large\r\nContent-Length: 8\r\n"
                      b"Connection: close\r\n\r\ntoo big\n", True, 413, b"too big\n"),
    "401-kept-open": (b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 7\r\n\r\nno key\n", False,
                      401, b"no key\n"),
    "200-complete": (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfine\n", False, 200,
                     b"fine\n"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_early_answer_reaches_a_pausing_client_at_once(make_gateway, case):
    answer, close_after, status, body = CASES[case]
    up = EarlyUpstream(answer, close_after)
    try:
        gw = make_gateway(routes=[route("/upload", up.addr)])
        start = gw.log_size()
        s = socket.create_connection(("127.0.0.1", gw.port), timeout=10)
        try:
            s.sendall(b"POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" +
                      b"a" * 1000)  # then the client pauses: 99,000 bytes never come
            began = time.monotonic()
            reader = Reader(s)
            r = read_response(reader, "POST")
            waited = time.monotonic() - began
            assert r.status == status, r
            assert r.body == body, r
            # The body timeout is 60 s: anything near it means the answer was held back.
            assert waited < 5, "the client waited %.1f s for the upstream's early answer" % waited
            assert (r.header("connection") or "").lower() == "close", r
            # The gateway closes after the answer (lingering: the client's unread bytes are
            # drained, not reset).
            s.settimeout(5)
            assert reader.read_some() == b"", "the connection should end after the early answer"
        finally:
            s.close()
        assert gw.wait_for_log(r"answered before the request body was complete", timeout=3,
                               start=start), gw.log_text()[start:]
    finally:
        up.stop()
