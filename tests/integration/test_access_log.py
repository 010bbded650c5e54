"""The access log (issue 26, part 1): APISIX's nginx_config.http.access_log* keys on the real
binary. One line per request that got an answer (the gateway's own answers, 400s on bad
requests and 499s for clients that went away included), APISIX's default format field by
field, custom formats and json escaping, off, buffering, SIGUSR1 reopening after logrotate
moved the file (under load: no line lost, none torn), and Sluice's built-in rotation.

Every gateway here writes <its dir>/logs/access.log (the default path, relative to the config
file's directory). Most set access_log_buffer: 1 so each line is written when its request ends;
the buffering tests keep APISIX's 16384.
"""

import json
import os
import re
import signal
import socket
import struct
import subprocess
import time

import pytest

from fake_upstream import Delay, Raw
from harness import (Client, GatewayError, WrkRun, free_port, get, parse_samples, route,
                     run_wrk, scrape)

UNBUFFERED = {"nginx_config": {"http": {"access_log_buffer": 1}}}

# APISIX's default access_log_format, one named group per variable.
DEFAULT_LINE = re.compile(
    r'^(?P<remote_addr>\S+) - (?P<remote_user>\S+) '
    r'\[(?P<time_local>\d{2}/[A-Z][a-z]{2}/\d{4}:\d{2}:\d{2}:\d{2} [+-]\d{4})\] '
    r'(?P<http_host>\S+) "(?P<request>[^"]*)" (?P<status>\d{3}) (?P<body_bytes_sent>\d+) '
    r'(?P<request_time>\d+\.\d{3}) "(?P<http_referer>[^"]*)" "(?P<http_user_agent>[^"]*)" '
    r'(?P<upstream_addr>[^ ]+(?:, [^ ]+)*) (?P<upstream_status>[^ ]+(?:, [^ ]+)*) '
    r'(?P<upstream_response_time>[^ ]+(?:, [^ ]+)*) '
    r'"(?P<upstream_scheme>https?)://(?P<upstream_host>[^/"]*)(?P<upstream_uri>[^"]*)"$')


def log_path(gw, name="access.log"):
    return os.path.join(gw.dir, "logs", name)


def read_lines(path):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return []
    assert data == b"" or data.endswith(b"\n"), "a torn last line: %r" % data[-200:]
    return data.decode("latin-1").splitlines()


def wait_lines(path, pred, count=1, timeout=5.0):
    """The log's lines matching pred, once there are `count` of them (or the timeout)."""
    deadline = time.monotonic() + timeout
    while True:
        got = [line for line in read_lines(path) if pred(line)]
        if len(got) >= count or time.monotonic() > deadline:
            return got
        time.sleep(0.05)


def with_path(path):
    return lambda line: (' "GET %s ' % path) in line or (' "POST %s ' % path) in line


def fields(line):
    m = DEFAULT_LINE.match(line)
    assert m, "not APISIX's default format: %r" % line
    return m.groupdict()


def requests_total(gw):
    for name, _, value in parse_samples(scrape(gw).body.decode()):
        if name == "apisix_http_requests_total":
            return int(value)
    raise AssertionError("no apisix_http_requests_total")


# --------------------------------------------------------------------------- the default line


def test_default_format_line_field_by_field(make_gateway, upstream):
    gw = make_gateway(routes=[route("/get", upstream, rid="r1")], config=UNBUFFERED)
    r = get(gw.port, "/get?x=1&y=", host="api.example.com:8080",
            headers={"User-Agent": 'curl "quoted" \\ ua', "Referer": "http://ref.example/p",
                     "Authorization": "Basic dXNlcjpwYXNz"})
    assert r.status == 200
    [line] = wait_lines(log_path(gw), with_path("/get?x=1&y="))
    f = fields(line)
    assert f["remote_addr"] == "127.0.0.1"
    assert f["remote_user"] == "user"  # Basic user:pass
    assert abs(time.mktime(time.strptime(f["time_local"], "%d/%b/%Y:%H:%M:%S %z"))
               - time.time()) < 120
    assert f["http_host"] == "api.example.com:8080"
    assert f["request"] == "GET /get?x=1&y= HTTP/1.1"
    assert f["status"] == "200"
    assert int(f["body_bytes_sent"]) == len(r.body)
    assert float(f["request_time"]) < 5
    assert f["http_referer"] == "http://ref.example/p"
    assert f["http_user_agent"] == r"curl \x22quoted\x22 \x5C ua"  # nginx's default escape
    assert f["upstream_addr"] == "127.0.0.1:%d" % upstream.port
    assert f["upstream_status"] == "200"
    assert float(f["upstream_response_time"]) <= float(f["request_time"])
    # APISIX: $upstream_host is the Host sent upstream; $upstream_uri stays "" unless a plugin
    # (proxy-rewrite) sets it.
    assert (f["upstream_scheme"], f["upstream_host"], f["upstream_uri"]) == \
        ("http", "api.example.com:8080", "")


