"""proxy-rewrite: APISIX's documented examples run verbatim through the Admin API and curl
(only the admin key, ports and the upstream's address changed), then what the upstream
received for the URI, query string, method, Host and headers in the cases the examples leave
out, and the Admin API's 400s for bad confs and bad regexes."""

import json

import pytest

from harness import admin_route, curl, expect_error, get, http

ERR = "failed to check the configuration of plugin proxy-rewrite err: "


# --------------------------------------------------------------------------- helpers


def _doc_put(gw, body_text, upstream):
    """The docs' `curl http://127.0.0.1:9180/apisix/admin/routes -X PUT -d '...'`, with the
    upstream node `httpbin.org:80` (or `httpbin.org`) replaced by the fake upstream."""
    body = body_text.replace('"httpbin.org:80"', '"%s"' % upstream.addr)
    body = body.replace('"httpbin.org"', '"%s"' % upstream.addr)
    r = curl(gw.url("/apisix/admin/routes", port=gw.admin_port), "-X", "PUT",
             "-H", "X-API-KEY: %s" % gw.admin_key, "-d", body)
    assert r.rc == 0 and r.status in (200, 201), r
    return r


def _echo(r):
    """What the fake upstream received, from its echo body."""
    assert r.status == 200, r
    return json.loads(r.body)


def _values(echo, name):
    return [v for k, v in echo["headers"] if k.lower() == name.lower()]


def _put(gw, uri, upstream, conf, rid=1, **extra):
    r = gw.admin("PUT", "/routes/%s" % rid,
                 admin_route(uri, upstream, plugins={"proxy-rewrite": conf}, **extra))
    assert r.status in (200, 201), r
    return r


def _sent(gw, target, **kw):
    """One request through the gateway; what the upstream received."""
    return _echo(get(gw.port, target, **kw))


@pytest.fixture
def pr_gw(make_gateway):
    return make_gateway(admin=True, workers=2)


# --------------------------------------------------------------------------- the docs' examples


def test_doc_rewrite_host_header(pr_gw, upstream):
    _doc_put(pr_gw, """{
    "id": "proxy-rewrite-route",
    "methods": ["GET"],
    "uri": "/headers",
    "plugins": {
      "proxy-rewrite": {
        "host": "myapisix.demo"
      }
    },
    "upstream": {
      "type": "roundrobin",
      "nodes": {
        "httpbin.org:80": 1
      }
    }
  }""", upstream)
    echo = _echo(curl(pr_gw.url("/headers")))
    assert _values(echo, "Host") == ["myapisix.demo"], echo
    assert echo["target"] == "/headers", echo
    assert _values(echo, "X-Forwarded-Host") == ["127.0.0.1"], echo


def test_doc_rewrite_uri_and_set_headers(pr_gw, upstream):
    _doc_put(pr_gw, """{
    "id": "proxy-rewrite-route",
    "methods": ["GET"],
    "uri": "/",
    "plugins": {
      "proxy-rewrite": {
        "uri": "/anything",
        "headers": {
          "set": {
            "X-Api-Version": "v1",
            "X-Api-Engine": "apisix"
          }
        }
      }
    },
    "upstream": {
      "type": "roundrobin",
      "nodes": {
        "httpbin.org:80": 1
      }
    }
  }""", upstream)
    # The docs send -H '"X-Api-Version": "v2"', a field whose name carries the quotes; the
    # intent is a client X-Api-Version that the plugin overwrites.
    echo = _echo(curl(pr_gw.url("/"), "-H", "X-Api-Version: v2"))
    assert echo["target"] == "/anything", echo
    assert echo["method"] == "GET", echo
    assert _values(echo, "X-Api-Version") == ["v1"], echo
    assert _values(echo, "X-Api-Engine") == ["apisix"], echo


def test_doc_rewrite_uri_and_append_headers(pr_gw, upstream):
    _doc_put(pr_gw, """{
    "id": "proxy-rewrite-route",
    "methods": ["GET"],
    "uri": "/",
    "plugins": {
      "proxy-rewrite": {
        "uri": "/headers",
        "headers": {
          "add": {
            "X-Api-Version": "v1",
            "X-Api-Engine": "apisix"
          }
        }
      }
    },
    "upstream": {
      "type": "roundrobin",
      "nodes": {
        "httpbin.org:80": 1
      }
    }
  }""", upstream)
    echo = _echo(curl(pr_gw.url("/"), "-H", "X-Api-Version: v2"))
    assert echo["target"] == "/headers", echo
    # Appended: the client's field stays, the plugin's follows (ngx.req.add_header).
    assert _values(echo, "X-Api-Version") == ["v2", "v1"], echo
    assert _values(echo, "X-Api-Engine") == ["apisix"], echo


