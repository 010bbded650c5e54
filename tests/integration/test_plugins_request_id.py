"""request-id against a real gateway: APISIX's documentation examples as published (ports and
upstreams replaced; docs/en/latest/plugins/request-id.md at 09b89d4), the id formats, the
client's own id kept, ids on the gateway's own answers, and 100,000 requests on 4 workers
without one id twice."""

import os
import re
import subprocess
import tempfile

import pytest

from harness import OMIT, WELL_KNOWN_ADMIN_KEY, Gateway, get
from test_apisix_docs import Doc, echoed, sent_header, shared, shared_gw, ups  # noqa: F401

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
ERR = "failed to check the configuration of plugin request-id err: "


def _route(doc, conf):
    doc.run('''curl "http://127.0.0.1:9180/apisix/admin/routes" -X PUT \\
      -H "X-API-KEY: ${ADMIN_API_KEY}" \\
      -d '{
        "id": "request-id-route",
        "uri": "/anything",
        "plugins": {
          "request-id": %s
        },
        "upstream": {
          "type": "roundrobin",
          "nodes": {
            "httpbin.org:80": 1
          }
        }
      }' ''' % conf)


def test_doc_default_response_header(shared):
    doc = shared
    r = doc.run('''curl "http://127.0.0.1:9180/apisix/admin/routes" -X PUT \\
      -H "X-API-KEY: ${ADMIN_API_KEY}" \\
      -d '{
        "id": "request-id-route",
        "uri": "/anything",
        "plugins": {
          "request-id": {
            "header_name": "X-Request-Id",
            "include_in_response": true,
            "algorithm": "uuid"
          }
        },
        "upstream": {
          "type": "roundrobin",
          "nodes": {
            "httpbin.org:80": 1
          }
        }
      }' ''')
    assert r.status in (200, 201), r
    r = doc.run('curl -i "http://127.0.0.1:9080/anything"')
    rid = r.header("X-Request-Id")
    assert UUID.fullmatch(rid), r
    assert sent_header(echoed(r), "X-Request-Id") == [rid]  # the upstream got the same id
    # An empty id is replaced.
    r = doc.run('''curl -i "http://127.0.0.1:9080/anything" -H 'X-Request-Id;' ''')
    assert UUID.fullmatch(r.header("X-Request-Id")), r
    assert sent_header(echoed(r), "X-Request-Id") == [r.header("X-Request-Id")]
    # The client's own id is kept, upstream and back.
    r = doc.run('''curl -i "http://127.0.0.1:9080/anything" -H 'X-Request-Id: some-custom-request-id' ''')
    assert r.header("X-Request-Id") == "some-custom-request-id", r
    assert sent_header(echoed(r), "X-Request-Id") == ["some-custom-request-id"]


def test_doc_custom_header_and_hidden(shared):
    doc = shared
    _route(doc, '{"header_name": "X-Req-Identifier", "include_in_response": true}')
    r = doc.run('curl -i "http://127.0.0.1:9080/anything"')
    assert UUID.fullmatch(r.header("X-Req-Identifier")), r
    assert r.header("X-Request-Id") is None
    _route(doc, '{"header_name": "X-Req-Identifier", "include_in_response": false}')
    r = doc.run('curl -i "http://127.0.0.1:9080/anything"')
    assert r.header("X-Req-Identifier") is None, r
    sent = sent_header(echoed(r), "X-Req-Identifier")
    assert len(sent) == 1 and UUID.fullmatch(sent[0]), sent


def test_doc_nanoid_and_ksuid(shared):
    doc = shared
    _route(doc, '{"algorithm": "nanoid"}')
    r = doc.run('curl -i "http://127.0.0.1:9080/anything"')
    assert re.fullmatch(r"[A-Za-z0-9_-]{21}", r.header("X-Request-Id")), r
    _route(doc, '{"algorithm": "ksuid"}')
    r = doc.run('curl -i "http://127.0.0.1:9080/anything"')
    assert re.fullmatch(r"[0-9A-Za-z]{27}", r.header("X-Request-Id")), r
    _route(doc, '{"algorithm": "range_id", "range_id": {"char_set": "abc123", "length": 9}}')
    r = doc.run('curl -i "http://127.0.0.1:9080/anything"')
    assert re.fullmatch(r"[abc123]{9}", r.header("X-Request-Id")), r