def test_gateway_answers_are_logged(make_gateway, upstream):
    dead = free_port()
    routes = [route("/dead", "127.0.0.1:%d" % dead, rid="dead"),
              route("/keyed", upstream, rid="keyed", plugins={"key-auth": {}}),
              route("/rewritten", upstream, rid="rw",
                    plugins={"proxy-rewrite": {"uri": "/elsewhere", "host": "inner.example"}})]
    gw = make_gateway(routes=routes, config=UNBUFFERED)
    assert get(gw.port, "/missing").status == 404
    assert get(gw.port, "/dead").status == 502
    assert get(gw.port, "/keyed").status == 401
    assert get(gw.port, "/rewritten?a=1").status == 200
    path = log_path(gw)
    [miss] = wait_lines(path, with_path("/missing"))
    f = fields(miss)
    assert (f["status"], f["upstream_addr"], f["upstream_status"],
            f["upstream_response_time"]) == ("404", "-", "-", "-")
    assert int(f["body_bytes_sent"]) == len(b'{"error_msg":"404 Route Not Found"}\n')
    [dead_line] = wait_lines(path, with_path("/dead"))
    f = fields(dead_line)
    assert (f["status"], f["upstream_addr"], f["upstream_status"]) == \
        ("502", "127.0.0.1:%d" % dead, "502")
    [keyed] = wait_lines(path, with_path("/keyed"))
    assert (fields(keyed)["status"], fields(keyed)["upstream_addr"]) == ("401", "-")
    [rw] = wait_lines(path, with_path("/rewritten?a=1"))
    f = fields(rw)
    assert (f["upstream_host"], f["upstream_uri"]) == ("inner.example", "/elsewhere?a=1")
    # Each request once: none of them left a second line.
    for p in ("/missing", "/dead", "/keyed", "/rewritten?a=1"):
        assert len(wait_lines(path, with_path(p), timeout=0)) == 1, p


def test_bad_requests_and_unfinished_heads_are_logged(make_gateway, upstream):
    gw = make_gateway(routes=[route("/*", upstream, rid="all")],
                      config={"nginx_config": {"http": {"access_log_buffer": 1,
                                                        "client_header_timeout": "1s"}}})
    path = log_path(gw)
    with Client(gw.port) as c:
        c.send(b"GET / HTTP/1.1\r\nHost: a\r\nBad Header\r\n\r\n")
        assert c.read_response().status == 400
    with Client(gw.port) as c:  # a head cut short by the client: 400
        c.send(b"GET /partial HTTP/1.1\r\nHost: a\r\n")
    with Client(gw.port) as c:  # a head that never completes: 408 on the header timeout
        c.send(b"GET /slow HTTP/1.1\r\n")
        assert c.closed_by_peer(timeout=5)
    lines = wait_lines(path, lambda l: ' "-" 40' in l, count=3)
    statuses = sorted(fields(l)["status"] for l in lines)
    assert statuses == ["400", "400", "408"], lines
    for line in lines:
        assert fields(line)["request"] == "-"  # no request line was parsed whole


def test_client_body_timeout_is_408(make_gateway, upstream):
    gw = make_gateway(routes=[route("/upload", upstream, rid="up")],
                      config={"nginx_config": {"http": {"access_log_buffer": 1,
                                                        "client_body_timeout": "1s"}}})
    with Client(gw.port) as c:
        c.send(b"POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nabc")
        assert c.closed_by_peer(timeout=5)
    [line] = wait_lines(log_path(gw), with_path("/upload"))
    f = fields(line)
    assert (f["status"], f["body_bytes_sent"]) == ("408", "0")  # nginx's client_body_timeout


def test_client_gone_is_499(make_gateway, make_upstream):
    slow = make_upstream("slow", default=Delay(3))
    gw = make_gateway(routes=[route("/slow", slow, rid="slow")], config=UNBUFFERED)
    with Client(gw.port) as c:
        c.send(b"GET /slow HTTP/1.1\r\nHost: a\r\n\r\n")
        time.sleep(0.5)
        # A reset: the gateway notices it while it waits for the upstream (a plain close is
        # noticed when the answer is written, and logged with the answer's status).
        c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    [line] = wait_lines(log_path(gw), with_path("/slow"), timeout=6)
    f = fields(line)
    assert (f["status"], f["body_bytes_sent"]) == ("499", "0")
    assert f["upstream_addr"] == "127.0.0.1:%d" % slow.port
    assert f["upstream_status"] == "-"  # the try ended without an answer


