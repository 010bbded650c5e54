"""redirect: APISIX's documented examples and the cases of its t/plugin/redirect.t run through
the Admin API against a real gateway: the status, the exact Location, the page, query string
handling, regex captures, requests that go through to the upstream, and http_to_https with the
port taken from plugin_attr.redirect.https_port or apisix.ssl.listen; then the Admin API's
400s for bad confs."""

import json

import pytest

from harness import admin_route, curl, expect_error, free_port, get, http, route

ERR = "failed to check the configuration of plugin redirect err: "


def _page(title):
    """nginx's page for a redirect answered without a body of its own."""
    return ("<html>\r\n<head><title>%s</title></head>\r\n<body>\r\n"
            "<center><h1>%s</h1></center>\r\n"
            "<hr><center>sluice</center>\r\n</body>\r\n</html>\r\n" % (title, title)).encode()


@pytest.fixture
def ssl_port():
    return free_port()


@pytest.fixture
def rd_gw(make_gateway, ssl_port):
    """An Admin API gateway whose HTTPS listener is configured on a free port."""
    return make_gateway(admin=True, workers=2,
                        config={"apisix": {"ssl": {"listen": [{"port": ssl_port}]}}})


def _put(gw, uri, conf, *ups, rid=1, **extra):
    body = admin_route(uri, *ups, plugins={"redirect": conf}, **extra)
    r = gw.admin("PUT", "/routes/%s" % rid, body)
    assert r.status in (200, 201), r
    return r


def _doc_put(gw, body_text):
    """The docs' `curl .../apisix/admin/routes/1 -X PUT -d '...'`, verbatim."""
    r = curl(gw.url("/apisix/admin/routes/1", port=gw.admin_port), "-X", "PUT",
             "-H", "X-API-KEY: %s" % gw.admin_key, "-d", body_text)
    assert r.rc == 0 and r.status in (200, 201), r
    return r


def _location(gw, target, **kw):
    r = get(gw.port, target, **kw)
    assert 200 <= r.status < 400, r
    return r.header("location")


# --------------------------------------------------------------------------- the docs' examples


def test_doc_redirect_to_a_new_uri(rd_gw):
    _doc_put(rd_gw, """
{
    "uri": "/test/index.html",
    "plugins": {
        "redirect": {
            "uri": "/test/default.html",
            "ret_code": 301
        }
    },
    "upstream": {
        "type": "roundrobin",
        "nodes": {
            "127.0.0.1:80": 1
        }
    }
}""")
    r = curl(rd_gw.url("/test/index.html"))
    assert r.status == 301, r
    assert r.header("location") == "/test/default.html", r
    assert r.header("content-type") == "text/html", r
    assert r.body == _page("301 Moved Permanently"), r
    assert r.header("content-length") == str(len(r.body)), r


def test_doc_redirect_with_a_variable(rd_gw):
    _doc_put(rd_gw, """
{
    "uri": "/test",
    "plugins": {
        "redirect": {
            "uri": "$uri/index.html",
            "ret_code": 301
        }
    },
    "upstream": {
        "type": "roundrobin",
        "nodes": {
            "127.0.0.1:80": 1
        }
    }
}""")
    r = curl(rd_gw.url("/test"))
    assert r.status == 301 and r.header("location") == "/test/index.html", r


def test_doc_http_to_https(rd_gw, ssl_port):
    _doc_put(rd_gw, """
{
    "uri": "/hello",
    "plugins": {
        "redirect": {
            "http_to_https": true
        }
    }
}""")
    r = curl(rd_gw.url("/hello"))
    assert r.status == 301, r
    assert r.header("location") == "https://127.0.0.1:%d/hello" % ssl_port, r


# --------------------------------------------------------------------------- uri and ret_code


