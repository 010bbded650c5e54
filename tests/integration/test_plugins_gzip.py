"""gzip on the real gateway: APISIX's documented example (ports and upstream changed), curl
--compressed, which answers are compressed and which are not, a big streamed answer that
decompresses to the same bytes in bounded memory, clients that leave mid-stream, the
gateway's own answers under a global rule, response-rewrite's bodies compressed after the
rewrite, and the Admin API's 400s with APISIX's texts."""

import zlib

import pytest

import fake_upstream as fu
import harness
from harness import (Client, admin_route, build_request, curl, expect_error, iter_body,
                     vm_hwm_kib, vm_rss_kib)

ERR = "failed to check the configuration of plugin gzip err: "
PAGE = b"<html><body>" + b"<p>Sluice compresses this page.</p>" * 40 + b"</body></html>\n"
HTML = [("Content-Type", "text/html; charset=utf-8")]


def _ok(r):
    assert r.status in (200, 201), r
    return r


def _put(gw, rid, uri, up, conf, **extra):
    plugins = dict(extra.pop("plugins", {}))
    if conf is not None:
        plugins["gzip"] = conf
    return _ok(gw.admin("PUT", "/routes/%s" % rid, admin_route(uri, up, plugins=plugins, **extra)))


def sanitized():
    """A sanitizer build keeps freed memory in quarantine: RSS says nothing about leaks there
    (test_memory.py skips for the same reason); the aborts still run under ASan's checks."""
    with open(harness.SLUICE_BIN, "rb") as f:
        data = f.read()
    return b"__asan_init" in data or b"__tsan_init" in data


def _raw(gw, path, accept="gzip", method="GET", version="HTTP/1.1", headers=()):
    """One request by hand: the head and the body as it came (chunks joined)."""
    headers = list(headers) + ([("Accept-Encoding", accept)] if accept else [])
    with Client(gw.port) as c:
        c.send(build_request(method, path, headers, version=version))
        resp = c.read_head()
        body = b"".join(iter_body(c.reader, resp, method))
    return resp, body


# --------------------------------------------------------------------------- the doc's example


# "Enabling the Plugin" and "Example usage", verbatim but for the upstream: its /index.html
# is a 404 page, as APISIX's test server answers there.
def test_doc_example(make_gateway, upstream):
    gw = make_gateway(admin=True)
    upstream.route("/index.html", fu.Fixed(404, HTML, PAGE))
    r = gw.admin("PUT", "/routes/1", {
        "uri": "/index.html",
        "plugins": {
            "gzip": {
                "buffers": {
                    "number": 8
                }
            }
        },
        "upstream": {
            "type": "roundrobin",
            "nodes": {
                upstream.addr: 1
            }
        }
    })
    _ok(r)
    got = curl("http://127.0.0.1:%d/index.html" % gw.port, "-i", "-H", "Accept-Encoding: gzip")
    assert got.status == 404, got
    assert got.header("content-type") == "text/html; charset=utf-8"
    assert got.header("transfer-encoding") == "chunked"
    assert got.header("content-encoding") == "gzip"
    assert got.header("content-length") is None
    body = got.body.split(b"\r\n\r\n", 1)[1]  # -i: the head is in the output too
    assert zlib.decompress(body, 16 + 15) == PAGE
    # "Disable Plugin": the same route without it.
    _ok(gw.admin("PUT", "/routes/1", {
        "uri": "/index.html",
        "upstream": {"type": "roundrobin", "nodes": {upstream.addr: 1}}
    }))
    got = curl("http://127.0.0.1:%d/index.html" % gw.port, "-H", "Accept-Encoding: gzip")
    assert got.status == 404 and got.header("content-encoding") is None, got
    assert got.body == PAGE


def test_curl_compressed_and_the_head(make_gateway, upstream):
    gw = make_gateway(admin=True)
    upstream.route("/page", fu.Fixed(200, HTML + [("ETag", '"v1"'), ("Accept-Ranges", "bytes")],
                                     PAGE))
    _put(gw, 1, "/page", upstream, {"vary": True, "comp_level": 9})
    got = curl("http://127.0.0.1:%d/page" % gw.port, "--compressed")
    assert got.rc == 0 and got.status == 200, got
    assert got.body == PAGE
    assert got.header("content-encoding") == "gzip"
    assert got.header("vary") == "Accept-Encoding"
    assert got.header("etag") == 'W/"v1"'
    assert got.header("accept-ranges") is None
    # A client that takes no gzip gets the page as it is, with Vary all the same.
    resp, body = _raw(gw, "/page", accept="gzip;q=0, br")
    assert resp.header("content-encoding") is None and body == PAGE
    assert resp.header("content-length") == str(len(PAGE))
    assert resp.header("vary") == "Accept-Encoding"


