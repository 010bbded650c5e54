"""Private keys at rest: ssls' `key` and `keys` sealed with apisix.data_encryption's keyring
(AES-128-CBC, each entry as key and IV, base64: APISIX's format), in the embedded store and in
etcd, never answered in clear by the Admin API, never dumped in clear unless asked.

Ciphertexts are made and opened here with the openssl CLI, not with Sluice, so that what is
checked is the format an APISIX node reads and writes.
"""

import json
import os
import subprocess

import pytest
import yaml

from test_etcd import etcd_gateway, sluice_cli

# APISIX 3.x's default keyring (conf/config-default.yaml): the first key seals.
DEFAULT_KEYRING = ["qeddd145sfvddff3", "edd1c9f0985e76a2"]
REDACTED = "<redacted by sluice config dump: --show-secrets prints it>"


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """A self-signed certificate and its key (PEM), for test.com."""
    d = tmp_path_factory.mktemp("ssl")
    crt, key = d / "c.pem", d / "k.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-days", "30", "-subj", "/CN=test.com",
                    "-keyout", str(key), "-out", str(crt)], check=True, capture_output=True)
    return crt.read_text(), key.read_text()


def openssl_enc(keyring_entry, data, decrypt=False):
    """APISIX's sealing (or opening) of `data` with one keyring entry, by the openssl CLI."""
    k = keyring_entry.encode().hex()
    args = ["openssl", "enc", "-aes-128-cbc", "-K", k, "-iv", k, "-base64", "-A"]
    p = subprocess.run(args + (["-d"] if decrypt else []), input=data.encode(),
                       capture_output=True)
    if p.returncode != 0:
        return None
    return p.stdout.decode()


def ssl_body(pair, snis=("test.com",)):
    cert, key = pair
    return {"cert": cert, "key": key, "snis": list(snis), "certs": [cert], "keys": [key]}


def data_files(d):
    """Every file under the data directory (the SQLite database, its WAL, ...) as bytes."""
    out = {}
    for root, _, names in os.walk(d):
        for n in names:
            with open(os.path.join(root, n), "rb") as f:
                out[os.path.join(root, n)] = f.read()
    return out


def assert_sealed(value, pem, entry=DEFAULT_KEYRING[0]):
    assert isinstance(value, str) and "PRIVATE KEY" not in value, value
    assert openssl_enc(entry, value, decrypt=True) == pem, \
        "%r does not open to the key under %s" % (value[:40], entry)


# --------------------------------------------------------------------------- embedded store


def test_embedded_store_holds_and_answers_only_ciphertext(make_gateway, pair):
    gw = make_gateway(admin=True)
    cert, key = pair
    r = gw.admin("PUT", "/ssls/1", ssl_body(pair))
    assert r.status == 201, r
    assert b"PRIVATE KEY" not in r.body, r
    # The answer carries what is stored: the key sealed under the first default key.
    assert_sealed(r.value["key"], key)
    assert_sealed(r.value["keys"][0], key)
    assert r.value["cert"] == cert

    g = gw.admin("GET", "/ssls/1")
    assert g.status == 200 and b"PRIVATE KEY" not in g.body, g
    assert "key" not in g.value, "APISIX's GET one leaves key out: %r" % g.value
    assert g.value["keys"] == r.value["keys"]
    lst = gw.admin("GET", "/ssls")
    assert lst.status == 200 and b"PRIVATE KEY" not in lst.body, lst

    # A GET body sent back (the sealed key kept from the PUT's answer) is not sealed again.
    body = dict(g.value, key=r.value["key"])
    for f in ("create_time", "update_time"):
        body.pop(f)
    p = gw.admin("PATCH", "/ssls/1", body)
    assert p.status == 200, p
    assert p.value["key"] == r.value["key"] and p.value["keys"] == r.value["keys"]

    for path, data in data_files(gw.data_dir).items():
        assert b"PRIVATE KEY" not in data, "%s holds a private key in clear" % path
        assert key.encode()[40:80] not in data, "%s holds the key's PEM body" % path

    # Restarted, the store still decodes (the keys decrypt) and says nothing of clear keys.
    assert gw.restart() == 0
    assert gw.admin("GET", "/ssls/1").status == 200
    r2 = gw.admin("PATCH", "/ssls/1", {"snis": ["test.com", "www.test.com"]})
    assert r2.status == 200 and r2.value["key"] == r.value["key"], r2
    assert "stored in clear" not in gw.log_text()


