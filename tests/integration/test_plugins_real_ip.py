"""real-ip against a real gateway: APISIX's documentation example as published (ports and
upstreams replaced; docs/en/latest/plugins/real-ip.md at 0799d0e, plus trusted_addresses as
the 3.x pages add), the address every later plugin and the upstream see (ip-restriction,
$remote_addr, X-Real-IP, X-Forwarded-For), trust by CIDR, recursive X-Forwarded-For, and
routing by remote_addrs still seeing the TCP peer, as APISIX (which runs the plugin after
routing) does."""

from harness import WELL_KNOWN_ADMIN_KEY, get, get_from
from test_apisix_docs import echoed, sent_header, shared, shared_gw, ups  # noqa: F401

ERR = "failed to check the configuration of plugin real-ip err: "


def _admin(doc, method, path, body):
    r = doc.gw.admin(method, path, body, key=WELL_KNOWN_ADMIN_KEY)
    assert r.status in (200, 201), r
    return r


def _route(doc, rid, uri, plugins, **extra):
    body = {"uri": uri, "plugins": plugins,
            "upstream": {"type": "roundrobin", "nodes": {doc.ups[0].addr: 1}}}
    body.update(extra)
    return _admin(doc, "PUT", "/routes/%s" % rid, body)


def _upstream_saw(r):
    e = echoed_raw(r)
    return sent_header(e, "X-Real-IP"), sent_header(e, "X-Forwarded-For")


def echoed_raw(r):
    import json
    assert r.status == 200, r
    return json.loads(r.body)


DOC_ROUTE = '''curl -i http://127.0.0.1:9080/apisix/admin/routes/1  -H 'X-API-KEY: edd1c9f034335f136f87ad84b625c8f1' -X PUT -d '
    {
        "uri": "/index.html",
        "plugins": {
            "real-ip": {
                "source": "arg_realip",
                "trusted_addresses": ["127.0.0.0/24"]
            },
            "response-rewrite": {
                "headers": {
                    "remote_addr": "$remote_addr",
                    "remote_port": "$remote_port"
                }
            }
        },
        "upstream": {
            "type": "roundrobin",
            "nodes": {
                "127.0.0.1:1980": 1
            }
        }
    }' '''.replace("9080/apisix/admin", "9180/apisix/admin")  # the old page's admin port


def test_doc_example(shared):
    doc = shared
    # Sluice has no $remote_port variable: response-rewrite refuses the page's route with a
    # 400 naming it (docs/plugins.md, real-ip), rather than sending an empty header.
    r = doc.run(DOC_ROUTE)
    assert r.status == 400, r
    assert r.json()["error_msg"] == (
        "failed to check the configuration of plugin response-rewrite err: header "
        '"remote_port": variable $remote_port is not supported by Sluice'), r
    # The page's route without that header: the rest as published.
    r = doc.run(DOC_ROUTE.replace(''',
                    "remote_port": "$remote_port"''', ""))
    assert r.status in (200, 201), r
    r = doc.run("curl 'http://127.0.0.1:9080/index.html?realip=1.2.3.4:9080' -I")
    assert r.status == 200, r
    # The page shows `remote-addr` (nginx's ngx.header turns '_' into '-'); Sluice's
    # response-rewrite sends the name as configured, `remote_addr` (reported to the lead).
    assert (r.header("remote-addr") or r.header("remote_addr")) == "1.2.3.4", r.headers


def test_later_plugins_and_upstream_see_the_address(shared):
    doc = shared
    _route(doc, "x", "/x", {"real-ip": {"source": "http_x_forwarded_for",
                                        "trusted_addresses": ["127.0.0.1"]},
                            "ip-restriction": {"blacklist": ["1.2.3.4"]}})
    r = get(doc.gw.port, "/x", headers=[("X-Forwarded-For", "1.2.3.4")])
    assert r.status == 403, r
    r = get(doc.gw.port, "/x", headers=[("X-Forwarded-For", "9.9.9.9, 5.6.7.8")])
    real, xff = _upstream_saw(r)
    assert real == ["5.6.7.8"], r
    # $proxy_add_x_forwarded_for: the list received, then the (new) client address.
    assert xff == ["9.9.9.9, 5.6.7.8, 5.6.7.8"], r
    # Without the header the peer stays.
    real, xff = _upstream_saw(get(doc.gw.port, "/x"))
    assert real == ["127.0.0.1"] and xff == ["127.0.0.1"]


