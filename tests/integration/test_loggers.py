"""http-logger against a real HTTP sink on loopback: one entry per request, APISIX's default
entry, batch shapes for batch_max_size / inactive_timeout, json and new_line, the auth header,
the kept-alive connection, retries after 500s up to max_retry_count, a sink that hangs (requests
stay fast, the queue stays under max_pending_entries, drops are counted and exported),
log_format from plugin_metadata, the bodies, APISIX's documented example and the Admin API's
400s. The other loggers are in test_loggers_net.py."""

import json
import time

import pytest

from harness import curl, get, scrape, sample_value
from log_sinks import HttpSink, wait_for

ERR = "failed to check the configuration of plugin http-logger err: "


@pytest.fixture
def gw(make_gateway):
    return make_gateway(admin=True, workers=2)


@pytest.fixture
def sinks():
    made = []

    def make(**kw):
        s = HttpSink(**kw)
        made.append(s)
        return s

    yield make
    for s in made:
        s.stop()


def put_route(gw, up, conf, rid="1", uri="/hello", plugin="http-logger"):
    r = gw.admin("PUT", "/routes/" + rid, {"uri": uri, "plugins": {plugin: conf},
                                           "upstream": {"nodes": {up.addr: 1}}})
    assert r.status in (200, 201), r
    return r


