"""prometheus: the export server (plugin_attr.prometheus.export_addr), the metric families and
their HELP texts, the exact label sets APISIX renders, exact counts summed over workers, only
routes that enable the plugin, global rules recording unmatched requests, the cardinality cap,
and `promtool check metrics`."""

import os
import shutil
import socket
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import yaml

from fake_upstream import fixed
from harness import (NOT_FOUND_BODY, PROMETHEUS_PATH, admin_route, get, parse_samples, route,
                     sample_value, scrape)

BUCKETS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 30000, 60000]
HELP = {
    "apisix_http_status": ("counter", "HTTP status codes per service in APISIX"),
    "apisix_http_latency": ("histogram",
                            "HTTP request latency in milliseconds per service in APISIX"),
    "apisix_bandwidth": ("counter", "Total bandwidth in bytes consumed per service in APISIX"),
    "apisix_nginx_http_current_connections": ("gauge", "Number of HTTP connections"),
    "apisix_http_requests_total": ("gauge", None),
    "apisix_node_info": ("gauge", None),
}
PROMTOOL_LINT = {
    'apisix_bandwidth counter metrics should have "_total" suffix',
    'apisix_http_requests_total non-counter metrics should not have "_total" suffix',
    'apisix_http_status counter metrics should have "_total" suffix',
}


def status_line(code, route="1", uri="/hello", host="", service="", consumer="",
                node="127.0.0.1"):
    return ('apisix_http_status{code="%s",route="%s",matched_uri="%s",matched_host="%s",'
            'service="%s",consumer="%s",node="%s"}' % (code, route, uri, host, service,
                                                       consumer, node))


def labels(typ, route="1", service="", consumer="", node="127.0.0.1"):
    return 'type="%s",route="%s",service="%s",consumer="%s",node="%s"' % (
        typ, route, service, consumer, node)


def metrics_text(gw):
    r = scrape(gw)
    assert r.status == 200, r
    ctype = r.header("content-type") or ""
    assert ctype.startswith("text/plain"), "content type %r" % ctype
    return r.body.decode()


def settled(gw, *lines_and_counts, timeout=3.0):
    """The exposition once every (line, n) pair has reached n: a request is recorded in its
    log phase, which may finish just after the client has the response (APISIX likewise
    syncs its counters every second), so the counts are polled for, then asserted exact."""
    deadline = time.monotonic() + timeout
    while True:
        text = metrics_text(gw)
        if all((sample_value(text, line) or 0) >= n for line, n in lines_and_counts):
            return text
        if time.monotonic() > deadline:
            return text
        time.sleep(0.05)


def _hello_gw(make_gateway, upstream, workers=2, **kw):
    gw = make_gateway(admin=True, workers=workers, **kw)
    r = gw.admin("PUT", "/routes/1", admin_route("/hello", upstream, plugins={"prometheus": {}}))
    assert r.status == 201, r
    return gw


def test_http_status_exact_line_and_content_type(make_gateway, upstream):
    gw = _hello_gw(make_gateway, upstream)
    for _ in range(7):
        assert get(gw.port, "/hello").status == 200
    text = settled(gw, (status_line(200), 7))
    assert sample_value(text, status_line(200)) == 7, text[:4000]


def test_families_have_the_apisix_help_and_type(make_gateway, upstream):
    gw = _hello_gw(make_gateway, upstream)
    assert get(gw.port, "/hello").status == 200
    text = metrics_text(gw)
    lines = text.splitlines()
    for name, (typ, help_text) in HELP.items():
        assert "# TYPE %s %s" % (name, typ) in lines, "no TYPE %s %s:\n%s" % (name, typ,
                                                                              text[:4000])
        helps = [x for x in lines if x.startswith("# HELP %s " % name)]
        assert len(helps) == 1, "HELP for %s: %r" % (name, helps)
        if help_text is not None:
            assert helps[0] == "# HELP %s %s" % (name, help_text), helps