def test_untrusted_peer_changes_nothing(shared):
    doc = shared
    _route(doc, "t", "/t", {"real-ip": {"source": "http_x_real_ip",
                                        "trusted_addresses": ["127.0.0.1/32"]}})
    r = get_from("127.0.0.9", doc.gw.port, "/t", headers=[("X-Real-IP", "8.8.8.8")])
    real, _ = _upstream_saw(r)
    assert real == ["127.0.0.9"], r
    r = get_from("127.0.0.1", doc.gw.port, "/t", headers=[("X-Real-IP", "8.8.8.8")])
    real, _ = _upstream_saw(r)
    assert real == ["8.8.8.8"], r


def test_recursive(shared):
    doc = shared
    _route(doc, "r", "/r", {"real-ip": {"source": "http_x_forwarded_for", "recursive": True,
                                        "trusted_addresses": ["127.0.0.0/24", "10.0.0.0/8"]}})
    r = get(doc.gw.port, "/r", headers=[("X-Forwarded-For", "1.1.1.1, 2.2.2.2, 10.0.0.3")])
    assert _upstream_saw(r)[0] == ["2.2.2.2"], r
    _route(doc, "r", "/r", {"real-ip": {"source": "http_x_forwarded_for",
                                        "trusted_addresses": ["127.0.0.0/24", "10.0.0.0/8"]}})
    r = get(doc.gw.port, "/r", headers=[("X-Forwarded-For", "1.1.1.1, 2.2.2.2, 10.0.0.3")])
    assert _upstream_saw(r)[0] == ["10.0.0.3"], r


def test_routing_sees_the_peer(shared):
    doc = shared
    # remote_addrs is matched before the plugin runs: the TCP peer, as in APISIX.
    _route(doc, "p", "/peer", {"real-ip": {"source": "arg_realip"}},
           remote_addrs=["127.0.0.1"])
    r = get(doc.gw.port, "/peer?realip=1.2.3.4")
    assert r.status == 200 and _upstream_saw(r)[0] == ["1.2.3.4"], r
    _route(doc, "p", "/peer", {"real-ip": {"source": "arg_realip"}}, remote_addrs=["1.2.3.4"])
    assert get(doc.gw.port, "/peer?realip=1.2.3.4").status == 404


def test_global_rule_feeds_route_plugins(shared):
    doc = shared
    _admin(doc, "PUT", "/global_rules/g", {"plugins": {"real-ip": {"source": "http_x_real_ip"}}})
    _route(doc, "g", "/g", {"ip-restriction": {"whitelist": ["7.7.7.7"]}})
    assert get(doc.gw.port, "/g", headers=[("X-Real-IP", "7.7.7.7")]).status == 200
    assert get(doc.gw.port, "/g", headers=[("X-Real-IP", "7.7.7.8")]).status == 403
    assert get(doc.gw.port, "/g").status == 403


def test_bad_confs_are_refused(shared):
    doc = shared
    for conf, text in [
        ({}, 'property "source" is required'),
        ({"source": "arg_realip", "trusted_addresses": ["300.0.0.1"]},
         'property "trusted_addresses" validation failed: failed to validate item 1: object '
         'matches none of the required'),
        ({"source": "arg_realip", "trusted_addresses": ["::1/129"]},
         "invalid ip address: ::1/129"),
    ]:
        r = doc.gw.admin("PUT", "/routes/bad", {"uri": "/bad", "plugins": {"real-ip": conf}},
                         key=WELL_KNOWN_ADMIN_KEY)
        assert r.status == 400 and r.json["error_msg"] == ERR + text, r