def test_embedded_key_sealed_under_another_keyring_is_refused(make_gateway, pair):
    gw = make_gateway(admin=True)
    body = ssl_body(pair)
    body["key"] = openssl_enc("0123456789abcdef", pair[1])
    r = gw.admin("PUT", "/ssls/1", body)
    assert r.status == 400, r
    assert r.error_msg.startswith("failed to decrypt previous encrypted key"), r
    # One sealed by an APISIX node with the default keyring is taken.
    body["key"] = openssl_enc(DEFAULT_KEYRING[1], pair[1])
    r = gw.admin("PUT", "/ssls/1", body)
    assert r.status == 201, r
    assert r.value["key"] == body["key"], "a sealed key is stored as given"


def test_null_keyring_stores_clear_but_never_answers_it(make_gateway, pair):
    gw = make_gateway(admin=True, config={"apisix": {"data_encryption": {"keyring": None}}})
    r = gw.admin("PUT", "/ssls/1", ssl_body(pair))
    assert r.status == 201, r
    assert b"PRIVATE KEY" not in r.body and "key" not in r.value and "keys" not in r.value, r
    for res in (gw.admin("GET", "/ssls/1"), gw.admin("GET", "/ssls")):
        assert res.status == 200 and b"PRIVATE KEY" not in res.body, res
    # keyring: ~ is APISIX's "save the original data": the store holds the PEM.
    assert any(b"PRIVATE KEY" in d for d in data_files(gw.data_dir).values())


def test_bad_keyring_refuses_to_start(make_gateway):
    gw = make_gateway(admin=True, start=False, check_exit=False,
                      config={"apisix": {"data_encryption": {"keyring": ["tooshort"]}}})
    gw.write_config()
    p = subprocess.run([gw.binary, "run", "-c", gw.config_path], capture_output=True, text=True,
                       timeout=30, stdin=subprocess.DEVNULL)
    assert p.returncode != 0, p
    assert "apisix.data_encryption.keyring[0]: expected exactly 16 characters" in p.stderr, \
        p.stderr


# --------------------------------------------------------------------------- etcd


def test_etcd_values_are_apisix_compatible(etcd, make_gateway, pair):
    cert, key = pair
    gw = etcd_gateway(make_gateway, etcd.urls)
    r = gw.admin("PUT", "/ssls/1", ssl_body(pair))
    assert r.status == 201, r
    stored = json.loads(etcd.get("/apisix/ssls/1"))
    assert "PRIVATE KEY" not in json.dumps(stored)
    assert_sealed(stored["key"], key)
    assert_sealed(stored["keys"][0], key)

    # Written straight into etcd as APISIX nodes write them: sealed under the first default
    # key, and under the second (a node whose keyring was rotated).
    def apisix_ssl(sid, entry, snis):
        sealed = openssl_enc(entry, key)
        return {"id": sid, "cert": cert, "key": sealed, "snis": snis, "certs": [cert],
                "keys": [sealed], "create_time": 1, "update_time": 1}
    etcd.put("/apisix/ssls/2", apisix_ssl("2", DEFAULT_KEYRING[0], ["two.test.com"]))
    etcd.put("/apisix/ssls/3", apisix_ssl("3", DEFAULT_KEYRING[1], ["three.test.com"]))
    clear = dict(apisix_ssl("4", DEFAULT_KEYRING[0], ["four.test.com"]), key=key, keys=[key])
    etcd.put("/apisix/ssls/4", clear)  # a node with `keyring: ~` wrote this one
    etcd.put("/apisix/ssls/5", apisix_ssl("5", "0123456789abcdef", ["five.test.com"]))

    # The watch brings them in order: once 5's refusal is logged, 2-4 have been judged.
    m = gw.wait_for_log(r"etcd: /apisix/ssls/5 at revision \d+ skipped[^\n]*: "
                        r"failed to decrypt previous encrypted key", timeout=10)
    assert m, gw.log_tail()
    log = gw.log_text()
    for sid in ("2", "3", "4"):
        assert "etcd: /apisix/ssls/%s at revision" % sid not in log, log
    assert "etcd: /apisix/ssls/4: key, keys[1] stored in clear although " \
           "apisix.data_encryption.keyring is set" in log, log

    # The Admin API works on what APISIX wrote: a PATCH keeps the sealed key as it is.
    p = gw.admin("PATCH", "/ssls/3", {"snis": ["three.test.com", "3.test.com"]})
    assert p.status == 200, p
    assert json.loads(etcd.get("/apisix/ssls/3"))["key"] == openssl_enc(DEFAULT_KEYRING[1], key)
    g = gw.admin("GET", "/ssls/4")
    assert g.status == 200 and b"PRIVATE KEY" not in g.body, g


