"""Consumer credentials (APISIX 3.7+): /apisix/admin/consumers/{username}/credentials[/{id}]
over the embedded store and over etcd, stored at APISIX's key
(<prefix>/consumers/{username}/credentials/{id}), with APISIX's answers and texts
(apisix/admin/credentials.lua, admin/resource.lua, t/admin/credentials.t); and auth plugins'
encrypt_fields sealed at rest, opened in GET answers (admin/init.lua decrypts for every GET).

The sealing checks need an auth plugin; until key-auth is built in they are skipped, saying so.
Ciphertexts are made and opened with the openssl CLI, the format an APISIX node reads.
"""

import json
import os
import sqlite3

import pytest
import yaml

from test_etcd import etcd_gateway, sluice_cli
from test_ssl_encryption import DEFAULT_KEYRING, openssl_enc


def db_value(gw, key):
    """The value the embedded store holds at `key`, read from SQLite directly (None if absent)."""
    path = os.path.join(gw.data_dir, "sluice.db")
    con = sqlite3.connect("file:%s?mode=ro" % path, uri=True)
    try:
        row = con.execute("SELECT value FROM kv WHERE key = ?", (key,)).fetchone()
    finally:
        con.close()
    return None if row is None else json.loads(row[0])


def crud(gw):
    """The Admin API's credential verbs, as APISIX's t/admin/credentials.t drives them."""
    r = gw.admin("PUT", "/consumers/jack/credentials/a", {"desc": "x"})
    assert (r.status, r.error_msg) == (404, "consumer not found"), r
    assert gw.admin("PUT", "/consumers/jack", {"username": "jack"}).status == 201

    r = gw.admin("PUT", "/consumers/jack/credentials/a", {"desc": "basic", "plugins": {}})
    assert r.status == 201, r
    assert r.json["key"] == "/apisix/consumers/jack/credentials/a"
    assert r.value["id"] == "a" and r.value["desc"] == "basic"
    assert isinstance(r.value["create_time"], int) and isinstance(r.value["update_time"], int)
    created = r.value["create_time"]
    r = gw.admin("PUT", "/consumers/jack/credentials", {"id": "b", "labels": {"env": "prod"}})
    assert r.status == 201, r
    assert r.json["key"] == "/apisix/consumers/jack/credentials/b"
    r = gw.admin("PUT", "/consumers/jack/credentials/a", {"desc": "again"})
    assert r.status == 200 and r.value["create_time"] == created, r

    g = gw.admin("GET", "/consumers/jack/credentials/a")
    assert g.status == 200 and g.value["desc"] == "again", g
    assert "modifiedIndex" in g.json and "createdIndex" in g.json
    lst = gw.admin("GET", "/consumers/jack/credentials")
    assert lst.status == 200 and lst.json["total"] == 2, lst
    assert [i["key"] for i in lst.json["list"]] == [
        "/apisix/consumers/jack/credentials/a", "/apisix/consumers/jack/credentials/b"]
    assert gw.admin("GET", "/consumers/jack/credentials?label=env:prod").json["total"] == 1
    consumers = gw.admin("GET", "/consumers")
    assert consumers.json["total"] == 1, consumers
    assert consumers.json["list"][0]["key"] == "/apisix/consumers/jack"

    errors = [
        ("PUT", "/consumers/jack/credentials", {"desc": "x"}, 400, "missing credential id"),
        ("PUT", "/consumers/jack/credentials/a", {"id": "c"}, 400, "wrong credential id"),
        ("PUT", "/consumers/jack/credentials/a",
         {"plugins": {"limit-count": {"count": 1, "time_window": 60}}}, 400,
         "only supports auth type plugins in consumer credential"),
        ("PUT", "/consumers/jack/credentials/a", {"plugins": {"x": {}, "y": {}}}, 400,
         'invalid configuration: property "plugins" validation failed: expect object to have '
         "at most 1 properties"),
        ("PUT", "/consumers/jack/credentials/a", {"username": "jack"}, 400,
         "invalid configuration: additional properties forbidden, found username"),
        ("POST", "/consumers/jack/credentials", {}, 405,
         "not supported `POST` method for credential"),
        ("PATCH", "/consumers/jack/credentials/a", {"desc": "y"}, 405,
         "not supported `PATCH` method for credential"),
        ("DELETE", "/consumers/jack/credentials", None, 400, "missing credential id"),
    ]
    for method, path, body, status, msg in errors:
        r = gw.admin(method, path, body)
        assert (r.status, r.error_msg) == (status, msg), (method, path, r)
    assert gw.admin("GET", "/consumers/jack/credentials/a").value["desc"] == "again"

    d = gw.admin("DELETE", "/consumers/jack/credentials/b")
    assert d.status == 200 and d.json == {"deleted": "1",
                                          "key": "/apisix/consumers/jack/credentials/b"}, d
    assert gw.admin("GET", "/consumers/jack/credentials/b").status == 404
    # Deleting the consumer deletes its credentials first (resource.lua: etcd rmdir).
    assert gw.admin("DELETE", "/consumers/jack").status == 200
    gone = gw.admin("GET", "/consumers/jack/credentials")
    assert gone.status == 404 and gone.json == {"message": "Key not found"}, gone


