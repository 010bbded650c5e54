"""limit-conn (issue 24): APISIX's documented examples as published (docs/en/latest/plugins/
limit-conn.md, commit 03179ae; only ports and the upstream address replaced), with a slow
upstream so that the requests really overlap; exactness over 4 workers and many
connections; the count released once per request whether it was proxied, answered by another
plugin or abandoned by its client; delays; and the redis policy across two gateways."""

import re
import socket
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from fake_upstream import Delay
from harness import OMIT, admin_route, get, wait_until
from test_apisix_docs import Doc, HttpbinEcho
from test_plugins_redis import make_redis  # noqa: F401 (a fixture)


def _put(gw, rid, uri, up, conf, **extra):
    r = gw.admin("PUT", "/routes/%s" % rid, admin_route(uri, up, plugins={"limit-conn": conf},
                                                        **extra))
    assert r.status in (200, 201), r
    return r


@pytest.fixture
def doc(make_gateway, make_upstream):
    up = make_upstream("httpbin.org", default=HttpbinEcho())
    # Every answer takes 1 s: the pages' five concurrent requests are in flight together.
    up.route("/get", Delay(1.0, HttpbinEcho()))
    gw = make_gateway(admin=True, admin_keys=OMIT, workers=2)
    return Doc(gw, [up, up, up])


FIVE = '''
seq 1 5 | xargs -n1 -P5 bash -c 'curl -s -o /dev/null -w "Response: %{http_code}\\n" "http://127.0.0.1:9080/get"'
'''


def _codes(out):
    return sorted(re.findall(r"Response: (\d+)", out))


def test_doc_rate_limiting_by_remote_address(doc):
    r = doc.run('''
        curl "http://127.0.0.1:9180/apisix/admin/routes" -X PUT \\
          -H "X-API-KEY: ${admin_key}" \\
          -d '{
            "id": "limit-conn-route",
            "uri": "/get",
            "plugins": {
              "limit-conn": {
                "conn": 2,
                "burst": 1,
                "default_conn_delay": 0.1,
                "key_type": "var",
                "key": "remote_addr",
                "policy": "local",
                "rejected_code": 429
              }
            },
            "upstream": {
              "type": "roundrobin",
              "nodes": {
                "httpbin.org:80": 1
              }
            }
          }'
        ''')
    assert r.status == 201, r
    assert _codes(doc.sh(FIVE)) == ["200", "200", "200", "429", "429"]


def test_doc_rate_limiting_by_remote_address_and_consumer(doc):
    for cmd in ('''
        curl "http://127.0.0.1:9180/apisix/admin/consumers" -X PUT \\
          -H "X-API-KEY: ${admin_key}" \\
          -d '{
            "username": "john"
          }'
        ''', '''
        curl "http://127.0.0.1:9180/apisix/admin/consumers/john/credentials" -X PUT \\
          -H "X-API-KEY: ${admin_key}" \\
          -d '{
            "id": "cred-john-key-auth",
            "plugins": {
              "key-auth": {
                "key": "john-key"
              }
            }
          }'
        ''', '''
        curl "http://127.0.0.1:9180/apisix/admin/consumers" -X PUT \\
          -H "X-API-KEY: ${admin_key}" \\
          -d '{
            "username": "jane"
          }'
        ''', '''
        curl "http://127.0.0.1:9180/apisix/admin/consumers/jane/credentials" -X PUT \\
          -H "X-API-KEY: ${admin_key}" \\
          -d '{
            "id": "cred-jane-key-auth",
            "plugins": {
              "key-auth": {
                "key": "jane-key"
              }
            }
          }'
        ''', '''
        curl "http://127.0.0.1:9180/apisix/admin/routes" -X PUT \\
          -H "X-API-KEY: ${admin_key}" \\
          -d '{
            "id": "limit-conn-route",
            "uri": "/get",
            "plugins": {
              "key-auth": {},
              "limit-conn": {
                "conn": 2,
                "burst": 1,
                "default_conn_delay": 0.1,
                "rejected_code": 429,
                "key_type": "var_combination",
                "key": "$remote_addr $consumer_name"
              }
            },
            "upstream": {
              "type": "roundrobin",
              "nodes": {
                "httpbin.org:80": 1
              }
            }
          }'
        '''):
        r = doc.run(cmd)
        assert r.status in (200, 201), (cmd, r)
    out = doc.sh('''
        seq 1 5 | xargs -n1 -P5 bash -c 'curl -s -o /dev/null -w "Response: %{http_code}\\n" "http://127.0.0.1:9080/get" -H "apikey: john-key"'
        ''')
    assert _codes(out) == ["200", "200", "200", "429", "429"], out
    out = doc.sh('''
        seq 1 5 | xargs -n1 -P5 bash -c 'curl -s -o /dev/null -w "Response: %{http_code}\\n" "http://127.0.0.1:9080/get" -H "apikey: jane-key"'
        ''')
    assert _codes(out) == ["200", "200", "200", "429", "429"], out


