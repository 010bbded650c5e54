"""Issue 3, point 3: hostile bodies get 400 with an APISIX-style error_msg naming the field,
and nothing is written: after every refused request the resource's list (values and
revisions) is exactly what it was.

One gateway serves the whole table (module scope); it is seeded with one object of each
kind ("keep") so that refused updates of an existing object are checked too.
"""

import json

import pytest

from harness import Gateway, admin_route, admin_upstream, expect_error, sorted_list

DEAD = "127.0.0.1:1"
R = admin_route("/v", DEAD)


class Raw(bytes):
    """A request body sent as these bytes."""


def _r(**changes):
    """R with fields changed (None removes one)."""
    body = json.loads(json.dumps(R))
    for k, v in changes.items():
        if v is None:
            body.pop(k, None)
        else:
            body[k] = v
    return body


def _up(**changes):
    u = admin_upstream(DEAD)
    u.update(changes)
    return u


SEED = {
    "routes": ("/routes/keep", admin_route("/keep", DEAD, labels={"a": "1"})),
    "upstreams": ("/upstreams/keep", admin_upstream(DEAD)),
    "services": ("/services/keep", {"upstream": admin_upstream(DEAD)}),
    "consumers": ("/consumers", {"username": "keep"}),
    "global_rules": ("/global_rules/keep", {"plugins": {}}),
    "plugin_configs": ("/plugin_configs/keep", {"plugins": {}}),
    "consumer_groups": ("/consumer_groups/keep", {"plugins": {}}),
    "stream_routes": ("/stream_routes/keep", {"server_port": 9100,
                                              "upstream": admin_upstream(DEAD)}),
}