def test_crud_on_the_embedded_store(make_gateway):
    gw = make_gateway(admin=True)
    crud(gw)
    assert db_value(gw, "/apisix/consumers/jack/credentials/a") is None
    assert gw.admin("PUT", "/consumers/rose", {"username": "rose"}).status == 201
    assert gw.admin("PUT", "/consumers/rose/credentials/r", {"desc": "kept"}).status == 201
    stored = db_value(gw, "/apisix/consumers/rose/credentials/r")
    assert stored["id"] == "r" and stored["desc"] == "kept", stored
    # It survives a restart, read back from the store.
    assert gw.stop() == 0
    gw.start()
    assert gw.admin("GET", "/consumers/rose/credentials/r").value["desc"] == "kept"


def test_crud_on_etcd_and_credentials_apisix_wrote(etcd, make_gateway):
    gw = etcd_gateway(make_gateway, etcd.urls)
    crud(gw)
    assert etcd.get("/apisix/consumers/jack/credentials/a") is None
    assert gw.admin("PUT", "/consumers/rose", {"username": "rose"}).status == 201
    assert gw.admin("PUT", "/consumers/rose/credentials/r", {"desc": "d"}).status == 201
    stored = json.loads(etcd.get("/apisix/consumers/rose/credentials/r"))
    assert stored["id"] == "r" and stored["desc"] == "d", stored

    # Written straight into etcd, as an APISIX node writes them: read by the Admin API, checked
    # by the node's watch (a credential naming a non-auth plugin is refused, naming the key).
    # A credential's change rebuilds the configuration, as a consumer's does.
    offset = len(gw.log_text())
    etcd.put("/apisix/consumers/rose/credentials/apisix",
             {"id": "apisix", "desc": "by apisix", "create_time": 1, "update_time": 1})
    assert gw.wait_for_log(r"configuration \d+ published", timeout=10, start=offset), \
        gw.log_tail()
    etcd.put("/apisix/consumers/rose/credentials/bad",
             {"id": "bad", "plugins": {"limit-count": {"count": 1, "time_window": 1}}})
    m = gw.wait_for_log(r"etcd: /apisix/consumers/rose/credentials/bad at revision \d+ skipped"
                        r"[^\n]*only supports auth type plugins in consumer credential",
                        timeout=10)
    assert m, gw.log_tail()
    assert "/apisix/consumers/rose/credentials/apisix at revision" not in gw.log_text()
    g = gw.admin("GET", "/consumers/rose/credentials/apisix")
    assert g.status == 200 and g.value["desc"] == "by apisix", g
    keys = [i["key"] for i in gw.admin("GET", "/consumers/rose/credentials").json["list"]]
    assert "/apisix/consumers/rose/credentials/apisix" in keys
    assert gw.admin("DELETE", "/consumers/rose").status == 200
    assert etcd.get("/apisix/consumers/rose/credentials/apisix") is None
    assert etcd.get("/apisix/consumers/rose/credentials/r") is None


def test_config_dump_and_load_carry_credentials(make_gateway, tmp_path):
    gw = make_gateway(admin=True)
    assert gw.admin("PUT", "/consumers/jack", {"username": "jack"}).status == 201
    assert gw.admin("PUT", "/consumers/jack/credentials/a", {"desc": "d"}).status == 201
    assert gw.stop() == 0
    out = tmp_path / "dump.yaml"
    p = sluice_cli("config", "dump", "-c", gw.config_path, "-o", out)
    assert p.returncode == 0, p
    items = yaml.safe_load(out.read_text())["consumers"]
    # apisix.yaml's form (APISIX's config_yaml.lua): `<username>/credentials/<id>`.
    assert [i.get("username", i.get("id")) for i in items] == ["jack", "jack/credentials/a"]

    fresh = make_gateway(admin=True, start=False)
    fresh.write_config()
    p = sluice_cli("config", "load", "-c", fresh.config_path, out)
    assert p.returncode == 0, p
    assert db_value(fresh, "/apisix/consumers/jack/credentials/a")["id"] == "a"
    orphan = tmp_path / "orphan.yaml"
    orphan.write_text("consumers:\n  - id: nobody/credentials/a\n#END\n")
    p = sluice_cli("config", "load", "-c", fresh.config_path, orphan)
    assert p.returncode == 1 and "consumers[0]: consumer not found" in p.stderr, p