# ----------------------------------------------------------------- exactness and release

def _slow(make_upstream, seconds):
    up = make_upstream("slow")
    up.route("/*", Delay(seconds))
    return up


def test_exactly_conn_plus_burst_in_flight_over_4_workers(make_gateway, make_upstream):
    up = _slow(make_upstream, 3.0)
    gw = make_gateway(admin=True, workers=4)
    _put(gw, 1, "/c", up, {"conn": 6, "burst": 2, "default_conn_delay": 0.01,
                           "only_use_default_delay": True, "key": "remote_addr",
                           "rejected_code": 429})

    def one(_):
        return get(gw.port, "/c", timeout=30).status

    with ThreadPoolExecutor(40) as ex:
        statuses = list(ex.map(one, range(40)))
    assert statuses.count(200) == 8 and statuses.count(429) == 32, \
        (statuses.count(200), statuses.count(429), set(statuses))
    # All released: the next wave gets the same.
    with ThreadPoolExecutor(12) as ex:
        statuses = list(ex.map(one, range(12)))
    assert statuses.count(200) == 8 and statuses.count(429) == 4, statuses


def test_burst_requests_are_delayed(make_gateway, make_upstream):
    up = _slow(make_upstream, 1.0)
    gw = make_gateway(admin=True, workers=2)
    _put(gw, 1, "/d", up, {"conn": 1, "burst": 1, "default_conn_delay": 0.5,
                           "only_use_default_delay": True, "key": "remote_addr"})
    with ThreadPoolExecutor(2) as ex:
        first = ex.submit(get, gw.port, "/d", timeout=10)
        time.sleep(0.2)
        t0 = time.monotonic()
        second = ex.submit(get, gw.port, "/d", timeout=10)
        assert first.result().status == 200
        assert second.result().status == 200
        # 0.5 s in the bucket, then 1 s at the upstream.
        assert time.monotonic() - t0 >= 1.4


def _open(gw, path):
    s = socket.create_connection(("127.0.0.1", gw.port))
    s.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    return s


