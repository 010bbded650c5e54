"""cors against a real gateway: APISIX's documentation examples as published (ports and
upstreams replaced; docs/en/latest/plugins/cors.md at 089bdeb, and the origin-list, regex and
metadata examples of the 3.x page docs/zh/latest/plugins/cors.md), preflights answered by
the gateway, the allow_credential rule, and the headers on answers the gateway makes itself
(another plugin's refusal, a global rule's 404), on a route, a service and a global rule."""

import pytest

from harness import WELL_KNOWN_ADMIN_KEY, http
from test_apisix_docs import echoed, shared, shared_gw, ups  # noqa: F401

ERR = "failed to check the configuration of plugin cors err: "
CORS = ("Access-Control-Allow-Origin", "Access-Control-Allow-Methods",
        "Access-Control-Allow-Headers", "Access-Control-Expose-Headers",
        "Access-Control-Max-Age", "Access-Control-Allow-Credentials")


def _admin(doc, method, path, body):
    r = doc.gw.admin(method, path, body, key=WELL_KNOWN_ADMIN_KEY)
    assert r.status in (200, 201), r
    return r


def _no_cors(r):
    for name in CORS:
        assert r.header(name) is None, (name, r)


def test_doc_enable_on_route(shared):
    doc = shared
    r = doc.run('''curl http://127.0.0.1:9180/apisix/admin/routes/1 -H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1' -X PUT -d '
    {
        "uri": "/hello",
        "plugins": {
            "cors": {}
        },
        "upstream": {
            "type": "roundrobin",
            "nodes": {
                "127.0.0.1:8080": 1
            }
        }
    }' ''')
    assert r.status in (200, 201), r
    r = doc.run("curl http://127.0.0.1:9080/hello -v")
    assert r.status == 200, r
    assert r.header("Access-Control-Allow-Origin") == "*"
    assert r.header("Access-Control-Allow-Methods") == "*"
    assert r.header("Access-Control-Allow-Headers") == "*"
    assert r.header("Access-Control-Expose-Headers") == "*"
    assert r.header("Access-Control-Max-Age") == "5"
    # Disable Plugin: the headers go.
    r = doc.run('''curl http://127.0.0.1:9180/apisix/admin/routes/1 -H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1' -X PUT -d '
    {
        "uri": "/hello",
        "plugins": {},
        "upstream": {
            "type": "roundrobin",
            "nodes": {
                "127.0.0.1:8080": 1
            }
        }
    }' ''')
    assert r.status == 200, r
    _no_cors(doc.run("curl http://127.0.0.1:9080/hello -v"))


def test_doc_origin_list_with_credential(shared):
    doc = shared
    r = doc.run('''curl "http://127.0.0.1:9180/apisix/admin/routes" -X PUT \\
      -H "X-API-KEY: ${admin_key}" \\
      -d '{
        "id": "cors-route",
        "uri": "/anything",
        "plugins": {
          "cors": {
            "allow_origins": "http://sub.domain.com,http://sub2.domain.com",
            "allow_methods": "GET,POST",
            "allow_headers": "headr1,headr2",
            "expose_headers": "ex-headr1,ex-headr2",
            "max_age": 50,
            "allow_credential": true
          }
        },
        "upstream": {
          "nodes": {
            "httpbin.org:80": 1
          },
          "type": "roundrobin"
        }
      }' ''')
    assert r.status in (200, 201), r
    r = doc.run('curl "http://127.0.0.1:9080/anything" -H "Origin: http://sub2.domain.com" -I')
    assert r.status == 200, r
    assert r.header("Access-Control-Allow-Origin") == "http://sub2.domain.com"
    assert r.header("Access-Control-Allow-Credentials") == "true"
    assert r.header("Vary") == "Origin"
    assert r.header("Access-Control-Allow-Methods") == "GET,POST"
    assert r.header("Access-Control-Max-Age") == "50"
    assert r.header("Access-Control-Expose-Headers") == "ex-headr1,ex-headr2"
    assert r.header("Access-Control-Allow-Headers") == "headr1,headr2"
    r = doc.run('curl "http://127.0.0.1:9080/anything" -H "Origin: http://sub3.domain.com" -I')
    assert r.status == 200, r
    _no_cors(r)


def test_doc_origins_by_regex(shared):
    doc = shared
    r = doc.run('''curl "http://127.0.0.1:9180/apisix/admin/routes" -X PUT \\
      -H "X-API-KEY: ${admin_key}" \\
      -d '{
        "id": "cors-route",
        "uri": "/anything",
        "plugins": {
          "cors": {
            "allow_methods": "GET,POST",
            "allow_headers": "headr1,headr2",
            "expose_headers": "ex-headr1,ex-headr2",
            "max_age": 50,
            "allow_origins_by_regex": [ ".*\\\\.test.com$" ]
          }
        },
        "upstream": {
          "nodes": {
            "httpbin.org:80": 1
          },
          "type": "roundrobin"
        }
      }' ''')
    assert r.status in (200, 201), r
    r = doc.run('curl "http://127.0.0.1:9080/anything" -H "Origin: http://a.test.com" -I')
    assert r.header("Access-Control-Allow-Origin") == "http://a.test.com", r
    assert r.header("Vary") == "Origin"
    assert r.header("Access-Control-Allow-Methods") == "GET,POST"
    r = doc.run('curl "http://127.0.0.1:9080/anything" -H "Origin: http://a.test2.com" -I')
    assert r.status == 200, r
    _no_cors(r)


