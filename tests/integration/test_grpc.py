"""gRPC through the gateway: a real Python gRPC server (python3-grpcio, generic handlers on raw
bytes, so no protoc) behind a route whose upstream has `scheme: grpc`, and the grpcio client
talking h2c to an enable_http2 listener. Unary, the three streaming kinds, an 8 MiB message,
metadata and trailers both ways, statuses passed through, the gateway's own statuses
(UNAVAILABLE, DEADLINE_EXCEEDED), grpc-timeout, concurrency and upstream keep-alive.

APISIX facts relied on (apache/apisix docs/en/latest/grpc-proxy.md): the route's upstream
`scheme` is `grpc` or `grpcs`; clients reach APISIX over HTTP/2 (TLS, or plaintext h2c on a
listener with HTTP/2 enabled).
"""

import queue
import socket
import threading
import time
from concurrent import futures

import grpc
import pytest

import h2.events

import h2_kit
import harness

SERVICE = "test.Echo"
BIG = 8 << 20
UNLIMITED = [("grpc.max_send_message_length", -1), ("grpc.max_receive_message_length", -1)]


class Backend:
    """A gRPC server on a free port; records each call's peer (one per upstream connection)."""

    def __init__(self, credentials=None):
        self.peers = []
        self.flooded = 0  # messages Flood has handed to grpc so far
        self.lock = threading.Lock()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=16), options=UNLIMITED)
        handlers = {
            "Unary": grpc.unary_unary_rpc_method_handler(self.unary),
            "Fail": grpc.unary_unary_rpc_method_handler(self.fail),
            "Slow": grpc.unary_unary_rpc_method_handler(self.slow),
            "Split": grpc.unary_stream_rpc_method_handler(self.split),
            "Join": grpc.stream_unary_rpc_method_handler(self.join),
            "Echo": grpc.stream_stream_rpc_method_handler(self.echo),
            "Flood": grpc.unary_stream_rpc_method_handler(self.flood),
        }
        self.server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(SERVICE, handlers),))
        if credentials is None:
            self.port = self.server.add_insecure_port("127.0.0.1:0")
        else:
            self.port = self.server.add_secure_port("127.0.0.1:0", credentials)
        self.addr = "127.0.0.1:%d" % self.port
        self.server.start()

    def note(self, context):
        with self.lock:
            self.peers.append(context.peer())

    def unary(self, request, context):
        self.note(context)
        meta = dict(context.invocation_metadata())
        context.send_initial_metadata([("x-echo-meta", meta.get("x-meta", "-"))])
        context.set_trailing_metadata([("x-trailer", "t-%d" % len(request))])
        return request[::-1]

    def fail(self, request, context):
        self.note(context)
        context.abort(grpc.StatusCode.NOT_FOUND, "no such thing: " + request.decode())

    def slow(self, request, context):
        self.note(context)
        time.sleep(float(request.decode()))
        return b"late"

    def split(self, request, context):
        self.note(context)
        for part in request.split(b","):
            yield part

    def join(self, request_iterator, context):
        self.note(context)
        return b"|".join(request_iterator)

    def echo(self, request_iterator, context):
        self.note(context)
        for msg in request_iterator:
            yield msg.upper()

    def flood(self, request, context):
        self.note(context)
        chunk = b"f" * (1 << 20)
        for _ in range(int(request.decode())):
            yield chunk
            self.flooded += 1

    def stop(self):
        self.server.stop(0)


@pytest.fixture
def backend():
    b = Backend()
    yield b
    b.stop()


def grpc_route(addr, rid="grpc", **extra):
    up = {"type": "roundrobin", "scheme": "grpc", "nodes": {addr: 1}}
    up.update(extra)
    return {"id": rid, "uri": "/%s/*" % SERVICE, "upstream": up}


def gateway(make_gateway, routes):
    listen = [{"ip": "127.0.0.1", "port": harness.free_port(), "enable_http2": True}]
    return make_gateway(routes=routes, listen=listen, workers=1)


def channel(gw):
    return grpc.insecure_channel("127.0.0.1:%d" % gw.port, options=UNLIMITED)


def method(ch, name, kind="unary_unary"):
    return getattr(ch, kind)("/%s/%s" % (SERVICE, name))


def test_scheme_grpc_through_the_admin_api(make_gateway, backend):
    gw = make_gateway(admin=True, listen=[{"ip": "127.0.0.1", "port": harness.free_port(),
                                           "enable_http2": True}])
    body = grpc_route(backend.addr)
    del body["id"]
    r = gw.admin("PUT", "/routes/g", body)
    assert r.status in (200, 201), r
    harness.wait_until(lambda: _unary_ok(gw), timeout=5)
    assert _unary_ok(gw)


