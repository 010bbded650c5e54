"""WebSocket over HTTP/1.1 (enable_websocket): real clients and a real upstream, both from
Debian's python3-websockets (10.x, asyncio API), through the gateway.

The upstream (WsUpstream) echoes every message, records each request's head and each
connection's close code, answers a request that does not ask to upgrade with a plain 200,
and closes with 4002 when told "close-me".

APISIX facts relied on (apache/apisix):
- apisix/init.lua http_access_phase: `enable_websocket` is the route's, or the service's when
  the route's is nil; handle_upstream then sets upstream_upgrade / upstream_connection from
  the client's Upgrade and Connection, which the nginx template passes to the upstream.
  Without it they stay empty: the upstream gets neither header and answers a plain request.
nginx facts (src/http/ngx_http_upstream.c, ngx_http_upstream_process_upgraded): the upgraded
connection's proxy_read_timeout timer is re-armed after every event of either side, so it is
the time the tunnel may stay silent both ways.
"""

import asyncio
import http
import os
import signal
import ssl
import threading
import time

import pytest
import websockets  # Debian's python3-websockets (scripts/setup)
from websockets.exceptions import ConnectionClosed, InvalidStatusCode

import harness
import tls_kit
from harness import admin_route

MIB = 1 << 20


class WsUpstream:
    """A WebSocket echo server on a free port, run by its own event loop in a thread."""

    def __init__(self, ssl_ctx=None):
        self.port = harness.free_port()
        self.ssl_ctx = ssl_ctx
        self.requests = []  # (path, [(name, value), ...]) of every request head
        self.closes = []    # (code, reason) each WebSocket connection ended with
        self.connections = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._server = None

    @property
    def addr(self):
        return "127.0.0.1:%d" % self.port

    def start(self):
        self._thread.start()
        assert self._ready.wait(10), "the WebSocket upstream did not start"
        return self

    def _run(self):
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(websockets.serve(
            self._handler, "127.0.0.1", self.port, ssl=self.ssl_ctx,
            process_request=self._process, max_size=None, ping_interval=None,
            close_timeout=2))
        self._ready.set()
        self._loop.run_forever()

    async def _process(self, path, headers):
        self.requests.append((path, list(headers.raw_items())))
        if "Upgrade" not in headers:
            return http.HTTPStatus.OK, [("Content-Type", "text/plain")], b"plain answer\n"
        return None

    async def _handler(self, ws):
        self.connections += 1
        try:
            async for msg in ws:
                if msg == "close-me":
                    await ws.close(4002, "server says bye")
                    break
                await ws.send(msg)
        except ConnectionClosed:
            pass
        finally:
            await ws.wait_closed()
            self.closes.append((ws.close_code, ws.close_reason))

    def header(self, i, name):
        for k, v in self.requests[i][1]:
            if k.lower() == name.lower():
                return v
        return None

    def stop(self):
        async def shut():
            self._server.close()
            await self._server.wait_closed()
        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(shut(), self._loop).result(10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)


@pytest.fixture
def make_ws_upstream():
    ups = []

    def make(**kw):
        up = WsUpstream(**kw).start()
        ups.append(up)
        return up

    yield make
    for up in ups:
        up.stop()


@pytest.fixture
def ws_up(make_ws_upstream):
    return make_ws_upstream()


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return tls_kit.Certs.make(tmp_path_factory.mktemp("ws-certs"))