@pytest.mark.parametrize("uri,target,want", [
    ("/test/add", "/hello", "/test/add"),
    ("$uri/test/add", "/hello", "/hello/test/add"),
    ("$uri/test/a${arg_name}c", "/hello?name=json", "/hello/test/ajsonc"),
    ("/foo$$uri", "/hello?name=json", "/foo$/hello"),
    ("\\$uri/foo$uri\\$uri/bar", "/hello", "\\$uri/foo/hello\\$uri/bar"),
    ("$uri/$bad_var/bar", "/hello", "/hello//bar"),
    ("https://$host$request_uri", "/hello?a=1&b", "https://foo.com/hello?a=1&b"),
    ("/h/$http_x_tenant/$scheme", "/hello", "/h/t1/http"),
    # redirect's own variable syntax: a name stops at '.'.
    ("$uri.html", "/hello", "/hello.html"),
    ("$uri", "/he%20llo//x/../y", "/he llo/y"),
])
def test_uri_templates(rd_gw, upstream, uri, target, want):
    _put(rd_gw, "/he*", {"uri": uri, "ret_code": 302}, upstream)
    r = get(rd_gw.port, target, host="foo.com", headers={"X-Tenant": "t1"})
    assert r.status == 302, r
    assert r.header("location") == want, r
    assert upstream.requests == [], "a redirected request reached the upstream"


@pytest.mark.parametrize("conf,status,title", [
    ({"uri": "/x"}, 302, "302 Found"),  # the default ret_code
    ({"uri": "/x", "ret_code": 301}, 301, "301 Moved Permanently"),
    ({"uri": "/x", "ret_code": 303}, 303, "303 See Other"),
    ({"uri": "/x", "ret_code": 307}, 307, "307 Temporary Redirect"),
    ({"uri": "/x", "ret_code": 308}, 308, "308 Permanent Redirect"),
    ({"uri": "/x", "ret_code": 200}, 200, None),
    ({"uri": "/x", "ret_code": 399}, 399, None),
])
def test_ret_code_and_page(rd_gw, upstream, conf, status, title):
    _put(rd_gw, "/a", conf, upstream)
    r = get(rd_gw.port, "/a")
    assert r.status == status, r
    assert r.header("location") == "/x", r
    if title is None:
        assert r.body == b"" and r.header("content-length") == "0", r
        assert r.header("content-type") is None, r
    else:
        assert r.body == _page(title), r
        assert r.header("content-type") == "text/html", r
    # HEAD: the same head, no body.
    h = http(rd_gw.port, "HEAD", "/a")
    assert h.status == status and h.header("location") == "/x" and h.body == b"", h


def test_error_response_leaves_the_redirect_alone(rd_gw, upstream):
    # APISIX's run_plugin applies _meta.error_response only to answers of 400 and above.
    _put(rd_gw, "/a", {"uri": "/x", "ret_code": 301, "_meta": {"error_response": "nope"}},
         upstream)
    r = get(rd_gw.port, "/a")
    assert r.status == 301 and r.body == _page("301 Moved Permanently"), r
    _put(rd_gw, "/b", {"uri": "/x", "ret_code": 403, "_meta": {"error_response": "nope"}},
         upstream, rid=2)
    r = get(rd_gw.port, "/b")
    assert r.status == 403 and r.body == b"nope", r
    assert r.header("location") == "/x", r


# --------------------------------------------------------------------------- regex_uri


def test_regex_uri_captures_and_no_match_goes_upstream(rd_gw, upstream):
    _put(rd_gw, ["/test/*", "/hello"],
         {"regex_uri": ["^/test/(.*)/(.*)", "http://test.com/${2}-$1"], "ret_code": 301},
         upstream)
    r = get(rd_gw.port, "/test/a/b?q=1")
    assert r.status == 301, r
    assert r.header("location") == "http://test.com/b-a", r
    # No match: the upstream answers, with nothing of the plugin on the response.
    r = get(rd_gw.port, "/hello?q=1")
    assert r.status == 200, r
    assert r.header("location") is None, r
    echo = json.loads(r.body)
    assert echo["target"] == "/hello?q=1", echo


def test_regex_uri_runs_on_the_normalised_path(rd_gw, upstream):
    _put(rd_gw, "/test/*", {"regex_uri": ["^/test/(.*)", "/new/$1"]}, upstream)
    assert _location(rd_gw, "/test//a/./b%20c") == "/new/a/b c"


# --------------------------------------------------------------------------- encode_uri, query


