"""The Admin API's audit log (sluice.admin_audit_log, on by default at logs/admin_audit.log):
one JSON line per request that may change something, refused ones too, naming the key and the
client, the status and error_msg, the store's revision and each object before and after with
secrets masked; listed by GET /apisix/admin/audit."""

import json
import os

from harness import admin_route


def records(gw):
    with open(os.path.join(gw.dir, "logs", "admin_audit.log")) as f:
        return [json.loads(line) for line in f]


def test_who_changed_what_before_and_after(make_gateway, upstream):
    gw = make_gateway(admin=True)
    r = gw.admin("PUT", "/routes/1", admin_route("/one", upstream))
    assert r.status == 201
    r = gw.admin("GET", "/routes/1")  # reads are not recorded
    assert r.status == 200
    created_rev = r.json["modifiedIndex"]
    assert gw.admin("PATCH", "/routes/1", {"uri": "/uno"}).status == 200
    assert gw.admin("PUT", "/routes/2", {"uri": "/two", "upstream_id": "nope"}).status == 400
    assert gw.admin("DELETE", "/routes/1", key=gw.viewer_key).status == 401
    assert gw.admin("DELETE", "/routes/1", key="wrong").status == 401
    assert gw.admin("DELETE", "/routes/1").status == 200

    recs = records(gw)
    assert [(x["method"], x["uri"], x["status"], x["key_name"]) for x in recs] == [
        ("PUT", "/apisix/admin/routes/1", 201, "admin"),
        ("PATCH", "/apisix/admin/routes/1", 200, "admin"),
        ("PUT", "/apisix/admin/routes/2", 400, "admin"),
        ("DELETE", "/apisix/admin/routes/1", 401, "viewer"),
        ("DELETE", "/apisix/admin/routes/1", 401, None),
        ("DELETE", "/apisix/admin/routes/1", 200, "admin"),
    ]
    put, patch, bad, viewer, wrong, delete = recs
    assert put["client_ip"] == "127.0.0.1" and put["role"] == "admin"
    assert put["revision"] == created_rev
    assert put["changes"][0]["key"] == "/apisix/routes/1"
    assert put["changes"][0]["before"] is None
    assert put["changes"][0]["after"]["uri"] == "/one"
    assert patch["changes"][0]["before"]["uri"] == "/one"
    assert patch["changes"][0]["after"]["uri"] == "/uno"
    assert patch["revision"] > put["revision"]
    assert bad["changes"] == [] and "revision" not in bad
    assert bad["error_msg"] == "failed to fetch upstream info by upstream id [nope], " \
                               "response code: 404"
    assert viewer["role"] == "viewer" and viewer["error_msg"] == "failed to check token"
    assert wrong["role"] is None and wrong["changes"] == []
    assert delete["changes"][0]["before"]["uri"] == "/uno"
    assert delete["changes"][0]["after"] is None
    assert all(x["time"].endswith("Z") for x in recs)


def test_secrets_never_reach_the_log(make_gateway):
    gw = make_gateway(admin=True)
    assert gw.admin("PUT", "/consumers", {"username": "jack", "plugins": {
        "key-auth": {"key": "jack-very-secret-key"}}}).status in (200, 201)
    assert gw.admin("PUT", "/consumers/jack/credentials/c1", {"plugins": {
        "basic-auth": {"username": "j", "password": "pa55-very-secret"}}}).status in (200, 201)
    # The api_key in the query is the admin key: the uri is logged without the query.
    assert gw.admin("DELETE", "/consumers/jack/credentials/c1?api_key=" + gw.admin_key,
                    key=None).status == 200
    with open(os.path.join(gw.dir, "logs", "admin_audit.log")) as f:
        text = f.read()
    for secret in ("jack-very-secret-key", "pa55-very-secret", gw.admin_key):
        assert secret not in text
    recs = records(gw)
    assert recs[0]["changes"][0]["after"]["plugins"]["key-auth"]["key"] == \
        "<secret: not in the audit log>"
    assert recs[1]["changes"][0]["key"] == "/apisix/consumers/jack/credentials/c1"
    assert recs[2]["uri"] == "/apisix/admin/consumers/jack/credentials/c1"


def test_listing_the_last_records(make_gateway, upstream):
    gw = make_gateway(admin=True)
    for i in range(5):
        assert gw.admin("PUT", "/routes/%d" % i, admin_route("/r%d" % i, upstream)).status == 201
    r = gw.admin("GET", "/audit?limit=2", key=gw.viewer_key)
    assert r.status == 200, r.body
    assert r.json["total"] == 2
    assert [x["uri"] for x in r.json["list"]] == ["/apisix/admin/routes/3",
                                                  "/apisix/admin/routes/4"]
    r = gw.admin("GET", "/audit")
    assert r.json["total"] == 5
    for bad in ("0", "1001", "x", "-1"):
        r = gw.admin("GET", "/audit?limit=" + bad)
        assert r.status == 400 and r.json["error_msg"] == "limit: expected an integer 1-1000"
    r = gw.admin("DELETE", "/audit")
    assert r.status == 405, r.body
    assert gw.admin("GET", "/audit", key="wrong").status == 401

    # logrotate moves the file away: the next write starts a new one, the listing follows it.
    path = os.path.join(gw.dir, "logs", "admin_audit.log")
    os.rename(path, path + ".1")
    assert gw.admin("DELETE", "/routes/0").status == 200
    r = gw.admin("GET", "/audit")
    assert [(x["method"], x["uri"]) for x in r.json["list"]] == [("DELETE", "/apisix/admin/routes/0")]


def test_off(make_gateway, upstream):
    gw = make_gateway(admin=True, config={"sluice": {"admin_audit_log": "off"}})
    assert gw.admin("PUT", "/routes/1", admin_route("/one", upstream)).status == 201
    assert not os.path.exists(os.path.join(gw.dir, "logs", "admin_audit.log"))
    r = gw.admin("GET", "/audit")
    assert r.status == 404 and "sluice.admin_audit_log" in r.json["error_msg"]