def test_config_server_reachable_gauge(make_gateway, upstream):
    """COMPAT.md lists apisix_etcd_reachable with its HELP text, and APISIX's Grafana
    dashboard plots it; on a traditional node the embedded store is the config server, and
    it is reachable: 1."""
    gw = _hello_gw(make_gateway, upstream)
    text = metrics_text(gw)
    lines = text.splitlines()
    assert "# HELP apisix_etcd_reachable Config server etcd reachable from APISIX, 0 is " \
        "unreachable" in lines, text[-3000:]
    assert "# TYPE apisix_etcd_reachable gauge" in lines, text[-3000:]
    assert sample_value(text, "apisix_etcd_reachable") == 1, text[-3000:]


def test_latency_histograms(make_gateway, upstream):
    gw = _hello_gw(make_gateway, upstream)
    n = 6
    for _ in range(n):
        assert get(gw.port, "/hello").status == 200
    text = settled(gw, *[("apisix_http_latency_count{%s}" % labels(t), n)
                         for t in ("request", "upstream", "apisix")])
    samples = parse_samples(text)
    for typ in ("request", "upstream", "apisix"):
        want = [("type", typ), ("route", "1"), ("service", ""), ("consumer", ""),
                ("node", "127.0.0.1")]
        buckets = [(dict(lb)["le"], v) for name, lb, v in samples
                   if name == "apisix_http_latency_bucket" and lb[:5] == want]
        assert [lb for lb, _ in buckets][-1:] == ["+Inf"], "no +Inf bucket for %s" % typ
        assert [float(le) for le, _ in buckets[:-1]] == [float(b) for b in BUCKETS], \
            "%s buckets: %r" % (typ, [le for le, _ in buckets])
        counts = [v for _, v in buckets]
        assert counts == sorted(counts), "%s buckets not cumulative: %r" % (typ, counts)
        assert counts[-1] == n, "%s +Inf bucket %r, want %d" % (typ, counts[-1], n)
        # the le label comes last, after the five others, in this order
        first = 'apisix_http_latency_bucket{%s,le="' % labels(typ)
        assert any(x.startswith(first) for x in text.splitlines()), (first, text[:4000])
        assert sample_value(text, "apisix_http_latency_count{%s}" % labels(typ)) == n
        total = sample_value(text, "apisix_http_latency_sum{%s}" % labels(typ))
        assert total is not None and 0 <= total < n * 5000, (typ, total)


def test_bandwidth_connections_requests_and_node_info(make_gateway, make_upstream):
    up = make_upstream("bw")
    up.route("/hello", fixed(200, body=b"x" * 1000))
    gw = _hello_gw(make_gateway, up)
    n = 5
    for _ in range(n):
        r = get(gw.port, "/hello")
        assert r.status == 200 and len(r.body) == 1000, r
    text = settled(gw, (status_line(200), n))
    ingress = sample_value(text, "apisix_bandwidth{%s}" % labels("ingress"))
    egress = sample_value(text, "apisix_bandwidth{%s}" % labels("egress"))
    assert ingress is not None and ingress >= n * len(b"GET /hello HTTP/1.1\r\n"), \
        (ingress, text[:3000])
    assert egress is not None and egress >= n * 1000, (egress, text[:3000])
    assert egress < n * 1000 + n * 1000, "egress counts more than the responses: %r" % egress

    conns = {dict(lb)["state"]: v for name, lb, v in parse_samples(text)
             if name == "apisix_nginx_http_current_connections"}
    assert set(conns) >= {"active", "accepted", "handled", "reading", "writing", "waiting"}, \
        conns
    assert conns["accepted"] >= n and conns["handled"] >= n, conns
    assert conns["active"] >= 0, conns

    reqs = sample_value(text, "apisix_http_requests_total")
    assert reqs is not None and reqs >= n, reqs

    info = [(lb, v) for name, lb, v in parse_samples(text) if name == "apisix_node_info"]
    assert len(info) == 1, info
    lb, v = info[0]
    assert v == 1 and [k for k, _ in lb] == ["hostname", "version"], info
    assert dict(lb)["hostname"] == socket.gethostname(), info
    assert dict(lb)["version"], info


