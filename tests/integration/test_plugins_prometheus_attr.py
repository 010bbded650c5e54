"""prometheus's plugin_attr: default_buckets (apisix_http_latency's bounds) and
metrics.<family>.extra_labels, in the exposition of real requests, and the start refused, the
key named, for a variable Sluice cannot read or invalid buckets."""

import time

import pytest

from harness import admin_route, get, parse_samples, scrape


def _text(gw, want, timeout=3.0):
    """The exposition once `want` (a line prefix) is in it: requests are recorded in their log
    phase, which may end just after the client has its answer."""
    deadline = time.monotonic() + timeout
    while True:
        r = scrape(gw)
        assert r.status == 200, r
        text = r.body.decode()
        if want in text or time.monotonic() > deadline:
            return text
        time.sleep(0.05)


ATTR = {"prometheus": {
    "default_buckets": [3.5, 60000],
    "metrics": {
        "http_status": {"extra_labels": [{"tenant": "$http_x_tenant"}, {"v": "$arg_v"}]},
        "http_latency": {"extra_labels": [{"method": "$request_method"}]},
        "bandwidth": {"extra_labels": [{"tenant": "$http_x_tenant"},
                                       {"rname": "$route_name"}]},
    }}}


def test_extra_labels_and_buckets_on_real_requests(make_gateway, upstream):
    gw = make_gateway(admin=True, workers=2, config={"plugin_attr": ATTR})
    r = gw.admin("PUT", "/routes/1", admin_route("/hello", upstream, name="hi", plugins={
        "prometheus": {}, "limit-count": {"count": 2, "time_window": 60}}))
    assert r.status == 201, r
    for _ in range(3):  # the third is answered 503 by limit-count, before any upstream
        get(gw.port, "/hello?v=a%22b", headers=[("X-Tenant", 'ac"me')])
    rejected = ('apisix_http_status{code="503",route="1",matched_uri="/hello",'
                'matched_host="",service="",consumer="",node="",tenant="ac\\"me",'
                'v="a%22b"} 1')
    text = _text(gw, rejected)
    assert rejected in text, text[:4000]
    ok = ('apisix_http_status{code="200",route="1",matched_uri="/hello",matched_host="",'
          'service="",consumer="",node="127.0.0.1",tenant="ac\\"me",v="a%22b"} 2')
    assert ok in text, text[:4000]
    les = sorted({dict(lb)["le"] for name, lb, v in parse_samples(text)
                  if name == "apisix_http_latency_bucket"})
    assert les == sorted(["3.5", "60000", "+Inf"]), les
    assert ('apisix_http_latency_count{type="request",route="1",service="",consumer="",'
            'node="127.0.0.1",method="GET"} 2') in text, text[:4000]
    ingress = [lb for name, lb, v in parse_samples(text) if name == "apisix_bandwidth"
               and ("type", "ingress") in lb and ("node", "127.0.0.1") in lb]
    assert ingress and all(("tenant", 'ac\\"me') in lb or ("tenant", 'ac"me') in lb
                           for lb in ingress), ingress
    assert all(("rname", "hi") in lb for lb in ingress), \
        "$route_name is the route's name, whatever prefer_name says: %r" % ingress
    assert gw.alive()


@pytest.mark.parametrize("attr, key", [
    ({"metrics": {"http_status": {"extra_labels": [{"proto": "$server_addr"}]}}},
     'plugin_attr.prometheus.metrics.http_status.extra_labels: [0].proto: variable "$server_addr" '
     'is not supported by Sluice'),
    ({"metrics": {"bandwidth": {"extra_labels": [{"up": "$upstream_status"}]}}},
     'plugin_attr.prometheus.metrics.bandwidth.extra_labels: [0].up: variable '
     '"$upstream_status" is not supported by Sluice'),
    ({"default_buckets": [10, 5]},
     "plugin_attr.prometheus.default_buckets: [1]: the buckets must be strictly increasing"),
    ({"default_buckets": []},
     "plugin_attr.prometheus.default_buckets: expected a non-empty list"),
])
def test_start_refused_naming_the_key(make_gateway, attr, key):
    gw = make_gateway(start=False, config={"plugin_attr": {"prometheus": attr}})
    gw.start(wait=False)
    rc = gw.wait_exit(10)
    assert rc is not None and rc != 0, "started with %r:\n%s" % (attr, gw.log_tail())
    assert key in gw.log_text(), gw.log_tail()


def test_a_reload_checks_them_and_keeps_the_starts_values(make_gateway, upstream):
    """default_buckets and extra_labels shape the cells made at start: a plugins/reload with
    other values logs that they wait for a restart and keeps the start's; an invalid value
    fails the reload with the key named."""
    gw = make_gateway(admin=True, config={"plugin_attr": {"prometheus": {
        "default_buckets": [7]}}})
    assert gw.admin("PUT", "/routes/1", admin_route("/hello", upstream, plugins={
        "prometheus": {}})).status == 201
    cfg = gw.config_dict()
    cfg["plugin_attr"]["prometheus"]["default_buckets"] = [1, 9]
    gw.write_config(cfg)
    r = gw.admin("PUT", "/plugins/reload")
    assert r.status == 200, r
    assert get(gw.port, "/hello").status == 200
    text = _text(gw, "apisix_http_latency_bucket")
    les = sorted({dict(lb)["le"] for name, lb, v in parse_samples(text)
                  if name == "apisix_http_latency_bucket"})
    assert les == ["+Inf", "7"], les
    deadline = time.monotonic() + 3
    while "take effect at the next restart" not in gw.log_text() and \
            time.monotonic() < deadline:
        time.sleep(0.05)
    assert "default_buckets and metrics are read at start" in gw.log_text(), gw.log_tail()

    cfg["plugin_attr"]["prometheus"]["default_buckets"] = [9, 1]
    gw.write_config(cfg)
    r = gw.admin("PUT", "/plugins/reload")
    assert r.status == 400, r
    assert r.json["error_msg"] == (
        "failed to reload plugins: config.yaml: plugin_attr.prometheus.default_buckets: [1]: "
        "the buckets must be strictly increasing"), r
