"""fault-injection (issue 24): APISIX's documented examples as published (docs/en/latest/
plugins/fault-injection.md, apache/apisix commit 09b89d41), with only the ports and the
upstream address replaced, plus the schema's refusals, `$var`s in abort's body and headers,
percentage sampling, the plugin on a service and a global rule, and a delay that does not
hold up the worker's other requests."""

import json
import threading
import time

import pytest

from fake_upstream import FakeUpstream, Fixed
from harness import OMIT, WELL_KNOWN_ADMIN_KEY, Gateway, admin_route, get
from test_apisix_docs import Doc, HttpbinEcho


@pytest.fixture
def doc(tmp_path):
    ups = [FakeUpstream(name=n, default=HttpbinEcho()) for n in ("node-1980", "b", "c")]
    ups[0].route("/hello", Fixed(200, body=b"hello world\n"))
    gw = Gateway(tmp_path, admin=True, admin_keys=OMIT, workers=2)
    gw.start()
    yield Doc(gw, ups)
    gw.stop()
    for up in ups:
        up.stop()


ABORT_200 = """
curl http://127.0.0.1:9180/apisix/admin/routes/1 -H "X-API-KEY: $admin_key" -X PUT -d '
{
    "plugins": {
       "fault-injection": {
           "abort": {
              "http_status": 200,
              "body": "Fault Injection!"
           }
       }
    },
    "upstream": {
       "nodes": {
           "127.0.0.1:1980": 1
       },
       "type": "roundrobin"
    },
    "uri": "/hello"
}'
"""

DELAY_3 = """
curl http://127.0.0.1:9180/apisix/admin/routes/1 -H "X-API-KEY: $admin_key" -X PUT -d '
{
    "plugins": {
       "fault-injection": {
           "delay": {
              "duration": 3
           }
       }
    },
    "upstream": {
       "nodes": {
           "127.0.0.1:1980": 1
       },
       "type": "roundrobin"
    },
    "uri": "/hello"
}'
"""

BOTH_WITH_VARS = """
curl http://127.0.0.1:9180/apisix/admin/routes/1  -H "X-API-KEY: $admin_key" -X PUT -d '
{
    "plugins": {
        "fault-injection": {
            "abort": {
                "http_status": 403,
                "body": "Fault Injection!\\n",
                "vars": [
                    [
                        [ "arg_name","==","jack" ]
                    ]
                ]
            },
            "delay": {
                "duration": 2,
                "vars": [
                    [
                        [ "http_age","==","18" ]
                    ]
                ]
            }
        }
    },
    "upstream": {
        "nodes": {
            "127.0.0.1:1980": 1
        },
        "type": "roundrobin"
    },
    "uri": "/hello"
}'
"""

CRITERIA = """
curl http://127.0.0.1:9180/apisix/admin/routes/1  -H "X-API-KEY: $admin_key" -X PUT -d '
{
    "plugins": {
        "fault-injection": {
            "abort": {
                    "http_status": 403,
                    "body": "Fault Injection!\\n",
                    "vars": [
                        [
                            [ "arg_name","==","jack" ]
                        ]
                    ]
            }
        }
    },
    "upstream": {
        "nodes": {
            "127.0.0.1:1980": 1
        },
        "type": "roundrobin"
    },
    "uri": "/hello"
}'
"""

DELETE = """
curl http://127.0.0.1:9180/apisix/admin/routes/1 -H "X-API-KEY: $admin_key" -X PUT -d '
{
    "uri": "/hello",
    "plugins": {},
    "upstream": {
        "type": "roundrobin",
        "nodes": {
            "127.0.0.1:1980": 1
        }
    }
}'
"""


def _put(doc, cmd):
    r = doc.run(cmd)
    assert r.status in (200, 201), r


def test_doc_enable_abort(doc):
    _put(doc, ABORT_200)
    r = doc.run("curl http://127.0.0.1:9080/hello -i")
    assert r.status == 200, r
    assert r.body == b"Fault Injection!", r
    assert r.header("content-type").startswith("text/plain"), r
    assert doc.ups[0].requests_for("/hello") == [], "an aborted request reached the upstream"


def test_doc_enable_delay(doc):
    _put(doc, DELAY_3)
    t0 = time.monotonic()
    r = doc.run("curl http://127.0.0.1:9080/hello -i")
    took = time.monotonic() - t0
    assert r.status == 200 and r.body == b"hello world\n", r
    assert 3.0 <= took < 4.5, took


def test_doc_abort_and_delay_with_vars(doc):
    _put(doc, BOTH_WITH_VARS)
    t0 = time.monotonic()
    r = doc.run('curl "http://127.0.0.1:9080/hello?name=jack" -i')
    assert r.status == 403 and r.body == b"Fault Injection!\n", r
    assert time.monotonic() - t0 < 1.5, "delay's vars did not match, yet it slept"
    t0 = time.monotonic()
    r = doc.run('curl "http://127.0.0.1:9080/hello" -H "age: 18" -i')
    took = time.monotonic() - t0
    assert r.status == 200 and r.body == b"hello world\n", r
    assert 2.0 <= took < 3.5, took


def test_doc_criteria_matching(doc):
    _put(doc, CRITERIA)
    r = doc.run('curl "http://127.0.0.1:9080/hello?name=allen" -i')
    assert r.status == 200 and r.body == b"hello world\n", r
    r = doc.run('curl "http://127.0.0.1:9080/hello?name=jack" -i')
    assert r.status == 403 and r.body == b"Fault Injection!\n", r


