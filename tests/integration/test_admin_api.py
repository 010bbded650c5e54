"""Issue 3, point 1: the Admin API's verbs, ids, status codes, v3 response shapes, times,
paging and filters, X-API-VERSION, plugins/list, unsupported resources and methods.

Every test runs against its own gateway in embedded mode (an empty SQLite store in a temp
dir); COMPAT.md's "Admin API" section is the spec.
"""

import re
import subprocess
import time

import pytest

from harness import admin_route, admin_upstream, expect_error

DEAD = "127.0.0.1:1"  # upstream nodes for objects that never carry traffic here
KEY_NOT_FOUND = {"message": "Key not found"}
ID20 = re.compile(r"^[0-9]{20}$")


@pytest.fixture(scope="module")
def ssl_pair(tmp_path_factory):
    """A self-signed certificate and key (PEM) for test.com."""
    d = tmp_path_factory.mktemp("ssl")
    crt, key = d / "c.pem", d / "k.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "30",
                    "-subj", "/CN=test.com", "-addext", "subjectAltName=DNS:test.com",
                    "-keyout", str(key), "-out", str(crt)], check=True, capture_output=True)
    return crt.read_text(), key.read_text()


def sample(kind, ssl_pair=None, n=1):
    """A valid body for `kind`; n varies it."""
    if kind == "routes":
        return admin_route("/sample/%d" % n, DEAD, name="r%d" % n)
    if kind == "services":
        return {"name": "s%d" % n, "upstream": admin_upstream(DEAD)}
    if kind == "upstreams":
        return admin_upstream(DEAD, name="u%d" % n)
    if kind == "consumers":
        return {"username": "jack", "desc": "d%d" % n}
    if kind in ("global_rules", "plugin_configs", "consumer_groups"):
        return {"plugins": {}, "desc": "d%d" % n} if kind != "global_rules" else {"plugins": {}}
    if kind == "ssls":
        return {"cert": ssl_pair[0], "key": ssl_pair[1], "snis": ["test.com"]}
    if kind == "stream_routes":
        return {"server_port": 9100 + n, "upstream": admin_upstream(DEAD)}
    raise KeyError(kind)


KINDS = ["routes", "services", "upstreams", "consumers", "global_rules", "plugin_configs",
         "consumer_groups", "ssls", "stream_routes"]


def put_one(gw, kind, body, rid="1"):
    """PUT by id (consumers: by username in the body); returns (result, id)."""
    if kind == "consumers":
        return gw.admin("PUT", "/consumers", body), body["username"]
    return gw.admin("PUT", "/%s/%s" % (kind, rid), body), rid


def assert_subset(expected, actual, where="value"):
    if isinstance(expected, dict):
        assert isinstance(actual, dict), "%s: expected an object, got %r" % (where, actual)
        for k, v in expected.items():
            assert k in actual, "%s: key %r missing from %r" % (where, k, actual)
            assert_subset(v, actual[k], "%s.%s" % (where, k))
    else:
        assert expected == actual, "%s: expected %r, got %r" % (where, expected, actual)


def assert_v3_headers(res):
    assert res.header("x-api-version") == "v3", "X-API-VERSION missing or wrong: %r" % (res,)
    ctype = (res.header("content-type") or "").lower()
    assert ctype.startswith("application/json"), "Content-Type %r: %r" % (ctype, res)


def assert_times(value, lo, hi):
    for f in ("create_time", "update_time"):
        t = value.get(f)
        assert isinstance(t, int) and not isinstance(t, bool), "%s not an integer: %r" % (
            f, value)
        assert lo - 1 <= t <= hi + 1, "%s=%r not the current Unix time (%d..%d)" % (
            f, t, lo, hi)


def comparable(kind, body):
    """What of a body must come back verbatim (an ssl's key may be stored encrypted)."""
    if kind == "ssls":
        return {"snis": body["snis"]}
    return body


# --------------------------------------------------------------------------- lifecycle


