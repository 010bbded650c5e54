"""request-validation (issue 24): APISIX's documented examples as published (docs/en/latest/
plugins/request-validation.md, apache/apisix commit 09b89d41) with only the ports and the
upstream address replaced, the schema's refusals (an invalid user schema included), and the
plugin on a service and a global rule."""

import json

import pytest

from fake_upstream import FakeUpstream
from harness import OMIT, Gateway, admin_route, http
from test_apisix_docs import Doc, HttpbinEcho

HEADERS = """
curl "http://127.0.0.1:9180/apisix/admin/routes" -X PUT \\
  -H "X-API-KEY: ${admin_key}" \\
  -d '{
    "id": "request-validation-route",
    "uri": "/get",
    "plugins": {
      "request-validation": {
        "header_schema": {
          "type": "object",
          "required": ["User-Agent", "Host"],
          "properties": {
            "User-Agent": {
              "type": "string",
              "pattern": "^curl\\/"
            },
            "Host": {
              "type": "string",
              "enum": ["httpbin.org", "httpbin"]
            }
          }
        }
      }
    },
    "upstream": {
      "type": "roundrobin",
      "nodes": {
        "httpbin.org:80": 1
      }
    }
  }'
"""

CUSTOM = """
curl "http://127.0.0.1:9180/apisix/admin/routes" -X PUT \\
  -H "X-API-KEY: ${admin_key}" \\
  -d '{
    "id": "request-validation-route",
    "uri": "/get",
    "plugins": {
      "request-validation": {
        "header_schema": {
          "type": "object",
          "required": ["Host"],
          "properties": {
            "Host": {
              "type": "string",
              "enum": ["httpbin.org", "httpbin"]
            }
          }
        },
        "rejected_code": 403,
        "rejected_msg": "Request header validation failed."
      }
    },
    "upstream": {
      "type": "roundrobin",
      "nodes": {
        "httpbin.org:80": 1
      }
    }
  }'
"""

JSON_BODY = """
curl "http://127.0.0.1:9180/apisix/admin/routes" -X PUT \\
  -H "X-API-KEY: ${admin_key}" \\
  -d '{
    "id": "request-validation-route",
    "uri": "/post",
    "plugins": {
      "request-validation": {
        "header_schema": {
          "type": "object",
          "required": ["Content-Type"],
          "properties": {
            "Content-Type": {
            "type": "string",
            "pattern": "^application\\/json$"
            }
          }
        },
        "body_schema": {
          "type": "object",
          "required": ["required_payload"],
          "properties": {
            "required_payload": {"type": "string"},
            "boolean_payload": {"type": "boolean"},
            "array_payload": {
              "type": "array",
              "minItems": 1,
              "items": {
                "type": "integer",
                "minimum": 200,
                "maximum": 599
              },
              "uniqueItems": true,
              "default": [200]
            }
          }
        }
      }
    },
    "upstream": {
      "type": "roundrobin",
      "nodes": {
        "httpbin.org:80": 1
      }
    }
  }'
"""

FORM_BODY = """
curl "http://127.0.0.1:9180/apisix/admin/routes" -X PUT \\
  -H "X-API-KEY: ${admin_key}" \\
  -d '{
    "id": "request-validation-route",
    "uri": "/post",
    "plugins": {
      "request-validation": {
        "header_schema": {
          "type": "object",
          "required": ["Content-Type"],
          "properties": {
            "Content-Type": {
              "type": "string",
              "pattern": "^application\\/x-www-form-urlencoded$"
            }
          }
        },
        "body_schema": {
          "type": "object",
          "required": ["required_payload","enum_payload"],
          "properties": {
            "required_payload": {"type": "string"},
            "enum_payload": {
              "type": "string",
              "enum": ["enum_string_1", "enum_string_2"],
              "default": "enum_string_1"
            }
          }
        }
      }
    },
    "upstream": {
      "type": "roundrobin",
      "nodes": {
        "httpbin.org:80": 1
      }
    }
  }'
"""


@pytest.fixture(scope="module")
def doc(tmp_path_factory):
    ups = [FakeUpstream(name=n, default=HttpbinEcho()) for n in ("httpbin.org", "b", "c")]
    gw = Gateway(tmp_path_factory.mktemp("rv"), admin=True, admin_keys=OMIT, workers=2)
    gw.start()
    yield Doc(gw, ups)
    gw.stop()
    for up in ups:
        up.stop()


def _put(doc, cmd):
    r = doc.run(cmd)
    assert r.status in (200, 201), r


def _rejected(r, status, text):
    assert r.status == status, r
    assert r.body.decode() == text, r


