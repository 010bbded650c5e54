"""limit-req (issue 24): APISIX's documented examples as published (docs/en/latest/plugins/
limit-req.md, commit 04cbd00; only ports and the upstream address replaced), exactness over
4 workers and many connections, delays that do not block the worker, conf changes, and the
redis policy shared by two gateways (and allow_degradation with redis down)."""

import json
import re
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from fake_upstream import Delay
from harness import OMIT, admin_route, get
from test_apisix_docs import Doc, HttpbinEcho
from test_plugins_redis import _make_cluster, make_redis  # noqa: F401 (a fixture)


def _put(gw, rid, uri, up, conf, **extra):
    r = gw.admin("PUT", "/routes/%s" % rid, admin_route(uri, up, plugins={"limit-req": conf},
                                                        **extra))
    assert r.status in (200, 201), r
    return r


@pytest.fixture
def doc(make_gateway, make_upstream):
    up = make_upstream("httpbin.org", default=HttpbinEcho())
    # The pages' commands carry APISIX's well-known key, which the default key list accepts.
    gw = make_gateway(admin=True, admin_keys=OMIT, workers=2)
    return Doc(gw, [up, up, up])


# ----------------------------------------------------------------- the documented examples

ROUTE_BY_REMOTE_ADDR = '''
curl "http://127.0.0.1:9180/apisix/admin/routes" -X PUT \\
  -H "X-API-KEY: ${admin_key}" \\
  -d '
  {
    "id": "limit-req-route",
    "uri": "/get",
    "plugins": {
      "limit-req": {
        "rate": 1,
        "burst": 0,
        "key": "remote_addr",
        "key_type": "var",
        "rejected_code": 429,
        "policy": "local",
        "nodelay": true
      }
    },
    "upstream": {
      "type": "roundrobin",
      "nodes": {
        "httpbin.org:80": 1
      }
    }
  }'
'''

THREE_REQUESTS = '''
resp=$(seq 3 | xargs -I{} curl -i "http://127.0.0.1:9080/get" -o /dev/null -s -w "%{http_code}\\n") && \\
  count_200=$(echo "$resp" | grep "200" | wc -l) && \\
  count_429=$(echo "$resp" | grep "429" | wc -l) && \\
  echo "200 responses: $count_200 ; 429 responses: $count_429"
'''


def test_doc_rate_limiting_by_remote_address(doc):
    r = doc.run(ROUTE_BY_REMOTE_ADDR)
    assert r.status == 201, r
    assert doc.run('curl -i "http://127.0.0.1:9080/get"').status == 200
    # "If you send the request again within the same second ... 429"
    assert doc.run('curl -i "http://127.0.0.1:9080/get"').status == 429


def test_doc_api_throttling(doc):
    r = doc.run('''
        curl "http://127.0.0.1:9180/apisix/admin/routes" -X PUT \\
          -H "X-API-KEY: ${admin_key}" \\
          -d '{
            "id": "limit-req-route",
            "uri": "/get",
            "plugins": {
              "limit-req": {
                "rate": 1,
                "burst": 1,
                "key": "remote_addr",
                "rejected_code": 429,
                "policy": "local"
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
    t0 = time.monotonic()
    # "You are likely to see that all three requests are successful": the 2nd and 3rd wait
    # about 1 s each in the bucket.
    assert doc.sh(THREE_REQUESTS) == "200 responses: 3 ; 429 responses: 0"
    assert time.monotonic() - t0 >= 1.5, "requests over the rate were not delayed"
    r = doc.run('''
        curl "http://127.0.0.1:9180/apisix/admin/routes/limit-req-route" -X PATCH \\
          -H "X-API-KEY: ${admin_key}" \\
          -d '{
            "plugins": {
              "limit-req": {
                "nodelay": true
              }
            }
          }'
        ''')
    assert r.status == 200, r
    t0 = time.monotonic()
    # The page shows "similar to 200: 1 ; 429: 2", which is what burst 0 gives. With burst 1
    # APISIX's resty.limit.req admits a request whose excess equals burst (it rejects only
    # excess > burst): the conf change starts a new bucket, so the 1st and 2nd pass (the 2nd
    # without waiting: nodelay) and the 3rd is rejected.
    assert doc.sh(THREE_REQUESTS) == "200 responses: 2 ; 429 responses: 1"
    assert time.monotonic() - t0 < 0.9, "nodelay requests were delayed"


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
            "id": "limit-req-route",
            "uri": "/get",
            "plugins": {
              "key-auth": {},
              "limit-req": {
                "rate": 1,
                "burst": 0,
                "key": "$remote_addr $consumer_name",
                "key_type": "var_combination",
                "rejected_code": 429,
                "policy": "local"
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
        curl -i "http://127.0.0.1:9080/get" -H 'apikey: jane-key' & \\
        curl -i "http://127.0.0.1:9080/get" -H 'apikey: john-key' &
        wait
        ''')
    assert re.findall(r"^HTTP/1.1 (\d+)", out, re.M) == ["200", "200"], out
    for key in ("jane-key", "john-key"):
        assert get(doc.gw.port, "/get", headers={"apikey": key}).status == 429


