"""ip-restriction, ua-restriction and referer-restriction through the Admin API against a real
gateway: requests let through and refused (403 and APISIX's `{"message": ...}` body), IPv4
CIDRs, IPv6 clients on a ::1 listener, custom messages, a conf changed while the gateway runs,
a 10,000-entry address list, and the Admin API's 400s with APISIX's texts for bad confs."""

import socket

import pytest

from harness import (Reader, admin_route, build_request, expect_error, free_port, get, get_from,
                     read_response)

IP_ERR = "failed to check the configuration of plugin ip-restriction err: "


@pytest.fixture
def rgw(make_gateway):
    return make_gateway(admin=True, workers=2)


def _put(gw, plugins, upstream, rid=1, uri="/hello"):
    r = gw.admin("PUT", "/routes/%s" % rid, admin_route(uri, upstream, plugins=plugins))
    assert r.status in (200, 201), r
    return r


def _refused(r, message, status=403):
    assert r.status == status, r
    assert r.body == b'{"message":"%s"}\n' % message.encode(), r
    assert r.header("content-type").startswith("application/json"), r


# --------------------------------------------------------------------------- ip-restriction


def test_ip_whitelist_lets_listed_addresses_through(rgw, upstream):
    _put(rgw, {"ip-restriction": {"whitelist": ["127.0.0.1", "127.0.3.0/24"]}}, upstream)
    assert get_from("127.0.0.1", rgw.port, "/hello").status == 200
    assert get_from("127.0.3.200", rgw.port, "/hello").status == 200
    _refused(get_from("127.0.0.2", rgw.port, "/hello"), "Your IP address is not allowed")
    _refused(get_from("127.0.4.1", rgw.port, "/hello"), "Your IP address is not allowed")


def test_ip_blacklist_cidr_refuses_the_block(rgw, upstream):
    _put(rgw, {"ip-restriction": {"blacklist": ["127.0.1.0/24", "127.9.0.0/16"]}}, upstream)
    _refused(get_from("127.0.1.77", rgw.port, "/hello"), "Your IP address is not allowed")
    _refused(get_from("127.9.200.3", rgw.port, "/hello"), "Your IP address is not allowed")
    assert get_from("127.0.2.1", rgw.port, "/hello").status == 200
    assert get_from("127.10.0.1", rgw.port, "/hello").status == 200
    # The upstream saw only what was let through.
    assert get_from("127.0.0.1", rgw.port, "/hello").status == 200


def test_ip_custom_message_and_response_code(rgw, upstream):
    _put(rgw, {"ip-restriction": {"blacklist": ["127.0.0.8"],
                                  "message": "Do you want to do something bad?"}}, upstream)
    _refused(get_from("127.0.0.8", rgw.port, "/hello"), "Do you want to do something bad?")
    _put(rgw, {"ip-restriction": {"blacklist": ["127.0.0.8"], "response_code": 404}}, upstream)
    _refused(get_from("127.0.0.8", rgw.port, "/hello"), "Your IP address is not allowed", 404)


def _get_v6(port, path):
    sock = socket.create_connection(("::1", port), timeout=10)
    try:
        sock.sendall(build_request("GET", path, [("Connection", "close")], host="[::1]"))
        return read_response(Reader(sock), "GET")
    finally:
        sock.close()


def test_ip_ipv6_clients(make_gateway, upstream):
    v4, v6 = free_port(), free_port()
    gw = make_gateway(admin=True, listen=[v4, {"ip": "::1", "port": v6}], start=False)
    gw.ports = [v4]  # the harness waits for its ports on 127.0.0.1; ::1 is checked below
    gw.start()
    _put(gw, {"ip-restriction": {"whitelist": ["::1"]}}, upstream)
    assert _get_v6(v6, "/hello").status == 200
    _refused(get_from("127.0.0.1", v4, "/hello"), "Your IP address is not allowed")
    _put(gw, {"ip-restriction": {"blacklist": ["::/64"]}}, upstream)
    _refused(_get_v6(v6, "/hello"), "Your IP address is not allowed")
    assert get_from("127.0.0.1", v4, "/hello").status == 200
    _put(gw, {"ip-restriction": {"whitelist": ["fe80::/10", "127.0.0.0/8"]}}, upstream)
    _refused(_get_v6(v6, "/hello"), "Your IP address is not allowed")
    assert get_from("127.0.0.1", v4, "/hello").status == 200