def test_doc_delete_plugin(doc):
    _put(doc, CRITERIA)
    _put(doc, DELETE)
    r = doc.run('curl "http://127.0.0.1:9080/hello?name=jack" -i')
    assert r.status == 200 and r.body == b"hello world\n", r


@pytest.mark.parametrize("conf,text", [
    ({}, "expect object to have at least 1 properties"),
    ({"abort": {}}, 'property "abort" validation failed: property "http_status" is required'),
    ({"abort": {"http_status": 100, "body": "Fault Injection!"}},
     'property "abort" validation failed: property "http_status" validation failed: '
     'expected 100 to be at least 200'),
    ({"delay": {}}, 'property "delay" validation failed: property "duration" is required'),
    ({"delay": {"duration": "test"}},
     'property "delay" validation failed: property "duration" validation failed: '
     'wrong type: expected number, got string'),
])
def test_schema_refusals(make_gateway, upstream, conf, text):
    gw = make_gateway(admin=True)
    r = gw.admin("PUT", "/routes/1", admin_route("/hello", upstream,
                                                  plugins={"fault-injection": conf}))
    assert r.status == 400, r
    assert r.json["error_msg"] == \
        "failed to check the configuration of plugin fault-injection err: " + text, r


def test_abort_body_and_headers_resolve_vars(make_gateway, upstream):
    gw = make_gateway(admin=True)
    conf = {"abort": {"http_status": 418, "body": "client addr: $remote_addr\n",
                      "headers": {"X-Client": "$remote_addr", "X-N": 5}}}
    r = gw.admin("PUT", "/routes/1", admin_route("/hello", upstream,
                                                  plugins={"fault-injection": conf}))
    assert r.status in (200, 201), r
    r = get(gw.port, "/hello")
    assert r.status == 418 and r.body == b"client addr: 127.0.0.1\n", r
    assert r.header("x-client") == "127.0.0.1" and r.header("x-n") == "5", r


def test_percentage_samples(make_gateway, upstream):
    gw = make_gateway(admin=True, workers=2)
    conf = {"abort": {"http_status": 403, "body": "x", "percentage": 50}}
    r = gw.admin("PUT", "/routes/1", admin_route("/hello", upstream,
                                                  plugins={"fault-injection": conf}))
    assert r.status in (200, 201), r
    got = [get(gw.port, "/hello").status for _ in range(400)]
    aborted = got.count(403)
    assert aborted + got.count(200) == 400, got
    assert 140 <= aborted <= 260, aborted  # 200 expected; sd 10


def test_on_service_and_global_rule(make_gateway, upstream):
    gw = make_gateway(admin=True)
    r = gw.admin("PUT", "/services/1", {"plugins": {"fault-injection": {
        "abort": {"http_status": 403, "body": "svc"}}}})
    assert r.status in (200, 201), r
    r = gw.admin("PUT", "/routes/1", admin_route("/s", upstream, service_id="1"))
    assert r.status in (200, 201), r
    r = get(gw.port, "/s")
    assert r.status == 403 and r.body == b"svc", r
    r = gw.admin("PUT", "/global_rules/1", {"plugins": {"fault-injection": {
        "abort": {"http_status": 402, "body": "global",
                  "vars": [[["arg_g", "==", "1"]]]}}}})
    assert r.status in (200, 201), r
    r = gw.admin("PUT", "/routes/2", admin_route("/plain", upstream))
    assert r.status in (200, 201), r
    assert get(gw.port, "/plain?g=1").body == b"global"
    assert get(gw.port, "/plain").status == 200


def test_a_delay_does_not_hold_up_the_worker(make_gateway, upstream):
    gw = make_gateway(admin=True, workers=1)
    for rid, uri, conf in ((1, "/slow", {"delay": {"duration": 1.5}}),
                           (2, "/fast", {"delay": {"duration": 0}})):
        r = gw.admin("PUT", "/routes/%d" % rid, admin_route(uri, upstream,
                                                             plugins={"fault-injection": conf}))
        assert r.status in (200, 201), r
    slow = []
    threads = [threading.Thread(target=lambda: slow.append(get(gw.port, "/slow").status))
               for _ in range(4)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    time.sleep(0.2)
    r = get(gw.port, "/fast")
    fast = time.monotonic() - t0
    for t in threads:
        t.join()
    assert r.status == 200, r
    assert fast < 1.0, "the only worker was held by the delayed requests: %.2f s" % fast
    assert slow == [200] * 4, slow
    assert 1.5 <= time.monotonic() - t0 < 3.0


def test_on_a_consumer(make_gateway, upstream):
    """A consumer's fault-injection runs for that consumer's requests only."""
    gw = make_gateway(admin=True)
    r = gw.admin("PUT", "/consumers", {"username": "jack", "plugins": {
        "key-auth": {"key": "jack-key"},
        "fault-injection": {"abort": {"http_status": 429, "body": "jack is throttled"}}}})
    assert r.status in (200, 201), r
    r = gw.admin("PUT", "/consumers", {"username": "rose", "plugins": {
        "key-auth": {"key": "rose-key"}}})
    assert r.status in (200, 201), r
    r = gw.admin("PUT", "/routes/1", admin_route("/c", upstream, plugins={"key-auth": {}}))
    assert r.status in (200, 201), r
    r = get(gw.port, "/c", headers=[("apikey", "jack-key")])
    assert r.status == 429 and r.body == b"jack is throttled", r
    assert get(gw.port, "/c", headers=[("apikey", "rose-key")]).status == 200
