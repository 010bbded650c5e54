"""A client for APISIX 3.x's hmac-auth scheme, written from its documentation
(draft-cavage-http-signatures as APISIX reads it), with the standard library only.

The signing string is keyId, then one line per name of the `headers` list, in that order:
`<name>: <value>` for a request header, `<METHOD> <request-uri>` for `@request-target`; every
line ends with a newline. The signature is base64(HMAC(secret, signing string)).

`python3 hmac_client.py vectors` prints the vectors tests/unit/plugins/hmac_auth checks the
gateway's own signing against.
"""

import base64
import email.utils
import hashlib
import hmac
import sys
import time

_DIGESTS = {"hmac-sha1": hashlib.sha1, "hmac-sha256": hashlib.sha256,
            "hmac-sha512": hashlib.sha512}


def http_date(unix_seconds=None):
    """RFC 7231 IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT`."""
    if unix_seconds is None:
        unix_seconds = time.time()
    return email.utils.formatdate(unix_seconds, usegmt=True)


def signing_string(key_id, method, request_uri, headers, names):
    """`headers`: {name: value} of the request (looked up case-insensitively); `names`: the
    `headers` parameter's list, in order."""
    lower = {k.lower(): v for k, v in headers.items()}
    out = [key_id]
    for name in names:
        if name.lower() in lower:
            out.append(f"{name}: {lower[name.lower()]}")
        elif name == "@request-target":
            out.append(f"{method} {request_uri or '/'}")
    return "\n".join(out) + "\n"


def signature(secret, text, algorithm="hmac-sha256"):
    mac = hmac.new(secret.encode(), text.encode(), _DIGESTS[algorithm]).digest()
    return base64.b64encode(mac).decode()


def authorization(key_id, secret, method, request_uri, headers, names,
                  algorithm="hmac-sha256"):
    """The Authorization header value for a request."""
    text = signing_string(key_id, method, request_uri, headers, names)
    sig = signature(secret, text, algorithm)
    return (f'Signature keyId="{key_id}",algorithm="{algorithm}",'
            f'headers="{" ".join(names)}",signature="{sig}"')


def body_digest(body):
    """The Digest header validate_request_body checks: SHA-256 of the body, base64."""
    if isinstance(body, str):
        body = body.encode()
    return "SHA-256=" + base64.b64encode(hashlib.sha256(body).digest()).decode()


def signed_headers(key_id, secret, method, request_uri, extra=None, names=None,
                   algorithm="hmac-sha256", date=None, body=None):
    """Date (now unless given), optional Digest, the extra headers and Authorization."""
    headers = {"Date": date or http_date()}
    if body is not None:
        headers["Digest"] = body_digest(body)
    headers.update(extra or {})
    if names is None:
        names = ["@request-target", "date"]
    headers["Authorization"] = authorization(key_id, secret, method, request_uri, headers,
                                             names, algorithm)
    return headers


# (key_id, secret, method, request_uri, headers, names, algorithm)
VECTORS = [
    ("john-key", "john-secret-key", "GET", "/get",
     {"Date": "Fri, 06 Sep 2024 06:41:29 GMT"}, ["@request-target", "date"], "hmac-sha256"),
    ("k1", "s3cr3t", "POST", "/a/b?x=1&y=%20",
     {"Date": "Tue, 19 Jan 2021 11:33:20 GMT", "X-Custom-A": "test",
      "User-Agent": "curl/7.29.0"},
     ["@request-target", "date", "x-custom-a", "User-Agent"], "hmac-sha1"),
    ("k2", "another secret", "PUT", "",
     {"Date": "Thu, 01 Jan 1970 00:00:00 GMT"}, ["date", "@request-target", "absent"],
     "hmac-sha512"),
    ("k3", "s", "DELETE", "/", {}, [], "hmac-sha256"),
]


def main():
    if sys.argv[1:] != ["vectors"]:
        print(__doc__)
        return 2
    for key_id, secret, method, uri, headers, names, algo in VECTORS:
        text = signing_string(key_id, method, uri, headers, names)
        print(repr((key_id, secret, method, uri, headers, names, algo)))
        print("  signing string:", repr(text))
        print("  signature:", signature(secret, text, algo))
    print("digest of {\"name\": \"world\"}:", body_digest('{"name": "world"}'))
    print("digest of empty body:", body_digest(b""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
