"""Fixtures for Sluice's integration tests.

The gateway under test is $SLUICE_BIN (default: <repo>/build/sluice). Every gateway and fake
upstream gets free loopback ports and a private temp directory, and is stopped by PID at the
end of its test, so the suite can run twice in a row or next to another copy of itself.
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402
from fake_upstream import FakeUpstream  # noqa: E402

SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "runtime error:", "ERROR: LeakSanitizer",
                     "WARNING: ThreadSanitizer")


def pytest_configure(config):
    config.addinivalue_line("markers", "streaming: 1 GiB transfers (about a minute); "
                            "SLUICE_SKIP_SLOW=1 skips them")
    config.addinivalue_line("markers", "load: runs wrk against the gateway; "
                            "SLUICE_SKIP_SLOW=1 skips them")
    config.addinivalue_line("markers", "serial: measures time or capacity; run alone, after "
                            "the parallel part of the suite")


def pytest_collection_modifyitems(config, items):
    if os.environ.get("SLUICE_SKIP_SLOW") != "1":
        return
    skip = pytest.mark.skip(reason="SLUICE_SKIP_SLOW=1: slow streaming/load test not run")
    for item in items:
        if "streaming" in item.keywords or "load" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def make_upstream():
    """Factory: make_upstream(name) -> a started FakeUpstream; all stopped afterwards."""
    ups = []

    def make(name=None, **kw):
        up = FakeUpstream(name=name or "up%d" % (len(ups) + 1), **kw)
        ups.append(up)
        return up

    yield make
    for up in ups:
        up.stop()


@pytest.fixture
def upstream(make_upstream):
    return make_upstream("up")


def _finish_gateway(gw, check_exit):
    """Stops a gateway; prints its log (shown by pytest when the test fails)."""
    was_alive = gw.alive()
    rc = gw.stop()
    log = gw.log_text()
    print("\n--- sluice log (%s, pid %s, exit %s) ---\n%s" % (
        gw.dir, gw.proc.pid if gw.proc else None, rc, "\n".join(log.splitlines()[-150:])))
    problems = [m for m in SANITIZER_MARKERS if m in log]
    if problems:
        pytest.fail("sanitizer report in the gateway's log: %s" % problems, pytrace=False)
    if check_exit and was_alive and rc != 0:
        pytest.fail("gateway exited with %r on SIGTERM (expected 0)" % (rc,), pytrace=False)


@pytest.fixture
def make_gateway(tmp_path, make_upstream):
    """Factory: make_gateway(routes=[...], workers=1, start=True, ...) -> Gateway.

    make_gateway(admin=True, ...) makes an embedded-store gateway with the Admin API instead
    (see harness.Gateway for admin_keys, admin_listen, allow_admin, data_dir).

    Teardown sends SIGTERM by PID and checks the exit code is 0 (pass check_exit=False to
    skip that for a test that leaves the gateway in a state where 0 is not expected).
    Depends on make_upstream so that gateways stop before the upstreams they proxy to.
    """
    gws = []

    def make(start=True, check_exit=True, **kw):
        gw = harness.Gateway(tmp_path / ("gw%d" % (len(gws) + 1)), **kw)
        gws.append((gw, check_exit))
        if start:
            gw.start()
        return gw

    yield make
    for gw, check_exit in gws:
        _finish_gateway(gw, check_exit)


@pytest.fixture
def admin_gw(make_gateway):
    """A running gateway (2 workers) in embedded mode: an empty store, the Admin API on a
    free port, an admin key (admin_gw.admin_key) and a viewer key (admin_gw.viewer_key)."""
    return make_gateway(admin=True, workers=2)


@pytest.fixture
def gw(upstream, make_gateway):
    """A running gateway (2 workers) routing every path to the echo `upstream`."""
    return make_gateway(routes=[harness.route("/*", upstream, rid="all")], workers=2)


# --------------------------------------------------------------------------- etcd


def _etcd_cluster(tmp_path, name, members):
    from etcd_cluster import EtcdCluster
    cluster = EtcdCluster(tmp_path / name, members=members)
    try:
        cluster.start()
    except BaseException:
        cluster.close()
        raise
    return cluster


@pytest.fixture
def etcd(tmp_path):
    """A running 1-member etcd cluster on free loopback ports (etcd_cluster.EtcdCluster:
    etcd.urls, etcd.put/get/get_kv/ctl/compact/revision, stop_member/kill_member/
    start_member, wipe). Stopped by PID at teardown, data dirs deleted, member logs printed.
    Name it before make_gateway in a test's arguments so gateways stop before etcd does."""
    cluster = _etcd_cluster(tmp_path, "etcd", 1)
    yield cluster
    cluster.close()


@pytest.fixture
def etcd3(tmp_path):
    """A running 3-member etcd cluster (see `etcd`)."""
    cluster = _etcd_cluster(tmp_path, "etcd3", 3)
    yield cluster
    cluster.close()
