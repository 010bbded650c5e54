"""Issue 2, point 6 (under load): config changes while wrk drives traffic fail no request.

wrk -t2 -c16 runs for a few seconds (SLUICE_LOAD_SECONDS, default 5) while apisix.yaml is
rewritten again and again; wrk must report no non-2xx answer and no socket error.
"""

import os
import signal
import threading
import time

import pytest

from harness import get, route, run_wrk

pytestmark = pytest.mark.load

SECONDS = int(os.environ.get("SLUICE_LOAD_SECONDS", "5"))


def _start_wrk(url):
    result = {}

    def run():
        try:
            result.update(run_wrk(url, threads=2, conns=16, duration=SECONDS))
        except Exception as e:  # surfaced by _check
            result["error"] = repr(e)

    t = threading.Thread(target=run)
    t.start()
    time.sleep(0.5)  # let wrk connect
    return t, result


def _check(result, changes):
    assert "error" not in result, result["error"]
    print(result["output"])
    print("config changes during the run: %d" % changes)
    assert result["requests"] > 100, "wrk barely ran: %r" % result
    assert result["non2xx"] == 0, "non-2xx answers under reload: %s" % result["statuses"]
    errors = {k: result[k] for k in ("connect", "read", "write", "timeout")}
    assert not any(errors.values()), "socket errors under reload: %r" % errors


def test_file_changes_under_load_fail_no_request(make_gateway, upstream):
    gw = make_gateway(routes=[route("/stable", upstream, rid="stable")], workers=2)
    assert get(gw.port, "/stable").status == 200
    t, result = _start_wrk(gw.url("/stable"))
    changes = 0
    while t.is_alive():
        changes += 1
        extra = [route("/gen/%d/%d" % (changes, i), upstream, rid="g%d" % i)
                 for i in range(changes % 7 + 1)]
        extra.append(route("/churn", upstream, rid="churn", priority=changes))
        gw.update_routes([route("/stable", upstream, rid="stable")] + extra, timeout=5)
        assert get(gw.port, "/gen/%d/0" % changes).status == 200
        time.sleep(0.1)
    t.join()
    _check(result, changes)
    assert changes >= 5


def test_loaded_route_modified_under_load_fails_no_request(make_gateway, make_upstream):
    """The route under load itself flips between two upstreams (and gains fields)."""
    a, b = make_upstream("a"), make_upstream("b")
    gw = make_gateway(routes=[route("/hot", a, rid="hot")], workers=2)
    t, result = _start_wrk(gw.url("/hot"))
    changes = 0
    while t.is_alive():
        changes += 1
        target = b if changes % 2 else a
        r = route("/hot", target, rid="hot", priority=changes % 3,
                  methods=["GET", "POST"] if changes % 2 else ["GET"])
        gw.update_routes([r], timeout=5)
        time.sleep(0.15)
    t.join()
    _check(result, changes)
    assert a.requests_for("/hot") and b.requests_for("/hot"), "both upstreams should serve"


def test_sighup_under_load_fails_no_request(make_gateway, upstream):
    gw = make_gateway(routes=[route("/stable", upstream, rid="stable")], workers=2)
    t, result = _start_wrk(gw.url("/stable"))
    hups = 0
    while t.is_alive():
        gw.signal(signal.SIGHUP)
        hups += 1
        time.sleep(0.25)
    t.join()
    _check(result, hups)
    assert gw.alive()