def test_doc_global_and_route(shared):
    doc = shared
    # The page's command carries no X-API-KEY, which APISIX itself would answer with 401; the
    # key is added here.
    r = doc.run('''curl -i "http://127.0.0.1:9180/apisix/admin/global_rules" -X PUT \\
      -H "X-API-KEY: ${ADMIN_API_KEY}" -d '{
      "id": "rule-for-request-id",
      "plugins": {
        "request-id": {
          "header_name": "Global-Request-ID"
        }
      }
    }' ''')
    assert r.status in (200, 201), r
    _route(doc, '{"header_name": "Route-Request-ID"}')
    r = doc.run('curl -i "http://127.0.0.1:9080/anything"')
    g, rt = r.header("Global-Request-ID"), r.header("Route-Request-ID")
    assert UUID.fullmatch(g) and UUID.fullmatch(rt) and g != rt, r
    echo = echoed(r)
    assert sent_header(echo, "Global-Request-ID") == [g]
    assert sent_header(echo, "Route-Request-ID") == [rt]
    # The global rule's id is on the gateway's own 404 too.
    miss = get(doc.gw.port, "/nothing-here")
    assert miss.status == 404 and UUID.fullmatch(miss.header("Global-Request-ID")), miss


def test_upstreams_own_id_wins(shared, tmp_path):
    doc = shared
    up = doc.ups[0]
    from fake_upstream import Fixed
    up.route("/own-id", Fixed(200, [("X-Request-Id", "from-upstream")], b"ok"))
    r = doc.gw.admin("PUT", "/routes/own", {
        "uri": "/own-id", "plugins": {"request-id": {}},
        "upstream": {"type": "roundrobin", "nodes": {up.addr: 1}}},
        key=WELL_KNOWN_ADMIN_KEY)
    assert r.status in (200, 201), r
    got = get(doc.gw.port, "/own-id")
    assert got.header("X-Request-Id") == "from-upstream", got


def test_bad_confs_are_refused(shared):
    doc = shared
    for conf, text in [
        ({"algorithm": "snowflake"},
         'property "algorithm" validation failed: matches none of the enum values'),
        ({"range_id": {"length": 3}},
         'property "range_id" validation failed: property "length" validation failed: '
         'expected 3 to be at least 6'),
        ({"include_in_response": "no"},
         'property "include_in_response" validation failed: wrong type: expected boolean, '
         'got string'),
    ]:
        r = doc.gw.admin("PUT", "/routes/bad", {"uri": "/bad", "plugins": {"request-id": conf}},
                         key=WELL_KNOWN_ADMIN_KEY)
        assert r.status == 400 and r.json["error_msg"] == ERR + text, r


def test_ids_unique_across_4_workers(tmp_path, ups):  # noqa: F811
    """100,000 requests on 4 workers (curl, 8 connections each of 4 processes): every id is
    new. The route's cors answers OPTIONS itself, so no upstream paces the run."""
    from test_apisix_docs import _stop
    gw = Gateway(tmp_path / "gw", admin=True, admin_keys=OMIT, workers=4)
    gw.start()
    try:
        r = gw.admin("PUT", "/routes/ids", {"uri": "/ids", "plugins": {
            "request-id": {}, "cors": {}}}, key=WELL_KNOWN_ADMIN_KEY)
        assert r.status in (200, 201), r
        procs, outs = [], []
        for i in range(4):
            cfg = tempfile.NamedTemporaryFile("w", delete=False, dir=str(tmp_path))
            for _ in range(25000):
                cfg.write('url = "http://127.0.0.1:%d/ids"\n' % gw.port)
            cfg.close()
            out = open(os.path.join(str(tmp_path), "h%d" % i), "wb")
            outs.append(out)
            procs.append(subprocess.Popen(
                ["curl", "-s", "-X", "OPTIONS", "-D", "-", "--parallel",
                 "--parallel-max", "8", "-K", cfg.name], stdout=out))
        for p in procs:
            assert p.wait(timeout=300) == 0
        ids = []
        for out in outs:
            out.close()
            text = open(out.name, "rb").read().decode()
            ids += re.findall(r"(?im)^x-request-id: (\S+)\r?$", text)
        assert len(ids) == 100000
        assert len(set(ids)) == 100000
        assert all(UUID.fullmatch(i) for i in ids[:1000])
    finally:
        _stop(gw)