def test_encode_uri(rd_gw, upstream):
    _put(rd_gw, "/test/*", {"regex_uri": ["^/test/(.*)", "http://test.com/${1}"],
                            "ret_code": 301, "encode_uri": True}, upstream)
    assert _location(rd_gw, "/test/with%20space") == "http://test.com/with%20space"
    _put(rd_gw, "/hello*", {"uri": "$uri", "ret_code": 301, "encode_uri": True}, upstream,
         rid=2)
    assert _location(rd_gw, "/hello/with%20space") == "/hello/with%20space"
    # Only the part before the first '?' is escaped.
    _put(rd_gw, "/q", {"uri": "/a b?c=d e", "encode_uri": True}, upstream, rid=3)
    assert _location(rd_gw, "/q") == "/a%20b?c=d e"


@pytest.mark.parametrize("conf,target,want", [
    ({"uri": "$uri", "append_query_string": True}, "/hello?name=json", "/hello?name=json"),
    ({"uri": "$uri?type=string", "append_query_string": True}, "/hello?name=json",
     "/hello?type=string&name=json"),
    ({"uri": "$uri", "append_query_string": True}, "/hello", "/hello"),
    ({"uri": "$uri", "append_query_string": True}, "/hello?", "/hello"),
    ({"uri": "$uri"}, "/hello?name=json", "/hello"),
    ({"regex_uri": ["^/(.*)", "/v2/$1"], "append_query_string": True}, "/hello?a=%20b&c",
     "/v2/hello?a=%20b&c"),
])
def test_append_query_string(rd_gw, upstream, conf, target, want):
    _put(rd_gw, "/hello", conf, upstream)
    assert _location(rd_gw, target) == want


# --------------------------------------------------------------------------- http_to_https


def test_http_to_https_uses_the_ssl_listen_port(rd_gw, upstream, ssl_port):
    _put(rd_gw, "/hello*", {"http_to_https": True}, upstream)
    r = get(rd_gw.port, "/hello/a%20b?x=1&y", host="test.com:%d" % rd_gw.port)
    assert r.status == 301, r
    # $host without the client's port, the request-target as sent.
    assert r.header("location") == "https://test.com:%d/hello/a%%20b?x=1&y" % ssl_port, r
    assert r.body == _page("301 Moved Permanently"), r
    h = http(rd_gw.port, "HEAD", "/hello", host="test.com")
    assert h.status == 301 and h.body == b"", h
    # Any other method gets 308, which keeps the method and body.
    p = http(rd_gw.port, "POST", "/hello", host="test.com", body=b"x=1")
    assert p.status == 308, p
    assert p.header("location") == "https://test.com:%d/hello" % ssl_port, p
    assert p.body == _page("308 Permanent Redirect"), p


def test_http_to_https_ignores_ret_code_and_false_redirects_nothing(rd_gw, upstream):
    _put(rd_gw, "/a", {"http_to_https": True, "ret_code": 302}, upstream)
    assert get(rd_gw.port, "/a").status == 301
    _put(rd_gw, "/b", {"http_to_https": False}, upstream, rid=2)
    r = get(rd_gw.port, "/b")
    assert r.status == 200 and r.header("location") is None, r


@pytest.mark.parametrize("config,port_text", [
    # plugin_attr.redirect.https_port wins over the listener.
    ({"plugin_attr": {"redirect": {"https_port": 8443}}}, ":8443"),
    # 443 is left out.
    ({"plugin_attr": {"redirect": {"https_port": 443}}}, ""),
    # No HTTPS listener and no port named: none in the URL.
    ({"apisix": {"ssl": {"enable": False}}}, ""),
])
def test_http_to_https_port(make_gateway, upstream, ssl_port, config, port_text):
    config.setdefault("apisix", {}).setdefault("ssl", {})["listen"] = [{"port": ssl_port}]
    gw = make_gateway(routes=[route("/hello", upstream,
                                    plugins={"redirect": {"http_to_https": True}})],
                      config=config)
    r = get(gw.port, "/hello?a=1", host="foo.com")
    assert r.status == 301, r
    assert r.header("location") == "https://foo.com%s/hello?a=1" % port_text, r


