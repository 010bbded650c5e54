"""Scenario 2 on nginx and HAProxy: the nearest equivalents of limit-count + prometheus run
in the same process as scenario 1, on their own port, and take effect on every answer; the
metrics endpoints answer. Real nginx, HAProxy and upstream on loopback."""

import shutil

import pytest

from benchkit import procs, targets


@pytest.fixture
def upstream(tmp_path):
    if not targets.have_nginx():
        pytest.fail("nginx is installed by scripts/setup; run it")
    up = targets.Upstream("nginx", str(tmp_path), "/bin/true", None)
    yield up
    up.stop()


def headers_of(url):
    status, headers, body = targets.http_get(url)
    assert status == 200 and body == b"hello world\n", (url, status, body)
    return {k.lower(): v for k, v in headers.items()}


def both_scenarios(t, header):
    """Sets t up for both scenarios; returns `header` of three scenario 2 answers."""
    assert t.scenarios() == [1, 2]
    assert t.url_for(1) == t.url and t.url_for(2) != t.url
    for s in (1, 2):
        t.setup(s)
    assert header not in headers_of(t.url_for(1))  # scenario 1: no limit
    seen = [headers_of(t.url_for(2)).get(header) for _ in range(3)]
    assert t.metrics_checked
    # One process tree serves both: switching scenarios restarts nothing.
    assert len(t.pids) == 1 and procs.pid_alive(t.pids[0])
    return seen


def test_nginx_scenario_2_is_limit_req_and_stub_status(tmp_path, upstream):
    t = targets.Nginx(upstream, str(tmp_path), 1, None)
    try:
        # limit_req ran for every answer, and let it pass.
        assert both_scenarios(t, "x-limit-req-status") == ["PASSED"] * 3
        status, _, body = targets.http_get(t.metrics_url)
        assert status == 200 and b"Active connections" in body
    finally:
        t.stop()


def test_haproxy_scenario_2_is_a_stick_table_rate_and_prometheus(tmp_path, upstream):
    if not shutil.which("haproxy"):
        pytest.fail("haproxy is installed by scripts/setup; run it")
    t = targets.HAProxy(upstream, str(tmp_path), 1, None)
    try:
        rates = [int(v) for v in both_scenarios(t, "x-req-rate")]
        # The source's counter counts every request: one more on each answer.
        assert rates[1] == rates[0] + 1 and rates[2] == rates[1] + 1
        status, _, body = targets.http_get(t.metrics_url)
        assert status == 200 and b"haproxy_process_" in body
    finally:
        t.stop()
