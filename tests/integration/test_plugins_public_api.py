"""public-api against a real gateway: APISIX's documentation example as published (ports
replaced; docs/en/latest/plugins/public-api.md at 09b89d4): prometheus's metrics page on a
route of the proxy port, under its own uri or a custom one; what names no plugin API is 404
(batch-requests, which Sluice does not ship, among them); only GET; and an auth plugin in
front of it."""

import pytest

from harness import OMIT, WELL_KNOWN_ADMIN_KEY, Gateway, get, http
from test_apisix_docs import Doc, _stop, ups  # noqa: F401


@pytest.fixture
def doc(tmp_path, ups):  # noqa: F811
    gw = Gateway(tmp_path / "gw", admin=True, admin_keys=OMIT, workers=2,
                 config={"plugin_attr": {"prometheus": {"enable_export_server": False}}})
    gw.start()
    yield Doc(gw, ups)
    _stop(gw)


def _metrics_page(r):
    assert r.status == 200, r
    assert r.header("Content-Type").startswith("text/plain"), r
    text = r.body.decode()
    assert "# TYPE apisix_http_requests_total gauge" in text, text[:500]
    assert 'apisix_nginx_http_current_connections{state="accepted"}' in text, text[:500]
    return text


def test_doc_custom_endpoint(doc):
    r = doc.run('''curl "http://127.0.0.1:9180/apisix/admin/routes" -X PUT \\
      -H "X-API-KEY: ${admin_key}" \\
      -d '{
        "id": "prometheus-metrics",
        "uri": "/prometheus_metrics",
        "plugins": {
          "public-api": {
            "uri": "/apisix/prometheus/metrics"
          }
        }
      }' ''')
    assert r.status in (200, 201), r
    _metrics_page(doc.run('curl "http://127.0.0.1:9080/prometheus_metrics"'))
    # The export server is off, as the page's config.yaml says.
    assert doc.run('curl "http://127.0.0.1:9091/apisix/prometheus/metrics"').rc != 0


def test_route_uri_is_the_api(doc):
    r = doc.gw.admin("PUT", "/routes/m", {"uri": "/apisix/prometheus/metrics",
                                          "plugins": {"public-api": {}}},
                     key=WELL_KNOWN_ADMIN_KEY)
    assert r.status in (200, 201), r
    _metrics_page(get(doc.gw.port, "/apisix/prometheus/metrics"))
    # Only the API's method.
    assert http(doc.gw.port, "POST", "/apisix/prometheus/metrics", body=b"x").status == 404


def test_doc_batch_requests_is_404(doc):
    # The page's second example exposes batch-requests, which Sluice does not ship: no API
    # has that uri, so the request is 404, as APISIX answers an unknown one.
    r = doc.run('''curl "http://127.0.0.1:9180/apisix/admin/routes" -X PUT \\
      -H "X-API-KEY: ${admin_key}" \\
      -d '{
        "id": "batch-requests",
        "uri": "/apisix/batch-requests",
        "plugins": {
          "public-api": {}
        }
      }' ''')
    assert r.status in (200, 201), r
    r = doc.run('''curl "http://127.0.0.1:9080/apisix/batch-requests" -X POST -d '
    {
      "pipeline": [
        {
          "method": "GET",
          "path": "/anything"
        }
      ]
    }' ''')
    assert r.status == 404, r


def test_behind_key_auth(doc):
    gw = doc.gw
    for path, body in [
        ("/consumers", {"username": "jack", "plugins": {"key-auth": {"key": "user-key"}}}),
        ("/routes/m", {"uri": "/gen", "plugins": {
            "public-api": {"uri": "/apisix/prometheus/metrics"}, "key-auth": {}}}),
    ]:
        r = gw.admin("PUT", path, body, key=WELL_KNOWN_ADMIN_KEY)
        assert r.status in (200, 201), r
    assert get(gw.port, "/gen").status == 401
    _metrics_page(get(gw.port, "/gen", headers=[("apikey", "user-key")]))


def test_prometheus_not_enabled(tmp_path, ups):  # noqa: F811
    gw = Gateway(tmp_path / "gw", admin=True, admin_keys=OMIT,
                 config={"plugins": ["public-api", "key-auth"]})
    gw.start()
    try:
        r = gw.admin("PUT", "/routes/m", {"uri": "/apisix/prometheus/metrics",
                                          "plugins": {"public-api": {}}},
                     key=WELL_KNOWN_ADMIN_KEY)
        assert r.status in (200, 201), r
        assert get(gw.port, "/apisix/prometheus/metrics").status == 404
    finally:
        _stop(gw)