def test_doc_validate_request_header(doc):
    _put(doc, HEADERS)
    r = doc.run('curl -i "http://127.0.0.1:9080/get" -H "Host: httpbin"')
    assert r.status == 200 and json.loads(r.body)["target"] == "/get", r
    r = doc.run('curl -i "http://127.0.0.1:9080/get"')
    assert r.status == 400, r
    # The page prints "... matches none of the enum value"; jsonschema's words end in "values".
    assert r.body.decode().startswith(
        'property "Host" validation failed: matches none of the enum value'), r
    r = doc.run('curl -i "http://127.0.0.1:9080/get" -H "Host: httpbin" -H "User-Agent: cli-mock"')
    _rejected(r, 400, 'property "User-Agent" validation failed: failed to match pattern '
                      '"^curl/" with "cli-mock"')


def test_doc_customize_rejection(doc):
    _put(doc, CUSTOM)
    r = doc.run('curl -i "http://127.0.0.1:9080/get" -H "Host: httpbin2"')
    _rejected(r, 403, "Request header validation failed.")


def test_doc_validate_json_body(doc):
    _put(doc, JSON_BODY)
    r = doc.run("""curl -i "http://127.0.0.1:9080/post" -X POST \\
      -H "Content-Type: application/json" \\
      -d '{"required_payload":"hello", "array_payload":[301]}'""")
    assert r.status == 200, r
    sent = '{"required_payload":"hello", "array_payload":[301]}'
    assert json.loads(r.body)["body_len"] == len(sent), r  # forwarded as sent
    r = doc.run("""curl -i "http://127.0.0.1:9080/post" -X POST \\
      -d '{"required_payload":"hello,world"}'""")
    _rejected(r, 400, 'property "Content-Type" validation failed: failed to match pattern '
                      '"^application/json$" with "application/x-www-form-urlencoded"')
    r = doc.run("""curl -i "http://127.0.0.1:9080/post" -X POST \\
      -H "Content-Type: application/json" \\
      -d '{}'""")
    _rejected(r, 400, 'property "required_payload" is required')


def test_doc_validate_form_body(doc):
    _put(doc, FORM_BODY)
    r = doc.run("""curl -i "http://127.0.0.1:9080/post" -X POST \\
      -H "Content-Type: application/x-www-form-urlencoded" \\
      -d "required_payload=hello&enum_payload=enum_string_1\"""")
    # The page shows httpbin's echo of the form (under a 400 heading, a slip of the page).
    assert r.status == 200, r
    r = doc.run("""curl -i "http://127.0.0.1:9080/post" -X POST \\
      -H "Content-Type: application/x-www-form-urlencoded" \\
      -d "required_payload=hello\"""")
    _rejected(r, 400, 'property "enum_payload" is required')


@pytest.mark.parametrize("conf,text", [
    ({}, 'object matches none of the requireds: ["body_schema"] or ["header_schema"]'),
    ({"body_schema": "x"},
     'property "body_schema" validation failed: wrong type: expected object, got string'),
    ({"header_schema": {}, "rejected_code": 199},
     'property "rejected_code" validation failed: expected 199 to be at least 200'),
])
def test_schema_refusals(make_gateway, upstream, conf, text):
    gw = make_gateway(admin=True)
    r = gw.admin("PUT", "/routes/1", admin_route("/v", upstream,
                                                  plugins={"request-validation": conf}))
    assert r.status == 400, r
    assert r.json["error_msg"] == \
        "failed to check the configuration of plugin request-validation err: " + text, r


def test_an_invalid_user_schema_is_refused(make_gateway, upstream):
    gw = make_gateway(admin=True)
    r = gw.admin("PUT", "/routes/1", admin_route("/v", upstream, plugins={
        "request-validation": {"body_schema": {"type": "object", "properties": {
            "a": {"type": "string", "minLength": "three"}}}}}))
    assert r.status == 400, r
    assert r.json["error_msg"].startswith(
        "failed to check the configuration of plugin request-validation err: "
        "invalid body_schema: "), r


def test_on_service_and_global_rule(make_gateway, upstream):
    gw = make_gateway(admin=True)
    schema = {"header_schema": {"type": "object", "required": ["X-Token"]}}
    assert gw.admin("PUT", "/services/1", {"plugins": {"request-validation": schema}}).status \
        in (200, 201)
    assert gw.admin("PUT", "/routes/1", admin_route("/s", upstream, service_id="1")).status \
        in (200, 201)
    _rejected(http(gw.port, "GET", "/s"), 400, 'property "X-Token" is required')
    assert http(gw.port, "GET", "/s", headers=[("x-token", "1")]).status == 200
    body = {"body_schema": {"type": "object", "required": ["a"]}, "rejected_code": 422}
    assert gw.admin("PUT", "/global_rules/1", {"plugins": {"request-validation": body}}).status \
        in (200, 201)
    assert gw.admin("PUT", "/routes/2", admin_route("/g", upstream)).status in (200, 201)
    r = http(gw.port, "POST", "/g", headers=[("Content-Type", "application/json")],
             body=b'{"b": 1}')
    _rejected(r, 422, 'property "a" is required')
    r = http(gw.port, "POST", "/g", headers=[("Content-Type", "application/json")],
             body=b'{"a": 1}')
    assert r.status == 200, r
