"""tcp-logger, udp-logger, syslog and file-logger against real receivers on loopback: APISIX's
documented examples (ports changed), one payload per batch, the RFC 5424 line over TCP and UDP,
log_format from plugin_metadata, and file-logger's lines surviving a move + SIGUSR1 as the
access log's do. http-logger is in test_loggers.py."""

import json
import os
import signal

import pytest

from harness import Client, curl, get
from log_sinks import RFC5424, SyslogReceiver, TcpSink, UdpSink, wait_for


@pytest.fixture
def gw(make_gateway):
    return make_gateway(admin=True, workers=2)


@pytest.fixture
def stops():
    made = []
    yield made.append
    for s in made:
        s.stop()


def doc_put(gw, text, path="/apisix/admin/routes/1"):
    r = curl(gw.url(path, port=gw.admin_port), "-X", "PUT",
             "-H", "X-API-KEY: %s" % gw.admin_key, "-d", text)
    assert r.status in (200, 201), r
    return r


def put_route(gw, up, plugin, conf, rid="1", uri="/hello"):
    r = gw.admin("PUT", "/routes/" + rid, {"uri": uri, "plugins": {plugin: conf},
                                           "upstream": {"nodes": {up.addr: 1}}})
    assert r.status in (200, 201), r


def test_tcp_logger_doc_example(gw, upstream, stops):
    sink = TcpSink()
    stops(sink)
    doc_put(gw, """
{
      "plugins": {
            "tcp-logger": {
                 "host": "127.0.0.1",
                 "port": %d,
                 "tls": false,
                 "batch_max_size": 1,
                 "name": "tcp logger"
            }
       },
      "upstream": {
           "type": "roundrobin",
           "nodes": {
               "%s": 1
           }
      },
      "uri": "/hello"
}""" % (sink.port, upstream.addr), path="/apisix/admin/routes/5")
    for _ in range(3):
        assert get(gw.port, "/hello").status == 200
    # APISIX's send_tcp_data: a connection per batch, the entry as a JSON object (batch_max_size 1).
    assert wait_for(lambda: len(sink.payloads) == 3)
    for p in sink.payloads:
        e = json.loads(p)
        assert e["route_id"] == "5" and e["response"]["status"] == 200


def test_tcp_logger_batches_as_a_json_array(gw, upstream, stops):
    sink = TcpSink()
    stops(sink)
    put_route(gw, upstream, "tcp-logger", {"host": "127.0.0.1", "port": sink.port,
                                           "batch_max_size": 2, "inactive_timeout": 1})
    with Client(gw.port) as c:
        for _ in range(3):
            assert c.get("/hello").status == 200
    assert wait_for(lambda: len(sink.payloads) == 2, timeout=5)
    sizes = sorted(len(json.loads(p)) for p in sink.payloads)
    assert sizes == [1, 2]


def test_udp_logger_doc_example(gw, upstream, stops):
    sink = UdpSink()
    stops(sink)
    doc_put(gw, """
{
      "plugins": {
            "udp-logger": {
                 "host": "127.0.0.1",
                 "port": %d,
                 "batch_max_size": 1,
                 "name": "udp logger"
            }
       },
      "upstream": {
           "type": "roundrobin",
           "nodes": {
               "%s": 1
           }
      },
      "uri": "/hello"
}""" % (sink.port, upstream.addr))
    for _ in range(2):
        assert get(gw.port, "/hello").status == 200
    assert wait_for(lambda: len(sink.payloads) == 2)
    assert all(json.loads(p)["request"]["method"] == "GET" for p in sink.payloads)


@pytest.mark.parametrize("sock_type", ["tcp", "udp"])
def test_syslog_rfc5424(gw, upstream, stops, sock_type):
    rx = SyslogReceiver(udp=sock_type == "udp")
    stops(rx)
    put_route(gw, upstream, "syslog", {"host": "127.0.0.1", "port": rx.port,
                                       "sock_type": sock_type, "batch_max_size": 2,
                                       "inactive_timeout": 1})
    with Client(gw.port) as c:
        for i in range(3):
            assert c.get("/hello?i=%d" % i, host="example.test").status == 200
    assert wait_for(lambda: len(rx.messages) == 3, timeout=5)
    for m in rx.messages:
        g = RFC5424.match(m)
        assert g, m
        assert g.group(2) == "example.test"  # APISIX sends ctx.var.host as the HOSTNAME
        assert int(g.group(3)) == gw.pid
        assert json.loads(g.group(4))["route_id"] == "1"