def _unary_ok(gw):
    try:
        with channel(gw) as ch:
            return method(ch, "Unary")(b"ab", timeout=5) == b"ba"
    except grpc.RpcError:
        return False


def test_unary_metadata_and_trailers(make_gateway, backend):
    gw = gateway(make_gateway, [grpc_route(backend.addr)])
    with channel(gw) as ch:
        resp, call = method(ch, "Unary").with_call(b"hello", metadata=[("x-meta", "m1")],
                                                   timeout=10)
        assert resp == b"olleh"
        assert call.code() == grpc.StatusCode.OK
        assert ("x-echo-meta", "m1") in call.initial_metadata()
        assert ("x-trailer", "t-5") in call.trailing_metadata()


def test_status_and_message_pass_through(make_gateway, backend):
    gw = gateway(make_gateway, [grpc_route(backend.addr)])
    with channel(gw) as ch:
        with pytest.raises(grpc.RpcError) as e:
            method(ch, "Fail")(b"widget", timeout=10)
        assert e.value.code() == grpc.StatusCode.NOT_FOUND
        assert e.value.details() == "no such thing: widget"


def test_streaming_all_kinds(make_gateway, backend):
    gw = gateway(make_gateway, [grpc_route(backend.addr)])
    with channel(gw) as ch:
        parts = list(method(ch, "Split", "unary_stream")(b"a,bb,ccc,dddd", timeout=10))
        assert parts == [b"a", b"bb", b"ccc", b"dddd"]
        joined = method(ch, "Join", "stream_unary")(iter([b"x", b"y", b"z"]), timeout=10)
        assert joined == b"x|y|z"
        echoed = list(method(ch, "Echo", "stream_stream")(iter([b"one", b"two"]), timeout=10))
        assert echoed == [b"ONE", b"TWO"]


def test_bidirectional_ping_pong(make_gateway, backend):
    # Each message waits for the answer to the one before: the response must flow while the
    # request body is still open.
    gw = gateway(make_gateway, [grpc_route(backend.addr)])
    answered = queue.Queue()

    def requests():
        for i in range(5):
            yield b"ping%d" % i
            answered.get(timeout=10)

    with channel(gw) as ch:
        out = []
        for resp in method(ch, "Echo", "stream_stream")(requests(), timeout=20):
            out.append(resp)
            answered.put(True)
    assert out == [b"PING%d" % i for i in range(5)]