def test_doc_remove_existing_header(pr_gw, upstream):
    _doc_put(pr_gw, """{
    "id": "proxy-rewrite-route",
    "methods": ["GET"],
    "uri": "/headers",
    "plugins": {
      "proxy-rewrite": {
        "headers": {
          "remove":[
            "User-Agent"
          ]
        }
      }
    },
    "upstream": {
      "type": "roundrobin",
      "nodes": {
        "httpbin.org:80": 1
      }
    }
  }""", upstream)
    echo = _echo(curl(pr_gw.url("/headers")))
    assert _values(echo, "User-Agent") == [], echo
    assert _values(echo, "Accept") == ["*/*"], echo
    # Without the plugin curl's User-Agent does reach the upstream.
    r = pr_gw.admin("PUT", "/routes/plain", admin_route("/plain", upstream))
    assert r.status == 201, r
    assert _values(_echo(curl(pr_gw.url("/plain"))), "User-Agent")[0].startswith("curl/")


def test_doc_rewrite_uri_using_regex(pr_gw, upstream):
    _doc_put(pr_gw, """{
    "id": "proxy-rewrite-route",
    "uri": "/test/*",
    "plugins": {
      "proxy-rewrite": {
        "regex_uri": ["^/test/(.*)/(.*)", "/$1-$2"]
      }
    },
    "upstream": {
      "type": "roundrobin",
      "nodes": {
        "httpbin.org:80": 1
      }
    }
  }""", upstream)
    echo = _echo(curl(pr_gw.url("/test/user/agent")))
    assert echo["target"] == "/user-agent", echo


def test_doc_add_url_parameters(pr_gw, upstream):
    _doc_put(pr_gw, """{
    "id": "proxy-rewrite-route",
    "methods": ["GET"],
    "uri": "/get",
    "plugins": {
      "proxy-rewrite": {
        "uri": "/get?arg1=apisix&arg2=plugin"
      }
    },
    "upstream": {
      "type": "roundrobin",
      "nodes": {
        "httpbin.org:80": 1
      }
    }
  }""", upstream)
    echo = _echo(curl(pr_gw.url("/get")))
    assert echo["target"] == "/get?arg1=apisix&arg2=plugin", echo
    # A client's own arguments follow the plugin's.
    echo = _echo(curl(pr_gw.url("/get?x=1")))
    assert echo["target"] == "/get?arg1=apisix&arg2=plugin&x=1", echo


def test_doc_rewrite_http_method(pr_gw, upstream):
    _doc_put(pr_gw, """{
    "id": "proxy-rewrite-route",
    "methods": ["GET"],
    "uri": "/get",
    "plugins": {
      "proxy-rewrite": {
        "uri": "/anything",
        "method":"POST"
      }
    },
    "upstream": {
      "type": "roundrobin",
      "nodes": {
        "httpbin.org:80": 1
      }
    }
  }""", upstream)
    echo = _echo(curl(pr_gw.url("/get")))
    assert echo["method"] == "POST", echo
    assert echo["target"] == "/anything", echo


def test_doc_forward_consumer_names(pr_gw, upstream):
    names = pr_gw.admin("GET", "/plugins/list").json
    if "key-auth" not in names:
        pytest.skip("the docs' consumer example needs key-auth, which Sluice does not have yet "
                    "(plugins: %s)" % names)
    admin = pr_gw.url("/apisix/admin", port=pr_gw.admin_port)
    key = ("-H", "X-API-KEY: %s" % pr_gw.admin_key)
    r = curl(admin + "/consumers", "-X", "PUT", *key, "-d", '{"username": "JohnDoe"}')
    assert r.status in (200, 201), r
    r = curl(admin + "/consumers/JohnDoe/credentials", "-X", "PUT", *key, "-d", """{
    "id": "cred-john-key-auth",
    "plugins": {
      "key-auth": {
        "key": "john-key"
      }
    }
  }""")
    assert r.status in (200, 201), r
    _doc_put(pr_gw, """{
    "id": "consumer-restricted-route",
    "uri": "/get",
    "plugins": {
      "key-auth": {},
      "proxy-rewrite": {
        "headers": {
          "set": {
            "X-Apisix-Consumer": "$consumer_name"
          },
          "remove": [ "Apikey" ]
        }
      }
    },
    "upstream" : {
      "nodes": {
        "httpbin.org":1
      }
    }
  }""", upstream)
    echo = _echo(curl(pr_gw.url("/get"), "-H", "apikey: john-key"))
    assert _values(echo, "X-Apisix-Consumer") == ["JohnDoe"], echo
    assert _values(echo, "Apikey") == [], echo
    assert curl(pr_gw.url("/get")).status in (401, 403)