def test_doc_origins_by_metadata(shared):
    doc = shared
    r = doc.run('''curl "http://127.0.0.1:9180/apisix/admin/plugin_metadata/cors" -X PUT \\
      -H "X-API-KEY: ${admin_key}" \\
      -d '{
        "allow_origins": {
          "key_1": "https://domain.com",
          "key_2": "https://sub.domain.com,https://sub2.domain.com",
          "key_3": "*"
        }
      }' ''')
    assert r.status in (200, 201), r
    r = doc.run('''curl "http://127.0.0.1:9180/apisix/admin/routes" -X PUT \\
      -H "X-API-KEY: ${admin_key}" \\
      -d '{
        "id": "cors-route",
        "uri": "/anything",
        "plugins": {
          "cors": {
            "allow_methods": "GET,POST",
            "allow_headers": "headr1,headr2",
            "expose_headers": "ex-headr1,ex-headr2",
            "max_age": 50,
            "allow_origins_by_metadata": ["key_1"]
          }
        },
        "upstream": {
          "nodes": {
            "httpbin.org:80": 1
          },
          "type": "roundrobin"
        }
      }' ''')
    assert r.status in (200, 201), r
    # The example's request: an Origin key_1 lists gets the CORS headers.
    r = doc.run('curl "http://127.0.0.1:9080/anything" -H "Origin: https://domain.com" -I')
    assert r.status == 200, r
    assert r.header("Access-Control-Allow-Origin") == "https://domain.com", r
    assert r.header("Vary") == "Origin", r
    assert r.header("Access-Control-Allow-Methods") == "GET,POST", r
    assert r.header("Access-Control-Max-Age") == "50", r
    # An Origin only key_2 lists (the route does not name key_2) gets none.
    _no_cors(doc.run('curl "http://127.0.0.1:9080/anything" -H "Origin: https://sub.domain.com" -I'))
    # The metadata is read per request in APISIX: a change applies to the next request.
    _admin(doc, "PUT", "/plugin_metadata/cors",
           {"allow_origins": {"key_1": "https://sub.domain.com"}})
    r = doc.run('curl "http://127.0.0.1:9080/anything" -H "Origin: https://sub.domain.com" -I')
    assert r.header("Access-Control-Allow-Origin") == "https://sub.domain.com", r
    _no_cors(doc.run('curl "http://127.0.0.1:9080/anything" -H "Origin: https://domain.com" -I'))
    # Without the metadata nothing is allowed; the metadata's own schema is checked.
    _admin(doc, "DELETE", "/plugin_metadata/cors", None)
    _no_cors(doc.run('curl "http://127.0.0.1:9080/anything" -H "Origin: https://sub.domain.com" -I'))
    bad = doc.gw.admin("PUT", "/plugin_metadata/cors", {"allow_origins": {"k": "domain.com"}},
                       key=WELL_KNOWN_ADMIN_KEY)
    assert bad.status == 400, bad


def test_preflight_is_answered_by_the_gateway(shared):
    doc = shared
    up = doc.ups[0]
    _admin(doc, "PUT", "/routes/pf", {
        "uri": "/pf", "plugins": {"cors": {"allow_origins": "http://a.com",
                                           "allow_methods": "GET,PUT",
                                           "allow_headers": "**", "allow_credential": True,
                                           "expose_headers": "x-e"}},
        "upstream": {"type": "roundrobin", "nodes": {up.addr: 1}}})
    seen = len(up.requests)
    r = http(doc.gw.port, "OPTIONS", "/pf", headers=[
        ("Origin", "http://a.com"), ("Access-Control-Request-Method", "PUT"),
        ("Access-Control-Request-Headers", "x-token, content-type")])
    assert r.status == 200 and r.body == b"", r
    assert r.header("Access-Control-Allow-Origin") == "http://a.com"
    assert r.header("Access-Control-Allow-Methods") == "GET,PUT"
    assert r.header("Access-Control-Allow-Headers") == "x-token, content-type"
    assert r.header("Access-Control-Allow-Credentials") == "true"
    assert r.header("Vary") == "Origin"
    assert len(up.requests) == seen  # the upstream never saw it
    # A plain OPTIONS is answered too, as APISIX's rewrite does for every OPTIONS.
    assert http(doc.gw.port, "OPTIONS", "/pf").status == 200
    assert len(up.requests) == seen


