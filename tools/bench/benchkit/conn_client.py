"""A new connection for every request: the handshake load of `sluice bench tls`.

    python3 conn_client.py --host 127.0.0.1 --port P --sni localhost --path /hello
                           --mode full|resume|plain [--procs 4] [--duration 5] [--tls-max 1.3]

Each of --procs processes loops until the deadline: connect, TLS handshake (`full`: never
offers a session; `resume`: offers the session the previous connection of the same process
ended with; `plain`: no TLS at all), one `GET path` with `Connection: close`, read the answer
to the end, close. Prints one JSON object on stdout:

    {"mode", "procs", "elapsed_s", "connections", "handshakes", "reused", "responses",
     "status": {"2xx": n, ...}, "errors": {"connect", "tls", "read"}, "rate"}

`handshakes` counts completed TLS handshakes, `reused` those the server resumed (the
client's own view, SSL_session_reused): a `full` run must show 0, a `resume` run about
`handshakes` - `procs`. Wrk is not used for this because it keeps the SSL object across
reconnects (SSL_shutdown + SSL_clear), which offers the last session again: its
`Connection: close` runs are resumptions, not full handshakes.
"""

import argparse
import json
import multiprocessing
import os
import socket
import ssl
import sys
import time

ERRORS = ("connect", "tls", "read")


def _context(tls_max):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    # The gateways' certificates are the kit's own self-signed ones: the figures measured are
    # the server's, and verifying them would only add client CPU.
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.maximum_version = (ssl.TLSVersion.TLSv1_2 if tls_max == "1.2"
                           else ssl.TLSVersion.TLSv1_3)
    return ctx


def _status_class(head):
    parts = head.split(b" ", 2)
    if len(parts) >= 2 and parts[0].startswith(b"HTTP/") and parts[1][:1].isdigit():
        return parts[1][:1].decode() + "xx"
    return None


def one_connection(args, ctx, session, counts):
    """One connection, one request. Returns the session to offer next (resume mode)."""
    try:
        sock = socket.create_connection((args.host, args.port), timeout=args.timeout)
    except OSError:
        counts["errors"]["connect"] += 1
        time.sleep(0.01)
        return session
    counts["connections"] += 1
    # The client's Finished and its request are separate writes (TLS 1.2 resumption): with
    # Nagle's algorithm the second waits for the server's delayed ACK, 40 ms.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    conn = sock
    try:
        if args.mode != "plain":
            try:
                conn = ctx.wrap_socket(sock, server_hostname=args.sni,
                                       session=session if args.mode == "resume" else None)
            except (ssl.SSLError, OSError):
                counts["errors"]["tls"] += 1
                return None
            counts["handshakes"] += 1
            if conn.session_reused:
                counts["reused"] += 1
        try:
            conn.sendall(args.request)
            data = b""
            while True:
                chunk = conn.recv(65536)
                if not chunk:
                    break
                data += chunk
        except (ssl.SSLError, OSError):
            counts["errors"]["read"] += 1
            return None
        cls = _status_class(data[:16])
        if cls is None:
            counts["errors"]["read"] += 1
        else:
            counts["responses"] += 1
            counts["status"][cls] = counts["status"].get(cls, 0) + 1
        # The session the server handed out on this connection (TLS 1.3: its ticket, read
        # with the answer); single-use where the server says so, so always the latest.
        return conn.session if args.mode == "resume" else None
    finally:
        conn.close()


def worker(args, start_at, queue):
    ctx = _context(args.tls_max)
    counts = {"connections": 0, "handshakes": 0, "reused": 0, "responses": 0, "status": {},
              "errors": {k: 0 for k in ERRORS}}
    delay = start_at - time.monotonic()
    if delay > 0:
        time.sleep(delay)
    deadline = start_at + args.duration
    session = None
    while time.monotonic() < deadline:
        session = one_connection(args, ctx, session, counts)
    counts["stopped"] = time.monotonic()
    queue.put(counts)


def merge(parts, mode, procs, started):
    out = {"mode": mode, "procs": procs, "connections": 0, "handshakes": 0, "reused": 0,
           "responses": 0, "status": {}, "errors": {k: 0 for k in ERRORS}}
    for p in parts:
        for k in ("connections", "handshakes", "reused", "responses"):
            out[k] += p[k]
        for k, v in p["status"].items():
            out["status"][k] = out["status"].get(k, 0) + v
        for k in ERRORS:
            out["errors"][k] += p["errors"][k]
    stopped = max((p["stopped"] for p in parts), default=started)
    out["elapsed_s"] = max(1e-9, stopped - started)
    out["rate"] = out["connections"] / out["elapsed_s"]
    return out


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="conn_client.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--sni", default="localhost")
    ap.add_argument("--path", default="/hello")
    ap.add_argument("--mode", choices=("full", "resume", "plain"), required=True)
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--duration", type=float, default=5)
    ap.add_argument("--timeout", type=float, default=5)
    ap.add_argument("--tls-max", choices=("1.2", "1.3"), default="1.3")
    args = ap.parse_args(argv)
    if args.procs < 1 or args.duration <= 0:
        ap.error("--procs and --duration must be positive")
    args.request = ("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (
        args.path, args.sni)).encode()
    return args


def main(argv):
    args = parse_args(argv)
    mp = multiprocessing.get_context("fork")
    queue = mp.Queue()
    # Every process starts at the same moment, after all of them exist.
    start_at = time.monotonic() + 0.2 + 0.02 * args.procs
    procs = [mp.Process(target=worker, args=(args, start_at, queue)) for _ in range(args.procs)]
    for p in procs:
        p.start()
    parts = [queue.get(timeout=args.duration + 60) for _ in procs]
    for p in procs:
        p.join()
    json.dump(merge(parts, args.mode, args.procs, start_at), sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.exit(main(sys.argv[1:]))
