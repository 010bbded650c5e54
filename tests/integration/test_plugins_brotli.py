"""brotli on the real gateway: APISIX's documented example (ports and upstream changed), the
answers decoded by curl's own brotli decoder (--compressed), a big streamed answer that
decodes to the same bytes, clients leaving mid-stream, brotli chosen over gzip, the gateway's
own answers, and the Admin API's 400s with APISIX's texts."""

import os
import subprocess
import zlib

import fake_upstream as fu
from test_plugins_gzip import sanitized
from harness import Client, admin_route, build_request, curl, expect_error, iter_body, vm_rss_kib

ERR = "failed to check the configuration of plugin brotli err: "
PAGE = b"<html><body>" + b"<p>Sluice compresses this page.</p>" * 40 + b"</body></html>\n"
HTML = [("Content-Type", "text/html; charset=utf-8")]


def _ok(r):
    assert r.status in (200, 201), r
    return r


def _put(gw, rid, uri, up, conf, **extra):
    plugins = dict(extra.pop("plugins", {}))
    if conf is not None:
        plugins["brotli"] = conf
    return _ok(gw.admin("PUT", "/routes/%s" % rid, admin_route(uri, up, plugins=plugins, **extra)))


def _curl_br(url, *args, timeout=60):
    """curl asking for br only and decoding it (curl is built with brotli)."""
    return curl(url, "-H", "Accept-Encoding: br", "--compressed", *args, timeout=timeout)


def _raw(gw, path, accept="br"):
    with Client(gw.port) as c:
        c.send(build_request("GET", path, [("Accept-Encoding", accept)]))
        resp = c.read_head()
        return resp, b"".join(iter_body(c.reader, resp))


# "Enable Plugin" and "Example usage", verbatim but for the upstream (httpbin.org's / is an
# HTML page).
def test_doc_example(make_gateway, upstream):
    gw = make_gateway(admin=True)
    upstream.route("/", fu.Fixed(200, HTML + [("Access-Control-Allow-Origin", "*")], PAGE))
    _ok(gw.admin("PUT", "/routes/1", {
        "uri": "/",
        "plugins": {
            "brotli": {
            }
        },
        "upstream": {
            "type": "roundrobin",
            "nodes": {
                upstream.addr: 1
            }
        }
    }))
    got = curl("http://127.0.0.1:%d/" % gw.port, "-i", "-H", "Accept-Encoding: br")
    assert got.status == 200, got
    assert got.header("content-type") == "text/html; charset=utf-8"
    assert got.header("transfer-encoding") == "chunked"
    assert got.header("content-encoding") == "br"
    assert got.header("access-control-allow-origin") == "*"
    decoded = _curl_br("http://127.0.0.1:%d/" % gw.port)
    assert decoded.rc == 0 and decoded.body == PAGE, decoded
    # "Delete Plugin".
    _ok(gw.admin("PUT", "/routes/1", {
        "uri": "/",
        "upstream": {"type": "roundrobin", "nodes": {upstream.addr: 1}}
    }))
    got = curl("http://127.0.0.1:%d/" % gw.port, "-H", "Accept-Encoding: br")
    assert got.header("content-encoding") is None and got.body == PAGE


def test_when_it_compresses(make_gateway, upstream):
    gw = make_gateway(admin=True)
    upstream.route("/page", fu.Fixed(200, HTML, PAGE))
    upstream.route("/err", fu.Fixed(500, HTML, PAGE))
    upstream.route("/short", fu.Fixed(200, HTML, b"<p>tiny</p>"))
    _put(gw, 1, "/*", upstream, {"vary": True, "comp_level": 11, "lgwin": 22, "mode": 1})
    for accept in ("gzip", "br;q=0", "identity"):
        resp, body = _raw(gw, "/page", accept)
        assert resp.header("content-encoding") is None and body == PAGE, accept
        assert resp.header("vary") is None  # APISIX adds it only for a client taking br
    resp, _ = _raw(gw, "/short")
    assert resp.header("content-encoding") is None
    got = _curl_br("http://127.0.0.1:%d/page" % gw.port)
    assert got.body == PAGE and got.header("vary") == "Accept-Encoding", got
    got = _curl_br("http://127.0.0.1:%d/err" % gw.port)  # any status, as APISIX's body_filter
    assert got.status == 500 and got.header("content-encoding") == "br" and got.body == PAGE