def test_large_messages_both_ways(make_gateway, backend):
    gw = gateway(make_gateway, [grpc_route(backend.addr)])
    big = bytes(range(256)) * (BIG // 256)
    with channel(gw) as ch:
        assert method(ch, "Unary")(big, timeout=30) == big[::-1]
        many = [big[:1 << 20]] * 4
        assert method(ch, "Join", "stream_unary")(iter(many), timeout=30) == b"|".join(many)


def test_upstream_down_is_unavailable(make_gateway):
    dead = "127.0.0.1:%d" % harness.free_port()
    gw = gateway(make_gateway, [grpc_route(dead)])
    with channel(gw) as ch:
        with pytest.raises(grpc.RpcError) as e:
            method(ch, "Unary")(b"x", timeout=10)
        assert e.value.code() == grpc.StatusCode.UNAVAILABLE
        assert e.value.details().startswith("upstream unavailable: "), e.value.details()


def test_upstream_closing_before_its_answer_is_unavailable(make_gateway):
    # A node that takes the connection, reads what comes, and closes it: every try fails
    # after connecting, and the client hears UNAVAILABLE, not a broken stream.
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(8)
    accepted = []

    def serve():
        while True:
            try:
                conn, _ = lsock.accept()
            except OSError:
                return
            accepted.append(conn)
            conn.settimeout(2)
            try:
                conn.recv(65536)
            except OSError:
                pass
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    try:
        gw = gateway(make_gateway, [grpc_route("127.0.0.1:%d" % lsock.getsockname()[1])])
        with channel(gw) as ch:
            with pytest.raises(grpc.RpcError) as e:
                method(ch, "Unary")(b"x", timeout=10)
            assert e.value.code() == grpc.StatusCode.UNAVAILABLE
            assert e.value.details().startswith("upstream unavailable: "), e.value.details()
        assert accepted
    finally:
        lsock.close()


def test_upstream_gone_mid_stream_fails_the_call(make_gateway, backend):
    # The response began, then the server went away: the client's call fails (its stream is
    # reset) instead of ending as if complete, and the gateway lives on.
    gw = gateway(make_gateway, [grpc_route(backend.addr)])
    with channel(gw) as ch:
        stream = method(ch, "Flood", "unary_stream")(b"24", timeout=20)
        assert len(next(stream)) == 1 << 20
        backend.stop()
        with pytest.raises(grpc.RpcError) as e:
            for _ in stream:
                pass
        assert e.value.code() != grpc.StatusCode.OK
    assert gw.proc.poll() is None


def test_upstream_timeout_is_deadline_exceeded(make_gateway, backend):
    timeout = {"connect": 1, "send": 1, "read": 0.5}
    gw = gateway(make_gateway, [grpc_route(backend.addr, timeout=timeout)])
    with channel(gw) as ch:
        with pytest.raises(grpc.RpcError) as e:
            method(ch, "Slow")(b"3", timeout=10)  # the client would wait 10 s
        assert e.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        assert e.value.details().startswith("upstream timed out: "), e.value.details()


def test_grpc_timeout_caps_the_upstream_wait(make_gateway, backend):
    # A frame-level client with no deadline of its own: the answer at ~300 ms is the
    # gateway's, from the request's grpc-timeout (the route's read timeout is 60 s).
    gw = gateway(make_gateway, [grpc_route(backend.addr)])
    msg = b"3"
    frame = b"\x00" + len(msg).to_bytes(4, "big") + msg
    with h2_kit.H2Client(gw.port) as c:
        start = time.time()
        sid = c.request("/%s/Slow" % SERVICE, method="POST", body=frame,
                        headers=[("content-type", "application/grpc"), ("te", "trailers"),
                                 ("grpc-timeout", "300m")])
        r = c.response(sid, timeout=5)
        took = time.time() - start
    assert r["headers"][":status"] == "200", r
    assert r["headers"]["grpc-status"] == "4", r
    assert r["headers"]["content-type"] == "application/grpc"
    assert took < 2.5, took


def test_http1_client_is_refused(make_gateway, backend):
    gw = gateway(make_gateway, [grpc_route(backend.addr)])
    r = harness.http(gw.port, "POST", "/%s/Unary" % SERVICE, body=b"\x00\x00\x00\x00\x00",
                     headers=[("Content-Type", "application/grpc")])
    assert r.status == 400
    assert b"need an HTTP/2 client" in r.body
    assert backend.peers == []


def test_concurrent_calls_share_one_connection(make_gateway, backend):
    gw = gateway(make_gateway, [grpc_route(backend.addr)])
    with channel(gw) as ch:
        unary = method(ch, "Unary")
        for i in range(10):  # one after another: one upstream connection serves them all
            assert unary(b"n%d" % i, timeout=10) == (b"n%d" % i)[::-1]
        assert len(set(backend.peers)) == 1, backend.peers
        # Calls in flight at once are streams on that same connection (multiplexed).
        calls = [unary.future(b"c%03d" % i, timeout=20) for i in range(40)]
        assert [f.result() for f in calls] == [(b"c%03d" % i)[::-1] for i in range(40)]
        slow = [method(ch, "Slow").future(b"0.3", timeout=20) for _ in range(8)]
        assert [f.result() for f in slow] == [b"late"] * 8
        streams = [method(ch, "Split", "unary_stream")(b"x,y,z", timeout=20) for _ in range(8)]
        assert [list(s) for s in streams] == [[b"x", b"y", b"z"]] * 8
    assert len(set(backend.peers)) == 1, set(backend.peers)


def test_slow_reader_holds_back_the_upstream(make_gateway, backend):
    # 24 MiB streamed to a client that takes none of it at first: the gateway passes on what
    # the client's window allows and holds at most its upstream stream window, so the server
    # gets only a few messages out and the gateway's memory does not grow with the stream.
    gw = gateway(make_gateway, [grpc_route(backend.addr)])
    rss0 = harness.vm_rss_kib(gw.proc.pid)
    msg = b"24"
    frame = b"\x00" + len(msg).to_bytes(4, "big") + msg
    with h2_kit.H2Client(gw.port) as c:
        ack = c.conn.acknowledge_received_data
        c.conn.acknowledge_received_data = lambda n, sid: None
        sid = c.request("/%s/Flood" % SERVICE, method="POST", body=frame,
                        headers=[("content-type", "application/grpc"), ("te", "trailers")])
        c.wait(lambda: False, timeout=1.5)
        held = backend.flooded
        growth = harness.vm_rss_kib(gw.proc.pid) - rss0
        assert held < 8, held
        assert growth < 16 * 1024, growth
        c.conn.acknowledge_received_data = ack
        ack(len(c.responses[sid]["data"]), sid)
        c.flush()
        r = c.response(sid, timeout=30)
    assert backend.flooded == 24
    assert len(r["data"]) == 24 * (5 + (1 << 20))
    trailers = [dict(e.headers) for e in c.events if isinstance(e, h2.events.TrailersReceived)]
    assert trailers and trailers[0][b"grpc-status"] == b"0", trailers