def test_doc_2x_flat_headers_and_scheme(pr_gw, upstream):
    """The 2.x page's example: flat headers (an empty value removes the header) and the
    `scheme` field APISIX 3.x accepts and ignores."""
    _doc_put(pr_gw, """{
    "id": "1",
    "methods": ["GET"],
    "uri": "/test/index.html",
    "plugins": {
        "proxy-rewrite": {
            "uri": "/test/home.html",
            "scheme": "http",
            "host": "iresty.com",
            "headers": {
                "X-Api-Version": "v1",
                "X-Api-Engine": "apisix",
                "X-Api-useless": ""
            }
        }
    },
    "upstream": {
        "type": "roundrobin",
        "nodes": {
            "httpbin.org:80": 1
        }
    }
}""", upstream)
    echo = _echo(curl(pr_gw.url("/test/index.html"), "-H", "X-Api-useless: client"))
    assert echo["method"] == "GET" and echo["target"] == "/test/home.html", echo
    assert _values(echo, "Host") == ["iresty.com"], echo
    assert _values(echo, "X-Api-Version") == ["v1"], echo
    assert _values(echo, "X-Api-Engine") == ["apisix"], echo
    assert _values(echo, "X-Api-useless") == [], echo


# --------------------------------------------------------------------------- URI and query


@pytest.mark.parametrize("conf,target,want", [
    ({"uri": "/plugin_proxy_rewrite_args"}, "/hello?q=apisix&a=iresty",
     "/plugin_proxy_rewrite_args?q=apisix&a=iresty"),
    ({"uri": "/new"}, "/hello?", "/new"),
    ({"uri": "/$arg_name/${http_x_id}"}, "/hello?name=joe", "/joe/42?name=joe"),
    ({"uri": "/${ arg_missing ?? dflt }"}, "/hello", "/dflt"),
    ({"uri": "/a b#c"}, "/hello", "/a%20b%23c"),
    ({"regex_uri": ["^/hello/(.*)/(.*)", "/$1-$2"]}, "/hello/a/b?x=1", "/a-b?x=1"),
    ({"regex_uri": ["^/nope/(.*)", "/$1", "^/hello/(.*)", "/second/$1"]}, "/hello/z",
     "/second/z"),
    # No pattern matches: the normalised path goes, re-escaped.
    ({"regex_uri": ["^/nope", "/x"]}, "/hello//a/./b/../c%7e", "/hello/a/c~"),
    # The regex sees the decoded path; the result is escaped again.
    ({"regex_uri": ["^/hello/(.*)", "/$1"]}, "/hello/a%20b", "/a%20b"),
    # A '?' the replacement writes starts a query; the client's arguments follow with '&'.
    ({"regex_uri": ["^/hello/(.*)", "/search?q=$1"]}, "/hello/x?page=2", "/search?q=x&page=2"),
    # Nothing normalised, escaped or appended.
    ({"use_real_request_uri_unsafe": True}, "/hello//a%2Fb/c?x=%20", "/hello//a%2Fb/c?x=%20"),
    ({"use_real_request_uri_unsafe": True, "regex_uri": ["^/hello(.*)", "/u$1"]},
     "/hello%20x?y=1", "/u%20x?y=1"),
])
def test_upstream_uri(pr_gw, upstream, conf, target, want):
    _put(pr_gw, "/hello*", upstream, conf)
    echo = _sent(pr_gw, target, headers={"X-Id": "42"})
    assert echo["target"] == want, echo


def test_uri_wins_over_regex_uri(pr_gw, upstream):
    _put(pr_gw, "/hello*", upstream, {"uri": "/u", "regex_uri": ["^/(.*)", "/r/$1"]})
    assert _sent(pr_gw, "/hello/x")["target"] == "/u"