def test_brotli_before_gzip(make_gateway, upstream):
    gw = make_gateway(admin=True)
    upstream.route("/page", fu.Fixed(200, HTML, PAGE))
    _put(gw, 1, "/page", upstream, {}, plugins={"gzip": {}})
    got = curl("http://127.0.0.1:%d/page" % gw.port, "--compressed")  # gzip, br, zstd
    assert got.header("content-encoding") == "br" and got.body == PAGE, got
    resp, body = _raw(gw, "/page", "gzip")
    assert resp.header("content-encoding") == "gzip"
    assert zlib.decompress(body, 31) == PAGE


def test_big_stream_decodes_to_the_same_bytes(make_gateway, upstream, tmp_path):
    gw = make_gateway(admin=True)
    total = 64 << 20
    upstream.route("/big", fu.Download(total, chunked=True, piece=65536))
    _put(gw, 1, "/*", upstream, {"types": "*", "comp_level": 1})
    out = str(tmp_path / "big")
    p = subprocess.run(["curl", "-sS", "--max-time", "60", "-H", "Accept-Encoding: br",
                        "--compressed", "-o", out, "-D", out + ".h",
                        "http://127.0.0.1:%d/big" % gw.port], capture_output=True, timeout=90)
    assert p.returncode == 0, p.stderr
    assert b"content-encoding: br" in open(out + ".h", "rb").read().lower()
    crc = 0
    with open(out, "rb") as f:
        while True:
            b = f.read(1 << 20)
            if not b:
                break
            crc = zlib.crc32(b, crc)
    assert os.path.getsize(out) == total and crc == fu.pattern_crc(total)


def test_clients_leaving_mid_stream_leak_nothing(make_gateway, upstream):
    gw = make_gateway(admin=True)
    upstream.route("/big", fu.Download(64 << 20, chunked=True, piece=65536))
    _put(gw, 1, "/*", upstream, {"types": "*"})  # quality 6, window 19

    def leave():
        with Client(gw.port) as c:
            c.send(build_request("GET", "/big", [("Accept-Encoding", "br")]))
            resp = c.read_head()
            assert resp.header("content-encoding") == "br"
            got = 0
            for piece in iter_body(c.reader, resp):
                got += len(piece)
                if got >= 256 << 10:
                    return

    for _ in range(10):
        leave()
    before = vm_rss_kib(gw.pid)
    for _ in range(60):  # each leaked encoder would keep over 1 MiB touched
        leave()
    grew = vm_rss_kib(gw.pid) - before
    assert sanitized() or grew < 24 * 1024, "RSS grew by %d KiB after 60 aborted answers" % grew


def test_gateway_answers_under_a_global_rule(make_gateway):
    gw = make_gateway(admin=True)
    _ok(gw.admin("PUT", "/global_rules/1", {"plugins": {"brotli": {
        "types": ["application/json"], "min_length": 1}}}))
    got = _curl_br("http://127.0.0.1:%d/no/such/route" % gw.port)
    assert got.status == 404 and got.header("content-encoding") == "br", got
    assert got.body == b'{"error_msg":"404 Route Not Found"}\n'


def test_admin_refuses_with_apisix_texts(make_gateway, upstream):
    gw = make_gateway(admin=True)
    for conf, text in [
        ({"comp_level": 12}, 'property "comp_level" validation failed: '
                             'expected 12 to be at most 11'),
        ({"mode": -1}, 'property "mode" validation failed: expected -1 to be at least 0'),
        ({"lgwin": 9}, 'property "lgwin" validation failed: matches none of the enum values'),
        ({"lgblock": 25}, 'property "lgblock" validation failed: matches none of the enum values'),
        ({"types": "text/html"}, 'property "types" validation failed: '
                                 'object matches none of the required'),
    ]:
        r = gw.admin("PUT", "/routes/1", admin_route("/x", upstream, plugins={"brotli": conf}))
        expect_error(r, 400)
        assert r.error_msg == ERR + text, r
    r = gw.admin("GET", "/apisix/admin/plugins/brotli")
    assert r.status == 200 and r.json["properties"]["lgwin"]["default"] == 19, r