def test_credential_with_star_is_refused(shared):
    doc = shared
    for conf in ({"allow_credential": True},
                 {"allow_credential": True, "allow_origins": "http://a.com",
                  "allow_methods": "GET", "allow_headers": "h", "expose_headers": "*"}):
        r = doc.gw.admin("PUT", "/routes/c", {"uri": "/c", "plugins": {"cors": conf}},
                         key=WELL_KNOWN_ADMIN_KEY)
        assert r.status == 400, r
        assert r.json["error_msg"] == ERR + (
            "you can not set '*' for other option when 'allow_credential' is true"), r
    r = doc.gw.admin("PUT", "/routes/c", {"uri": "/c", "plugins": {
        "cors": {"allow_origins": "example.com"}}}, key=WELL_KNOWN_ADMIN_KEY)
    assert r.status == 400, r
    assert r.json["error_msg"] == ERR + (
        'property "allow_origins" validation failed: failed to match pattern '
        '"^(\\*|\\*\\*|null|\\w+://[^,]+(,\\w+://[^,]+)*)$" with "example.com"'), r
    r = doc.gw.admin("PUT", "/routes/c", {"uri": "/c", "plugins": {
        "cors": {"allow_origins_by_regex": ["(x"]}}}, key=WELL_KNOWN_ADMIN_KEY)
    assert r.status == 400, r
    assert r.json["error_msg"] == ERR + (
        'pcre2_compile() failed: missing closing parenthesis in "(x"'), r


def test_headers_on_another_plugins_refusal(shared):
    doc = shared
    up = doc.ups[0]
    _admin(doc, "PUT", "/routes/ka", {
        "uri": "/ka", "plugins": {"cors": {"allow_origins": "**"}, "key-auth": {}},
        "upstream": {"type": "roundrobin", "nodes": {up.addr: 1}}})
    r = http(doc.gw.port, "GET", "/ka", headers=[("Origin", "http://z.org")])
    assert r.status == 401, r
    assert r.header("Access-Control-Allow-Origin") == "http://z.org"
    assert r.header("Vary") == "Origin"


def test_upstreams_cors_headers_are_replaced(shared):
    doc = shared
    up = doc.ups[0]
    from fake_upstream import Fixed
    up.route("/own-cors", Fixed(200, [("Access-Control-Allow-Origin", "http://evil.com"),
                                      ("Vary", "Accept-Encoding")], b"ok"))
    _admin(doc, "PUT", "/routes/own", {
        "uri": "/own-cors", "plugins": {"cors": {"allow_origins": "http://a.com,http://b.com"}},
        "upstream": {"type": "roundrobin", "nodes": {up.addr: 1}}})
    r = http(doc.gw.port, "GET", "/own-cors", headers=[("Origin", "http://b.com")])
    assert r.header_all("Access-Control-Allow-Origin") == ["http://b.com"], r
    assert sorted(r.header_all("Vary")) == ["Accept-Encoding", "Origin"], r


def test_on_a_service_and_a_global_rule(shared):
    doc = shared
    up = doc.ups[0]
    _admin(doc, "PUT", "/services/s1", {
        "plugins": {"cors": {"allow_origins": "http://svc.com"}},
        "upstream": {"type": "roundrobin", "nodes": {up.addr: 1}}})
    _admin(doc, "PUT", "/routes/sr", {"uri": "/svc", "service_id": "s1"})
    r = http(doc.gw.port, "GET", "/svc", headers=[("Origin", "http://svc.com")])
    assert r.status == 200 and r.header("Access-Control-Allow-Origin") == "http://svc.com", r
    _admin(doc, "PUT", "/global_rules/g1", {"plugins": {"cors": {"max_age": 7}}})
    # A request no route matches: the global rule's headers are on the gateway's 404.
    r = http(doc.gw.port, "GET", "/no-route", headers=[("Origin", "http://x.com")])
    assert r.status == 404, r
    assert r.header("Access-Control-Allow-Origin") == "*"
    assert r.header("Access-Control-Max-Age") == "7"
    # Route and global rule both run; the route's (later) values win.
    r = http(doc.gw.port, "GET", "/svc", headers=[("Origin", "http://svc.com")])
    assert r.header("Access-Control-Allow-Origin") == "http://svc.com", r
    assert r.header("Access-Control-Max-Age") == "5", r


def test_timing_allow_origin(shared):
    doc = shared
    up = doc.ups[0]
    _admin(doc, "PUT", "/routes/t", {
        "uri": "/t", "plugins": {"cors": {"timing_allow_origins": "http://t.com"}},
        "upstream": {"type": "roundrobin", "nodes": {up.addr: 1}}})
    r = http(doc.gw.port, "GET", "/t", headers=[("Origin", "http://t.com")])
    assert r.header("Timing-Allow-Origin") == "http://t.com", r
    r = http(doc.gw.port, "GET", "/t", headers=[("Origin", "http://u.com")])
    assert r.header("Timing-Allow-Origin") is None, r