# --------------------------------------------------------------------------- config dump


def test_config_dump_prints_no_key_in_clear_unless_asked(make_gateway, pair, tmp_path):
    cert, key = pair
    gw = make_gateway(admin=True)
    assert gw.admin("PUT", "/ssls/1", ssl_body(pair)).status == 201
    assert gw.stop() == 0

    p = sluice_cli("config", "dump", "-c", gw.config_path)
    assert p.returncode == 0, p
    assert "PRIVATE KEY" not in p.stdout, p.stdout
    item = yaml.safe_load(p.stdout)["ssls"][0]
    assert_sealed(item["key"], key)  # as stored

    p = sluice_cli("config", "dump", "-c", gw.config_path, "--show-secrets")
    assert p.returncode == 0, p
    item = yaml.safe_load(p.stdout)["ssls"][0]
    assert item["key"] == key and item["keys"] == [key] and item["cert"] == cert

    # A dump of sealed keys loads back into a fresh store, still sealed.
    dump = tmp_path / "sealed.yaml"
    assert sluice_cli("config", "dump", "-c", gw.config_path, "-o", dump).returncode == 0
    fresh = make_gateway(admin=True, start=False)
    fresh.write_config()
    p = sluice_cli("config", "load", "-c", fresh.config_path, dump)
    assert p.returncode == 0, p
    # So does a --show-secrets dump: load seals its clear keys as the Admin API would.
    shown = tmp_path / "shown.yaml"
    p = sluice_cli("config", "dump", "-c", gw.config_path, "--show-secrets", "-o", shown)
    assert p.returncode == 0 and "PRIVATE KEY" in shown.read_text(), p
    p = sluice_cli("config", "load", "-c", fresh.config_path, shown)
    assert p.returncode == 0, p
    for path, data in data_files(fresh.data_dir).items():
        assert b"PRIVATE KEY" not in data, "%s holds a private key in clear" % path
    fresh.start()
    g = fresh.admin("GET", "/ssls")
    assert g.status == 200 and b"PRIVATE KEY" not in g.body, g
    assert_sealed(g.json["list"][0]["value"]["key"], key)


def test_config_dump_redacts_keys_held_in_clear(make_gateway, pair, tmp_path):
    key = pair[1]
    gw = make_gateway(admin=True, config={"apisix": {"data_encryption": {"keyring": None}}})
    assert gw.admin("PUT", "/ssls/1", ssl_body(pair)).status == 201
    assert gw.stop() == 0

    out = tmp_path / "dump.yaml"
    p = sluice_cli("config", "dump", "-c", gw.config_path, "-o", out)
    assert p.returncode == 0, p
    assert "2 private key(s) held in clear redacted; --show-secrets prints them" in p.stderr
    text = out.read_text()
    assert "PRIVATE KEY" not in text, text
    item = yaml.safe_load(text)["ssls"][0]
    assert item["key"] == REDACTED and item["keys"] == [REDACTED]

    # Loading a redacted dump is refused, naming the field.
    p = sluice_cli("config", "load", "-c", gw.config_path, out)
    assert p.returncode == 1, p
    assert "ssls[0] (id 1): key: redacted by `sluice config dump`" in p.stderr, p.stderr

    p = sluice_cli("config", "dump", "-c", gw.config_path, "--show-secrets")
    assert p.returncode == 0 and yaml.safe_load(p.stdout)["ssls"][0]["key"] == key, p