@pytest.mark.parametrize("kind", KINDS)
def test_put_get_list_delete_lifecycle(admin_gw, kind, ssl_pair):
    gw = admin_gw
    body = sample(kind, ssl_pair)
    t0 = int(time.time())
    r, rid = put_one(gw, kind, body)
    t1 = int(time.time())
    assert r.status == 201, "PUT of a new %s: %r" % (kind, r)
    assert_v3_headers(r)
    key = "/apisix/%s/%s" % (kind, rid)
    assert r.json.get("key") == key, r
    assert_subset(comparable(kind, body), r.value)
    assert_times(r.value, t0, t1)
    if kind != "consumers":
        assert str(r.value.get("id")) == rid, "value.id: %r" % r.value

    g = gw.admin("GET", "/%s/%s" % (kind, rid))
    assert g.status == 200, g
    assert_v3_headers(g)
    assert g.json["key"] == key
    assert_subset(comparable(kind, body), g.value)
    for f in ("createdIndex", "modifiedIndex"):
        assert isinstance(g.json.get(f), int), "GET one lacks integer %s: %r" % (f, g)
    created = g.json["createdIndex"]
    assert g.json["modifiedIndex"] == created

    body2 = sample(kind, ssl_pair, n=2)
    r2, _ = put_one(gw, kind, body2)
    assert r2.status == 200, "PUT over an existing %s: %r" % (kind, r2)
    assert_subset(comparable(kind, body2), r2.value)
    g2 = gw.admin("GET", "/%s/%s" % (kind, rid))
    assert g2.json["createdIndex"] == created, "createdIndex changed on update: %r" % g2
    assert g2.json["modifiedIndex"] > created, "modifiedIndex did not grow: %r" % g2

    lst = gw.admin("GET", "/%s" % kind)
    assert lst.status == 200, lst
    assert_v3_headers(lst)
    assert lst.json.get("total") == 1, lst
    assert isinstance(lst.json.get("list"), list) and len(lst.json["list"]) == 1, lst
    item = lst.json["list"][0]
    assert item["key"] == key
    assert item["createdIndex"] == created and item["modifiedIndex"] == g2.json["modifiedIndex"]
    assert_subset(comparable(kind, body2), item["value"])

    d = gw.admin("DELETE", "/%s/%s" % (kind, rid))
    assert d.status == 200, d
    assert_v3_headers(d)
    assert d.json.get("key") == key and isinstance(d.json.get("deleted"), str), d

    m = gw.admin("GET", "/%s/%s" % (kind, rid))
    assert m.status == 404 and m.json == KEY_NOT_FOUND, m
    empty = gw.admin("GET", "/%s" % kind)
    assert empty.status == 200 and empty.json == {"list": [], "total": 0}, empty


@pytest.mark.parametrize("kind,path,body", [
    ("routes", "/routes/abc", admin_route("/abc", DEAD)),
    ("upstreams", "/upstreams/u-7", admin_upstream(DEAD)),
    ("consumers", "/consumers", {"username": "jack"})])
def test_delete_answer_shape(admin_gw, kind, path, body):
    """`deleted` is the number of keys deleted, as a string (APISIX turns etcd's count into a
    string for compatibility): "1" whatever the id is, never the id itself."""
    r = admin_gw.admin("PUT", path, body)
    assert r.status == 201, r
    key = r.json["key"]
    d = admin_gw.admin("DELETE", key.replace("/apisix", "", 1))
    assert d.status == 200, d
    assert d.json == {"deleted": "1", "key": key}, "DELETE shape: %r" % d


@pytest.mark.parametrize("kind", KINDS + ["plugin_metadata"])
def test_empty_list_shape(admin_gw, kind):
    r = admin_gw.admin("GET", "/" + kind)
    assert r.status == 200, r
    assert r.json == {"list": [], "total": 0}, r
    assert_v3_headers(r)