# name -> (body, error_msg prefix or None, words of which one must be in error_msg)
ROUTE_CASES = {
    "json-truncated": (Raw(b'{"uri": "/a",'), "invalid request body", ()),
    "json-unquoted": (Raw(b"{uri: /a}"), "invalid request body", ()),
    "json-trailing-garbage": (Raw(json.dumps(R).encode() + b" x"), "invalid request body", ()),
    "json-two-documents": (Raw(json.dumps(R).encode() * 2), "invalid request body", ()),
    "empty-body": (Raw(b""), None, ()),
    "array": ([1, 2], None, ()),
    "string": ("route", None, ()),
    "number": (42, None, ()),
    "null": (None, None, ()),
    "true": (True, None, ()),
    "empty-object": ({}, None, ()),
    "unknown-field": (_r(urii="/typo"), "invalid configuration", ("urii",)),
    "unknown-nested-field": (_r(upstream=_up(nodez=1)), "invalid configuration", ("nodez",)),
    "uri-type": (_r(uri=123), "invalid configuration", ("uri",)),
    "uris-type": (_r(uri=None, uris="/a"), "invalid configuration", ("uris",)),
    "methods-type": (_r(methods="GET"), "invalid configuration", ("methods",)),
    "methods-value": (_r(methods=["FETCH"]), "invalid configuration", ("methods",)),
    "priority-type": (_r(priority="high"), "invalid configuration", ("priority",)),
    "priority-float": (_r(priority=1.5), "invalid configuration", ("priority",)),
    "status-value": (_r(status=2), "invalid configuration", ("status",)),
    "status-type": (_r(status="1"), "invalid configuration", ("status",)),
    "labels-type": (_r(labels=["a"]), "invalid configuration", ("labels",)),
    "labels-value-type": (_r(labels={"a": 1}), "invalid configuration", ("labels",)),
    "websocket-type": (_r(enable_websocket="yes"), "invalid configuration",
                       ("enable_websocket",)),
    "hosts-type": (_r(hosts="a.com"), "invalid configuration", ("hosts",)),
    "host-value": (_r(host="bad host!"), "invalid configuration", ("host",)),
    "remote-addr-value": (_r(remote_addr="not-an-ip"), "invalid configuration",
                          ("remote_addr",)),
    "vars-type": (_r(vars="x"), "invalid configuration", ("vars",)),
    "vars-operator": (_r(vars=[["arg_a", "=~=", "1"]]), None, ("vars", "=~=")),
    "timeout-type": (_r(timeout="5"), "invalid configuration", ("timeout",)),
    "timeout-zero": (_r(timeout={"connect": 0, "send": 1, "read": 1}), "invalid configuration",
                     ("timeout", "connect")),
    "timeout-negative": (_r(timeout={"connect": 1, "send": 1, "read": -1}),
                         "invalid configuration", ("timeout", "read")),
    "name-type": (_r(name=5), "invalid configuration", ("name",)),
    "desc-type": (_r(desc=5), "invalid configuration", ("desc",)),
    "service-id-type": (_r(service_id={"a": 1}), "invalid configuration", ("service_id",)),
    "upstream-id-type": (_r(upstream=None, upstream_id=[]), "invalid configuration",
                         ("upstream_id",)),
    "upstream-type": (_r(upstream=_up(type="fastest")), None, ("type", "fastest")),
    "upstream-weight-type": (_r(upstream=_up(nodes={DEAD: "heavy"})), None,
                             ("nodes", "weight")),
    "upstream-weight-negative": (_r(upstream=_up(nodes={DEAD: -1})), None, ("nodes", "weight")),
    "upstream-node-port": (_r(upstream=_up(nodes={"127.0.0.1:99999": 1})), None,
                           ("nodes", "port", "99999")),
    "upstream-nodes-type": (_r(upstream=_up(nodes="127.0.0.1:80")), None, ("nodes",)),
    "upstream-retries": (_r(upstream=_up(retries=-1)), None, ("retries",)),
    "upstream-scheme": (_r(upstream=_up(scheme="ftp")), None, ("scheme",)),
    "upstream-pass-host": (_r(upstream=_up(pass_host="bogus")), None, ("pass_host",)),
    "upstream-hash-on": (_r(upstream=_up(type="chash", key="remote_addr", hash_on="bogus")),
                         None, ("hash_on",)),
    "upstream-passive-checks-alone": (_r(upstream=_up(checks={"passive": {"healthy": {
        "http_statuses": [200]}}})), None, ("checks", "active")),
    "upstream-keepalive-size": (_r(upstream=_up(keepalive_pool={"size": -1, "idle_timeout": 60,
                                                                "requests": 1000})),
                                None, ("keepalive_pool", "size")),
    "no-uri": (_r(uri=None), None, ("uri",)),
    "no-upstream-or-plugins": (_r(upstream=None), None, ()),
    "unknown-plugin": (_r(plugins={"no-such-plugin": {}}), "unknown plugin [no-such-plugin]",
                       ()),
    "plugins-type": (_r(plugins=[]), None, ("plugins",)),
    "id-differs": (_r(id="other"), "wrong route id", ()),
    # APISIX's check_forbidden_properties (admin/resource.lua), two spaces and all.
    "client-create-time": (_r(create_time=1700000000),
                           "the property is forbidden:  create_time", ()),
    "client-update-time": (_r(update_time=1700000000),
                           "the property is forbidden:  update_time", ()),
    "upstream-client-create-time": (_r(upstream=_up(create_time=1700000000)),
                                    "the property is forbidden:  upstream.create_time", ()),
    "upstream-client-update-time": (_r(upstream=_up(update_time=1700000000)),
                                    "the property is forbidden:  upstream.update_time", ()),
    # APISIX's check_upstream_conf texts, without "invalid configuration: ".
    "upstream-chash-no-key": (_r(upstream=_up(type="chash")), "missing key", ()),
    "upstream-rewrite-no-host": (_r(upstream=_up(pass_host="rewrite")),
                                 "`upstream_host` can't be empty when `pass_host` is `rewrite`",
                                 ()),
    # Routing happens before the body is read: body variables could never match.
    "vars-post-arg": (_r(vars=[["post_arg_name", "==", "x"]]),
                      "failed to validate the 'vars' expression: variable post_arg_name is not "
                      "supported yet: matching on the request body is not implemented", ()),
    "vars-graphql": (_r(vars=[["graphql_operation", "==", "query"]]),
                     "failed to validate the 'vars' expression: variable graphql_operation is "
                     "not supported yet", ()),
    "meta-filter-post-arg": (_r(plugins={"prometheus": {"_meta": {
        "filter": [["post_arg_a", "==", "1"]]}}}), None,
        ("variable post_arg_a is not supported yet",)),
    "filter-func": (_r(filter_func="function(vars) return vars.arg_a == '1' end"),
                    "invalid configuration: filter_func is not supported: it is a Lua function",
                    ()),
    # tls applies to https upstreams only; there its certificate must parse (APISIX's text).
    "upstream-tls-on-http": (_r(upstream=_up(tls={"verify": True})),
                             "tls needs scheme \"https\" or \"grpcs\" (the upstream's scheme "
                             "is \"http\")",
                             ()),
    "upstream-tls-client-cert": (_r(upstream=_up(scheme="https", tls={
        "client_cert": "c" * 200, "client_key": "k" * 200})), "failed to parse cert: ", ()),
    "json-control-outside-string": (Raw(b'{"uri": "/a",\x01 "plugins": {}}'),
                                    "invalid request body", ()),
    "json-nul-in-string": (Raw(b'{"uri": "/a\x00", "plugins": {}}'), "invalid request body", ()),
}

