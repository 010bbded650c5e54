"""Consumers in the request path (issue 23, item 1) and key-auth: APISIX's getting-started
"key authentication" page run as written, where the key may be, what the upstream learns of the
consumer, anonymous consumers, a consumer's and its group's plugins merging into the route's,
$env:// keys, and changes taking effect without a restart."""

import os

import pytest

from harness import admin_route, get, wait_until

MISSING = b'{"message":"Missing API key in request"}\n'
INVALID = b'{"message":"Invalid API key in request"}\n'


def put_ok(gw, path, body):
    r = gw.admin("PUT", path, body)
    assert r.status in (200, 201), r
    return r


def sent_headers(r):
    """The headers the upstream received, lower-cased names, as a list of pairs."""
    return [(k.lower(), v) for k, v in r.json()["headers"]]


def sent(r, name):
    vals = [v for k, v in sent_headers(r) if k == name.lower()]
    return vals[0] if len(vals) == 1 else (vals or None)


@pytest.fixture
def gw(make_gateway):
    return make_gateway(admin=True, workers=2)


def test_getting_started_key_authentication(gw, upstream):
    """APISIX's getting-started/key-authentication page: a consumer with a key, the route
    patched to need one, then the three curls of the page."""
    put_ok(gw, "/routes/getting-started-ip", admin_route("/ip", upstream))
    r = gw.admin("PUT", "/consumers", {"username": "tom",
                                      "plugins": {"key-auth": {"key": "secret-key"}}})
    assert r.status in (200, 201), r
    r = gw.admin("PATCH", "/routes/getting-started-ip", {"plugins": {"key-auth": {}}})
    assert r.status == 200, r
    r = get(gw.port, "/ip")
    assert r.status == 401 and r.body == MISSING, r
    assert r.header("content-type").startswith("application/json"), r.headers
    r = get(gw.port, "/ip", headers=[("apikey", "wrong-key")])
    assert r.status == 401 and r.body == INVALID, r
    r = get(gw.port, "/ip", headers=[("apikey", "secret-key")])
    assert r.status == 200, r
    assert sent(r, "x-consumer-username") == "tom"
    assert sent(r, "apikey") == "secret-key"  # hide_credentials is off by default
    # Disabling the plugin opens the route again (the page's last step).
    r = gw.admin("PATCH", "/routes/getting-started-ip",
                 {"plugins": {"key-auth": {"_meta": {"disable": True}}}})
    assert r.status == 200, r
    assert get(gw.port, "/ip").status == 200


def test_key_from_query_and_custom_header(gw, upstream):
    put_ok(gw, "/consumers/jack", {"username": "jack", "plugins": {"key-auth": {"key": "a+b c"}}})
    put_ok(gw, "/routes/1", admin_route("/q", upstream, plugins={"key-auth": {
        "header": "X-Key", "query": "k"}}))
    assert get(gw.port, "/q", headers=[("X-Key", "a+b c")]).status == 200
    assert get(gw.port, "/q", headers=[("x-key", "a+b c")]).status == 200  # any case
    # The query value is decoded as ngx.req.get_uri_args decodes it: %2B is '+', '+' a space.
    assert get(gw.port, "/q?k=a%2Bb+c").status == 200
    assert get(gw.port, "/q?k=a%2Bb%20c&x=1").status == 200
    assert get(gw.port, "/q?k=a+b+c").status == 401
    # The header wins even when it is wrong; the default names are not read.
    r = get(gw.port, "/q?k=a%2Bb+c", headers=[("X-Key", "nope")])
    assert r.status == 401 and r.body == INVALID, r
    r = get(gw.port, "/q", headers=[("apikey", "a+b c")])
    assert r.status == 401 and r.body == MISSING, r
    # Two keys (two headers, or the argument twice) are no key, as in APISIX.
    assert get(gw.port, "/q", headers=[("X-Key", "a+b c"), ("X-Key", "a+b c")]).status == 401
    assert get(gw.port, "/q?k=a%2Bb+c&k=a%2Bb+c").status == 401