def wait_until(cond, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def put_ok(gw, path, body):
    r = gw.admin("PUT", path, body)
    assert r.status in (200, 201), r
    return r


def ws_gateway(make_gateway, up, route_extra=None, **kw):
    """An embedded-store gateway with route `ws` (/ws*) to `up`, enable_websocket on."""
    gw = make_gateway(admin=True, workers=1, **kw)
    body = admin_route("/ws*", up, enable_websocket=True)
    body.update(route_extra or {})
    put_ok(gw, "/routes/ws", body)
    return gw


def connect(gw, path="/ws", **kw):
    kw.setdefault("max_size", None)
    kw.setdefault("ping_interval", None)
    kw.setdefault("open_timeout", 5)
    kw.setdefault("close_timeout", 3)
    return websockets.connect("ws://127.0.0.1:%d%s" % (gw.port, path), **kw)


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


# --------------------------------------------------------------------------- the tunnel


def test_echo_text_binary_a_mib_fragments_and_ping(make_gateway, ws_up):
    gw = ws_gateway(make_gateway, ws_up)

    async def main():
        async with connect(gw) as ws:
            await ws.send("hello")
            assert await ws.recv() == "hello"
            blob = bytes(range(256)) * 7
            await ws.send(blob)
            assert await ws.recv() == blob
            big = os.urandom(MIB)
            await ws.send(big)
            assert await ws.recv() == big

            async def fragments():  # continuation frames, sent one by one
                for part in ("frag-1 ", "frag-2 ", "frag-3"):
                    yield part
                    await asyncio.sleep(0.05)
            await ws.send(fragments())
            assert await ws.recv() == "frag-1 frag-2 frag-3"
            pong = await ws.ping(b"are you there")
            await asyncio.wait_for(pong, 5)
    run(main())
    assert ws_up.header(0, "Upgrade") == "websocket"
    assert ws_up.header(0, "Connection") == "upgrade"
    assert wait_until(lambda: ws_up.closes == [(1000, "")]), ws_up.closes


def test_close_codes_cross_both_ways(make_gateway, ws_up):
    gw = ws_gateway(make_gateway, ws_up)

    async def main():
        async with connect(gw) as ws:
            await ws.send("x")
            await ws.recv()
            await ws.close(4001, "client says bye")
        assert ws.close_code == 4001
        async with connect(gw) as ws:
            await ws.send("close-me")
            with pytest.raises(ConnectionClosed):
                await ws.recv()
        assert (ws.close_code, ws.close_reason) == (4002, "server says bye")
    run(main())
    assert wait_until(lambda: len(ws_up.closes) == 2), ws_up.closes
    assert ws_up.closes[0] == (4001, "client says bye")


def test_frames_sent_before_the_101_go_through(make_gateway, ws_up):
    """A client that does not wait for the 101: its first frame came with the request."""
    gw = ws_gateway(make_gateway, ws_up)
    key = "dGhlIHNhbXBsZSBub25jZQ=="
    head = ("GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
            "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % key).encode()
    mask = b"\x01\x02\x03\x04"
    payload = b"early bird"
    frame = bytes([0x81, 0x80 | len(payload)]) + mask + \
        bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    with harness.Client(gw.port) as c:
        c.send(head + frame)
        resp = c.read_head()
        assert resp.status == 101, resp
        assert resp.header("Upgrade") == "websocket"
        assert resp.header("Connection").lower() == "upgrade"
        assert resp.header("Sec-WebSocket-Accept") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
        assert resp.header("Content-Length") is None
        echo = c.reader.read_exact(2 + len(payload))
        assert echo == bytes([0x81, len(payload)]) + payload


# --------------------------------------------------------------------------- enable_websocket


def test_without_enable_websocket_the_upgrade_is_not_passed(make_gateway, ws_up):
    gw = make_gateway(admin=True, workers=1)
    put_ok(gw, "/routes/ws", admin_route("/ws", ws_up))

    async def main():
        with pytest.raises(InvalidStatusCode) as e:
            async with connect(gw):
                pass
        assert e.value.status_code == 200
    run(main())
    assert ws_up.header(0, "Upgrade") is None
    assert ws_up.header(0, "Connection") is None
    assert ws_up.connections == 0
    with harness.Client(gw.port) as c:
        r = c.get("/ws", headers=[("Connection", "Upgrade"), ("Upgrade", "websocket")])
        assert r.status == 200 and r.body == b"plain answer\n", r


def test_enable_websocket_on_the_service_and_the_routes_own_value_wins(make_gateway, ws_up):
    gw = make_gateway(admin=True, workers=1)
    put_ok(gw, "/services/s1", {"enable_websocket": True,
                                "upstream": harness.admin_upstream(ws_up)})
    put_ok(gw, "/routes/inherits", {"uri": "/ws", "service_id": "s1"})
    put_ok(gw, "/routes/refuses", {"uri": "/no", "service_id": "s1", "enable_websocket": False})

    async def main():
        async with connect(gw) as ws:
            await ws.send("from the service")
            assert await ws.recv() == "from the service"
        with pytest.raises(InvalidStatusCode) as e:
            async with connect(gw, "/no"):
                pass
        assert e.value.status_code == 200
    run(main())
    assert ws_up.header(0, "Upgrade") == "websocket"
    assert ws_up.requests[1][0] == "/no" and ws_up.header(1, "Upgrade") is None


# --------------------------------------------------------------------------- timeouts and config


def test_a_silent_tunnel_closes_after_timeout_read(make_gateway, ws_up):
    gw = ws_gateway(make_gateway, ws_up,
                    route_extra={"timeout": {"connect": 1, "send": 1, "read": 1}})

    async def main():
        async with connect(gw) as ws:
            # Traffic either way keeps it open past the timeout...
            for i in range(6):
                if i:
                    await asyncio.sleep(0.4)
                await ws.send("tick %d" % i)
                assert await ws.recv() == "tick %d" % i
            # ...silence closes it (no Close frame: the gateway drops both connections).
            t0 = time.monotonic()
            with pytest.raises(ConnectionClosed):
                await asyncio.wait_for(ws.recv(), 5)
            waited = time.monotonic() - t0
            assert 0.8 < waited < 3.0, waited
    run(main())
    assert wait_until(lambda: len(ws_up.closes) == 1)
    assert gw.wait_for_log(r"tunnel of client .* silent for 1000 ms", timeout=3)


def test_a_route_changed_or_deleted_keeps_open_tunnels(make_gateway, ws_up, make_ws_upstream):
    other = make_ws_upstream()
    gw = ws_gateway(make_gateway, ws_up)

    async def changed():
        async with connect(gw) as ws:
            await ws.send("before")
            assert await ws.recv() == "before"
            put_ok(gw, "/routes/ws", admin_route("/ws*", other, enable_websocket=False))
            # A new request goes by the new route: another upstream, no upgrade.
            with pytest.raises(InvalidStatusCode) as e:
                async with connect(gw):
                    pass
            assert e.value.status_code == 200
            await ws.send("after the change")
            assert await ws.recv() == "after the change"

    async def deleted():
        async with connect(gw) as ws:
            await ws.send("before")
            assert await ws.recv() == "before"
            r = gw.admin("DELETE", "/routes/ws")
            assert r.status == 200, r
            with pytest.raises(InvalidStatusCode) as e:
                async with connect(gw):
                    pass
            assert e.value.status_code == 404
            await ws.send("after the delete")
            assert await ws.recv() == "after the delete"
    run(changed())
    assert len(other.requests) == 1 and other.header(0, "Upgrade") is None
    put_ok(gw, "/routes/ws", admin_route("/ws*", ws_up, enable_websocket=True))
    run(deleted())
    assert ws_up.connections == 2
    assert wait_until(lambda: len(ws_up.closes) == 2), ws_up.closes


def test_sigterm_closes_an_open_tunnel_politely_by_the_deadline(make_gateway, ws_up):
    gw = ws_gateway(make_gateway, ws_up, graceful_shutdown_timeout=3, check_exit=True)

    async def main():
        async with connect(gw) as ws:
            await ws.send("hi")
            assert await ws.recv() == "hi"
            t0 = time.monotonic()
            gw.signal(signal.SIGTERM)
            await asyncio.sleep(0.3)
            await ws.send("still served while draining")
            assert await ws.recv() == "still served while draining"
            with pytest.raises(ConnectionClosed):
                await asyncio.wait_for(ws.recv(), 6)
            closed_after = time.monotonic() - t0
        return ws.close_code, closed_after
    code, closed_after = run(main())
    assert code == 1001
    assert 1.0 < closed_after < 3.2, closed_after  # a second before the 3 s deadline
    assert wait_until(lambda: ws_up.closes == [(1001, "")], 5), ws_up.closes
    assert gw.wait_exit(5) == 0


# --------------------------------------------------------------------------- plugins


def test_limit_count_refuses_the_upgrade_with_503_and_no_tunnel(make_gateway, ws_up):
    gw = ws_gateway(make_gateway, ws_up, route_extra={"plugins": {"limit-count": {
        "count": 1, "time_window": 60, "rejected_code": 503}}})

    async def main():
        async with connect(gw) as ws:
            await ws.send("the one allowed")
            assert await ws.recv() == "the one allowed"
        with pytest.raises(InvalidStatusCode) as e:
            async with connect(gw):
                pass
        assert e.value.status_code == 503
    run(main())
    assert ws_up.connections == 1
    assert len(ws_up.requests) == 1


def test_key_auth_and_prometheus_see_the_upgrade_as_101(make_gateway, ws_up):
    gw = ws_gateway(make_gateway, ws_up, route_extra={"plugins": {
        "key-auth": {}, "prometheus": {}}})
    put_ok(gw, "/consumers/jack", {"username": "jack", "plugins": {"key-auth": {"key": "k-1"}}})

    async def main():
        with pytest.raises(InvalidStatusCode) as e:
            async with connect(gw):
                pass
        assert e.value.status_code == 401
        async with connect(gw, extra_headers={"apikey": "k-1"}) as ws:
            await ws.send("authenticated")
            assert await ws.recv() == "authenticated"
    run(main())
    assert ws_up.connections == 1

    def counted():
        text = harness.scrape(gw).body.decode()
        lines = [x for x in text.splitlines() if x.startswith("apisix_http_status{")]
        got = {}
        for x in lines:
            if 'route="ws"' in x:
                code = x.split('code="')[1].split('"')[0]
                got[code] = float(x.rsplit(" ", 1)[1])
        return got
    assert wait_until(lambda: counted() == {"101": 1.0, "401": 1.0}), counted()
    line = [x for x in harness.scrape(gw).body.decode().splitlines()
            if x.startswith("apisix_http_status{code=\"101\"")][0]
    assert 'consumer="jack"' in line, line


# --------------------------------------------------------------------------- TLS


def test_a_tunnel_over_the_tls_listener(make_gateway, ws_up, certs):
    gw = ws_gateway(make_gateway, ws_up)
    put_ok(gw, "/ssls/a", certs.ssl_body("a_rsa", ["a.test"]))
    ctx = tls_kit.client_ctx(certs.path("ca"))

    async def main():
        uri = "wss://a.test:%d/ws" % gw.https_port
        async with websockets.connect(uri, ssl=ctx, host="127.0.0.1", port=gw.https_port,
                                      server_hostname="a.test",
                                      max_size=None, ping_interval=None) as ws:
            big = os.urandom(MIB)
            await ws.send(big)
            assert await ws.recv() == big
            await ws.send("over TLS")
            assert await ws.recv() == "over TLS"
            await ws.close(4003, "tls bye")
    run(main())
    assert wait_until(lambda: ws_up.closes == [(4003, "tls bye")]), ws_up.closes


def test_a_tunnel_to_an_https_upstream(make_gateway, make_ws_upstream, certs):
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(certs.path("a_rsa"), certs.path("a_rsa", "key"))
    up = make_ws_upstream(ssl_ctx=server_ctx)
    gw = make_gateway(admin=True, workers=1)
    put_ok(gw, "/routes/ws", admin_route("/ws", enable_websocket=True, upstream={
        "scheme": "https", "type": "roundrobin", "nodes": {up.addr: 1}}))

    async def main():
        async with connect(gw) as ws:
            big = os.urandom(MIB)
            await ws.send(big)
            assert await ws.recv() == big
            await ws.send("to wss")
            assert await ws.recv() == "to wss"
    run(main())
    assert up.header(0, "Upgrade") == "websocket"
    assert wait_until(lambda: up.closes == [(1000, "")]), up.closes