def test_websocket_tunnel_is_one_line_when_it_ends(make_gateway, make_upstream):
    # The upstream switches, sends 5 bytes through the tunnel and closes: nginx logs the
    # upgraded request once, when its connection closes, with status 101.
    ws = make_upstream("ws", default=Raw(b"HTTP/1.1 101 Switching Protocols\r\n"
                                         b"Upgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
                                         b"hello"))
    gw = make_gateway(routes=[route("/ws", ws, rid="ws", enable_websocket=True)],
                      config=UNBUFFERED)
    with Client(gw.port) as c:
        c.send(b"GET /ws HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        assert c.read_head().status == 101
        assert c.reader.read_exact(5) == b"hello"
        assert c.closed_by_peer(timeout=5)
    [line] = wait_lines(log_path(gw), with_path("/ws"))
    f = fields(line)
    assert (f["status"], f["body_bytes_sent"], f["upstream_status"]) == ("101", "5", "101")


# --------------------------------------------------------------------------- formats


def test_custom_format_lists_every_try(make_gateway, upstream):
    dead = free_port()
    up = {"type": "roundrobin", "retries": 1,
          "nodes": [{"host": "127.0.0.1", "port": dead, "weight": 100},
                    {"host": "127.0.0.1", "port": upstream.port, "weight": 1}]}
    gw = make_gateway(routes=[{"id": "two", "uri": "/two", "upstream": up}],
                      config={"nginx_config": {"http": {
                          "access_log_buffer": 1,
                          "access_log_format": "$upstream_addr|$upstream_status|$request_time|"
                                               "$upstream_connect_time|$request_uri"}}})
    assert get(gw.port, "/two").status == 200
    [line] = wait_lines(log_path(gw), lambda l: l.endswith("|/two"))
    addrs, statuses, request_time, connect, _ = line.split("|")
    assert addrs == "127.0.0.1:%d, 127.0.0.1:%d" % (dead, upstream.port)
    assert statuses == "502, 200"
    assert re.fullmatch(r"\d+\.\d{3}", request_time)
    assert re.fullmatch(r"-, \d+\.\d{3}", connect), connect  # the refused try never connected


def test_json_escape_gives_json_lines(make_gateway, upstream):
    fmt = ('{"time":"$time_iso8601","addr":"$remote_addr","request":"$request",'
           '"status":$status,"ua":"$http_user_agent","user":"$remote_user",'
           '"upstream":"$upstream_addr","route":"$route_id","length":$request_length,'
           '"uri":"$uri"}')
    gw = make_gateway(routes=[route("/j*", upstream, rid="jr")],
                      config={"nginx_config": {"http": {"access_log_buffer": 1,
                                                        "access_log_format": fmt,
                                                        "access_log_format_escape": "json"}}})
    ua = 'tab\there "quote" back\\slash é'
    with Client(gw.port) as c:
        req = ("GET /j HTTP/1.1\r\nHost: a\r\nUser-Agent: %s\r\n\r\n" % ua).encode("utf-8")
        c.send(req)
        assert c.read_response().status == 200
    [line] = wait_lines(log_path(gw), lambda l: '"GET /j HTTP/1.1"' in l)
    doc = json.loads(line.encode("latin-1").decode("utf-8"))
    assert doc["ua"] == ua
    assert doc["status"] == 200
    assert doc["user"] == ""  # not there: json prints nothing, not "-"
    assert doc["route"] == "jr"
    assert doc["upstream"] == "127.0.0.1:%d" % upstream.port
    assert doc["length"] == len(req)
    assert doc["uri"] == "/j"
    assert "tab\\there" in line  # a control byte (the tab) in escape=json's form
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d", doc["time"])


def test_route_consumer_request_id_and_admin_lines(make_gateway, upstream):
    gw = make_gateway(admin=True, config={
        "nginx_config": {"http": {"access_log_buffer": 1, "access_log_format":
                                  "$request_method $uri $status $route_id $consumer_name "
                                  "$request_id $upstream_addr"}}})
    assert gw.admin("PUT", "/consumers", {"username": "jack",
                                          "plugins": {"key-auth": {"key": "k1"}}}).status in (200, 201)
    r = gw.admin("PUT", "/routes/r7", {"uri": "/ident", "plugins": {"key-auth": {},
                                                                    "request-id": {}},
                                       "upstream": {"type": "roundrobin",
                                                    "nodes": {"127.0.0.1:%d" % upstream.port: 1}}})
    assert r.status in (200, 201)
    deadline = time.monotonic() + 5
    while True:
        resp = get(gw.port, "/ident", headers={"apikey": "k1"})
        if resp.status == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert resp.status == 200
    rid = resp.header("X-Request-Id")
    path = log_path(gw)
    [line] = wait_lines(path, lambda l: l.startswith("GET /ident 200 "))
    assert line == "GET /ident 200 r7 jack %s 127.0.0.1:%d" % (rid, upstream.port)
    # The Admin API's answers are lines too (APISIX's admin server logs its requests).
    admin_lines = wait_lines(path, lambda l: l.startswith("PUT /apisix/admin/routes/r7 "))
    assert len(admin_lines) == 1 and admin_lines[0].split()[2] in ("200", "201")
    # No request-id plugin: nginx's own $request_id, 32 hex digits.
    get(gw.port, "/nothing-here")
    [miss] = wait_lines(path, lambda l: l.startswith("GET /nothing-here 404 "))
    assert re.fullmatch(r"GET /nothing-here 404 - - [0-9a-f]{32} -", miss), miss


# --------------------------------------------------------------------------- off and buffering


@pytest.mark.parametrize("http", [{"enable_access_log": False}, {"access_log": "off"}])
def test_off_writes_nothing(make_gateway, upstream, http):
    gw = make_gateway(routes=[route("/x", upstream)], config={"nginx_config": {"http": http}})
    for _ in range(5):
        assert get(gw.port, "/x").status == 200
    gw.stop()
    assert not os.path.exists(os.path.join(gw.dir, "logs"))


def test_buffered_lines_go_out_on_the_timer_and_at_stop(make_gateway, upstream):
    gw = make_gateway(routes=[route("/b", upstream)])  # APISIX's buffer: 16384 bytes, 3 s
    path = log_path(gw)
    read_lines(path)  # the probe's line may be there or not
    assert get(gw.port, "/b?1").status == 200
    time.sleep(0.5)
    assert not [l for l in read_lines(path) if "/b?1" in l], "written before the buffer filled"
    assert wait_lines(path, with_path("/b?1"), timeout=5)  # the flush timer (3 s)
    for i in range(3):
        get(gw.port, "/b?late%d" % i)
    gw.stop()
    assert len([l for l in read_lines(path) if "/b?late" in l]) == 3  # flushed at the stop


# --------------------------------------------------------------------------- under load


def _load_gateway(make_gateway, upstream, **http):
    cfg = {"nginx_config": {"http": dict(http)}}
    return make_gateway(routes=[route("/load", upstream, rid="load")], workers=4, config=cfg)


def _all_lines(gw):
    d = os.path.join(gw.dir, "logs")
    lines = []
    for name in sorted(os.listdir(d)):
        lines += read_lines(os.path.join(d, name))
    return lines


def _check_whole(lines):
    for line in lines:
        fields(line)  # every line whole: a torn or interleaved one does not parse


@pytest.mark.load
def test_four_workers_one_line_per_request(make_gateway, upstream):
    gw = _load_gateway(make_gateway, upstream)
    res = run_wrk(gw.url("/load"), threads=2, conns=32, duration=3)
    assert res["requests"] > 200 and res["non2xx"] == 0, res
    time.sleep(0.5)  # connections wrk left are closed and their requests logged
    total = requests_total(gw)
    gw.stop()
    lines = _all_lines(gw)
    _check_whole(lines)
    assert len(lines) == total, (len(lines), total)
    assert len([l for l in lines if " /load " in l and ' 200 ' in l]) >= res["requests"]


@pytest.mark.load
def test_logrotate_under_load_loses_no_line(make_gateway, upstream, tmp_path):
    logrotate = "/usr/sbin/logrotate"
    if not os.access(logrotate, os.X_OK):
        pytest.skip("logrotate is not installed (scripts/setup installs it)")
    gw = _load_gateway(make_gateway, upstream, access_log_buffer=4096)
    conf = tmp_path / "logrotate.conf"
    conf.write_text("%s {\n  rotate 100\n  missingok\n  nocompress\n  postrotate\n"
                    "    kill -USR1 %d\n  endscript\n}\n" % (log_path(gw), gw.pid))
    wrk = WrkRun(gw.url("/load"), threads=2, conns=16, duration=5)
    rotations = 0
    while wrk.running():
        time.sleep(0.4)
        subprocess.run([logrotate, "-f", "-s", str(tmp_path / "state"), str(conf)],
                       check=True, capture_output=True, timeout=30)
        rotations += 1
    res = wrk.stop()
    assert res["requests"] > 200 and res["non2xx"] == 0, res
    time.sleep(0.5)
    total = requests_total(gw)
    gw.stop()
    assert rotations >= 5
    rotated = [n for n in os.listdir(os.path.join(gw.dir, "logs")) if n != "access.log"]
    assert len(rotated) >= 5, rotated
    lines = _all_lines(gw)
    _check_whole(lines)
    assert len(lines) == total, (len(lines), total)
    assert "SIGUSR1: reopening" in gw.log_text()


# --------------------------------------------------------------------------- reopen and rotation


def test_sigusr1_reopens_after_the_file_moved(make_gateway, upstream):
    gw = make_gateway(routes=[route("/r", upstream)], workers=2, config=UNBUFFERED)
    path = log_path(gw)
    assert get(gw.port, "/r?before").status == 200
    wait_lines(path, with_path("/r?before"))
    os.rename(path, path + ".old")
    assert get(gw.port, "/r?moved").status == 200  # still written to the moved file
    start = gw.log_size()
    gw.signal(signal.SIGUSR1)
    assert gw.wait_for_log(r"SIGUSR1: reopening", start=start)
    deadline = time.monotonic() + 5
    while not os.path.exists(path) and time.monotonic() < deadline:
        get(gw.port, "/r?after")
        time.sleep(0.05)
    assert get(gw.port, "/r?after").status == 200
    assert wait_lines(path, with_path("/r?after"))
    old = read_lines(path + ".old")
    assert [l for l in old if "/r?before" in l] and [l for l in old if "/r?moved" in l]
    assert not [l for l in read_lines(path) if "/r?before" in l or "/r?moved" in l]
    assert gw.alive()  # SIGUSR1 used to be the default action: the process ended


def test_builtin_rotation_by_size(make_gateway, upstream):
    gw = make_gateway(routes=[route("/s", upstream)], config={
        "nginx_config": {"http": {"access_log_buffer": 1}},
        "sluice": {"access_log_rotate": {"max_size": 2000, "keep": 2}}})
    for i in range(40):  # about 150 bytes a line: 6000 bytes, three rotations' worth
        assert get(gw.port, "/s?%d" % i).status == 200
        time.sleep(0.02)
    deadline = time.monotonic() + 5
    while not os.path.exists(log_path(gw, "access.log.2")) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.5)
    gw.stop()
    names = sorted(os.listdir(os.path.join(gw.dir, "logs")))
    assert names == ["access.log", "access.log.1", "access.log.2"], names
    for name in ("access.log.1", "access.log.2"):
        size = os.path.getsize(log_path(gw, name))
        assert 2000 <= size < 4000, (name, size)  # checked every 200 ms: a little over
    _check_whole(_all_lines(gw))
    assert "access log rotated" in gw.log_text()