@pytest.mark.parametrize("kind", ["routes", "upstreams", "services", "consumers"])
def test_missing_key_is_404_for_get_delete_patch(admin_gw, kind):
    verbs = [("GET", None), ("DELETE", None)]
    if kind != "consumers":  # whether consumers take PATCH at all is not said: not asked
        verbs.append(("PATCH", {"desc": "x"}))
    for method, body in verbs:
        r = admin_gw.admin(method, "/%s/nope" % kind, body)
        assert r.status == 404, "%s of a missing %s: %r" % (method, kind, r)
        assert r.json == KEY_NOT_FOUND, r
        assert r.body.endswith(b"\n")
    assert admin_gw.admin("GET", "/" + kind).json["total"] == 0, "PATCH created an object"


# --------------------------------------------------------------------------- POST and ids


@pytest.mark.parametrize("kind", ["routes", "services", "upstreams", "stream_routes"])
def test_post_generates_20_digit_ids(admin_gw, kind):
    ids = []
    for n in (1, 2, 3):
        r = admin_gw.admin("POST", "/" + kind, sample(kind, n=n))
        assert r.status == 201, r
        assert_v3_headers(r)
        m = re.fullmatch(r"/apisix/%s/(.+)" % kind, r.json.get("key", ""))
        assert m and ID20.match(m.group(1)), "generated key %r" % r.json.get("key")
        assert str(r.value.get("id")) == m.group(1), r
        assert_times(r.value, int(time.time()) - 5, int(time.time()))
        ids.append(m.group(1))
    assert len(set(ids)) == 3, "POST ids repeat: %r" % ids
    for i in ids:
        g = admin_gw.admin("GET", "/%s/%s" % (kind, i))
        assert g.status == 200 and str(g.value["id"]) == i, g
    assert admin_gw.admin("GET", "/" + kind).json["total"] == 3


@pytest.mark.parametrize("kind,singular", [("consumers", "consumer"), ("global_rules", None),
                                           ("plugin_configs", None), ("consumer_groups", None)])
def test_post_not_supported(admin_gw, kind, singular):
    r = admin_gw.admin("POST", "/" + kind, sample(kind))
    msg = "not supported `POST` method for " + (singular or "")
    expect_error(r, 405, msg)
    if singular:
        assert r.json == {"error_msg": msg}, r
    assert admin_gw.admin("GET", "/" + kind).json["total"] == 0, "POST wrote something"


def test_patch_not_supported_on_stream_routes_and_protos(admin_gw):
    body = sample("stream_routes")
    assert admin_gw.admin("PUT", "/stream_routes/1", body).status == 201
    before = admin_gw.admin("GET", "/stream_routes/1").json
    r = admin_gw.admin("PATCH", "/stream_routes/1", {"server_port": 9999})
    expect_error(r, 405, "not supported `PATCH` method for ")
    assert admin_gw.admin("GET", "/stream_routes/1").json == before, "PATCH changed it"
    expect_error(admin_gw.admin("PATCH", "/protos/1", {"content": "x"}), 405,
                 "not supported `PATCH` method for ")


@pytest.mark.parametrize("method,path", [("GET", "/foo"), ("GET", "/foo/1"),
                                         ("PUT", "/foo/1"), ("DELETE", "/foo/1")])
def test_unsupported_resource_type(admin_gw, method, path):
    r = admin_gw.admin(method, path, {"uri": "/x"} if method == "PUT" else None)
    assert r.status == 404, r
    assert r.json == {"error_msg": "Unsupported resource type: foo"}, r
    assert r.body.endswith(b"\n")


@pytest.mark.parametrize("rid", ["a-b_c.D9", "x" * 64, "7", "0123"])
def test_valid_url_ids(admin_gw, rid):
    r = admin_gw.admin("PUT", "/routes/" + rid, admin_route("/v", DEAD))
    assert r.status == 201, r
    assert r.json["key"] == "/apisix/routes/" + rid
    assert admin_gw.admin("GET", "/routes/" + rid).status == 200


@pytest.mark.parametrize("rid", ["x" * 65, "a*b", "a~b", "a@b", "a%20b", "a+b"])
def test_invalid_url_ids(admin_gw, rid):
    r = admin_gw.admin("PUT", "/routes/" + rid, admin_route("/v", DEAD))
    expect_error(r, 400)
    assert admin_gw.admin("GET", "/routes").json["total"] == 0, "an invalid id was stored"