# ----------------------------------------------------------------- exactness and delays

@pytest.mark.parametrize("burst", [0, 24])
def test_exact_under_concurrency_over_4_workers(make_gateway, upstream, burst):
    gw = make_gateway(admin=True, workers=4)
    # 0.01 per second: within the test no token comes back, so exactly rate x window (the
    # first request) + burst pass.
    _put(gw, 1, "/x", upstream, {"rate": 0.01, "burst": burst, "key": "remote_addr",
                                 "nodelay": True, "rejected_code": 429})

    def one(_):
        return get(gw.port, "/x", timeout=20).status

    with ThreadPoolExecutor(32) as ex:
        statuses = list(ex.map(one, range(300)))
    assert statuses.count(200) == burst + 1 and statuses.count(429) == 299 - burst, \
        (statuses.count(200), statuses.count(429), set(statuses))
    assert len(upstream.requests_for("/x")) == burst + 1


def test_a_delayed_request_does_not_block_its_worker(make_gateway, upstream):
    gw = make_gateway(admin=True, workers=1)
    _put(gw, 1, "/slow", upstream, {"rate": 1, "burst": 5, "key": "remote_addr"})
    _put(gw, 2, "/free", upstream, {"rate": 100, "burst": 0, "key": "remote_addr"})
    with ThreadPoolExecutor(4) as ex:
        t0 = time.monotonic()
        first = get(gw.port, "/slow")
        delayed = ex.submit(get, gw.port, "/slow", timeout=10)
        time.sleep(0.1)
        # The one worker answers another route at once while the request above waits.
        t1 = time.monotonic()
        assert get(gw.port, "/free").status == 200
        assert time.monotonic() - t1 < 0.5
        assert delayed.result().status == 200
        assert time.monotonic() - t0 >= 0.8, "the request over the rate did not wait ~1 s"
    assert first.status == 200


def test_rejected_msg_and_conf_change_resets(make_gateway, upstream):
    gw = make_gateway(admin=True, workers=2)
    conf = {"rate": 1, "burst": 0, "key": "remote_addr", "rejected_code": 429,
            "rejected_msg": "Requests are too frequent, please try again later."}
    _put(gw, 1, "/m", upstream, conf, desc="a")
    assert get(gw.port, "/m").status == 200
    r = get(gw.port, "/m")
    assert r.status == 429 and json.loads(r.body) == {
        "error_msg": "Requests are too frequent, please try again later."}, r
    _put(gw, 1, "/m", upstream, conf, desc="b")  # another field: the bucket stays
    assert get(gw.port, "/m").status == 429
    conf["rate"] = 2  # a conf change: a new bucket, as APISIX's conf version key gives
    _put(gw, 1, "/m", upstream, conf)
    assert get(gw.port, "/m").status == 200


def test_schema_errors_at_the_admin_api(make_gateway, upstream):
    gw = make_gateway(admin=True)
    r = gw.admin("PUT", "/routes/1", admin_route("/s", upstream, plugins={
        "limit-req": {"rate": 0, "burst": 0, "key": "remote_addr"}}))
    assert r.status == 400, r
    assert r.json["error_msg"] == ("failed to check the configuration of plugin limit-req err: "
                                   "property \"rate\" validation failed: expected 0 to be "
                                   "greater than 0"), r
    r = gw.admin("PUT", "/routes/1", admin_route("/s", upstream, plugins={
        "limit-req": {"rate": 1, "burst": 0}}))
    assert r.status == 400 and r.json["error_msg"].endswith('property "key" is required'), r


def test_on_a_global_rule_and_a_service(make_gateway, upstream):
    gw = make_gateway(admin=True)
    r = gw.admin("PUT", "/global_rules/1", {"plugins": {"limit-req": {
        "rate": 1, "burst": 0, "key": "remote_addr", "nodelay": True, "rejected_code": 429}}})
    assert r.status in (200, 201), r
    _put(gw, 1, "/g", upstream, {"rate": 100, "burst": 0, "key": "remote_addr"})
    assert [get(gw.port, "/g").status for _ in range(2)] == [200, 429]
    assert gw.admin("DELETE", "/global_rules/1").status == 200
    r = gw.admin("PUT", "/services/s1", {"plugins": {"limit-req": {
        "rate": 1, "burst": 0, "key": "remote_addr", "rejected_code": 429}}})
    assert r.status in (200, 201), r
    r = gw.admin("PUT", "/routes/2", admin_route("/svc", upstream, service_id="s1"))
    assert r.status in (200, 201), r
    assert [get(gw.port, "/svc").status for _ in range(2)] == [200, 429]


