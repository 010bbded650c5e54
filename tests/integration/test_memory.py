"""Issue 20, item 4: memory freed after a burst goes back to the system.

glibc keeps what a worker thread frees in that thread's arena: after bursts of connections that
stall (they then held a read buffer each, even when silent), or after a rejected hostile
apisix.yaml, RSS stayed at 5-9x its value before
the burst while the allocator had a tenth of it in use. The gateway now trims (see
src/runtime/memory_trim.h); RSS must come back within 2x of its pre-burst value.
"""

import os
import resource
import socket
import time

import pytest

import harness
from harness import get, route, vm_rss_kib

BOUND = 2.0
SETTLE_S = 15  # the trim check runs once a second; jemalloc-style decay takes longer


def _sanitized(binary):
    if not os.path.exists(binary):
        return False  # the harness says so when a gateway starts
    with open(binary, "rb") as f:
        data = f.read()
    return b"__asan_init" in data or b"__tsan_init" in data


pytestmark = pytest.mark.skipif(
    _sanitized(harness.SLUICE_BIN),
    reason="a sanitizer build: its allocator keeps freed memory in quarantine, so RSS after a "
           "burst says nothing about glibc")


def settle_below(pid, limit_kib, timeout=SETTLE_S):
    deadline = time.monotonic() + timeout
    while True:
        rss = vm_rss_kib(pid)
        if rss <= limit_kib or time.monotonic() > deadline:
            return rss
        time.sleep(0.25)


def open_stalled(port, n):
    """n connections that send half a request head and stop: each makes the gateway take a
    read buffer and a request's state (a connection that sends nothing takes neither now)."""
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"GET /burst HTTP/1.1\r\nHost: x\r\n")
        socks.append(s)
    return socks


def test_rss_returns_after_bursts_of_stalled_connections(make_gateway, upstream):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    n = min(8000, hard - 200)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, n + 100), hard))
    gw = make_gateway(routes=[route("/*", upstream)], workers=2)
    for _ in range(200):
        assert get(gw.port, "/warm").status == 200
    time.sleep(1.5)
    base = vm_rss_kib(gw.pid)
    peaks = []
    for _ in range(3):
        socks = open_stalled(gw.port, n)
        time.sleep(1.0)
        peaks.append(vm_rss_kib(gw.pid))
        for s in socks:
            s.close()
        time.sleep(0.5)
        for _ in range(20):
            assert get(gw.port, "/between").status == 200
    assert max(peaks) > 2 * base, "the burst did not grow RSS (%d -> %r KiB): no test" % (
        base, peaks)
    rss = settle_below(gw.pid, BOUND * base)
    assert rss <= BOUND * base, "RSS %d KiB after the bursts, %d KiB before (peaks %r)" % (
        rss, base, peaks)
    assert get(gw.port, "/after").status == 200


def test_rss_returns_after_a_rejected_hostile_apisix_yaml(make_gateway, upstream):
    gw = make_gateway(routes=[route("/*", upstream)], workers=2)
    time.sleep(1.5)
    base = vm_rss_kib(gw.pid)
    # 60,000 small mappings, then an invalid route: parsed whole, then rejected.
    items = "".join("  - {id: r%d, uri: /x%d, upstream: {nodes: {\"127.0.0.1:1\": 1}}}\n"
                    % (i, i) for i in range(60000))
    text = "routes:\n" + items + "  - {id: bad, uri: 7}\n#END\n"
    start = gw.log_size()
    gw.write_apisix_text(text)
    assert gw.wait_for_log(r"apisix\.yaml.*rejected", timeout=120, start=start), gw.log_tail()
    peak = vm_rss_kib(gw.pid)
    assert peak > 2 * base, "parsing did not grow RSS (%d -> %d KiB): no test" % (base, peak)
    rss = settle_below(gw.pid, BOUND * base)
    assert rss <= BOUND * base, "RSS %d KiB after the rejected file, %d KiB before (peak %d)" % (
        rss, base, peak)
    assert get(gw.port, "/still").status == 200