def test_hide_credentials(gw, upstream):
    put_ok(gw, "/consumers/jack", {"username": "jack", "plugins": {"key-auth": {"key": "k1"}}})
    put_ok(gw, "/routes/1", admin_route("/h", upstream, plugins={"key-auth": {
        "hide_credentials": True}}))
    r = get(gw.port, "/h", headers=[("apikey", "k1"), ("X-Other", "1")])
    assert r.status == 200, r
    names = [k for k, _ in sent_headers(r)]
    assert "apikey" not in names and "x-other" in names, names
    r = get(gw.port, "/h?a=1&apikey=k1&b=2")
    assert r.status == 200, r
    assert r.json()["target"] == "/h?a=1&b=2", r.json()
    r = get(gw.port, "/h?apikey=k1")
    assert r.status == 200 and r.json()["target"] == "/h", r.json()


def test_consumer_headers_replace_the_clients(gw, upstream):
    put_ok(gw, "/consumers/jack", {"username": "jack", "labels": {"custom_id": "c-42"},
                                   "plugins": {"key-auth": {"key": "k1"}}})
    put_ok(gw, "/routes/1", admin_route("/c", upstream, plugins={"key-auth": {}}))
    r = get(gw.port, "/c", headers=[("apikey", "k1"), ("X-Consumer-Username", "admin"),
                                    ("X-Credential-Identifier", "forged"),
                                    ("X-Consumer-Custom-ID", "forged")])
    assert r.status == 200, r
    assert sent(r, "x-consumer-username") == "jack"
    assert sent(r, "x-consumer-custom-id") == "c-42"
    assert sent(r, "x-credential-identifier") is None  # the key is the consumer's own


def test_anonymous_consumer(gw, upstream):
    put_ok(gw, "/consumers/jack", {"username": "jack", "plugins": {"key-auth": {"key": "k1"}}})
    put_ok(gw, "/consumers/anon", {"username": "anon", "plugins": {
        "limit-count": {"count": 1, "time_window": 60, "rejected_code": 429}}})
    put_ok(gw, "/routes/1", admin_route("/a", upstream, plugins={"key-auth": {
        "anonymous_consumer": "anon"}}))
    assert get(gw.port, "/a", headers=[("apikey", "k1")]).status == 200
    r = get(gw.port, "/a")
    assert r.status == 200 and sent(r, "x-consumer-username") == "anon", r
    assert get(gw.port, "/a", headers=[("apikey", "wrong")]).status == 429  # anon's limit
    assert get(gw.port, "/a", headers=[("apikey", "k1")]).status == 200
    # An anonymous consumer that does not exist: 401 and the reason in the log.
    put_ok(gw, "/routes/1", admin_route("/a", upstream, plugins={"key-auth": {
        "anonymous_consumer": "ghost"}}))
    r = get(gw.port, "/a")
    assert r.status == 401 and r.body == b'{"message":"Invalid user authorization"}\n', r
    assert gw.wait_for_log(r"failed to get anonymous consumer ghost", timeout=3)


def test_consumer_plugins_merge_into_the_route(gw, upstream):
    """A consumer's limit-count applies to its requests only; its proxy-rewrite, a rewrite-phase
    plugin the route lacks, runs too (APISIX's rewrite_in_consumer); for a plugin both have,
    the consumer's conf wins."""
    put_ok(gw, "/consumers/jack", {"username": "jack", "plugins": {
        "key-auth": {"key": "jack-key"},
        "limit-count": {"count": 2, "time_window": 60, "rejected_code": 403},
        "proxy-rewrite": {"headers": {"set": {"X-From-Consumer": "jack"}}},
        "response-rewrite": {"headers": {"set": {"X-Resp": "consumer"}}}}})
    put_ok(gw, "/consumers/rose", {"username": "rose",
                                   "plugins": {"key-auth": {"key": "rose-key"}}})
    put_ok(gw, "/routes/1", admin_route("/m", upstream, plugins={
        "key-auth": {}, "response-rewrite": {"headers": {"set": {"X-Resp": "route"}}}}))
    statuses = []
    for _ in range(3):
        r = get(gw.port, "/m", headers=[("apikey", "jack-key")])
        statuses.append(r.status)
        if r.status == 200:
            assert sent(r, "x-from-consumer") == "jack"
            assert r.header("x-resp") == "consumer"
            assert r.header("x-ratelimit-limit") == "2"
    assert statuses == [200, 200, 403], statuses
    for _ in range(4):  # rose has no limit; the route's response-rewrite is hers
        r = get(gw.port, "/m", headers=[("apikey", "rose-key")])
        assert r.status == 200 and r.header("x-resp") == "route", r
        assert sent(r, "x-from-consumer") is None
        assert r.header("x-ratelimit-limit") is None