# --------------------------------------------------------------------------- refusals, failures


@pytest.mark.parametrize("http,sluice,error", [
    ({"access_log_format": "$remote_addr $bogus"}, None,
     'config.yaml: nginx_config.http.access_log_format: unknown "bogus" variable'),
    ({"access_log_format_escape": "xml"}, None,
     "config.yaml: nginx_config.http.access_log_format_escape: expected default, json or none"),
    ({"access_log": "/proc/no/such/dir/access.log"}, None,
     "nginx_config.http.access_log: cannot create /proc/no/such/dir"),
    ({"enable_access_log": False}, {"access_log_rotate": {"max_size": "1m"}},
     "config.yaml: sluice.access_log_rotate: the access log is off"),
])
def test_bad_settings_stop_the_start(make_gateway, http, sluice, error):
    cfg = {"nginx_config": {"http": http}}
    if sluice:
        cfg["sluice"] = sluice
    gw = make_gateway(start=False, check_exit=False, config=cfg)
    with pytest.raises(GatewayError):
        gw.start()
    assert gw.wait_exit(10) not in (None, 0)
    assert error in gw.log_text(), gw.log_tail()


def test_full_disk_keeps_serving(make_gateway, upstream):
    if not os.access("/dev/full", os.W_OK):
        pytest.skip("no writable /dev/full here")
    gw = make_gateway(routes=[route("/f", upstream)],
                      config={"nginx_config": {"http": {"access_log": "/dev/full",
                                                        "access_log_buffer": 1}}})
    for _ in range(20):
        assert get(gw.port, "/f").status == 200
    m = gw.wait_for_log(r"access log /dev/full: write failed: No space left on device")
    assert m, gw.log_tail()
    # Rate-limited: one report per worker and ten seconds, not one per request.
    assert gw.log_text().count("access log /dev/full: write failed") <= 2