OTHER_CASES = {
    "upstream-unknown-field": ("/upstreams/new", _up(uri="/x"), "invalid configuration",
                               ("uri",)),
    "upstream-no-nodes": ("/upstreams/new", {"type": "roundrobin"}, None, ("nodes",)),
    "upstream-weight": ("/upstreams/new", _up(nodes={DEAD: "x"}), None, ("nodes", "weight")),
    "upstream-type": ("/upstreams/new", _up(type="fastest"), None, ("type", "fastest")),
    "upstream-malformed": ("/upstreams/new", Raw(b"{"), "invalid request body", ()),
    "upstream-client-time": ("/upstreams/keep", _up(create_time=1),
                             "the property is forbidden:  create_time", ()),
    "upstream-chash-no-key": ("/upstreams/new", _up(type="chash"), "missing key", ()),
    "upstream-tls": ("/upstreams/new", _up(scheme="https", tls={"client_cert": "c" * 200,
                                                                "client_key": "k" * 200}),
                     "failed to parse cert: ", ()),
    "service-upstream-client-time": ("/services/keep", {"upstream": _up(update_time=1)},
                                     "the property is forbidden:  upstream.update_time", ()),
    "service-upstream-chash-no-key": ("/services/new", {"upstream": _up(type="chash")},
                                      "missing key", ()),
    "service-uri": ("/services/new", {"uri": "/x", "upstream": admin_upstream(DEAD)},
                    "invalid configuration", ("uri",)),
    "service-unknown-plugin": ("/services/new", {"plugins": {"nope-plugin": {}}},
                               "unknown plugin [nope-plugin]", ()),
    "service-hosts-type": ("/services/keep", {"hosts": "a.com"}, "invalid configuration",
                           ("hosts",)),
    "service-id-differs": ("/services/keep", {"id": "other", "upstream":
                                              admin_upstream(DEAD)}, "wrong service id", ()),
    "consumer-no-username": ("/consumers", {"desc": "x"}, None, ("username",)),
    "consumer-bad-username": ("/consumers", {"username": "a b!"}, None, ("username",)),
    "consumer-unknown-field": ("/consumers", {"username": "x", "nick": "y"},
                               "invalid configuration", ("nick",)),
    # APISIX prefixes this one with "invalid plugins configuration: " for consumers.
    "consumer-unknown-plugin": ("/consumers", {"username": "x", "plugins": {"nope-auth": {}}},
                                None, ("unknown plugin [nope-auth]",)),
    "global-rule-no-plugins": ("/global_rules/new", {}, None, ("plugins",)),
    "global-rule-unknown-plugin": ("/global_rules/new", {"plugins": {"nope": {}}},
                                   "unknown plugin [nope]", ()),
    "global-rule-unknown-field": ("/global_rules/keep", {"plugins": {}, "uri": "/x"},
                                  "invalid configuration", ("uri",)),
    "plugin-config-unknown-plugin": ("/plugin_configs/new", {"plugins": {"nope": {}}},
                                     "unknown plugin [nope]", ()),
    "plugin-config-no-plugins": ("/plugin_configs/new", {"desc": "x"}, None, ("plugins",)),
    "plugin-config-unknown-field": ("/plugin_configs/keep", {"plugins": {}, "zzz": 1},
                                    "invalid configuration", ("zzz",)),
    "consumer-group-unknown-plugin": ("/consumer_groups/new", {"plugins": {"nope": {}}},
                                      "unknown plugin [nope]", ()),
    "consumer-group-unknown-field": ("/consumer_groups/keep", {"plugins": {}, "zzz": 1},
                                     "invalid configuration", ("zzz",)),
    "stream-route-unknown-field": ("/stream_routes/new", {"server_port": 9100, "zzz": 1,
                                                          "upstream": admin_upstream(DEAD)},
                                   "invalid configuration", ("zzz",)),
    "stream-route-port-range": ("/stream_routes/keep", {"server_port": 70000, "upstream":
                                                        admin_upstream(DEAD)},
                                None, ("server_port",)),
    "ssl-garbage-cert": ("/ssls/new", {"cert": "not a cert", "key": "not a key",
                                       "snis": ["a.com"]}, None, ()),
    "ssl-garbage-long-cert": ("/ssls/new", {
        "cert": "-----BEGIN CERTIFICATE-----\n%s\n-----END CERTIFICATE-----\n" % ("QUJD" * 60),
        "key": "-----BEGIN PRIVATE KEY-----\n%s\n-----END PRIVATE KEY-----\n" % ("QUJD" * 60),
        "snis": ["a.com"]}, None, ()),
    "plugin-metadata": ("/plugin_metadata/nope-plugin", {"k": "v"},
                        "unknown plugin [nope-plugin]", ()),
}