def test_route_matches_the_clients_path(pr_gw, upstream):
    """The route is chosen on the client's path, before the rewrite."""
    _put(pr_gw, "/old", upstream, {"uri": "/new"}, rid="old")
    assert _sent(pr_gw, "/old")["target"] == "/new"
    assert get(pr_gw.port, "/new").status == 404


# --------------------------------------------------------------------------- method, host


def test_method_rewrite_keeps_the_body(pr_gw, upstream):
    _put(pr_gw, "/m", upstream, {"method": "PUT"})
    r = http(pr_gw.port, "POST", "/m", body=b"hello")
    echo = _echo(r)
    assert echo["method"] == "PUT", echo
    assert echo["body_len"] == 5, echo


def test_host_wins_over_pass_host(pr_gw, upstream):
    r = pr_gw.admin("PUT", "/routes/1", admin_route(
        "/h", upstream, plugins={"proxy-rewrite": {"host": "rewritten.example:8080"}}))
    assert r.status == 201, r
    assert _values(_sent(pr_gw, "/h", host="client.example"), "Host") == \
        ["rewritten.example:8080"]
    r = pr_gw.admin("PATCH", "/routes/1", {"upstream": {"pass_host": "node"}})
    assert r.status == 200, r
    assert _values(_sent(pr_gw, "/h", host="client.example"), "Host") == \
        ["rewritten.example:8080"]
    r = pr_gw.admin("PATCH", "/routes/1", {"plugins": {"proxy-rewrite": {"host": None,
                                                                         "uri": "/h"}}})
    assert r.status == 200, r
    host = _values(_sent(pr_gw, "/h", host="client.example"), "Host")
    assert host and host[0].startswith("127.0.0.1"), \
        "without the plugin's host, pass_host node applies: %r" % host


# --------------------------------------------------------------------------- headers


def test_headers_add_set_remove_with_variables_and_captures(pr_gw, upstream):
    _put(pr_gw, "/iresty/*", upstream, {
        "regex_uri": ["^/iresty/(.*)/(.*)", "/$1-$2"],
        "headers": {
            "add": {"X-Client": "$remote_addr", "X-Keep": "added"},
            "set": {"X-Cap": "$1-${2}", "X-Arg": "${arg_k}", "X-Route": "$route_id",
                    "X-Empty": "$http_nope", "X-Keep": "set"},
            "remove": ["X-Drop"],
        }})
    echo = _sent(pr_gw, "/iresty/a/b?k=v",
                 headers=[("X-Keep", "client"), ("X-Drop", "d"), ("X-Empty", "e")])
    assert echo["target"] == "/a-b?k=v", echo
    assert _values(echo, "X-Client") == ["127.0.0.1"], echo
    assert _values(echo, "X-Cap") == ["a-b"], echo
    assert _values(echo, "X-Arg") == ["v"], echo
    assert _values(echo, "X-Route") == ["1"], echo
    # set replaces the client's field and the added one; "" removes; remove drops.
    assert _values(echo, "X-Keep") == ["set"], echo
    assert _values(echo, "X-Empty") == [], echo
    assert _values(echo, "X-Drop") == [], echo


def test_header_built_from_the_path_cannot_split_lines(pr_gw, upstream):
    # A path decoding to control bytes is refused before routing (docs/routing.md), so no
    # header can be built from one; the plugin's own escaping is covered by its unit tests.
    _put(pr_gw, "/h/*", upstream, {"headers": {"set": {"X-U": "$uri"}}})
    before = len(upstream.requests_for("/h/a%0D%0AX-Evil:%201"))
    r = get(pr_gw.port, "/h/a%0D%0AX-Evil:%201")
    assert r.status == 400, r
    assert len(upstream.requests_for("/h/a%0D%0AX-Evil:%201")) == before


def test_forwarding_headers_can_be_set(pr_gw, upstream):
    _put(pr_gw, "/f", upstream, {"headers": {"set": {"X-Forwarded-Proto": "https"}}})
    echo = _sent(pr_gw, "/f")
    assert _values(echo, "X-Forwarded-Proto") == ["https"], echo