def test_ip_conf_change_applies_live(rgw, upstream):
    _put(rgw, {"ip-restriction": {"whitelist": ["127.0.0.1"]}}, upstream)
    assert get_from("127.0.0.1", rgw.port, "/hello").status == 200
    assert get_from("127.0.0.2", rgw.port, "/hello").status == 403
    _put(rgw, {"ip-restriction": {"whitelist": ["127.0.0.2"]}}, upstream)
    assert get_from("127.0.0.2", rgw.port, "/hello").status == 200
    assert get_from("127.0.0.1", rgw.port, "/hello").status == 403
    r = rgw.admin("PATCH", "/routes/1", {"plugins": {"ip-restriction": None}})
    assert r.status == 200, r
    assert get_from("127.0.0.1", rgw.port, "/hello").status == 200
    assert get_from("127.0.0.2", rgw.port, "/hello").status == 200


def test_ip_ten_thousand_entries(rgw, upstream):
    blocks = ["10.%d.%d.0/24" % (i // 256, i % 256) for i in range(9998)]
    blocks += ["127.0.0.5", "127.0.7.0/24"]
    _put(rgw, {"ip-restriction": {"whitelist": blocks}}, upstream)
    got = rgw.admin("GET", "/routes/1")
    assert len(got.json["value"]["plugins"]["ip-restriction"]["whitelist"]) == 10000, got
    assert get_from("127.0.0.5", rgw.port, "/hello").status == 200
    assert get_from("127.0.7.9", rgw.port, "/hello").status == 200
    assert get_from("127.0.0.6", rgw.port, "/hello").status == 403
    _put(rgw, {"ip-restriction": {"blacklist": blocks}}, upstream)
    assert get_from("127.0.0.5", rgw.port, "/hello").status == 403
    assert get_from("127.0.0.6", rgw.port, "/hello").status == 200


# --------------------------------------------------------------------------- ua-restriction


def test_ua_denylist(rgw, upstream):
    _put(rgw, {"ua-restriction": {"denylist": ["my-bot2", r"(Twitterspider)/(\d+)\.(\d+)"]}},
         upstream)
    assert get(rgw.port, "/hello", headers={"User-Agent": "curl/8.5.0"}).status == 200
    _refused(get(rgw.port, "/hello", headers={"User-Agent": "Twitterspider/2.0"}),
             "Not allowed")
    _refused(get(rgw.port, "/hello", headers={"User-Agent": "x my-bot2 y"}), "Not allowed")
    # No User-Agent and no bypass_missing: refused.
    _refused(get(rgw.port, "/hello"), "Not allowed")


def test_ua_allowlist_bypass_missing_and_message(rgw, upstream):
    _put(rgw, {"ua-restriction": {"allowlist": ["^my-bot1$"], "bypass_missing": True,
                                  "message": "Access denied"}}, upstream)
    assert get(rgw.port, "/hello", headers={"User-Agent": "my-bot1"}).status == 200
    assert get(rgw.port, "/hello").status == 200
    _refused(get(rgw.port, "/hello", headers={"User-Agent": "my-bot1 v2"}), "Access denied")


def test_ua_several_user_agent_fields(rgw, upstream):
    _put(rgw, {"ua-restriction": {"denylist": ["bad"]}}, upstream)
    r = get(rgw.port, "/hello", headers=[("User-Agent", "good"), ("User-Agent", "bad")])
    _refused(r, "Not allowed")


# --------------------------------------------------------------------------- referer-restriction


def test_referer_whitelist_with_wildcard(rgw, upstream):
    _put(rgw, {"referer-restriction": {"whitelist": ["xx.com", "*.xx.com"]}}, upstream)
    for ok in ("http://xx.com/x", "https://a.b.xx.com/", "//xx.com"):
        assert get(rgw.port, "/hello", headers={"Referer": ok}).status == 200, ok
    for bad in ("http://yy.com/x", "http://xx.com.evil.net/", "garbage"):
        _refused(get(rgw.port, "/hello", headers={"Referer": bad}),
                 "Your referer host is not allowed")
    _refused(get(rgw.port, "/hello"), "Your referer host is not allowed")


def test_referer_blacklist_bypass_missing_and_message(rgw, upstream):
    _put(rgw, {"referer-restriction": {"blacklist": ["*.evil.com"], "bypass_missing": True,
                                       "message": "go away"}}, upstream)
    assert get(rgw.port, "/hello").status == 200
    assert get(rgw.port, "/hello", headers={"Referer": "http://evil.com/"}).status == 200
    _refused(get(rgw.port, "/hello", headers={"Referer": "http://www.evil.com/"}), "go away")


def test_restrictions_run_together_in_priority_order(rgw, upstream):
    # ip-restriction (3000) answers before ua-restriction (2999) and referer-restriction (2990).
    _put(rgw, {"ip-restriction": {"whitelist": ["127.0.0.1"], "message": "ip"},
               "ua-restriction": {"denylist": ["bad"], "message": "ua"},
               "referer-restriction": {"whitelist": ["xx.com"], "message": "referer"}},
         upstream)
    good = {"User-Agent": "good", "Referer": "http://xx.com/"}
    assert get_from("127.0.0.1", rgw.port, "/hello", headers=good).status == 200
    _refused(get_from("127.0.0.2", rgw.port, "/hello", headers={"User-Agent": "bad"}), "ip")
    _refused(get_from("127.0.0.1", rgw.port, "/hello", headers={"User-Agent": "bad"}), "ua")
    _refused(get_from("127.0.0.1", rgw.port, "/hello", headers={"User-Agent": "ok"}),
             "referer")


# --------------------------------------------------------------------------- Admin API


@pytest.mark.parametrize("name,conf,text", [
    ("ip-restriction", {}, "value should match only one schema, but matches none"),
    ("ip-restriction", {"whitelist": ["127.0.0.1"], "blacklist": ["10.0.0.1"]},
     "value should match only one schema, but matches both schemas 1 and 2"),
    ("ip-restriction", {"whitelist": []},
     'property "whitelist" validation failed: expect array to have at least 1 items'),
    ("ip-restriction", {"whitelist": ["127.0.0.1", "localhost"]},
     'property "whitelist" validation failed: failed to validate item 2: object matches none '
     'of the required'),
    ("ip-restriction", {"blacklist": ["::1/129"]}, "invalid ip address: ::1/129"),
    ("ip-restriction", {"whitelist": ["127.0.0.1"], "message": ""},
     'property "message" validation failed: string too short, expected at least 1, got 0'),
    ("ip-restriction", {"whitelist": ["127.0.0.1"], "response_code": 500},
     'property "response_code" validation failed: expected 500 to be at most 404'),
    ("ua-restriction", {"allowlist": ["a"], "denylist": ["b"]},
     "value should match only one schema, but matches both schemas 1 and 2"),
    ("ua-restriction", {"bypass_missing": True},
     "value should match only one schema, but matches none"),
    ("ua-restriction", {"denylist": ["(abc"]},
     'pcre2_compile() failed: missing closing parenthesis in "(abc"'),
    ("ua-restriction", {"denylist": [""]},
     'property "denylist" validation failed: failed to validate item 1: string too short, '
     'expected at least 1, got 0'),
    ("referer-restriction", {"whitelist": ["a b"]},
     'property "whitelist" validation failed: failed to validate item 1: failed to match '
     'pattern "^\\*?[0-9a-zA-Z-._]+$" with "a b"'),
    ("referer-restriction", {"bypass_missing": True},
     "value should match only one schema, but matches none"),
    ("referer-restriction", {"whitelist": ["a.com"], "message": "x" * 1025},
     'property "message" validation failed: string too long, expected at most 1024, got 1025'),
])
def test_bad_confs_are_400_with_apisix_texts(rgw, upstream, name, conf, text):
    err = "failed to check the configuration of plugin %s err: " % name
    r = rgw.admin("PUT", "/routes/bad", admin_route("/bad", upstream, plugins={name: conf}))
    expect_error(r, 400, err)
    assert r.error_msg == err + text, r
    assert rgw.admin("GET", "/routes/bad").status == 404, "the refused route was stored"


def test_a_bad_conf_keeps_the_old_one_serving(rgw, upstream):
    _put(rgw, {"ip-restriction": {"whitelist": ["127.0.0.1"]}}, upstream)
    r = rgw.admin("PUT", "/routes/1", admin_route("/hello", upstream, plugins={
        "ip-restriction": {"whitelist": ["127.0.0.1/40"]}}))
    expect_error(r, 400, IP_ERR)
    assert get_from("127.0.0.2", rgw.port, "/hello").status == 403


@pytest.mark.parametrize("name,priority,field", [
    ("ip-restriction", 3000, "whitelist"),
    ("ua-restriction", 2999, "allowlist"),
    ("referer-restriction", 2990, "whitelist"),
])
def test_schema_and_priority_served(rgw, name, priority, field):
    r = rgw.admin("GET", "/plugins/%s" % name)
    assert r.status == 200, r
    assert field in r.json["properties"], r
    assert len(r.json["oneOf"]) == 2, r
    plugins = rgw.admin("GET", "/plugins").json
    assert plugins[name] == {"priority": priority}, plugins