def test_id_from_body(admin_gw):
    r = admin_gw.admin("PUT", "/routes", dict(admin_route("/b", DEAD), id="from-body"))
    assert r.status == 201, r
    assert r.json["key"] == "/apisix/routes/from-body"
    r = admin_gw.admin("PUT", "/routes", dict(admin_route("/i", DEAD), id=7))
    assert r.status == 201, r
    assert r.json["key"] == "/apisix/routes/7"
    # The same id in both places, once as an integer: accepted.
    r = admin_gw.admin("PUT", "/routes/8", dict(admin_route("/j", DEAD), id=8))
    assert r.status == 201, r
    assert r.json["key"] == "/apisix/routes/8"


@pytest.mark.parametrize("bad", [0, -3, 1.5, True, "", "a b", "x" * 65, [], {}])
def test_invalid_body_ids(admin_gw, bad):
    r = admin_gw.admin("PUT", "/routes", dict(admin_route("/b", DEAD), id=bad))
    expect_error(r, 400)
    assert admin_gw.admin("GET", "/routes").json["total"] == 0


def test_put_without_any_id_is_400(admin_gw):
    expect_error(admin_gw.admin("PUT", "/routes", admin_route("/b", DEAD)), 400)
    assert admin_gw.admin("GET", "/routes").json["total"] == 0


def test_url_and_body_ids_differ(admin_gw):
    r = admin_gw.admin("PUT", "/routes/1", dict(admin_route("/b", DEAD), id="2"))
    expect_error(r, 400, "wrong route id")
    assert r.json == {"error_msg": "wrong route id"}, r
    assert admin_gw.admin("GET", "/routes").json["total"] == 0


# --------------------------------------------------------------------------- times


def test_put_keeps_create_time_and_moves_update_time(admin_gw):
    t0 = int(time.time())
    first = admin_gw.admin("PUT", "/routes/1", admin_route("/t", DEAD)).value
    assert_times(first, t0, int(time.time()))
    n = [0]

    def update_moved():
        n[0] += 1
        v = admin_gw.admin("PUT", "/routes/1", admin_route("/t%d" % n[0], DEAD)).value
        assert v["create_time"] == first["create_time"], "PUT changed create_time: %r" % v
        assert v["update_time"] >= first["update_time"]
        return v["update_time"] > first["update_time"]

    deadline = time.monotonic() + 3
    moved = False
    while not moved and time.monotonic() < deadline:
        moved = update_moved()
        if not moved:
            time.sleep(0.1)
    assert moved, "update_time never advanced over 3 s of updates"
    g = admin_gw.admin("GET", "/routes/1").value
    assert g["create_time"] == first["create_time"]


# --------------------------------------------------------------------------- paging, filters


def _fill_routes(gw, n=25):
    for i in range(n):
        body = admin_route("/p/%02d" % i, DEAD, name=("alpha-%d" if i % 2 == 0 else "beta-%d") % i,
                           labels={"env": "prod"} if i % 3 == 0 else {"team": "x"})
        if i == 7:
            del body["uri"]
            body["uris"] = ["/x/seven", "/p/07"]
        r = gw.admin("PUT", "/routes/r%02d" % i, body)
        assert r.status == 201, r


def _keys(res):
    return [item["key"] for item in res.json["list"]]


def test_paging(admin_gw):
    _fill_routes(admin_gw)
    everything = admin_gw.admin("GET", "/routes")
    assert everything.json["total"] == 25 and len(everything.json["list"]) == 25, everything
    pages = []
    for page, size in ((1, 10), (2, 10), (3, 10)):
        r = admin_gw.admin("GET", "/routes?page=%d&page_size=%d" % (page, 10))
        assert r.status == 200, r
        assert r.json["total"] == 25, "total must count every match, not the page: %r" % r
        pages.append(r.json["list"])
    assert [len(p) for p in pages] == [10, 10, 5], [len(p) for p in pages]
    flat = [item["key"] for p in pages for item in p]
    assert sorted(flat) == sorted(_keys(everything)), "pages do not cover the list exactly once"
    created = [item["createdIndex"] for p in pages for item in p]
    assert created == sorted(created), "pages are not in creation order: %r" % created
    r = admin_gw.admin("GET", "/routes?page=4&page_size=10")
    assert r.status == 200 and r.json["list"] == [] and r.json["total"] == 25, r
    r = admin_gw.admin("GET", "/routes?page=1&page_size=500")
    assert r.status == 200 and len(r.json["list"]) == 25


