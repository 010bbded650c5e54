"""Issue 2, point 3 (streaming): a 1 GiB download and a 1 GiB upload pass through the gateway
with bounded memory, and a stalled reader on either side stops the other side (backpressure).

Slow-ish (~10-60 s in all on a busy machine): marked `streaming`; SLUICE_SKIP_SLOW=1 skips it.
SLUICE_STREAM_BYTES overrides the size (default 1 GiB). The bytes are generated on the fly
from a fixed pattern and checked by length + CRC-32; nothing holds the whole body in memory.
"""

import os
import threading
import time
import zlib

import pytest

from fake_upstream import download, pattern_chunks, upload_count
from harness import Client, build_request, crc_of_body, get, iter_body, read_head, route

pytestmark = pytest.mark.streaming

TOTAL = int(os.environ.get("SLUICE_STREAM_BYTES", str(1 << 30)))
CHUNKED_TOTAL = min(TOTAL, 256 << 20)
RSS_GROWTH_LIMIT_KIB = 64 * 1024
# What may sit in kernel socket buffers and the gateway's own buffers while a reader stalls.
IN_FLIGHT_LIMIT = 96 << 20
PAUSE = 1.5


@pytest.fixture
def sgw(make_gateway, upstream):
    gw = make_gateway(routes=[route("/*", upstream)], workers=1)
    for _ in range(3):  # warm up: first requests, pools, lazy allocations
        assert get(gw.port, "/warm").status == 200
    gw.hwm_start = gw.vm_hwm_kib()
    return gw


def _assert_memory_bounded(gw):
    growth = gw.vm_hwm_kib() - gw.hwm_start
    print("gateway VmHWM grew by %d KiB" % growth)
    assert growth < RSS_GROWTH_LIMIT_KIB, "gateway peak RSS grew by %d MiB" % (growth // 1024)


def _download(gw, upstream, total, chunked):
    upstream.route("/big", download(total, chunked=chunked))
    t0 = time.monotonic()
    with Client(gw.port, timeout=60) as c:
        c.send(build_request("GET", "/big"))
        resp = read_head(c.reader)
        assert resp.status == 200, resp
        n, crc = 0, 0
        paused = False
        for piece in iter_body(c.reader, resp):
            n += len(piece)
            crc = zlib.crc32(piece, crc)
            if not paused and n >= 64 << 20:
                # Stall the reader: the gateway must stop pulling from the upstream.
                paused = True
                time.sleep(PAUSE)
                req = upstream.requests_for("/big")[0]
                ahead = (req.sent_bytes or 0) - n
                assert ahead < IN_FLIGHT_LIMIT, \
                    "upstream got %d MiB ahead of a stalled client" % (ahead >> 20)
    took = time.monotonic() - t0
    req = upstream.requests_for("/big")[0]
    assert req.done.wait(10)
    assert resp.framing == ("chunked" if chunked else "length")
    assert n == total
    assert crc == req.sent_crc32
    print("download %d MiB in %.1fs (%.0f MiB/s)" % (total >> 20, took, (total >> 20) / took))


def _upload(gw, upstream, total, chunked):
    upstream.route("/big-up", upload_count(pause_at=64 << 20, pause_for=PAUSE + 1.0))
    state = {"sent": 0, "crc": 0}
    hdr = [("Transfer-Encoding", "chunked")] if chunked else [("Content-Length", str(total))]
    t0 = time.monotonic()
    with Client(gw.port, timeout=60) as c:
        c.send(build_request("PUT", "/big-up", headers=hdr))

        def send_body():
            for piece in pattern_chunks(total, 1 << 20):
                state["crc"] = zlib.crc32(piece, state["crc"])
                if chunked:
                    c.send(b"%x\r\n" % len(piece))
                    c.send(piece)
                    c.send(b"\r\n")
                else:
                    c.send(piece)
                state["sent"] += len(piece)
            if chunked:
                c.send(b"0\r\n\r\n")

        sender = threading.Thread(target=send_body, daemon=True)
        sender.start()
        # Wait for the upstream to stall, then check the client was held back.
        assert upstream.wait_for(lambda u: u.requests_for("/big-up") and
                                 (u.requests_for("/big-up")[0].body_len or 0) >= 64 << 20,
                                 timeout=60)
        time.sleep(PAUSE)
        received = upstream.requests_for("/big-up")[0].body_len
        ahead = state["sent"] - received
        assert ahead < IN_FLIGHT_LIMIT, "client got %d MiB ahead of a stalled upstream" % (
            ahead >> 20)
        sender.join(120)
        assert not sender.is_alive(), "upload did not finish"
        r = c.read_response("PUT")
    took = time.monotonic() - t0
    assert r.status == 200, r
    j = r.json()
    assert j["body_len"] == total
    assert j["crc32"] == state["crc"]
    assert j["chunked"] is chunked
    print("upload %d MiB in %.1fs (%.0f MiB/s)" % (total >> 20, took, (total >> 20) / took))


def test_1gib_download_content_length(sgw, upstream):
    _download(sgw, upstream, TOTAL, chunked=False)
    _assert_memory_bounded(sgw)


def test_1gib_upload_content_length(sgw, upstream):
    _upload(sgw, upstream, TOTAL, chunked=False)
    _assert_memory_bounded(sgw)


def test_chunked_download_streams(sgw, upstream):
    _download(sgw, upstream, CHUNKED_TOTAL, chunked=True)
    _assert_memory_bounded(sgw)


def test_chunked_upload_streams(sgw, upstream):
    _upload(sgw, upstream, CHUNKED_TOTAL, chunked=True)
    _assert_memory_bounded(sgw)


def test_concurrent_downloads_stay_bounded(sgw, upstream):
    """Four clients at once, 128 MiB each: memory stays bounded with several streams."""
    total = min(TOTAL, 128 << 20)
    upstream.route("/big4", download(total))
    results = []

    def one():
        with Client(sgw.port, timeout=60) as c:
            c.send(build_request("GET", "/big4"))
            resp = read_head(c.reader)
            results.append(crc_of_body(c.reader, resp))

    threads = [threading.Thread(target=one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert len(results) == 4
    sent = {q.sent_crc32 for q in upstream.requests_for("/big4")}
    assert all(n == total for n, _ in results)
    assert {crc for _, crc in results} == sent
    _assert_memory_bounded(sgw)
