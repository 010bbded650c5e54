"""The loggers over TLS and a sink that goes away and comes back: http-logger to an https uri
(ssl_verify off takes a self-signed certificate; on, the certificate must chain to a trusted CA
and name the host), tcp-logger with tls, syslog with tls, and entries queued while the sink was
down arriving once it is back (retries)."""

import json
import os
import time

import pytest

from harness import Client, get, sample_value, scrape
from log_sinks import RFC5424, HttpSink, SyslogReceiver, TcpSink, wait_for
from nginx_tls import make_pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(str(tmp_path_factory.mktemp("pki")))


@pytest.fixture
def stops():
    made = []
    yield made.append
    for s in made:
        s.stop()


def put_route(gw, up, plugin, conf, rid="1"):
    r = gw.admin("PUT", "/routes/" + rid, {"uri": "/hello", "plugins": {plugin: conf},
                                           "upstream": {"nodes": {up.addr: 1}}})
    assert r.status in (200, 201), r


def cert(pki, name):
    return (os.path.join(pki, name + ".pem"), os.path.join(pki, name + ".key"))


def test_https_without_verification(make_gateway, upstream, stops, pki):
    gw = make_gateway(admin=True)
    sink = HttpSink(tls=cert(pki, "other-server"))
    stops(sink)
    put_route(gw, upstream, "http-logger", {"uri": "https://127.0.0.1:%d/log" % sink.port,
                                            "batch_max_size": 1})
    for _ in range(2):
        assert get(gw.port, "/hello").status == 200
    assert wait_for(lambda: len(sink.posts) == 2)
    assert json.loads(sink.posts[0]["body"])["route_id"] == "1"
    assert len({p["conn"] for p in sink.posts}) == 1  # one TLS connection kept alive


def test_https_ssl_verify(make_gateway, upstream, stops, pki):
    # The gateway trusts ca.pem (OpenSSL's SSL_CERT_FILE); server.pem names 127.0.0.1.
    gw = make_gateway(admin=True, env={"SSL_CERT_FILE": os.path.join(pki, "ca.pem")})
    good = HttpSink(tls=cert(pki, "server"))
    bad = HttpSink(tls=cert(pki, "other-server"))  # signed by a CA the gateway does not trust
    stops(good)
    stops(bad)
    put_route(gw, upstream, "http-logger", {"uri": "https://127.0.0.1:%d/log" % good.port,
                                            "batch_max_size": 1, "ssl_verify": True})
    put_route(gw, upstream, "http-logger", {"uri": "https://127.0.0.1:%d/log" % bad.port,
                                            "batch_max_size": 1, "ssl_verify": True,
                                            "name": "untrusted"}, rid="2")
    assert get(gw.port, "/hello").status == 200
    assert wait_for(lambda: len(good.posts) == 1)
    r = gw.admin("PUT", "/routes/1", {"uri": "/nothing", "upstream": {"nodes": {upstream.addr: 1}}})
    assert r.status == 200
    assert get(gw.port, "/hello").status == 200  # route 2 now
    key = ('sluice_batch_process_dropped_total{name="untrusted",route_id="2",'
           'reason="retries_exhausted"}')
    assert wait_for(lambda: sample_value(scrape(gw).body.decode(), key) == 1)
    assert bad.posts == []
    assert "failed to perform SSL with host[127.0.0.1]" in gw.log_text()


def test_tcp_logger_tls(make_gateway, upstream, stops, pki):
    gw = make_gateway(admin=True)
    sink = TcpSink(tls=cert(pki, "server"))
    stops(sink)
    put_route(gw, upstream, "tcp-logger", {"host": "127.0.0.1", "port": sink.port, "tls": True,
                                           "batch_max_size": 1})
    assert get(gw.port, "/hello").status == 200
    assert wait_for(lambda: len(sink.payloads) == 1)
    assert json.loads(sink.payloads[0])["response"]["status"] == 200


def test_syslog_tls(make_gateway, upstream, stops, pki):
    gw = make_gateway(admin=True)
    rx = SyslogReceiver(tls=cert(pki, "server"))
    stops(rx)
    put_route(gw, upstream, "syslog", {"host": "127.0.0.1", "port": rx.port, "tls": True,
                                       "batch_max_size": 1})
    assert get(gw.port, "/hello").status == 200
    assert wait_for(lambda: len(rx.messages) == 1)
    assert RFC5424.match(rx.messages[0]), rx.messages


def test_sink_down_then_back_gets_the_queued_entries(make_gateway, upstream, stops):
    gw = make_gateway(admin=True)
    first = HttpSink()
    port = first.port
    first.stop()  # nothing listens there now
    put_route(gw, upstream, "http-logger", {"uri": "http://127.0.0.1:%d/log" % port,
                                            "batch_max_size": 2, "inactive_timeout": 1,
                                            "max_retry_count": 30, "retry_delay": 1,
                                            "name": "comeback"})
    with Client(gw.port) as c:
        for i in range(5):
            assert c.get("/hello?i=%d" % i).status == 200
    time.sleep(2.5)  # a few refused tries
    text = scrape(gw).body.decode()
    assert sample_value(text, 'sluice_batch_process_pending{name="comeback",route_id="1"}') == 5
    back = HttpSink(port=port)
    stops(back)
    assert wait_for(lambda: len(back.entries()) == 5, timeout=8)
    got = sorted(e["request"]["querystring"]["i"] for e in back.entries())
    assert got == [str(i) for i in range(5)]
    text = scrape(gw).body.decode()
    assert sample_value(text, 'sluice_batch_process_pending{name="comeback",route_id="1"}') == 0
    assert sample_value(text, 'sluice_batch_process_dropped_total{name="comeback",route_id="1",'
                              'reason="retries_exhausted"}') == 0