@pytest.mark.parametrize("size", [9, 501, 0])
def test_page_size_out_of_range(admin_gw, size):
    _fill_routes(admin_gw, 3)
    r = admin_gw.admin("GET", "/routes?page=1&page_size=%d" % size)
    assert r.status == 400, "page_size=%d: %r" % (size, r)


def test_filters(admin_gw):
    _fill_routes(admin_gw)

    def names(query):
        r = admin_gw.admin("GET", "/routes?" + query)
        assert r.status == 200, r
        got = sorted(item["value"]["id"] for item in r.json["list"])
        assert r.json["total"] == len(got), r
        return got

    assert names("name=alpha") == ["r%02d" % i for i in range(0, 25, 2)]
    assert names("name=beta-1") == ["r%02d" % i for i in (1, 11, 13, 15, 17, 19)]
    assert names("label=env") == ["r%02d" % i for i in range(0, 25, 3)]
    assert names("label=nope") == []
    assert names("uri=seven") == ["r07"], "uri filter must look into uris"
    assert names("uri=/p/0") == ["r%02d" % i for i in range(10)]
    assert names("name=alpha&label=env") == ["r%02d" % i for i in range(0, 25, 6)]
    r = admin_gw.admin("GET", "/routes?name=alpha&page=2&page_size=10")
    assert r.json["total"] == 13 and len(r.json["list"]) == 3, r


def test_reference_filter(admin_gw):
    """APISIX 3.13's filter=service_id%3D1 (itself a query string) on routes; what it cannot
    filter is refused, never read as "no filter"."""
    up = {"nodes": {"127.0.0.1:1": 1}}
    assert admin_gw.admin("PUT", "/services/s1", {"upstream": up}).status == 201
    assert admin_gw.admin("PUT", "/upstreams/u1", up).status == 201
    admin_gw.admin("PUT", "/routes/a", {"uri": "/a", "service_id": "s1"})
    admin_gw.admin("PUT", "/routes/b", {"uri": "/b", "service_id": "s1", "upstream_id": "u1"})
    admin_gw.admin("PUT", "/routes/c", {"uri": "/c", "upstream_id": "u1"})

    def ids(query):
        r = admin_gw.admin("GET", "/routes?" + query)
        assert r.status == 200, r
        return sorted(i["value"]["id"] for i in r.json["list"])

    assert ids("filter=service_id%3Ds1") == ["a", "b"]
    assert ids("filter=upstream_id%3Du1") == ["b", "c"]
    assert ids("filter=service_id%3Ds1%26upstream_id%3Du1") == ["b"]
    assert ids("filter=service_id%3Dnone") == []
    expect_error(admin_gw.admin("GET", "/routes?filter=name%3Dx"), 400,
                 "invalid argument filter: filter field 'name' is not supported")
    expect_error(admin_gw.admin("GET", "/services?filter=upstream_id%3Du1"), 400,
                 "invalid argument filter: services cannot be filtered")