def test_what_is_left_alone(make_gateway, upstream):
    gw = make_gateway(admin=True)
    upstream.route("/short", fu.Fixed(200, HTML, b"<p>tiny</p>"))
    upstream.route("/plain", fu.Fixed(200, [("Content-Type", "text/plain")], PAGE))
    upstream.route("/gz", fu.Fixed(200, HTML + [("Content-Encoding", "gzip")],
                                   zlib.compress(PAGE)))
    upstream.route("/err", fu.Fixed(500, HTML, PAGE))
    upstream.route("/empty", fu.Fixed(200, HTML, b""))  # Content-Length: 0
    upstream.route("/chunked", fu.Chunked([b"<p>", b"short", b"</p>"], headers=HTML))
    _put(gw, 1, "/*", upstream, {"min_length": 100})
    for path in ("/short", "/plain", "/gz", "/err", "/empty"):
        resp, body = _raw(gw, path)
        # /gz comes encoded already and passes as it is.
        assert resp.header("content-encoding") == ("gzip" if path == "/gz" else None), path
        assert resp.header("content-length") is not None, path
    _put(gw, 1, "/*", upstream, {"min_length": 1})
    resp, body = _raw(gw, "/empty")  # even the smallest min_length: an empty body stays so
    assert (resp.header("content-encoding"), resp.header("content-length"), body) == \
        (None, "0", b"")
    _put(gw, 1, "/*", upstream, {"min_length": 100})
    # nginx tests only a length it knows: a chunked answer is compressed, however short.
    resp, body = _raw(gw, "/chunked")
    assert resp.header("content-encoding") == "gzip"
    assert zlib.decompress(body, 31) == b"<p>short</p>"
    # HTTP/1.0 clients are left alone unless http_version is 1.0; HEAD gets no encoding.
    upstream.route("/page", fu.Fixed(200, HTML, PAGE))
    resp, body = _raw(gw, "/page", version="HTTP/1.0")
    assert resp.header("content-encoding") is None and body == PAGE
    resp, _ = _raw(gw, "/page", method="HEAD")
    assert resp.header("content-encoding") is None
    _put(gw, 1, "/*", upstream, {"http_version": 1.0})
    resp, body = _raw(gw, "/page", version="HTTP/1.0")
    assert resp.header("content-encoding") == "gzip"
    assert zlib.decompress(body, 31) == PAGE


@pytest.mark.parametrize("strategy", ["memory", "disk"])
def test_cache_hits_are_compressed_like_the_miss(make_gateway, upstream, tmp_path, strategy):
    """proxy-cache stores the identity body (it runs before gzip, which compresses last) and
    streams a hit through the same filters: the hit goes out compressed, with Vary, as the
    miss did; a client that takes no gzip gets the identity body from the same entry."""
    big = PAGE * 80  # > 64 KiB: a hit comes in several pieces
    upstream.route("/c", fu.Fixed(200, HTML, big))
    gw = make_gateway(admin=True, config={"apisix": {"proxy_cache": {"zones": [
        {"name": "disk_cache_one", "memory_size": "50m", "disk_size": "1G",
         "disk_path": str(tmp_path / "disk"), "cache_levels": "1:2"},
        {"name": "memory_cache", "memory_size": "50m"}]}}})
    cache = {"cache_strategy": strategy}
    if strategy == "memory":
        cache["cache_zone"] = "memory_cache"
    _put(gw, 1, "/c", upstream, {"vary": True}, plugins={"proxy-cache": cache})
    for want in ("MISS", "HIT"):
        resp, body = _raw(gw, "/c")
        assert resp.header("apisix-cache-status") == want
        assert resp.header("content-encoding") == "gzip", (want, resp)
        assert resp.header("vary") == "Accept-Encoding", (want, resp)
        assert zlib.decompress(body, 31) == big, want
    resp, body = _raw(gw, "/c", accept=None)
    assert resp.header("apisix-cache-status") == "HIT" and resp.header("content-encoding") is None
    assert body == big
    assert len(upstream.requests_for("/c")) == 1