def test_routes_without_prometheus_record_nothing(make_gateway, upstream):
    gw = _hello_gw(make_gateway, upstream)
    r = gw.admin("PUT", "/routes/2", admin_route("/plain", upstream))
    assert r.status == 201, r
    for _ in range(3):
        assert get(gw.port, "/plain").status == 200
        assert get(gw.port, "/nope").body == NOT_FOUND_BODY
    assert get(gw.port, "/hello").status == 200
    text = settled(gw, (status_line(200), 1))
    time.sleep(0.3)  # give a wrongly recorded /plain or 404 the same time to show up
    text = metrics_text(gw)
    assert sample_value(text, status_line(200)) == 1
    for name, lb, _ in parse_samples(text):
        d = dict(lb)
        assert d.get("route") not in ("2", ""), "recorded without the plugin: %s %r" % (name, lb)
        assert d.get("code") != "404", "an unmatched request recorded: %s %r" % (name, lb)


def test_counts_are_exact_over_workers(make_gateway, upstream):
    gw = _hello_gw(make_gateway, upstream, workers=4)
    n = 120
    with ThreadPoolExecutor(12) as ex:
        statuses = list(ex.map(lambda _: get(gw.port, "/hello", timeout=20).status, range(n)))
    assert statuses == [200] * n
    text = settled(gw, (status_line(200), n), *[
        ("apisix_http_latency_count{%s}" % labels(t), n) for t in ("request", "upstream",
                                                                   "apisix")])
    assert sample_value(text, status_line(200)) == n, text[:4000]
    for typ in ("request", "upstream", "apisix"):
        assert sample_value(text, "apisix_http_latency_count{%s}" % labels(typ)) == n, typ
        assert sample_value(text, 'apisix_http_latency_bucket{%s,le="+Inf"}' % labels(typ)) == n


def test_labels_pattern_host_service_and_status(make_gateway, make_upstream):
    up = make_upstream("lbl")
    up.route("/pre/bad", fixed(500, body=b"oops"))
    gw = make_gateway(admin=True, workers=2)
    assert gw.admin("PUT", "/services/s1", {"plugins": {"prometheus": {}}}).status == 201
    r = gw.admin("PUT", "/routes/r1", admin_route("/pre/*", up, host="api.example.com",
                                                  service_id="s1"))
    assert r.status == 201, r
    for path in ("/pre/a", "/pre/b?x=1", "/pre/bad"):
        r = get(gw.port, path, host="api.example.com")
        assert r.status == (500 if path == "/pre/bad" else 200), r
    ok = status_line(200, route="r1", uri="/pre/*", host="api.example.com", service="s1")
    bad = status_line(500, route="r1", uri="/pre/*", host="api.example.com", service="s1")
    text = settled(gw, (ok, 2), (bad, 1), ("apisix_http_latency_count{%s}" % labels(
        "request", route="r1", service="s1"), 3))
    assert sample_value(text, ok) == 2, text[:4000]
    assert sample_value(text, bad) == 1, text[:4000]
    assert sample_value(text, "apisix_http_latency_count{%s}" % labels(
        "request", route="r1", service="s1")) == 3


def test_limit_count_rejections_are_recorded(make_gateway, upstream):
    gw = make_gateway(admin=True, workers=2)
    r = gw.admin("PUT", "/routes/1", admin_route("/hello", upstream, plugins={
        "prometheus": {}, "limit-count": {"count": 2, "time_window": 60}}))
    assert r.status == 201, r
    assert [get(gw.port, "/hello").status for _ in range(5)] == [200, 200, 503, 503, 503]
    text = settled(gw, (status_line(200), 2), (status_line(503, node=""), 3))
    assert sample_value(text, status_line(200)) == 2, text[:4000]
    # rejected before any upstream was picked: node is empty
    assert sample_value(text, status_line(503, node="")) == 3, text[:4000]