def test_syslog_doc_example(gw, upstream, stops):
    rx = SyslogReceiver()
    stops(rx)
    doc_put(gw, """
{
    "plugins": {
        "syslog": {
            "host" : "127.0.0.1",
            "port" : %d,
            "flush_limit" : 1
        }
    },
    "upstream": {
        "type": "roundrobin",
        "nodes": {
            "%s": 1
        }
    },
    "uri": "/hello"
}""" % (rx.port, upstream.addr))
    assert get(gw.port, "/hello").status == 200
    assert wait_for(lambda: rx.messages, timeout=9)  # inactive_timeout 5 s by default
    assert RFC5424.match(rx.messages[0]), rx.messages


def test_tcp_logger_log_format_from_metadata_doc_example(gw, upstream, stops):
    sink = TcpSink()
    stops(sink)
    doc_put(gw, """
{
    "log_format": {
        "host": "$host",
        "@timestamp": "$time_iso8601",
        "client_ip": "$remote_addr",
        "request": { "method": "$request_method", "uri": "$request_uri" },
        "response": { "status": "$status" }
    }
}""", path="/apisix/admin/plugin_metadata/tcp-logger")
    put_route(gw, upstream, "tcp-logger", {"host": "127.0.0.1", "port": sink.port,
                                           "batch_max_size": 1})
    assert get(gw.port, "/hello?x=1", host="localhost").status == 200
    assert wait_for(lambda: sink.payloads)
    e = json.loads(sink.payloads[0])
    assert e["host"] == "localhost" and e["client_ip"] == "127.0.0.1"
    assert e["request"] == {"method": "GET", "uri": "/hello?x=1"}
    assert e["response"] == {"status": "200"} and e["route_id"] == "1"


def test_file_logger_doc_example_and_reopen(gw, upstream, tmp_path):
    path = str(tmp_path / "file.log")
    doc_put(gw, """
{
  "plugins": {
    "file-logger": {
      "path": "%s"
    }
  },
  "upstream": {
    "type": "roundrobin",
    "nodes": {
      "%s": 1
    }
  },
  "uri": "/hello"
}""" % (path, upstream.addr))
    for i in range(3):
        assert get(gw.port, "/hello?i=%d" % i).status == 200

    def lines(p):
        if not os.path.exists(p):
            return []
        with open(p) as f:
            return [json.loads(x) for x in f.read().splitlines()]

    assert wait_for(lambda: len(lines(path)) == 3, timeout=5)
    moved = path + ".1"
    os.rename(path, moved)
    os.kill(gw.pid, signal.SIGUSR1)
    for i in range(3, 5):
        assert get(gw.port, "/hello?i=%d" % i).status == 200
    assert wait_for(lambda: len(lines(path)) == 2, timeout=5)
    assert [x["request"]["querystring"]["i"] for x in lines(moved)] == ["0", "1", "2"]
    assert [x["request"]["querystring"]["i"] for x in lines(path)] == ["3", "4"]


def test_admin_refuses_what_cannot_take_effect(gw, upstream):
    cases = [
        ("syslog", {"host": "h", "port": 514, "sock_type": "udp", "tls": True},
         'tls needs sock_type "tcp"'),
        ("file-logger", {"path": "/tmp/x.log", "match": [["arg_a", "==", "1"]]},
         "match is not supported"),
        ("tcp-logger", {"host": "h", "port": 70000}, "is not a port Sluice can send to"),
        ("udp-logger", {"host": "h"}, 'property "port" is required'),
    ]
    for name, conf, msg in cases:
        r = gw.admin("PUT", "/routes/9", {"uri": "/x", "plugins": {name: conf},
                                          "upstream": {"nodes": {upstream.addr: 1}}})
        assert r.status == 400, (name, r)
        err = "failed to check the configuration of plugin %s err: " % name
        assert r.json["error_msg"].startswith(err) and msg in r.json["error_msg"], r.json