def test_consumer_group_plugins(gw, upstream):
    put_ok(gw, "/consumer_groups/company_a", {"plugins": {
        "limit-count": {"count": 1, "time_window": 60, "rejected_code": 429},
        "proxy-rewrite": {"headers": {"set": {"X-Group": "a", "X-Who": "group"}}}}})
    put_ok(gw, "/consumers/jack", {"username": "jack", "group_id": "company_a", "plugins": {
        "key-auth": {"key": "k1"},
        "proxy-rewrite": {"headers": {"set": {"X-Who": "jack"}}}}})
    put_ok(gw, "/routes/1", admin_route("/g", upstream, plugins={"key-auth": {}}))
    r = get(gw.port, "/g", headers=[("apikey", "k1")])
    assert r.status == 200, r
    # The consumer's proxy-rewrite replaces the group's whole (a plugin merges by name).
    assert sent(r, "x-who") == "jack" and sent(r, "x-group") is None, sent_headers(r)
    assert get(gw.port, "/g", headers=[("apikey", "k1")]).status == 429  # the group's limit
    # The group's plugins change live.
    put_ok(gw, "/consumer_groups/company_a", {"plugins": {
        "response-rewrite": {"headers": {"set": {"X-Group-V": "2"}}}}})
    assert wait_until(lambda: get(gw.port, "/g", headers=[("apikey", "k1")]).status == 200)
    assert get(gw.port, "/g", headers=[("apikey", "k1")]).header("x-group-v") == "2"


def test_consumer_changes_apply_without_restart(gw, upstream):
    put_ok(gw, "/consumers/jack", {"username": "jack", "plugins": {"key-auth": {"key": "old"}}})
    put_ok(gw, "/routes/1", admin_route("/l", upstream, plugins={"key-auth": {}}))
    assert get(gw.port, "/l", headers=[("apikey", "old")]).status == 200
    put_ok(gw, "/consumers/jack", {"username": "jack", "plugins": {"key-auth": {"key": "new"}}})
    assert wait_until(lambda: get(gw.port, "/l", headers=[("apikey", "old")]).status == 401)
    assert get(gw.port, "/l", headers=[("apikey", "new")]).status == 200
    assert gw.admin("DELETE", "/consumers/jack").status == 200
    assert wait_until(lambda: get(gw.port, "/l", headers=[("apikey", "new")]).status == 401)


def test_no_consumer_with_key_auth(gw, upstream):
    put_ok(gw, "/routes/1", admin_route("/n", upstream, plugins={"key-auth": {}}))
    r = get(gw.port, "/n", headers=[("apikey", "anything")])
    assert r.status == 401 and r.body == INVALID, r


def test_env_reference_key(make_gateway, upstream):
    gw = make_gateway(admin=True, env={"SLUICE_TEST_KEY": "from-env",
                                       "SLUICE_TEST_JSON": '{"k": "from-json"}'})
    put_ok(gw, "/consumers/jack", {"username": "jack",
                                   "plugins": {"key-auth": {"key": "$env://SLUICE_TEST_KEY"}}})
    put_ok(gw, "/consumers/rose", {"username": "rose", "plugins": {
        "key-auth": {"key": "$ENV://SLUICE_TEST_JSON/k"}}})
    put_ok(gw, "/routes/1", admin_route("/e", upstream, plugins={"key-auth": {}}))
    r = get(gw.port, "/e", headers=[("apikey", "from-env")])
    assert r.status == 200 and sent(r, "x-consumer-username") == "jack", r
    r = get(gw.port, "/e", headers=[("apikey", "from-json")])
    assert r.status == 200 and sent(r, "x-consumer-username") == "rose", r
    assert get(gw.port, "/e", headers=[("apikey", "$env://SLUICE_TEST_KEY")]).status == 401