POST_CASES = {
    "routes-malformed": ("/routes", Raw(b'{"uri":'), "invalid request body", ()),
    "routes-unknown-field": ("/routes", _r(urii="/x"), "invalid configuration", ("urii",)),
    "routes-unknown-plugin": ("/routes", _r(plugins={"nope": {}}), "unknown plugin [nope]", ()),
    "routes-methods": ("/routes", _r(methods=["FETCH"]), "invalid configuration",
                       ("methods",)),
    "routes-client-time": ("/routes", _r(create_time=1),
                           "the property is forbidden:  create_time", ()),
    "routes-upstream-client-time": ("/routes", _r(upstream=_up(create_time=1)),
                                    "the property is forbidden:  upstream.create_time", ()),
    "upstreams-weight": ("/upstreams", _up(nodes={DEAD: "x"}), None, ("nodes", "weight")),
    "services-unknown-field": ("/services", {"urii": 1}, "invalid configuration", ("urii",)),
}

KINDS = list(SEED) + ["ssls", "plugin_metadata"]


@pytest.fixture(scope="module")
def vgw(tmp_path_factory):
    gw = Gateway(tmp_path_factory.mktemp("admin-validation"), admin=True, workers=1)
    gw.start()
    try:
        for path, body in SEED.values():
            r = gw.admin("PUT", path, body)
            assert r.status == 201, "seeding %s: %r" % (path, r)
        gw.snap = {k: sorted_list(gw.admin("GET", "/" + k).json) for k in KINDS}
        yield gw
    finally:
        rc = gw.stop()
        print("\n--- sluice log (exit %s) ---\n%s" % (rc, gw.log_tail(150)))