def _until_admitted(gw, path, timeout=8.0):
    """Requests `path` until one is admitted (200); 429 meanwhile. False on timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = get(gw.port, path, timeout=10)
        if r.status == 200:
            return True
        assert r.status == 429, r
        time.sleep(0.1)
    return False


def test_released_when_the_client_goes_at_the_upstream(make_gateway, make_upstream):
    up = _slow(make_upstream, 1.5)
    gw = make_gateway(admin=True, workers=2)
    _put(gw, 1, "/a", up, {"conn": 1, "burst": 0, "default_conn_delay": 0.1,
                           "key": "remote_addr", "rejected_code": 429})
    for _ in range(3):
        s = _open(gw, "/a")  # admitted, then waits at the upstream
        time.sleep(0.3)
        assert get(gw.port, "/a", timeout=10).status == 429  # its place is taken
        s.close()  # the client gives up: the log phase gives the place back
        assert _until_admitted(gw, "/a"), "not released after the client went"


def test_released_once_when_the_client_goes_while_delayed(make_gateway, make_upstream):
    up = _slow(make_upstream, 1.0)
    gw = make_gateway(admin=True, workers=2)
    _put(gw, 1, "/dl", up, {"conn": 1, "burst": 1, "default_conn_delay": 1,
                            "only_use_default_delay": True, "key": "remote_addr",
                            "rejected_code": 429})
    first = _open(gw, "/dl")  # at the upstream for 1 s
    time.sleep(0.3)
    second = _open(gw, "/dl")  # over conn, within burst: delayed 1 s
    time.sleep(0.3)
    assert get(gw.port, "/dl", timeout=10).status == 429  # conn + burst in flight
    second.close()  # abandoned while delayed
    first.recv(100)
    first.close()
    # The abandoned request holds its place until it ends (as in APISIX: nginx does not
    # notice a client abort during ngx.sleep); then both places are free: a request is
    # admitted without the 1 s delay.
    deadline = time.monotonic() + 10
    while True:
        t0 = time.monotonic()
        r = get(gw.port, "/dl", timeout=10)
        if r.status == 200 and time.monotonic() - t0 < 1.8:
            break
        assert time.monotonic() < deadline, "places not released"
        time.sleep(0.2)
    # Released exactly once: conn + burst still hold (a double release would admit a third).
    a = _open(gw, "/dl")
    time.sleep(0.3)
    b = _open(gw, "/dl")
    time.sleep(0.3)
    assert get(gw.port, "/dl", timeout=10).status == 429
    a.close()
    b.close()


def test_released_when_a_later_plugin_rejects(make_gateway, upstream):
    gw = make_gateway(admin=True, workers=2)
    # limit-conn (1003) counts, then limit-req (1001) rejects: the log phase must give the
    # place back each time, or the 3rd request would get limit-conn's 429.
    r = gw.admin("PUT", "/routes/2", admin_route("/b", upstream, plugins={
        "limit-conn": {"conn": 1, "burst": 0, "default_conn_delay": 0.1, "key": "remote_addr",
                       "rejected_code": 429},
        "limit-req": {"rate": 0.01, "burst": 0, "key": "remote_addr", "nodelay": True,
                      "rejected_code": 503}}))
    assert r.status in (200, 201), r
    statuses = []
    for _ in range(5):
        statuses.append(get(gw.port, "/b").status)
        # The log phase gives the place back just after the answer is written: a client
        # quicker than that, on the other worker, would still find it taken. A place never
        # given back stays taken, and every later request would get the 429.
        time.sleep(0.1)
    assert statuses == [200, 503, 503, 503, 503]


def test_not_released_when_an_earlier_plugin_answers(make_gateway, make_upstream):
    up = _slow(make_upstream, 2.0)
    gw = make_gateway(admin=True, workers=2)
    r = gw.admin("PUT", "/consumers", {"username": "jack", "plugins": {"key-auth": {"key": "k1"}}})
    assert r.status in (200, 201), r
    # key-auth (2500) answers 401 before limit-conn runs; the log phase still runs for
    # limit-conn and must not release a place it never took.
    r = gw.admin("PUT", "/routes/3", admin_route("/k", up, plugins={
        "key-auth": {},
        "limit-conn": {"conn": 1, "burst": 0, "default_conn_delay": 0.1, "key": "remote_addr",
                       "rejected_code": 429}}))
    assert r.status in (200, 201), r
    assert [get(gw.port, "/k").status for _ in range(4)] == [401] * 4
    with ThreadPoolExecutor(1) as ex:
        held = ex.submit(get, gw.port, "/k", headers={"apikey": "k1"}, timeout=10)
        time.sleep(0.5)
        assert get(gw.port, "/k", headers={"apikey": "k1"}).status == 429
        assert held.result().status == 200


def test_schema_errors_at_the_admin_api(make_gateway, upstream):
    gw = make_gateway(admin=True)
    r = gw.admin("PUT", "/routes/1", admin_route("/s", upstream, plugins={
        "limit-conn": {"conn": 1, "burst": 0, "key": "remote_addr"}}))
    assert r.status == 400, r
    assert r.json["error_msg"] == ("failed to check the configuration of plugin limit-conn "
                                   "err: property \"default_conn_delay\" is required"), r


def test_on_a_global_rule(make_gateway, make_upstream):
    up = _slow(make_upstream, 1.5)
    gw = make_gateway(admin=True, workers=2)
    r = gw.admin("PUT", "/global_rules/1", {"plugins": {"limit-conn": {
        "conn": 2, "burst": 0, "default_conn_delay": 0.1, "key": "remote_addr",
        "rejected_code": 429}}})
    assert r.status in (200, 201), r
    r = gw.admin("PUT", "/routes/1", admin_route("/g", up))
    assert r.status in (200, 201), r
    with ThreadPoolExecutor(5) as ex:
        statuses = list(ex.map(lambda _: get(gw.port, "/g", timeout=10).status, range(5)))
    assert sorted(statuses) == [200, 200, 429, 429, 429], statuses


# ----------------------------------------------------------------- redis

def test_doc_share_quota_with_a_redis_server(make_redis, make_gateway, make_upstream):
    # "Share Quota Among APISIX Nodes with a Redis Server": on each of two gateways; the
    # Redis address, port, password and database are the page's placeholders made real.
    redis = make_redis(extra=["--requirepass", "p@ssw0rd"])
    up = make_upstream("httpbin.org", default=HttpbinEcho())
    up.route("/get", Delay(1.0, HttpbinEcho()))
    docs = [Doc(make_gateway(admin=True, admin_keys=OMIT, workers=2), [up, up, up])
            for _ in range(2)]
    for doc in docs:
        r = doc.run('''
            curl "http://127.0.0.1:9180/apisix/admin/routes" -X PUT \\
              -H "X-API-KEY: ${admin_key}" \\
              -d '{
                "id": "limit-conn-route",
                "uri": "/get",
                "plugins": {
                  "limit-conn": {
                    "conn": 1,
                    "burst": 1,
                    "default_conn_delay": 0.1,
                    "rejected_code": 429,
                    "key_type": "var",
                    "key": "remote_addr",
                    "policy": "redis",
                    "redis_host": "192.168.xxx.xxx",
                    "redis_port": 6379,
                    "redis_password": "p@ssw0rd",
                    "redis_database": 1
                  }
                },
                "upstream": {
                  "type": "roundrobin",
                  "nodes": {
                    "httpbin.org:80": 1
                  }
                }
              }'
            '''.replace("192.168.xxx.xxx", "127.0.0.1").replace("6379", str(redis.port)))
        assert r.status == 201, r
    # The page's five concurrent requests, to one gateway: conn 1 + burst 1 pass.
    assert _codes(docs[0].sh(FIVE)) == ["200", "200", "429", "429", "429"]
    # Once the five have left (their members removed in the log phase), the same five
    # spread over the two gateways: still one quota.
    assert wait_until(lambda: all(redis.cli("ZCARD", k, db=1).strip() == "0"
                                  for k in redis.cli("KEYS", "*", db=1).split()), timeout=5)
    ports = [d.gw.port for d in docs]
    out = docs[0].sh('''
        for p in %d %d %d %d %d; do echo $p; done | xargs -n1 -P5 bash -c 'curl -s -o /dev/null -w "Response: %%{http_code}\\n" "http://127.0.0.1:$0/get"'
        ''' % tuple(ports[i % 2] for i in range(5)))
    assert _codes(out) == ["200", "200", "429", "429", "429"], out

def test_redis_two_gateways_share_one_count(make_redis, make_gateway, make_upstream):
    redis = make_redis()
    up = _slow(make_upstream, 1.5)
    g1 = make_gateway(admin=True, workers=2)
    g2 = make_gateway(admin=True, workers=2)
    conf = {"conn": 2, "burst": 1, "default_conn_delay": 0.1, "only_use_default_delay": True,
            "rejected_code": 429, "key": "remote_addr", "policy": "redis",
            "redis_host": "127.0.0.1", "redis_port": redis.port, "redis_timeout": 5000}
    for g in (g1, g2):
        _put(g, 1, "/rc", up, conf)

    def one(i):
        return get((g1, g2)[i % 2].port, "/rc", timeout=30).status

    with ThreadPoolExecutor(12) as ex:
        statuses = list(ex.map(one, range(12)))
    assert statuses.count(200) == 3 and statuses.count(429) == 9, statuses
    # Every member is removed in the log phase (an emptied set is deleted by Redis).
    def held():
        return [(k, redis.cli("ZCARD", k).strip()) for k in redis.cli("KEYS", "*").split()
                if k.startswith("limit_conn:")]
    assert wait_until(lambda: all(n == "0" for _, n in held()), timeout=5), held()


def test_redis_down_is_500_or_degrades(make_redis, make_gateway, upstream):
    redis = make_redis()
    gw = make_gateway(admin=True, workers=2)
    conf = {"conn": 5, "burst": 0, "default_conn_delay": 0.1, "key": "remote_addr",
            "policy": "redis", "redis_host": "127.0.0.1", "redis_port": redis.port,
            "redis_timeout": 500}
    _put(gw, 1, "/hard", upstream, conf)
    _put(gw, 2, "/soft", upstream, dict(conf, allow_degradation=True))
    assert get(gw.port, "/hard").status == 200
    redis.stop()
    assert get(gw.port, "/hard").status == 500
    assert [get(gw.port, "/soft").status for _ in range(3)] == [200, 200, 200]