def test_consumer_name_in_limit_count_key_and_vars(gw, upstream):
    """limit-count keyed by consumer_name counts each consumer apart, on a route-level conf."""
    put_ok(gw, "/consumers/jack", {"username": "jack", "plugins": {"key-auth": {"key": "j"}}})
    put_ok(gw, "/consumers/rose", {"username": "rose", "plugins": {"key-auth": {"key": "r"}}})
    put_ok(gw, "/routes/1", admin_route("/k", upstream, plugins={
        "key-auth": {},
        "limit-count": {"count": 1, "time_window": 60, "key_type": "var",
                        "key": "consumer_name", "rejected_code": 429},
        "proxy-rewrite": {"headers": {"set": {"X-Name": "$consumer_name"}}}}))
    r = get(gw.port, "/k", headers=[("apikey", "j")])
    assert r.status == 200, r
    assert get(gw.port, "/k", headers=[("apikey", "j")]).status == 429
    r = get(gw.port, "/k", headers=[("apikey", "r")])
    assert r.status == 200, r


def test_consumer_limit_count_counts_per_route(gw, upstream):
    """APISIX keys a consumer's limit-count under the merged route ("route&consumer"): each
    route the consumer calls has its own budget."""
    put_ok(gw, "/consumer_groups/g1", {"plugins": {}})
    put_ok(gw, "/consumers/jack", {"username": "jack", "group_id": "g1", "plugins": {
        "key-auth": {"key": "j"},
        "limit-count": {"count": 1, "time_window": 60, "rejected_code": 429}}})
    for rid in ("1", "2"):
        put_ok(gw, "/routes/%s" % rid, admin_route("/r%s" % rid, upstream, plugins={
            "key-auth": {},
            "proxy-rewrite": {"headers": {"set": {"X-Group": "$consumer_group_id"}}}}))
    r = get(gw.port, "/r1", headers=[("apikey", "j")])
    assert r.status == 200 and sent(r, "x-group") == "g1", r
    assert get(gw.port, "/r1", headers=[("apikey", "j")]).status == 429
    assert get(gw.port, "/r2", headers=[("apikey", "j")]).status == 200
    assert get(gw.port, "/r2", headers=[("apikey", "j")]).status == 429


def test_missing_group_answers_503(gw, make_gateway, upstream):
    """The Admin API keeps a group a consumer names (APISIX's texts); a consumer whose group is
    missing anyway (a standalone file, etcd) authenticates, and its requests get 503."""
    put_ok(gw, "/consumer_groups/g1", {"plugins": {}})
    put_ok(gw, "/consumers/jack", {"username": "jack", "group_id": "g1",
                                   "plugins": {"key-auth": {"key": "j"}}})
    r = gw.admin("DELETE", "/consumer_groups/g1")
    assert r.status == 400 and r.error_msg == \
        "can not delete this consumer group, consumer [jack] is still using it now", r
    r = gw.admin("PUT", "/consumers/rose", {"username": "rose", "group_id": "nope"})
    assert r.status == 400 and r.error_msg == ("failed to fetch consumer group info by consumer "
                                               "group id [nope], response code: 404"), r
    sa = make_gateway(start=False, probe=False)
    sa.write_config()
    sa.write_apisix_text(
        "routes:\n"
        "  - id: r1\n"
        "    uri: /d\n"
        "    plugins:\n"
        "      key-auth: {}\n"
        "    upstream:\n"
        "      nodes:\n"
        "        \"%s\": 1\n"
        "consumers:\n"
        "  - username: jack\n"
        "    group_id: gone\n"
        "    plugins:\n"
        "      key-auth:\n"
        "        key: j\n"
        "  - username: rose\n"
        "    plugins:\n"
        "      key-auth:\n"
        "        key: r\n"
        "#END\n" % upstream.addr)
    sa.start(write=False)
    assert get(sa.port, "/d", headers=[("apikey", "r")]).status == 200
    assert get(sa.port, "/d", headers=[("apikey", "j")]).status == 503
    assert sa.wait_for_log(r"failed to fetch consumer group config by id: gone", timeout=3)