# --------------------------------------------------------------------------- sealed at rest


def auth_plugin_or_skip(gw):
    if gw.admin("GET", "/plugins/key-auth").status == 404:
        pytest.skip("key-auth is not built in yet: sealing needs an auth plugin to store "
                    "(covered by tests/unit/config/resources_credential_test.cc meanwhile)")


def test_auth_plugin_secrets_are_sealed_in_the_store_and_opened_by_get(make_gateway, tmp_path):
    gw = make_gateway(admin=True)
    auth_plugin_or_skip(gw)
    body = {"username": "jack", "plugins": {"key-auth": {"key": "the-key"}}}
    r = gw.admin("PUT", "/consumers/jack", body)
    assert r.status == 201, r
    sealed = openssl_enc(DEFAULT_KEYRING[0], "the-key")
    # The answer carries what is stored (APISIX answers etcd's value): the ciphertext.
    assert r.value["plugins"]["key-auth"]["key"] == sealed
    assert db_value(gw, "/apisix/consumers/jack")["plugins"]["key-auth"]["key"] == sealed
    r = gw.admin("PUT", "/consumers/jack/credentials/a",
                 {"plugins": {"key-auth": {"key": "cred-key"}}})
    assert r.status == 201, r
    stored = db_value(gw, "/apisix/consumers/jack/credentials/a")
    assert stored["plugins"]["key-auth"]["key"] == openssl_enc(DEFAULT_KEYRING[0], "cred-key")
    # GET opens them, as APISIX's admin does.
    assert gw.admin("GET", "/consumers/jack").value["plugins"]["key-auth"]["key"] == "the-key"
    g = gw.admin("GET", "/consumers/jack/credentials/a")
    assert g.value["plugins"]["key-auth"]["key"] == "cred-key", g
    # A PATCH merges onto the opened value and seals once (APISIX #13351/#13525).
    assert gw.admin("PATCH", "/consumers/jack", {"desc": "d"}).status == 200
    assert db_value(gw, "/apisix/consumers/jack")["plugins"]["key-auth"]["key"] == sealed
    # References are stored as given.
    r = gw.admin("PUT", "/consumers/jack/credentials/e",
                 {"plugins": {"key-auth": {"key": "$env://JACK_KEY"}}})
    assert r.status == 201 and r.value["plugins"]["key-auth"]["key"] == "$env://JACK_KEY", r

    # A dump holds them sealed; loading it back seals each once, not twice.
    assert gw.stop() == 0
    out = tmp_path / "dump.yaml"
    p = sluice_cli("config", "dump", "-c", gw.config_path, "-o", out)
    assert p.returncode == 0 and "the-key" not in out.read_text(), p
    fresh = make_gateway(admin=True, start=False)
    fresh.write_config()
    assert sluice_cli("config", "load", "-c", fresh.config_path, out).returncode == 0
    assert db_value(fresh, "/apisix/consumers/jack")["plugins"]["key-auth"]["key"] == sealed


def test_etcd_credentials_sealed_by_apisix_are_opened(etcd, make_gateway):
    gw = etcd_gateway(make_gateway, etcd.urls)
    auth_plugin_or_skip(gw)
    assert gw.admin("PUT", "/consumers/jack", {"username": "jack"}).status == 201
    sealed = openssl_enc(DEFAULT_KEYRING[1], "apisix-key")  # a node with a rotated keyring
    etcd.put("/apisix/consumers/jack/credentials/x",
             {"id": "x", "plugins": {"key-auth": {"key": sealed}}})
    g = gw.admin("GET", "/consumers/jack/credentials/x")
    assert g.value["plugins"]["key-auth"]["key"] == "apisix-key", g
    r = gw.admin("PUT", "/consumers/jack/credentials/y", {"plugins": {"key-auth": {"key": "k"}}})
    assert r.status == 201, r
    stored = json.loads(etcd.get("/apisix/consumers/jack/credentials/y"))
    assert openssl_enc(DEFAULT_KEYRING[0], stored["plugins"]["key-auth"]["key"],
                       decrypt=True) == "k"