def _send(gw, method, path, body):
    if isinstance(body, Raw):
        return gw.admin(method, path, raw_body=bytes(body))
    if body is None:  # the JSON literal null
        return gw.admin(method, path, raw_body=b"null")
    return gw.admin(method, path, body)


def _check(gw, method, path, body, prefix, words):
    assert gw.alive(), "gateway died earlier:\n%s" % gw.log_tail()
    r = _send(gw, method, path, body)
    try:
        expect_error(r, 400, prefix)
        if words:
            assert any(w in r.error_msg for w in words), \
                "error_msg %r names none of %r" % (r.error_msg, words)
    finally:
        changed = {}
        for kind in KINDS:
            now = sorted_list(gw.admin("GET", "/" + kind).json)
            if now != gw.snap[kind]:
                changed[kind] = now
                gw.snap[kind] = now  # keep later cases independent of this one
        assert not changed, "a refused %s %s wrote something: %r" % (method, path, changed)


@pytest.mark.parametrize("target", ["new", "keep"])
@pytest.mark.parametrize("case", list(ROUTE_CASES))
def test_route_put_refused(vgw, case, target):
    body, prefix, words = ROUTE_CASES[case]
    _check(vgw, "PUT", "/routes/" + target, body, prefix, words)


@pytest.mark.parametrize("case", list(OTHER_CASES))
def test_other_kinds_put_refused(vgw, case):
    path, body, prefix, words = OTHER_CASES[case]
    _check(vgw, "PUT", path, body, prefix, words)


@pytest.mark.parametrize("case", list(POST_CASES))
def test_post_refused(vgw, case):
    path, body, prefix, words = POST_CASES[case]
    _check(vgw, "POST", path, body, prefix, words)


@pytest.mark.parametrize("query", ["ttl=abc", "ttl=", "ttl=1x"])
def test_bad_ttl_refused(vgw, query):
    _check(vgw, "PUT", "/routes/new?" + query, R, None, ())


def test_valid_body_still_accepted(vgw):
    """The control: the base body of the table is itself valid."""
    r = vgw.admin("PUT", "/routes/control", R)
    assert r.status == 201, r
    assert vgw.admin("DELETE", "/routes/control").status == 200
    vgw.snap["routes"] = sorted_list(vgw.admin("GET", "/routes").json)


def test_patch_times_refused(vgw):
    """A PATCH may not set the server's times either, whole or at a sub path."""
    for path, body, text in [
            ("/routes/keep", {"create_time": 1}, "the property is forbidden:  create_time"),
            ("/routes/keep", {"upstream": {"update_time": 1}},
             "the property is forbidden:  upstream.update_time"),
            ("/routes/keep/upstream", _up(create_time=1),
             "the property is forbidden:  upstream.create_time"),
            ("/routes/keep/update_time", 5, "the property is forbidden:  update_time")]:
        _check(vgw, "PATCH", path, body, text, ())


def test_raw_control_characters_in_strings_accepted(vgw):
    """lua-cjson takes raw newlines and tabs inside JSON strings; so does Sluice."""
    body = b'{"uri": "/raw", "desc": "line 1\nline 2\tend", "labels": {"k": "v"},' \
           b' "upstream": {"nodes": {"127.0.0.1:1": 1}}}'
    r = vgw.admin("PUT", "/routes/rawctl", raw_body=body)
    assert r.status == 201, r
    r = vgw.admin("GET", "/routes/rawctl")
    assert r.status == 200 and r.json["value"]["desc"] == "line 1\nline 2\tend", r
    assert vgw.admin("DELETE", "/routes/rawctl").status == 200
    vgw.snap["routes"] = sorted_list(vgw.admin("GET", "/routes").json)