# --------------------------------------------------------------------------- consumer-restriction


def _two_consumers(gw):
    put_ok(gw, "/consumer_groups/vip", {"plugins": {}})
    put_ok(gw, "/consumers/jack", {"username": "jack", "group_id": "vip",
                                   "plugins": {"key-auth": {"key": "j"}}})
    put_ok(gw, "/consumers/rose", {"username": "rose", "plugins": {"key-auth": {"key": "r"}}})


def test_consumer_restriction_whitelist_and_blacklist(gw, upstream):
    _two_consumers(gw)
    put_ok(gw, "/routes/1", admin_route("/w", upstream, plugins={
        "key-auth": {}, "consumer-restriction": {"whitelist": ["jack"]}}))
    assert get(gw.port, "/w", headers=[("apikey", "j")]).status == 200
    r = get(gw.port, "/w", headers=[("apikey", "r")])
    assert r.status == 403 and r.body == b'{"message":"The consumer_name is forbidden."}\n', r
    put_ok(gw, "/routes/1", admin_route("/w", upstream, plugins={
        "key-auth": {}, "consumer-restriction": {"blacklist": ["jack"], "rejected_code": 401,
                                                 "rejected_msg": "go away"}}))
    r = get(gw.port, "/w", headers=[("apikey", "j")])
    assert r.status == 401 and r.body == b'{"message":"go away"}\n', r
    assert get(gw.port, "/w", headers=[("apikey", "r")]).status == 200
    # By group: rose has none, which is the 401 of a request without the value.
    put_ok(gw, "/routes/1", admin_route("/w", upstream, plugins={
        "key-auth": {}, "consumer-restriction": {"type": "consumer_group_id",
                                                 "whitelist": ["vip"]}}))
    assert get(gw.port, "/w", headers=[("apikey", "j")]).status == 200
    r = get(gw.port, "/w", headers=[("apikey", "r")])
    assert r.status == 401 and r.body == (b'{"message":"The request is rejected, please check the '
                                          b'consumer_group_id for this request"}\n'), r


def test_consumer_restriction_without_auth_and_by_route(gw, upstream):
    put_ok(gw, "/routes/1", admin_route("/x", upstream, plugins={
        "consumer-restriction": {"whitelist": ["jack"]}}))
    r = get(gw.port, "/x")
    assert r.status == 401 and b"please check the consumer_name" in r.body, r
    # On a consumer: which routes it may call (APISIX's documented use with type route_id).
    put_ok(gw, "/consumers/jack", {"username": "jack", "plugins": {
        "key-auth": {"key": "j"},
        "consumer-restriction": {"type": "route_id", "whitelist": ["2"]}}})
    put_ok(gw, "/routes/1", admin_route("/x", upstream, plugins={"key-auth": {}}))
    put_ok(gw, "/routes/2", admin_route("/y", upstream, plugins={"key-auth": {}}))
    r = get(gw.port, "/x", headers=[("apikey", "j")])
    assert r.status == 403 and r.body == b'{"message":"The route_id is forbidden."}\n', r
    assert get(gw.port, "/y", headers=[("apikey", "j")]).status == 200