def test_global_rule_records_unmatched_requests(make_gateway, upstream):
    gw = make_gateway(admin=True, workers=2)
    r = gw.admin("PUT", "/global_rules/1", {"plugins": {"prometheus": {}}})
    assert r.status == 201, r
    r = gw.admin("PUT", "/routes/1", admin_route("/hello", upstream))
    assert r.status == 201, r
    for _ in range(3):
        assert get(gw.port, "/missing").body == NOT_FOUND_BODY
    assert get(gw.port, "/hello").status == 200
    text = settled(gw, (status_line(404, route="", uri="", node=""), 3), (status_line(200), 1))
    assert sample_value(text, status_line(404, route="", uri="", node="")) == 3, text[:4000]
    assert sample_value(text, status_line(200)) == 1, text[:4000]


def test_global_rule_in_the_standalone_file(make_gateway, upstream):
    gw = make_gateway(routes=[route("/hello", upstream, rid="1")])
    doc = {"routes": [route("/hello", upstream, rid="1"), gw.probe_route(gw.generation + 1)],
           "global_rules": [{"id": "g", "plugins": {"prometheus": {}}}]}
    gw.generation += 1
    gw.write_apisix_text(yaml.safe_dump(doc, sort_keys=False) + "#END\n")
    assert gw.wait_probe(gw.generation, 5), "the file was not applied:\n" + gw.log_tail()
    for _ in range(2):
        assert get(gw.port, "/missing").body == NOT_FOUND_BODY
    assert get(gw.port, "/hello").status == 200
    text = settled(gw, (status_line(404, route="", uri="", node=""), 2), (status_line(200), 1))
    assert sample_value(text, status_line(404, route="", uri="", node="")) == 2, text[:4000]
    assert sample_value(text, status_line(200)) == 1, text[:4000]


def test_export_server_only_on_its_own_port(make_gateway, upstream):
    gw = _hello_gw(make_gateway, upstream)
    assert scrape(gw).status == 200
    r = get(gw.port, PROMETHEUS_PATH)
    assert r.status == 404 and r.body == NOT_FOUND_BODY, \
        "metrics served on the proxy port: %r" % r
    r = get(gw.prometheus_port, "/other")
    assert r.status == 404, r


def test_cardinality_cap(make_gateway, upstream):
    gw = make_gateway(admin=True, workers=1,
                      config={"plugin_attr": {"prometheus": {"max_label_sets": 3}}})
    routes = 12
    with gw.admin_client() as c:
        for i in range(routes):
            r = c.request("PUT", "/routes/c%d" % i, admin_route("/c/%d" % i, upstream,
                                                                 plugins={"prometheus": {}}))
            assert r.status == 201, r
    for i in range(routes):
        for _ in range(2):
            assert get(gw.port, "/c/%d" % i).status == 200
    time.sleep(0.3)  # the last requests' log phase
    text = metrics_text(gw)
    status_lines = [x for x in text.splitlines() if x.startswith("apisix_http_status{")]
    assert 1 <= len(status_lines) <= 3, "cap of 3 label sets, got %d lines:\n%s" % (
        len(status_lines), "\n".join(status_lines))
    dropped = [v for name, lb, v in parse_samples(text)
               if name == "sluice_prometheus_dropped_samples_total"]
    assert dropped and sum(dropped) > 0, "no sluice_prometheus_dropped_samples_total > 0"
    assert gw.alive()