def test_http_to_https_port_follows_a_plugin_reload(rd_gw, upstream, ssl_port):
    _put(rd_gw, "/hello", {"http_to_https": True}, upstream)
    assert _location(rd_gw, "/hello", host="foo.com") == "https://foo.com:%d/hello" % ssl_port
    cfg = rd_gw.config_dict()
    cfg.setdefault("plugin_attr", {})["redirect"] = {"https_port": 10443}
    rd_gw.write_config(cfg)
    r = rd_gw.admin("PUT", "/plugins/reload")
    assert r.status == 200, r
    assert _location(rd_gw, "/hello", host="foo.com") == "https://foo.com:10443/hello"


def test_http_to_https_on_a_global_rule_redirects_every_path(rd_gw, upstream, ssl_port):
    r = rd_gw.admin("PUT", "/global_rules/1", {"plugins": {"redirect": {"http_to_https": True}}})
    assert r.status in (200, 201), r
    _put(rd_gw, "/hello", {"uri": "/elsewhere"}, upstream)
    # The global rule runs first; and it runs for a path no route has (APISIX runs global
    # rules before its 404).
    for target in ("/hello?x", "/nothing/here"):
        r = get(rd_gw.port, target, host="foo.com")
        assert r.status == 301, r
        assert r.header("location") == "https://foo.com:%d%s" % (ssl_port, target), r


# --------------------------------------------------------------------------- the Admin API


def test_schema_is_served(rd_gw):
    r = rd_gw.admin("GET", "/plugins/redirect")
    assert r.status == 200, r
    assert r.json["properties"]["ret_code"] == {"type": "integer", "minimum": 200,
                                                "default": 302}, r
    assert len(r.json["oneOf"]) == 3, r
    assert "redirect" in rd_gw.admin("GET", "/plugins/list").json


@pytest.mark.parametrize("conf,text", [
    ({"http_to_https": True, "uri": "/hello"},
     "value should match only one schema, but matches both schemas 1 and 3"),
    ({"uri": "/a", "regex_uri": ["^/a", "/b"]},
     "value should match only one schema, but matches both schemas 1 and 2"),
    ({"ret_code": 301}, "value should match only one schema, but matches none"),
    ({"ret_code": 100, "uri": "/a"},
     'property "ret_code" validation failed: expected 100 to be at least 200'),
    ({"uri": "/"},
     'property "uri" validation failed: string too short, expected at least 2, got 1'),
    ({"regex_uri": ["^/a", "/b", "/c"]},
     'property "regex_uri" validation failed: expect array to have at most 2 items'),
    ({"regex_uri": ["^/(a", "/$1"]},
     'invalid regex_uri (^/(a, /$1), err:pcre2_compile() failed: missing closing parenthesis '
     'in "^/(a"'),
    ({"http_to_https": True, "append_query_string": True},
     "only one of `http_to_https` and `append_query_string` can be configured."),
    # Sluice's own refusals.
    ({"uri": "/$server_addr"}, 'uri: variable "$server_addr" is not supported by Sluice'),
    ({"uri": "/x", "ret_code": 1000},
     'property "ret_code" validation failed: expected 1000 to be at most 999'),
])
def test_bad_confs_are_400_with_apisix_texts(rd_gw, upstream, conf, text):
    r = rd_gw.admin("PUT", "/routes/bad", admin_route("/bad", upstream,
                                                       plugins={"redirect": conf}))
    expect_error(r, 400, ERR)
    assert r.error_msg == ERR + text, r
    assert rd_gw.admin("GET", "/routes/bad").status == 404, "the refused route was stored"


def test_bad_https_port_stops_the_start(make_gateway):
    gw = make_gateway(start=False, check_exit=False,
                      config={"plugin_attr": {"redirect": {"https_port": 70000}}})
    gw.start(wait=False)
    rc = gw.wait_exit(timeout=10)
    assert rc not in (None, 0), "started with https_port 70000 (exit %r)" % rc
    assert "plugin_attr.redirect.https_port: expected an integer 1-65535, got 70000" in \
        gw.log_text()