def _stream(gw, path, total, leave_after=None):
    """Reads a compressed download by hand, inflating as it comes; returns (bytes, crc)."""
    with Client(gw.port, timeout=60) as c:
        c.send(build_request("GET", path, [("Accept-Encoding", "gzip")]))
        resp = c.read_head()
        assert resp.status == 200 and resp.header("content-encoding") == "gzip", resp
        inflate = zlib.decompressobj(31)
        n, crc, wire = 0, 0, 0
        for piece in iter_body(c.reader, resp):
            wire += len(piece)
            out = inflate.decompress(piece)
            n += len(out)
            crc = zlib.crc32(out, crc)
            if leave_after is not None and wire >= leave_after:
                return n, None  # the client leaves mid-stream
        assert inflate.eof
        return n, crc


# 64 KiB of HTML-like text, repeated: compressible, so the 1 GiB test measures the gateway's
# memory rather than deflate's speed on random bytes (the 64 MiB tests below use those).
BLOCK = b"".join(b"<p>line %06d of the page the upstream streams</p>\n" % i
                 for i in range(1400))[:65536]
assert len(BLOCK) == 65536


def _text_download(total):
    """The upstream streams `total` bytes of BLOCK repeated, chunked, as text/html."""
    def handle(up, conn, req):
        conn.send(fu.build_head(200, HTML + [("Transfer-Encoding", "chunked")]))
        head = b"%x\r\n" % len(BLOCK)
        for _ in range(total // len(BLOCK)):
            conn.send(head + BLOCK + b"\r\n")
        conn.send(b"0\r\n\r\n")
        return True
    return fu.Func(handle)


def _text_crc(total):
    crc = 0
    for _ in range(total // len(BLOCK)):
        crc = zlib.crc32(BLOCK, crc)
    return crc


@pytest.mark.streaming
def test_one_gib_streamed_in_constant_memory(make_gateway, upstream):
    gw = make_gateway(admin=True)
    total = 1 << 30
    upstream.route("/big", _text_download(total))
    upstream.route("/warm", _text_download(8 << 20))
    _put(gw, 1, "/*", upstream, {})
    _stream(gw, "/warm", 8 << 20)
    before = vm_hwm_kib(gw.pid)
    n, crc = _stream(gw, "/big", total)
    assert n == total and crc == _text_crc(total)
    grew = vm_hwm_kib(gw.pid) - before
    assert sanitized() or grew < 16 * 1024, "peak RSS grew by %d KiB over a 1 GiB answer" % grew


def test_random_bytes_stream_to_the_same_bytes(make_gateway, upstream):
    gw = make_gateway(admin=True)
    total = 64 << 20
    upstream.route("/big", fu.Download(total, chunked=True, piece=65536))
    _put(gw, 1, "/*", upstream, {"types": ["application/octet-stream"], "comp_level": 6})
    n, crc = _stream(gw, "/big", total)
    assert n == total and crc == fu.pattern_crc(total)


def test_clients_leaving_mid_stream_leak_nothing(make_gateway, upstream):
    gw = make_gateway(admin=True)
    upstream.route("/big", fu.Download(64 << 20, chunked=True, piece=65536))
    _put(gw, 1, "/*", upstream, {"types": "*", "comp_level": 1})
    for _ in range(20):
        _stream(gw, "/big", 0, leave_after=256 << 10)
    before = vm_rss_kib(gw.pid)
    # Each leak would keep a deflate stream (256 KiB) and its buffers: 200 of them, 50 MiB.
    for _ in range(200):
        _stream(gw, "/big", 0, leave_after=64 << 10)
    grew = vm_rss_kib(gw.pid) - before
    assert sanitized() or grew < 16 * 1024, "RSS grew by %d KiB after 200 aborted answers" % grew
    n, crc = _stream(gw, "/big", 64 << 20)
    assert n == 64 << 20 and crc == fu.pattern_crc(64 << 20)


def test_gateway_answers_under_a_global_rule(make_gateway, upstream):
    gw = make_gateway(admin=True)
    _ok(gw.admin("PUT", "/global_rules/1", {"plugins": {"gzip": {
        "types": ["application/json", "text/html"], "min_length": 1}}}))
    resp, body = _raw(gw, "/no/such/route")
    assert resp.status == 404 and resp.header("content-encoding") == "gzip", resp
    assert zlib.decompress(body, 31) == b'{"error_msg":"404 Route Not Found"}\n'
    assert resp.header("content-length") == str(len(body))
    # A route's own gzip runs instead of the global rule's (its types: text/html only).
    upstream.route("/page", fu.Fixed(200, HTML, PAGE))
    _put(gw, 1, "/page", upstream, {"types": ["text/plain"]})
    resp, body = _raw(gw, "/page")
    assert resp.header("content-encoding") is None and body == PAGE
    # On a service, the route inheriting it.
    _ok(gw.admin("DELETE", "/global_rules/1"))
    _ok(gw.admin("PUT", "/services/s1", {"plugins": {"gzip": {}},
                                         "upstream": {"type": "roundrobin",
                                                      "nodes": {upstream.addr: 1}}}))
    _ok(gw.admin("PUT", "/routes/1", {"uri": "/page", "service_id": "s1"}))
    resp, body = _raw(gw, "/page")
    assert resp.header("content-encoding") == "gzip"
    assert zlib.decompress(body, 31) == PAGE


def test_plugin_config_and_consumer(make_gateway, upstream):
    gw = make_gateway(admin=True)
    upstream.route("/page", fu.Fixed(200, HTML, PAGE))
    _ok(gw.admin("PUT", "/plugin_configs/pc", {"plugins": {"gzip": {"comp_level": 9}}}))
    _ok(gw.admin("PUT", "/routes/1", admin_route("/page", upstream, plugin_config_id="pc")))
    resp, body = _raw(gw, "/page")
    assert resp.header("content-encoding") == "gzip"
    assert zlib.decompress(body, 31) == PAGE
    # On a consumer: merged into the route the consumer authenticates on.
    _ok(gw.admin("PUT", "/consumers/jack", {"username": "jack", "plugins": {
        "key-auth": {"key": "k1"}, "gzip": {}}}))
    _ok(gw.admin("PUT", "/routes/1", admin_route("/page", upstream,
                                                 plugins={"key-auth": {}})))
    resp, body = _raw(gw, "/page", headers=[("apikey", "k1")])
    assert resp.status == 200 and resp.header("content-encoding") == "gzip", resp
    assert zlib.decompress(body, 31) == PAGE


def test_response_rewrite_bodies_are_compressed_after_the_rewrite(make_gateway, upstream):
    gw = make_gateway(admin=True)
    upstream.route("/page", fu.Chunked([PAGE[:100], PAGE[100:]], headers=HTML))
    _put(gw, 1, "/page", upstream, {}, plugins={"response-rewrite": {
        "filters": [{"regex": "Sluice", "replace": "the gateway", "scope": "global"}]}})
    resp, body = _raw(gw, "/page")
    assert resp.header("content-encoding") == "gzip", resp
    assert zlib.decompress(body, 31) == PAGE.replace(b"Sluice", b"the gateway")
    new = "<html>" + "new body " * 10 + "</html>"
    _put(gw, 1, "/page", upstream, {}, plugins={"response-rewrite": {"body": new}})
    resp, body = _raw(gw, "/page")
    assert resp.header("content-encoding") == "gzip"
    assert resp.header("content-length") is None
    assert zlib.decompress(body, 31) == new.encode()


def test_admin_refuses_with_apisix_texts(make_gateway, upstream):
    gw = make_gateway(admin=True)
    for conf, text in [
        ({"comp_level": 10}, 'property "comp_level" validation failed: expected 10 to be at most 9'),
        ({"min_length": 0}, 'property "min_length" validation failed: expected 0 to be at least 1'),
        ({"types": []}, 'property "types" validation failed: object matches none of the required'),
        ({"http_version": 2}, 'property "http_version" validation failed: '
                              'matches none of the enum values'),
        ({"buffers": {"size": 0}}, 'property "buffers" validation failed: property "size" '
                                   'validation failed: expected 0 to be at least 1'),
        ({"vary": 1}, 'property "vary" validation failed: wrong type: expected boolean, got number'),
    ]:
        r = gw.admin("PUT", "/routes/1", admin_route("/x", upstream, plugins={"gzip": conf}))
        expect_error(r, 400)
        assert r.error_msg == ERR + text, r
    r = gw.admin("GET", "/apisix/admin/plugins/gzip")
    assert r.status == 200, r
    assert r.json["properties"]["comp_level"] == {"type": "integer", "minimum": 1,
                                                  "maximum": 9, "default": 1}