def test_promtool_check_metrics(make_gateway, make_upstream):
    promtool = shutil.which("promtool")
    if not promtool:
        pytest.fail("promtool not installed (apt-get install prometheus): cannot lint the "
                    "exposition", pytrace=False)
    up = make_upstream("pt")
    up.route("/hello/err", fixed(502, body=b"bad"))
    gw = make_gateway(admin=True, workers=2)
    r = gw.admin("PUT", "/routes/1", admin_route("/hello*", up, plugins={
        "limit-count": {"count": 4, "time_window": 60}, "prometheus": {}}))
    assert r.status == 201, r
    for path in ("/hello", "/hello/x", "/hello/err", "/missing", "/hello", "/hello"):
        get(gw.port, path)
    text = settled(gw, (status_line(503, uri="/hello*", node=""), 1))
    with tempfile.NamedTemporaryFile("w", suffix=".prom", delete=False) as f:
        f.write(text)
    try:
        with open(f.name) as inp:
            p = subprocess.run([promtool, "check", "metrics"], stdin=inp, capture_output=True,
                               text=True, timeout=30)
    finally:
        os.unlink(f.name)
    out = (p.stdout + p.stderr).strip()
    lines = {x.strip() for x in out.splitlines() if x.strip()}
    assert "error" not in out.lower(), "promtool: %s\n---\n%s" % (out, text[:4000])
    assert p.returncode == 3, "promtool exit %d: %s" % (p.returncode, out)
    assert lines == PROMTOOL_LINT, "promtool said %r, expected %r" % (sorted(lines),
                                                                      sorted(PROMTOOL_LINT))


def test_scrape_answers_while_idle_and_repeatedly(make_gateway, upstream):
    gw = _hello_gw(make_gateway, upstream)
    text = metrics_text(gw)  # before any request: families may be present, no route lines
    assert sample_value(text, status_line(200)) is None
    assert get(gw.port, "/hello").status == 200
    settled(gw, (status_line(200), 1))
    vals = [sample_value(metrics_text(gw), status_line(200)) for _ in range(3)]
    assert vals == [1, 1, 1], "scraping changed the counts: %r" % vals


def test_one_request_counts_once_on_a_global_rule_and_its_route(make_gateway, upstream):
    """prometheus is on a global rule and on the route (directly, through its service, through
    its plugin_config): APISIX's run_policy "prefer_route" runs only the route's instance, so
    each request counts once, with the route's conf (prefer_name here)."""
    gw = make_gateway(admin=True, workers=2)
    with gw.admin_client() as c:
        for path, body in (
                ("/global_rules/1", {"plugins": {"prometheus": {}}}),
                ("/global_rules/2", {"plugins": {"prometheus": {"prefer_name": True}}}),
                ("/services/s1", {"name": "svc", "plugins": {"prometheus": {}}}),
                ("/plugin_configs/pc1", {"plugins": {"prometheus": {"prefer_name": True}}}),
                ("/routes/1", admin_route("/hello", upstream, name="direct",
                                          plugins={"prometheus": {"prefer_name": True}})),
                ("/routes/2", admin_route("/by-service", upstream, name="viasvc",
                                          service_id="s1")),
                ("/routes/3", admin_route("/by-config", upstream, name="viapc",
                                          plugin_config_id="pc1")),
                ("/routes/4", admin_route("/plain", upstream, name="plain"))):
            r = c.request("PUT", path, body)
            assert r.status in (200, 201), (path, r)
    for path in ("/hello", "/by-service", "/by-config", "/plain"):
        assert get(gw.port, path).status == 200, path
    expect = [status_line(200, route="direct"),
              status_line(200, route="2", uri="/by-service", service="s1"),
              status_line(200, route="viapc", uri="/by-config"),
              # only global rules: the first rule's instance (no prefer_name) counts it
              status_line(200, route="4", uri="/plain")]
    text = settled(gw, *[(line, 1) for line in expect])
    time.sleep(0.3)  # a second, wrong, count would land now
    text = metrics_text(gw)
    for line in expect:
        assert sample_value(text, line) == 1, "%s\n%s" % (line, text[:4000])
    status_lines = [x for x in text.splitlines() if x.startswith("apisix_http_status{")]
    assert len(status_lines) == 4, "\n".join(status_lines)
    # latency and bandwidth: once too
    for rt, svc in (("direct", ""), ("2", "s1"), ("viapc", ""), ("4", "")):
        assert sample_value(text, "apisix_http_latency_count{%s}" % labels(
            "request", route=rt, service=svc)) == 1, (rt, text[:4000])
    heads = [v for name, lb, v in parse_samples(text) if name == "apisix_bandwidth"
             and ("type", "ingress") in lb]
    assert len(heads) == 4 and max(heads) < 1.5 * min(heads), heads  # similar heads, none twice