def test_on_a_plugin_config_and_a_consumer(make_gateway, upstream):
    gw = make_gateway(admin=True)
    conf = {"rate": 1, "burst": 0, "key": "remote_addr", "nodelay": True, "rejected_code": 429}
    r = gw.admin("PUT", "/plugin_configs/pc1", {"plugins": {"limit-req": conf}})
    assert r.status in (200, 201), r
    r = gw.admin("PUT", "/routes/1", admin_route("/pc", upstream, plugin_config_id="pc1"))
    assert r.status in (200, 201), r
    assert [get(gw.port, "/pc").status for _ in range(2)] == [200, 429]
    # On a consumer: its requests are limited, per route (APISIX's "route&consumer").
    r = gw.admin("PUT", "/consumers", {"username": "jack", "plugins": {
        "key-auth": {"key": "k1"}, "limit-req": conf}})
    assert r.status in (200, 201), r
    for rid, uri in ((2, "/c1"), (3, "/c2")):
        r = gw.admin("PUT", "/routes/%d" % rid, admin_route(uri, upstream, plugins={
            "key-auth": {}}))
        assert r.status in (200, 201), r
    k = {"apikey": "k1"}
    assert [get(gw.port, "/c1", headers=k).status for _ in range(2)] == [200, 429]
    assert [get(gw.port, "/c2", headers=k).status for _ in range(2)] == [200, 429]


# ----------------------------------------------------------------- redis

def _redis(redis, **kw):
    c = {"rate": 0.01, "burst": 2, "key": "remote_addr", "nodelay": True, "rejected_code": 429,
         "policy": "redis", "redis_host": "127.0.0.1", "redis_port": redis.port,
         "redis_timeout": 5000}
    c.update(kw)
    return c


def test_redis_two_gateways_share_one_bucket(make_redis, make_gateway, upstream):
    redis = make_redis()
    g1 = make_gateway(admin=True, workers=2)
    g2 = make_gateway(admin=True, workers=2)
    for g in (g1, g2):
        _put(g, 1, "/r", upstream, _redis(redis))
    got = [get(g.port, "/r").status for g in (g1, g2, g1, g2, g1)]
    assert got == [200, 200, 200, 429, 429], got
    assert any(k.startswith("limit_req:") for k in redis.cli("KEYS", "*").split()), \
        redis.cli("KEYS", "*")


def test_redis_exact_under_concurrency(make_redis, make_gateway, upstream):
    redis = make_redis()
    g1 = make_gateway(admin=True, workers=4)
    g2 = make_gateway(admin=True, workers=4)
    for g in (g1, g2):
        _put(g, 1, "/rc", upstream, _redis(redis, burst=19))

    def one(i):
        return get((g1, g2)[i % 2].port, "/rc", timeout=20).status

    with ThreadPoolExecutor(32) as ex:
        statuses = list(ex.map(one, range(200)))
    assert statuses.count(200) == 20 and statuses.count(429) == 180, \
        (statuses.count(200), set(statuses))


def test_redis_delay_within_the_burst(make_redis, make_gateway, upstream):
    redis = make_redis()
    gw = make_gateway(admin=True, workers=2)
    _put(gw, 1, "/rd", upstream, _redis(redis, rate=2, burst=1, nodelay=False))
    t0 = time.monotonic()
    assert get(gw.port, "/rd").status == 200
    assert get(gw.port, "/rd").status == 200  # waits ~0.5 s in the bucket
    assert time.monotonic() - t0 >= 0.35


def test_redis_down_is_500_or_degrades(make_redis, make_gateway, upstream):
    redis = make_redis()
    gw = make_gateway(admin=True, workers=2)
    _put(gw, 1, "/hard", upstream, _redis(redis, redis_timeout=500))
    _put(gw, 2, "/soft", upstream, _redis(redis, redis_timeout=500, allow_degradation=True))
    assert get(gw.port, "/hard").status == 200
    redis.stop()
    assert get(gw.port, "/hard").status == 500
    assert [get(gw.port, "/soft").status for _ in range(3)] == [200, 200, 200]


def test_redis_cluster_policy(make_redis, make_gateway, upstream):
    nodes = _make_cluster(make_redis)
    conf = {"rate": 0.01, "burst": 1, "key": "http_x_user", "nodelay": True,
            "rejected_code": 429, "policy": "redis-cluster", "redis_timeout": 5000,
            "redis_cluster_name": "sluice-test",
            "redis_cluster_nodes": ["127.0.0.1:%d" % nodes[0].port]}
    g1 = make_gateway(admin=True, workers=2)
    g2 = make_gateway(admin=True, workers=2)
    for g in (g1, g2):
        _put(g, 1, "/rc", upstream, conf)
    for user in ("u%d" % i for i in range(6)):
        got = [get(g.port, "/rc", headers={"X-User": user}).status for g in (g1, g2, g1)]
        assert got == [200, 200, 429], (user, got)
