"""Issue 20, item 1: a route's plugins cannot be bypassed by an encoded or dotted path.

One gateway in front of a recording upstream, two routes: `/secret/*` carrying limit-count
(count 1, keyed on the `uri` variable, so each normalised path has its own quota of one) and
a catch-all `/*` without plugins. Routes match nginx's normalised `$uri`, as APISIX's do
(http/path.h and docs/routing.md hold the rules):

* ROUTED: each hostile form of `/secret/<id>` must reach the upstream through `/secret/*`
  (the answer carries limit-count's X-RateLimit-Limit: 1), with the request-target forwarded
  exactly as sent; the canonical `/secret/<id>` sent next is then limited (503): the `uri`
  variable the key reads is the normalised path.
* CATCH_ALL: paths that do not normalise to `/secret/...` go through `/*`, unlimited.
* REFUSED: paths that cannot be normalised safely get 400 and the upstream sees nothing.
"""

import itertools

import pytest

from harness import Gateway, get, route
from fake_upstream import FakeUpstream

_ids = itertools.count(1)

# (name, hostile path with {id}, canonical path with {id}).
ROUTED = [
    ("encoded_letter", "/%73ecret/{id}", "/secret/{id}"),
    ("encoded_word", "/%73%65%63%72%65%74/{id}", "/secret/{id}"),
    ("dot_dot", "/x/../secret/{id}", "/secret/{id}"),
    ("dot_dot_twice", "/a/b/../../secret/{id}", "/secret/{id}"),
    ("dot_dot_inside", "/secret/x/../{id}", "/secret/{id}"),
    ("dot", "/./secret/{id}", "/secret/{id}"),
    ("dot_inside", "/secret/./{id}", "/secret/{id}"),
    ("double_slash", "//secret/{id}", "/secret/{id}"),
    ("slashes_inside", "/secret///{id}", "/secret/{id}"),
    ("encoded_slash_upper", "/secret%2F{id}", "/secret/{id}"),
    ("encoded_slash_lower", "/secret%2f{id}", "/secret/{id}"),
    ("encoded_leading_slash", "/%2Fsecret/{id}", "/secret/{id}"),
    ("mixed_case_escapes", "/secret/%6F%6f{id}", "/secret/oo{id}"),
    ("utf8_escaped", "/secret/caf%C3%A9{id}", "/secret/caf%c3%a9{id}"),
    ("params_after_name", "/secret/{id};v=1", "/secret/{id};v=1"),
    ("dots_and_query", "/x/../secret/{id}?next=/../../etc", "/secret/{id}"),
    ("everything", "//x/.././%73ecret//{id}", "/secret/{id}"),
]

CATCH_ALL = [
    ("params_on_prefix", "/secret;x/{id}"),
    ("longer_name", "/secretx/{id}"),
    ("double_encoded", "/%2573ecret/{id}"),
    ("encoded_question", "/secret%3F/{id}"),
    ("dot_dot_away", "/secret/../public/{id}"),
]

REFUSED = [
    ("above_root", "/../secret/a"),
    ("above_root_deeper", "/x/../../secret/a"),
    ("nul", "/secret/%00a"),
    ("bad_escape", "/secret/%zz"),
    ("truncated_escape", "/secret/a%4"),
    ("lone_percent", "/secret/%"),
    ("encoded_dots", "/x/%2e%2e/secret/a"),
    ("encoded_dot_mixed", "/x/.%2E/secret/a"),
    ("encoded_slash_with_dots", "/x%2F..%2Fsecret/a"),
    ("backslash", "/x\\..\\secret/a"),
    ("encoded_backslash", "/x%5C..%5Csecret/a"),
    ("servlet_dot_dot", "/x/..;/secret/a"),
    ("servlet_empty", "/;x/secret/a"),
    ("overlong_utf8_dots", "/x/%c0%ae%c0%ae/secret/a"),
    ("overlong_utf8_slash", "/x%c0%af..%c0%afsecret/a"),
    ("fragment", "/secret#/../a"),
    ("crlf", "/secret/%0d%0aX-Injected:1"),
]


@pytest.fixture(scope="module")
def rig(tmp_path_factory):
    up = FakeUpstream("paths-up")
    limit = {"limit-count": {"count": 1, "time_window": 60, "key_type": "var", "key": "uri",
                             "rejected_code": 503}}
    gw = Gateway(tmp_path_factory.mktemp("paths"), workers=1,
                 routes=[route("/secret/*", up, rid="secret", plugins=limit),
                         route("/*", up, rid="all")])
    try:
        gw.start()
    except Exception:
        up.stop()
        raise
    yield gw, up
    rc = gw.stop()
    up.stop()
    print("\n--- sluice log ---\n" + "\n".join(gw.log_text().splitlines()[-60:]))
    assert rc == 0, "gateway exited with %r on SIGTERM" % (rc,)


def _targets(up):
    return [r.target for r in up.requests]


@pytest.mark.parametrize("name,hostile,canonical", ROUTED, ids=[c[0] for c in ROUTED])
def test_hostile_form_takes_the_secret_route_and_is_limited(rig, name, hostile, canonical):
    gw, up = rig
    key = "k%d%s" % (next(_ids), name.replace("_", ""))
    target = hostile.format(id=key)
    before = len(up.requests)
    r = get(gw.port, target)
    assert r.status == 200, r
    assert r.header("x-ratelimit-limit") == "1", \
        "%s went around /secret/* and its limit-count: %r" % (target, r)
    assert _targets(up)[before:] == [target], "the upstream must get the target as sent"
    again = get(gw.port, canonical.format(id=key))
    assert again.status == 503, "the uri key must be the normalised path: %r" % again
    assert len(up.requests) == before + 1


@pytest.mark.parametrize("name,path", CATCH_ALL, ids=[c[0] for c in CATCH_ALL])
def test_other_paths_take_the_catch_all(rig, name, path):
    gw, up = rig
    target = path.format(id="c%d" % next(_ids))
    before = len(up.requests)
    for _ in range(2):
        r = get(gw.port, target)
        assert r.status == 200, r
        assert r.header("x-ratelimit-limit") is None, r
    assert _targets(up)[before:] == [target, target]


@pytest.mark.parametrize("name,path", REFUSED, ids=[c[0] for c in REFUSED])
def test_unsafe_paths_are_refused(rig, name, path):
    gw, up = rig
    before = len(up.requests)
    r = get(gw.port, path)
    assert r.status == 400, r
    assert len(up.requests) == before, "a refused request reached the upstream"


def test_refusal_is_logged(rig):
    gw, _ = rig
    assert get(gw.port, "/a/../../b").status == 400
    assert "'..' above the root" in gw.log_text()


def test_absolute_form_is_routed_on_its_normalised_path_and_forwarded_raw(rig):
    gw, up = rig
    key = "abs%d" % next(_ids)
    before = len(up.requests)
    r = get(gw.port, "http://127.0.0.1/x/../%%73ecret/%s?q=1" % key)
    assert r.status == 200 and r.header("x-ratelimit-limit") == "1", r
    assert _targets(up)[before:] == ["/x/../%%73ecret/%s?q=1" % key]
    assert get(gw.port, "/secret/%s" % key).status == 503
