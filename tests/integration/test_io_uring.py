"""Issue 7: the workers' socket calls batched through io_uring (`sluice.io_uring: auto`, the
default; src/io/ring.h), and the plain system-call path (`off`, and wherever the kernel has no
usable io_uring) kept working beside it.

The rest of the suite runs with the default; SLUICE_TEST_IO_URING=off runs all of it on the
plain path. Here each behaviour that depends on when a socket call is made (keep-alive,
pipelining, bodies larger than a socket buffer each way, an upstream that answers before it
has read the body, many clients at once) runs in both modes, and the worker's own counters
show that the batches were used.
"""

import ctypes
import os
import re
import socket
import struct
import threading
import time
import zlib

import pytest

from fake_upstream import Fixed, download, upload_count
from harness import Client, build_request, crc_of_body, get, read_head, route, run_wrk

MODES = ["auto", "off"]
SYS_IO_URING_SETUP = 425  # the same number on x86_64 and aarch64


def kernel_has_io_uring():
    """Whether this process may create an io_uring (as the gateway's probe first does)."""
    libc = ctypes.CDLL(None, use_errno=True)
    params = ctypes.create_string_buffer(120)  # struct io_uring_params
    fd = libc.syscall(SYS_IO_URING_SETUP, ctypes.c_uint(4), params)
    if fd < 0:
        return False
    os.close(fd)
    return True


def gateway(make_gateway, upstream, mode, workers=1):
    return make_gateway(routes=[route("/*", upstream)], workers=workers,
                        config={"sluice": {"io_uring": mode}})


def ring_counters(log):
    """The workers' exit lines: (calls through io_uring, enters, calls made directly)."""
    found = re.findall(r"io_uring: (\d+) socket calls in (\d+) submissions, (\d+) made directly",
                       log)
    return [tuple(map(int, f)) for f in found]


@pytest.mark.parametrize("mode", MODES)
def test_keep_alive_and_pipelined_requests(make_gateway, upstream, mode):
    gw = gateway(make_gateway, upstream, mode)
    with Client(gw.port) as c:
        for i in range(20):
            resp = c.get("/ka/%d" % i)
            assert resp.status == 200
            assert resp.json()["path"] == "/ka/%d" % i
        # Five requests in one write: five answers, in order, on the same connection.
        c.send(b"".join(build_request("GET", "/pipe/%d" % i) for i in range(5)))
        for i in range(5):
            resp = c.read_response()
            assert resp.status == 200
            assert resp.json()["path"] == "/pipe/%d" % i


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("chunked", [False, True])
def test_large_bodies_both_ways(make_gateway, upstream, mode, chunked):
    total = 8 << 20  # far more than a socket buffer: many partial writes and EAGAINs
    gw = gateway(make_gateway, upstream, mode)
    upstream.route("/down", download(total, chunked=chunked))
    with Client(gw.port, timeout=30) as c:
        c.send(build_request("GET", "/down"))
        resp = read_head(c.reader)
        assert resp.status == 200
        n, crc = crc_of_body(c.reader, resp)
    assert n == total
    assert crc == upstream.requests_for("/down")[0].sent_crc32

    upstream.route("/up", upload_count())
    body = bytes(range(256)) * (total // 256)
    hdr = [("Transfer-Encoding", "chunked")] if chunked else [("Content-Length", str(total))]
    with Client(gw.port, timeout=30) as c:
        c.send(build_request("PUT", "/up", headers=hdr))
        if chunked:
            for i in range(0, total, 1 << 20):
                piece = body[i:i + (1 << 20)]
                c.send(b"%x\r\n" % len(piece) + piece + b"\r\n")
            c.send(b"0\r\n\r\n")
        else:
            c.send(body)
        resp = c.read_response("PUT")
        assert resp.status == 200
    req = upstream.requests_for("/up")[0]
    assert req.body_len == total
    assert req.body_crc32 == zlib.crc32(body)


@pytest.mark.parametrize("mode", MODES)
def test_upstream_answers_before_reading_the_body(make_gateway, upstream, mode):
    # The upstream answers 413 at once and closes; the gateway is still writing the body.
    gw = gateway(make_gateway, upstream, mode)
    upstream.route("/early", Fixed(413, body=b"too big\n", close=True))
    total = 4 << 20
    with Client(gw.port, timeout=30) as c:
        c.send(build_request("POST", "/early", headers=[("Content-Length", str(total))]))
        try:
            c.send(b"x" * total)
        except OSError:
            pass  # the gateway may close once the answer is out
        resp = c.read_response("POST")
    assert resp.status == 413
    assert resp.body == b"too big\n"
    assert get(gw.port, "/after").status == 200


@pytest.mark.parametrize("mode", MODES)
def test_many_clients_at_once(make_gateway, upstream, mode):
    gw = gateway(make_gateway, upstream, mode, workers=2)
    errors = []

    def client(k):
        try:
            with Client(gw.port) as c:
                for i in range(25):
                    resp = c.get("/many/%d/%d" % (k, i))
                    if resp.status != 200 or resp.json()["path"] != "/many/%d/%d" % (k, i):
                        errors.append((k, i, resp.status))
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append((k, repr(e)))

    threads = [threading.Thread(target=client, args=(k,)) for k in range(24)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors


class ResetMidBody:
    """A body read until close (no Content-Length), cut by a reset."""

    def handle(self, up, conn, req):
        conn.send(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\npartial body")
        time.sleep(0.2)
        conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        return False


@pytest.mark.parametrize("mode", MODES)
def test_a_reset_does_not_end_a_body_read_until_close(make_gateway, upstream, mode):
    # A FIN ends such a body; a reset cuts it. The client (HTTP/1.1, so the body is re-framed
    # as chunked) must not get the last chunk that would make the cut body look whole.
    gw = gateway(make_gateway, upstream, mode)
    upstream.route("/cut", ResetMidBody())
    with socket.create_connection(("127.0.0.1", gw.port), timeout=10) as s:
        s.sendall(build_request("GET", "/cut"))
        raw = b""
        while True:
            piece = s.recv(65536)
            if not piece:
                break
            raw += piece
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), raw
    assert b"transfer-encoding: chunked" in head.lower(), raw
    assert b"partial body" in body, raw
    assert not body.endswith(b"0\r\n\r\n"), "a cut body was ended as if whole: %r" % raw


def test_calls_are_batched_where_the_kernel_allows(make_gateway, make_upstream):
    upstream = make_upstream("fast")
    upstream.route("/w", Fixed(200, body=b"ok\n"))
    gw = gateway(make_gateway, upstream, "auto")
    res = run_wrk("http://127.0.0.1:%d/w" % gw.port, threads=2, conns=32, duration=2)
    assert res["requests"] > 0 and res["non2xx"] == 0, res["output"]
    gw.stop()
    log = gw.log_text()
    if not kernel_has_io_uring():
        assert "io_uring not usable" in log
        assert ring_counters(log) == []
        return
    assert "socket calls batched through io_uring" in log
    [(batched, enters, direct)] = ring_counters(log)
    print("io_uring: %d calls in %d enters, %d direct, %d requests" % (
        batched, enters, direct, res["requests"]))
    # Four socket calls a request at least (client read, upstream write, upstream read,
    # client write), and 32 connections keep several ready at a time: the enters are fewer
    # than the calls they carry.
    assert batched + direct >= 4 * res["requests"]
    assert batched > 0 and enters < batched


def test_off_makes_plain_system_calls(make_gateway, upstream):
    gw = gateway(make_gateway, upstream, "off")
    assert get(gw.port, "/x").status == 200
    gw.stop()
    log = gw.log_text()
    assert "io_uring" not in log