def test_consumer_restriction_allowed_by_methods(gw, upstream):
    _two_consumers(gw)
    put_ok(gw, "/routes/1", admin_route("/m", upstream, methods=["GET", "POST"], plugins={
        "key-auth": {}, "consumer-restriction": {"allowed_by_methods": [
            {"user": "jack", "methods": ["POST"]}]}}))
    assert http_status(gw, "POST", "/m", "j") == 200
    assert http_status(gw, "GET", "/m", "j") == 403
    assert http_status(gw, "GET", "/m", "r") == 200  # rose is not listed: any method
    # A whitelisted consumer is not held to the methods.
    put_ok(gw, "/routes/1", admin_route("/m", upstream, methods=["GET", "POST"], plugins={
        "key-auth": {}, "consumer-restriction": {"whitelist": ["jack"], "allowed_by_methods": [
            {"user": "jack", "methods": ["POST"]}]}}))
    assert http_status(gw, "GET", "/m", "j") == 200


def http_status(gw, method, path, key):
    from harness import http
    return http(gw.port, method, path, headers=[("apikey", key)], body=b"").status


@pytest.mark.parametrize("conf,err", [
    ({}, "object matches none of the alternatives"),
    ({"whitelist": []}, 'property "whitelist" validation failed: '
                        'expect array to have at least 1 items'),
    ({"whitelist": ["a"], "type": "ip"}, 'property "type" validation failed: matches none of '
                                         'the enum values'),
    ({"blacklist": ["a"], "rejected_code": 100}, 'property "rejected_code" validation failed: '
                                                 'expected 100 to be at least 200'),
    ({"allowed_by_methods": [{"user": "a", "methods": ["FETCH"]}]},
     'property "allowed_by_methods" validation failed: failed to validate item 1: property '
     '"methods" validation failed: failed to validate item 1: matches none of the enum values'),
])
def test_consumer_restriction_schema(gw, upstream, conf, err):
    r = gw.admin("PUT", "/routes/1", admin_route("/s", upstream, plugins={
        "consumer-restriction": conf}))
    assert r.status == 400, r
    assert r.error_msg == ("failed to check the configuration of plugin consumer-restriction "
                           "err: " + err), r


# --------------------------------------------------------------------------- multi-auth


def test_multi_auth_first_that_accepts(gw, upstream):
    put_ok(gw, "/consumers/jack", {"username": "jack", "plugins": {"key-auth": {"key": "j"}}})
    put_ok(gw, "/routes/1", admin_route("/ma", upstream, plugins={"multi-auth": {
        "auth_plugins": [{"key-auth": {"header": "X-First"}},
                         {"key-auth": {"header": "X-Second", "hide_credentials": True}}]}}))
    r = get(gw.port, "/ma", headers=[("X-Second", "j")])
    assert r.status == 200 and sent(r, "x-consumer-username") == "jack", r
    assert sent(r, "x-second") is None
    assert get(gw.port, "/ma", headers=[("X-First", "j")]).status == 200
    r = get(gw.port, "/ma", headers=[("X-First", "bad"), ("X-Second", "bad")])
    assert r.status == 401 and r.body == b'{"message":"Authorization Failed"}\n', r
    assert gw.wait_for_log(r"key-auth failed to authenticate the request, code: 401\. error: "
                           r"Invalid API key in request", timeout=3)


@pytest.mark.parametrize("conf,err", [
    ({}, 'property "auth_plugins" is required'),
    ({"auth_plugins": [{"key-auth": {}}]},
     'property "auth_plugins" validation failed: expect array to have at least 2 items'),
    ({"auth_plugins": [{"key-auth": {}}, {"limit-count": {}}]}, "limit-count plugin is not "
                                                                "supported"),
    ({"auth_plugins": [{"key-auth": {}}, {"nope-auth": {}}]}, "nope-auth plugin did not found"),
    ({"auth_plugins": [{"key-auth": {"header": 1}}, {"key-auth": {}}]},
     'plugin key-auth check schema failed: property "header" validation failed: wrong type: '
     'expected string, got number'),
])
def test_multi_auth_schema(gw, upstream, conf, err):
    r = gw.admin("PUT", "/routes/1", admin_route("/s", upstream, plugins={"multi-auth": conf}))
    assert r.status == 400, r
    assert r.error_msg == "failed to check the configuration of plugin multi-auth err: " + err, r