def test_doc_enable_on_a_route(gw, upstream, sinks):
    sink = sinks()
    r = curl(gw.url("/apisix/admin/routes/1", port=gw.admin_port), "-X", "PUT",
             "-H", "X-API-KEY: %s" % gw.admin_key, "-d", """
{
      "plugins": {
            "http-logger": {
                "uri": "http://127.0.0.1:%d/bin/:ID"
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
    assert r.status == 201, r
    assert get(gw.port, "/hello").status == 200
    # Defaults: batch_max_size 1000, inactive_timeout 5 s.
    assert wait_for(lambda: sink.posts, timeout=9)
    post = sink.posts[0]
    assert post["line"] == "POST /bin/:ID HTTP/1.1"
    assert post["headers"]["content-type"] == "application/json"
    assert "authorization" not in post["headers"]
    entries = json.loads(post["body"])
    assert isinstance(entries, list) and len(entries) == 1  # a JSON array: batch_max_size 1000


def test_default_entry_shape(gw, upstream, sinks):
    sink = sinks()
    put_route(gw, upstream, {"uri": "http://127.0.0.1:%d/log" % sink.port, "batch_max_size": 1})
    r = get(gw.port, "/hello?a=1&b=x%20y&flag&a=2", headers=[("X-Test", "t1")])
    assert r.status == 200
    assert wait_for(lambda: len(sink.posts) == 1)
    e = json.loads(sink.posts[0]["body"])  # batch_max_size 1: the object itself
    assert isinstance(e, dict)
    req = e["request"]
    assert req["method"] == "GET"
    assert req["uri"] == "/hello?a=1&b=x%20y&flag&a=2"
    assert req["url"] == "http://127.0.0.1:%d/hello?a=1&b=x%%20y&flag&a=2" % gw.port
    assert req["headers"]["x-test"] == "t1"
    assert req["querystring"] == {"a": ["1", "2"], "b": "x y", "flag": True}
    assert req["size"] > 0
    assert e["response"]["status"] == 200
    assert e["response"]["size"] > 0
    assert e["upstream"] == upstream.addr
    assert e["route_id"] == "1" and e["service_id"] == ""
    assert e["client_ip"] == "127.0.0.1"
    assert e["server"]["version"] and e["server"]["hostname"]
    assert abs(e["start_time"] / 1000 - time.time()) < 30
    for k in ("latency", "upstream_latency", "apisix_latency"):
        assert e[k] >= 0, k
    assert "consumer" not in e


def test_entry_count_equals_requests_and_batch_shapes(gw, upstream, sinks):
    sink = sinks()
    put_route(gw, upstream, {"uri": "http://127.0.0.1:%d/log" % sink.port, "batch_max_size": 3,
                             "inactive_timeout": 1})
    # One worker's processor per route: send on one connection so one worker sees them all.
    from harness import Client
    with Client(gw.port) as c:
        for i in range(7):
            assert c.get("/hello?i=%d" % i).status == 200
    assert wait_for(lambda: len(sink.entries()) == 7, timeout=6)
    sizes = [len(json.loads(b)) for b in sink.bodies()]
    assert sorted(sizes) == [1, 3, 3], sizes  # two full batches, the rest after 1 s idle
    got = sorted(x["request"]["querystring"]["i"] for x in sink.entries())
    assert got == [str(i) for i in range(7)]
    # Kept alive: every batch on one connection.
    assert len({p["conn"] for p in sink.posts}) == 1


def test_many_requests_each_logged_once(gw, upstream, sinks):
    sink = sinks()
    put_route(gw, upstream, {"uri": "http://127.0.0.1:%d/log" % sink.port, "batch_max_size": 10,
                             "inactive_timeout": 1})
    n = 60
    for i in range(n):
        assert get(gw.port, "/hello?i=%d" % i).status == 200
    assert wait_for(lambda: len(sink.entries()) >= n, timeout=8)
    time.sleep(0.3)
    ids = sorted(int(x["request"]["querystring"]["i"]) for x in sink.entries())
    assert ids == list(range(n))


def test_new_line_and_auth_header(gw, upstream, sinks):
    sink = sinks()
    put_route(gw, upstream, {"uri": "http://127.0.0.1:%d/log?k=v" % sink.port,
                             "concat_method": "new_line", "auth_header": "Bearer abc",
                             "batch_max_size": 2, "inactive_timeout": 1})
    from harness import Client
    with Client(gw.port) as c:
        for _ in range(2):
            assert c.get("/hello").status == 200
    assert wait_for(lambda: sink.posts)
    p = sink.posts[0]
    assert p["line"] == "POST /log?k=v HTTP/1.1"
    assert p["headers"]["authorization"] == "Bearer abc"
    assert p["headers"]["content-type"] == "text/plain"
    lines = p["body"].decode().split("\n")
    assert len(lines) == 2 and all(json.loads(x)["route_id"] == "1" for x in lines)


def test_retries_after_500_up_to_max_retry_count(gw, upstream, sinks):
    sink = sinks(statuses=[500, 500])
    put_route(gw, upstream, {"uri": "http://127.0.0.1:%d/log" % sink.port, "batch_max_size": 1,
                             "max_retry_count": 2, "retry_delay": 0})
    assert get(gw.port, "/hello").status == 200
    assert wait_for(lambda: len(sink.posts) == 3)
    bodies = sink.bodies()
    assert bodies[0] == bodies[1] == bodies[2]  # the same batch, tried three times
    time.sleep(0.5)
    assert len(sink.posts) == 3


def test_retries_exhausted_are_dropped_and_counted(gw, upstream, sinks):
    sink = sinks(statuses=[500] * 10)
    put_route(gw, upstream, {"uri": "http://127.0.0.1:%d/log" % sink.port, "batch_max_size": 1,
                             "max_retry_count": 1, "retry_delay": 0, "name": "retry-test"})
    assert get(gw.port, "/hello").status == 200
    assert wait_for(lambda: len(sink.posts) == 2)
    time.sleep(0.5)
    assert len(sink.posts) == 2  # 1 try + max_retry_count 1
    key = ('sluice_batch_process_dropped_total{name="retry-test",route_id="1",'
           'reason="retries_exhausted"}')
    assert wait_for(lambda: sample_value(scrape(gw).body.decode(), key) == 1)
    assert "failed to process entries" in gw.log_text()


def test_hanging_sink_never_slows_requests_and_drops_are_counted(gw, upstream, sinks):
    sink = sinks(hang=True)
    r = gw.admin("PUT", "/plugin_metadata/http-logger", {"max_pending_entries": 5})
    assert r.status in (200, 201), r
    put_route(gw, upstream, {"uri": "http://127.0.0.1:%d/log" % sink.port, "batch_max_size": 1,
                             "timeout": 1, "name": "hang"})
    from harness import Client
    worst = 0.0
    with Client(gw.port) as c:  # one worker: one processor takes them all
        for _ in range(200):
            t0 = time.monotonic()
            assert c.get("/hello").status == 200
            worst = max(worst, time.monotonic() - t0)
    assert worst < 0.5, worst
    text = scrape(gw).body.decode()
    pending = sample_value(text, 'sluice_batch_process_pending{name="hang",route_id="1"}')
    dropped = sample_value(text, 'sluice_batch_process_dropped_total{name="hang",route_id="1",'
                                 'reason="queue_full"}')
    assert pending is not None and pending <= 5, text
    assert dropped is not None and dropped >= 195 - 5, text
    assert "# TYPE apisix_batch_process_entries gauge" in text
    # The sender reports the drops (a worker writes no log line), once its stuck send times out.
    assert wait_for(lambda: "Batch Processor[hang]: max pending entries limit exceeded"
                    in gw.log_text(), timeout=5)


def test_log_format_from_plugin_metadata_doc_example(gw, upstream, sinks):
    sink = sinks()
    r = curl(gw.url("/apisix/admin/plugin_metadata/http-logger", port=gw.admin_port), "-X", "PUT",
             "-H", "X-API-KEY: %s" % gw.admin_key, "-d", """
{
    "log_format": {
        "host": "$host",
        "@timestamp": "$time_iso8601",
        "client_ip": "$remote_addr"
    }
}""")
    assert r.status in (200, 201), r
    put_route(gw, upstream, {"uri": "http://127.0.0.1:%d/log" % sink.port, "batch_max_size": 1})
    assert get(gw.port, "/hello", host="localhost").status == 200
    assert wait_for(lambda: sink.posts)
    e = json.loads(sink.posts[0]["body"])
    assert e["host"] == "localhost" and e["client_ip"] == "127.0.0.1" and e["route_id"] == "1"
    assert e["@timestamp"][:4].isdigit() and "T" in e["@timestamp"]
    assert set(e) == {"host", "@timestamp", "client_ip", "route_id"}


def test_conf_log_format_nested_and_request_vars(gw, upstream, sinks):
    sink = sinks()
    put_route(gw, upstream, {"uri": "http://127.0.0.1:%d/log" % sink.port, "batch_max_size": 1,
                             "log_format": {"m": "$request_method", "lit": "x",
                                            "q": {"a": "$arg_a", "ua": "$http_user_agent"},
                                            "response": {"status": "$status"},
                                            "missing": "$http_x_none"}})
    assert get(gw.port, "/hello?a=7", headers=[("User-Agent", "t/1")]).status == 200
    assert wait_for(lambda: sink.posts)
    e = json.loads(sink.posts[0]["body"])
    assert e == {"m": "GET", "lit": "x", "q": {"a": "7", "ua": "t/1"},
                 "response": {"status": "200"}, "route_id": "1"}


def test_bodies_with_expr(gw, upstream, sinks):
    sink = sinks()
    put_route(gw, upstream, {"uri": "http://127.0.0.1:%d/log" % sink.port, "batch_max_size": 1,
                             "include_req_body": True,
                             "include_req_body_expr": [["arg_log", "==", "yes"]],
                             "include_resp_body": True,
                             "include_resp_body_expr": [["status", "==", 200]]})
    assert http_post(gw, "/hello?log=yes", b"hello-body").status == 200
    assert http_post(gw, "/hello?log=no", b"secret").status == 200
    assert wait_for(lambda: len(sink.posts) == 2)
    by_arg = {json.loads(b)["request"]["querystring"]["log"]: json.loads(b)
              for b in sink.bodies()}
    assert by_arg["yes"]["request"]["body"] == "hello-body"
    assert "body" not in by_arg["no"]["request"]
    assert by_arg["yes"]["response"]["body"]  # the fake upstream's answer
    assert json.loads(by_arg["yes"]["response"]["body"])["upstream"] == upstream.name


def http_post(gw, path, body):
    from harness import http
    return http(gw.port, "POST", path, body=body)


@pytest.mark.parametrize("conf,msg", [
    ({}, 'property "uri" is required'),
    ({"uri": "127.0.0.1:1/x"}, 'property "uri" validation failed: failed to match pattern'),
    ({"uri": "ftp://127.0.0.1/x"}, 'property "uri" validation failed: scheme "ftp" is not supported'),
    ({"uri": "http://127.0.0.1/x", "batch_max_size": 0},
     'property "batch_max_size" validation failed: expected 0 to be at least 1'),
    ({"uri": "http://127.0.0.1/x", "timeout": 0},
     'property "timeout" validation failed: expected 0 to be at least 1'),
    ({"uri": "http://127.0.0.1/x", "concat_method": "xml"},
     'property "concat_method" validation failed: matches none of the enum values'),
    ({"uri": "http://127.0.0.1/x", "log_format": {"a": "$nope_var"}},
     'log_format: unknown variable "$nope_var"'),
    ({"uri": "http://127.0.0.1/x", "include_resp_body_expr": [["arg_x", "==", "1"]]},
     'include_resp_body_expr: variable "arg_x" reads the request'),
    ({"uri": "http://127.0.0.1/x", "include_req_body_expr": [["a", "bad-op", "1"]]},
     "failed to validate the 'include_req_body_expr' expression"),
])
def test_admin_refuses_bad_confs(gw, upstream, conf, msg):
    r = gw.admin("PUT", "/routes/9", {"uri": "/x", "plugins": {"http-logger": conf},
                                      "upstream": {"nodes": {upstream.addr: 1}}})
    assert r.status == 400, r
    assert r.json["error_msg"].startswith(ERR + msg), r.json


def test_plugins_list_and_schemas(gw):
    r = gw.admin("GET", "/plugins/list")
    for name in ("http-logger", "tcp-logger", "udp-logger", "file-logger", "syslog"):
        assert name in r.json, r.json
        s = gw.admin("GET", "/plugins/" + name)
        assert s.status == 200 and s.json["type"] == "object", (name, s)
    assert gw.admin("GET", "/plugins/http-logger").json["required"] == ["uri"]
    assert gw.admin("GET", "/plugins/syslog").json["required"] == ["host", "port"]
    r = gw.admin("PUT", "/plugin_metadata/http-logger", {"log_format": {"a": "$nope"}})
    assert r.status == 400 and 'unknown variable "$nope"' in r.json["error_msg"], r
    r = gw.admin("PUT", "/plugin_metadata/http-logger", {"max_pending_entries": 0})
    assert r.status == 400 and "expected 0 to be at least 1" in r.json["error_msg"], r


def test_service_consumer_and_global_rule(gw, upstream, sinks):
    sink, global_sink = sinks(), sinks()
    assert gw.admin("PUT", "/consumers", {"username": "jack",
                                          "plugins": {"key-auth": {"key": "k-jack"}}}).status \
        in (200, 201)
    assert gw.admin("PUT", "/services/s1", {"upstream": {"nodes": {upstream.addr: 1}}}).status \
        in (200, 201)
    r = gw.admin("PUT", "/routes/1", {"uri": "/hello", "service_id": "s1", "plugins": {
        "key-auth": {},
        "http-logger": {"uri": "http://127.0.0.1:%d/log" % sink.port, "batch_max_size": 1}}})
    assert r.status in (200, 201), r
    r = gw.admin("PUT", "/global_rules/g1", {"plugins": {"http-logger": {
        "uri": "http://127.0.0.1:%d/log" % global_sink.port, "batch_max_size": 1,
        "name": "global"}}})
    assert r.status in (200, 201), r
    assert get(gw.port, "/hello", headers=[("apikey", "k-jack")]).status == 200
    assert get(gw.port, "/nope").status == 404
    assert wait_for(lambda: len(sink.posts) == 1 and len(global_sink.posts) == 2)
    e = json.loads(sink.posts[0]["body"])
    assert e["consumer"] == {"username": "jack"}
    assert e["service_id"] == "s1" and e["route_id"] == "1"
    unmatched = [json.loads(b) for b in global_sink.bodies()
                 if json.loads(b)["response"]["status"] == 404]
    assert len(unmatched) == 1
    # No route: log-util gives the host as service_id; http-logger writes "no-matched".
    assert unmatched[0]["route_id"] == "no-matched"
    assert unmatched[0]["service_id"] == "127.0.0.1"
    assert "upstream" not in unmatched[0]
    text = scrape(gw).body.decode()
    assert sample_value(text, 'sluice_batch_process_pending{name="global",route_id=""}') == 0