def test_on_a_service_and_a_global_rule(pr_gw, upstream):
    r = pr_gw.admin("PUT", "/services/s1", {
        "plugins": {"proxy-rewrite": {"headers": {"X-From": "service"}}},
        "upstream": {"type": "roundrobin", "nodes": {upstream.addr: 1}}})
    assert r.status == 201, r
    r = pr_gw.admin("PUT", "/routes/1", {"uri": "/svc", "service_id": "s1"})
    assert r.status == 201, r
    assert _values(_sent(pr_gw, "/svc"), "X-From") == ["service"]
    r = pr_gw.admin("PUT", "/global_rules/g1", {
        "plugins": {"proxy-rewrite": {"headers": {"set": {"X-Global": "$host"}}}}})
    assert r.status == 201, r
    r = pr_gw.admin("PUT", "/routes/2", admin_route("/plain", upstream))
    assert r.status == 201, r
    assert _values(_sent(pr_gw, "/plain", host="g.example"), "X-Global") == ["g.example"]


# --------------------------------------------------------------------------- Admin API


def test_schema_endpoint(pr_gw):
    r = pr_gw.admin("GET", "/plugins/proxy-rewrite")
    assert r.status == 200, r
    props = r.json["properties"]
    assert set(props) == {"uri", "method", "regex_uri", "host", "headers",
                          "use_real_request_uri_unsafe"}, r.json
    assert props["uri"]["pattern"] == "^\\/.*"
    assert "proxy-rewrite" in pr_gw.admin("GET", "/plugins/list").json


@pytest.mark.parametrize("conf,text", [
    ({"uri": "test"},
     'property "uri" validation failed: failed to match pattern "^\\\\/.*" with "test"'),
    ({"uri": ""}, 'property "uri" validation failed: string too short, expected at least 1, got 0'),
    ({"method": "GET1"}, 'property "method" validation failed: matches none of the enum values'),
    ({"regex_uri": ["^/a"]},
     'property "regex_uri" validation failed: expect array to have at least 2 items'),
    ({"regex_uri": "^/a"},
     'property "regex_uri" validation failed: wrong type: expected array, got string'),
    ({"regex_uri": ["^/a", "/b", "^/c"]}, "The length of regex_uri should be an even number"),
    ({"regex_uri": ["^/(a", "/$1"]},
     'invalid regex_uri(^/(a, /$1): pcre2_compile() failed: missing closing parenthesis in '
     '"^/(a"'),
    ({"regex_uri": ["^/a", "/b", "[", "/c"]},
     'invalid regex_uri([, /c): pcre2_compile() failed: missing terminating ] for character '
     'class in "["'),
    ({"regex_uri": ["^/a", "/$x"]},
     "invalid regex_uri(^/a, /$x): failed to compile the replacement template"),
    ({"host": "a b"},
     'property "host" validation failed: failed to match pattern '
     '"^[0-9a-zA-Z-.]+(:\\\\d{1,5})?$" with "a b"'),
    ({"headers": {}},
     'property "headers" validation failed: value should match only one schema, but matches '
     'none'),
    ({"headers": {"remove": ["a:b"]}},
     'property "headers" validation failed: value should match only one schema, but matches '
     'none'),
    ({"headers": {"X A": "v"}}, "invalid field character in header"),
    ({"headers": {"": "v"}}, "invalid field length in header"),
    ({"headers": {"X-A": "a\nb"}}, "invalid value character in header"),
    ({"use_real_request_uri_unsafe": 1},
     'property "use_real_request_uri_unsafe" validation failed: wrong type: expected boolean, '
     'got number'),
    # Sluice's own refusals.
    ({"headers": {"set": {"Host": "x"}}},
     'headers.set: "Host" cannot be rewritten through headers; use the "host" field of '
     'proxy-rewrite'),
    ({"uri": "/$server_addr"}, 'uri: variable "$server_addr" is not supported by Sluice'),
])
def test_bad_confs_are_400_with_apisix_texts(pr_gw, upstream, conf, text):
    r = pr_gw.admin("PUT", "/routes/bad", admin_route("/bad", upstream,
                                                       plugins={"proxy-rewrite": conf}))
    expect_error(r, 400, ERR)
    assert r.error_msg == ERR + text, r
    assert pr_gw.admin("GET", "/routes/bad").status == 404, "the refused route was stored"


def test_bad_conf_refused_on_plugin_configs_and_global_rules(pr_gw):
    conf = {"plugins": {"proxy-rewrite": {"regex_uri": ["(", "/"]}}}
    for kind in ("plugin_configs", "global_rules"):
        r = pr_gw.admin("PUT", "/%s/p1" % kind, conf)
        expect_error(r, 400, ERR + "invalid regex_uri((, /): ")