def test_schema_validate_checks_and_stores_nothing(admin_gw):
    ok = {"uri": "/v/*", "upstream": {"type": "roundrobin", "nodes": {"127.0.0.1:1": 1}}}
    r = admin_gw.admin("POST", "/schema/validate/routes", ok)
    assert r.status == 200 and r.body == b"", r
    assert admin_gw.admin("GET", "/routes").json["total"] == 0
    expect_error(admin_gw.admin("POST", "/schema/validate/routes", {"uri": 1980}), 400,
                 'property "uri" validation failed: wrong type: expected string, got number')
    r = admin_gw.admin("POST", "/schema/validate/upstreams", {"nodes": {"127.0.0.1:1": 1},
                                                             "type": "roundrobin"})
    assert r.status == 200, r
    expect_error(admin_gw.admin("POST", "/schema/validate/upstreams", {"type": "chash",
                 "nodes": {"127.0.0.1:1": 1}}), 400, "missing key")
    expect_error(admin_gw.admin("POST", "/schema/validate/nothing", ok), 404,
                 "Unsupported resource type: nothing")
    expect_error(admin_gw.admin("GET", "/schema/validate/routes"), 405)
    assert admin_gw.admin("POST", "/schema/validate/routes", ok,
                          key=admin_gw.viewer_key).status in (401, 403)


# --------------------------------------------------------------------------- misc endpoints


def test_headers_on_errors_too(admin_gw):
    assert_v3_headers(admin_gw.admin("GET", "/routes/none"))
    assert_v3_headers(admin_gw.admin("PUT", "/routes/1", {"uri": "/x", "bogus_field": 1}))


def test_plugins_list_names_the_enabled_plugins(admin_gw):
    r = admin_gw.admin("GET", "/plugins/list")
    assert r.status == 200, r
    assert r.json == ["real-ip", "request-id", "zipkin", "opentelemetry", "fault-injection", "cors", "ip-restriction",
                      "ua-restriction", "referer-restriction", "request-validation",
                      "multi-auth", "hmac-auth", "basic-auth", "jwt-auth", "key-auth",
                      "consumer-restriction", "proxy-cache", "proxy-mirror", "proxy-rewrite",
                      "api-breaker", "limit-conn", "limit-count", "limit-req", "brotli", "gzip",
                      "traffic-split", "redirect", "response-rewrite", "public-api",
                      "prometheus", "http-logger", "tcp-logger", "syslog", "udp-logger",
                      "file-logger"], r
    assert admin_gw.admin("GET", "/plugins/list", key=None).status == 401
    assert admin_gw.admin("GET", "/plugins/list", key=admin_gw.viewer_key).status == 200


def test_plugins_reload(admin_gw):
    r = admin_gw.admin("PUT", "/plugins/reload")
    assert r.status == 200, r
    assert b"done" in r.body, r


def test_plugin_metadata_for_unknown_plugin(admin_gw):
    r = admin_gw.admin("PUT", "/plugin_metadata/example-plugin", {"ikey": 1})
    expect_error(r, 400, "unknown plugin [example-plugin]")
    assert admin_gw.admin("GET", "/plugin_metadata").json["total"] == 0


def test_every_write_gets_a_higher_revision(admin_gw):
    seen = []
    for i, (method, path, body) in enumerate([
            ("PUT", "/upstreams/u1", admin_upstream(DEAD)),
            ("PUT", "/routes/1", admin_route("/a", DEAD)),
            ("PUT", "/services/s1", {"upstream": admin_upstream(DEAD)}),
            ("PUT", "/routes/1", admin_route("/b", DEAD)),
            ("PATCH", "/routes/1", {"desc": "x"}),
            ("PUT", "/routes/2", admin_route("/c", DEAD))]):
        r = admin_gw.admin(method, path, body)
        assert r.status in (200, 201), r
        g = admin_gw.admin("GET", path)
        seen.append(g.json["modifiedIndex"])
    assert seen == sorted(seen) and len(set(seen)) == len(seen), \
        "revisions not strictly increasing: %r" % seen
    # A DELETE is a change too: the next write is above it.
    assert admin_gw.admin("DELETE", "/routes/2").status == 200
    r = admin_gw.admin("PUT", "/routes/3", admin_route("/d", DEAD))
    assert admin_gw.admin("GET", "/routes/3").json["createdIndex"] > seen[-1] + 1, \
        "a DELETE did not take a revision"


def test_unknown_verb_does_not_write(admin_gw):
    r = admin_gw.admin("TRACE", "/routes/1")
    assert r.status >= 400, r
    assert admin_gw.admin("GET", "/routes").json["total"] == 0
