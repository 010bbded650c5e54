"""HTTP/2 attacks at frame level (python3-h2 and raw frames), each against a gateway whose
limits are small enough to reach quickly: Rapid Reset (CVE-2023-44487), CONTINUATION flood
(CVE-2024-27316 / CVE-2024-28182), an HPACK bomb, PING and SETTINGS floods. Each test also
checks the gateway still serves afterwards. Zero-window stalls and the request cap are in
test_http2.py (test_slow_reader..., test_request_cap...).
"""

import struct
import time

import h2.events
import h2.exceptions
import hpack

import h2_kit
import harness
from h2_kit import CONTINUATION, END_STREAM, HEADERS, frame
from harness import route

LIMITS = {"reset_burst": 20, "reset_rate": 1, "control_burst": 30, "control_rate": 1,
          "max_header_list_size": 4096, "max_continuations": 4}


def gateway(make_gateway, upstream):
    listen = [{"ip": "127.0.0.1", "port": harness.free_port(), "enable_http2": True}]
    return make_gateway(routes=[route("/*", upstream, rid="all")], listen=listen,
                        config={"sluice": {"http2": LIMITS}})


def still_serves(gw):
    with h2_kit.H2Client(gw.port) as c:
        sid = c.request("/after")
        assert c.response(sid)["headers"][":status"] == "200"


def header_block(path, extra=()):
    enc = hpack.Encoder()
    return enc.encode([(":method", "GET"), (":path", path), (":scheme", "http"),
                       (":authority", "a.test")] + list(extra))


def test_rapid_reset_gets_enhance_your_calm(make_gateway, upstream):
    gw = gateway(make_gateway, upstream)
    with h2_kit.H2Client(gw.port) as c:
        for _ in range(100):
            try:
                sid = c.request("/rr")
                c.conn.reset_stream(sid, h2_kit.CANCEL)
                c.flush()
            except (OSError, h2.exceptions.ProtocolError):
                break  # the GOAWAY came
            if not c.pump(0.001):
                break
        assert c.wait_closed(timeout=5)
        ev = c.goaway()
        assert ev is not None and ev.error_code == h2_kit.ENHANCE_YOUR_CALM, c.events[-3:]
    assert gw.wait_for_log(r"RST_STREAM flood \(rapid reset\)", timeout=2)
    still_serves(gw)


def test_continuation_flood_closes_the_connection(make_gateway, upstream):
    gw = gateway(make_gateway, upstream)
    with h2_kit.H2Client(gw.port) as c:
        block = header_block("/cf")
        c.send_raw(frame(HEADERS, END_STREAM, 1, block))
        for _ in range(50):
            try:
                c.send_raw(frame(CONTINUATION, 0, 1, b"\x40\x01x\x01y"))  # never END_HEADERS
            except OSError:
                break
        assert c.wait_closed(timeout=5)
        ev = c.goaway()
        assert ev is not None and ev.error_code != h2_kit.NO_ERROR
    assert upstream.requests_for("/cf") == []
    still_serves(gw)


def test_hpack_bomb_is_answered_431(make_gateway, upstream):
    gw = gateway(make_gateway, upstream)
    big = ("x-bomb", "b" * 3000)
    # The value is sent once and then referenced from the dynamic table: a small header
    # block that decodes to 60 KB against a 4 KiB max_header_list_size.
    assert len(header_block("/bomb", [big] * 20)) < 3200
    with h2_kit.H2Client(gw.port) as c:
        sid = c.request("/bomb", headers=[big] * 20)
        r = c.response(sid)
        assert r["headers"][":status"] == "431", r
    assert upstream.requests_for("/bomb") == []
    # A head just under the cap is served.
    with h2_kit.H2Client(gw.port) as c:
        sid = c.request("/fits", headers=[("x-fits", "f" * 3000)])
        assert c.response(sid)["headers"][":status"] == "200"


def test_ping_flood_gets_enhance_your_calm(make_gateway, upstream):
    gw = gateway(make_gateway, upstream)
    with h2_kit.H2Client(gw.port) as c:
        for i in range(200):
            try:
                c.conn.ping(struct.pack(">Q", i))
                c.flush()
            except (OSError, h2.exceptions.ProtocolError):
                break
        assert c.wait_closed(timeout=5)
        assert c.goaway().error_code == h2_kit.ENHANCE_YOUR_CALM
    assert gw.wait_for_log(r"control frame flood", timeout=2)
    still_serves(gw)


def test_settings_flood_gets_enhance_your_calm(make_gateway, upstream):
    gw = gateway(make_gateway, upstream)
    with h2_kit.H2Client(gw.port) as c:
        for i in range(200):
            try:
                c.conn.update_settings({h2_kit.MAX_CONCURRENT_STREAMS: 100 + i})
                c.flush()
            except (OSError, h2.exceptions.ProtocolError):
                break
        assert c.wait_closed(timeout=5)
        assert c.goaway().error_code == h2_kit.ENHANCE_YOUR_CALM
    still_serves(gw)


def test_a_few_pings_and_resets_are_fine(make_gateway, upstream):
    gw = gateway(make_gateway, upstream)
    with h2_kit.H2Client(gw.port) as c:
        for i in range(5):
            c.conn.ping(struct.pack(">Q", i))
            sid = c.request("/ok%d" % i)
            c.conn.reset_stream(sid)
            c.flush()
        sid = c.request("/last")
        assert c.response(sid)["headers"][":status"] == "200"
        assert c.goaway() is None
        # The SETTINGS announced come from sluice.http2.
        assert c.conn.remote_settings.max_header_list_size == 4096
        assert c.conn.remote_settings.max_concurrent_streams == 128


def test_garbage_after_the_preface_is_a_protocol_error(make_gateway, upstream):
    gw = gateway(make_gateway, upstream)
    with h2_kit.H2Client(gw.port) as c:
        # A frame of an impossible size on stream 0, then bytes that are no frame at all.
        c.send_raw(frame(HEADERS, END_STREAM, 0, b"\x00" * 8) + b"\xff" * 64)
        assert c.wait_closed(timeout=5)
        ev = c.goaway()
        assert ev is not None and ev.error_code == h2_kit.PROTOCOL_ERROR, c.events[-3:]
    still_serves(gw)


def test_a_head_left_half_sent_is_timed_out(make_gateway, upstream):
    # HEADERS without END_HEADERS, then silence: no exchange exists to time the stream, so
    # the connection's header timeout does.
    listen = [{"ip": "127.0.0.1", "port": harness.free_port(), "enable_http2": True}]
    gw = make_gateway(routes=[route("/*", upstream, rid="all")], listen=listen,
                      config={"nginx_config": {"http": {"client_header_timeout": "1s"}}})
    with h2_kit.H2Client(gw.port) as c:
        # The SETTINGS exchange first: after the half head the client may send nothing else.
        assert c.wait(lambda: any(isinstance(e, h2.events.SettingsAcknowledged)
                                  for e in c.events))
        c.send_raw(frame(HEADERS, END_STREAM, 1, header_block("/half")))
        t0 = time.time()
        assert c.wait_closed(timeout=5)
        assert 0.8 < time.time() - t0 < 3
    assert gw.wait_for_log(r"HTTP/2 request head not complete in time", timeout=2)
    still_serves(gw)
