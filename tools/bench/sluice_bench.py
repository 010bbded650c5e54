#!/usr/bin/python3
"""Entry point of `sluice bench` (the sluice binary execs this with SLUICE_BIN set).

    sluice bench [options]                       run the benchmark (see --help)
    sluice bench compare a.json b.json [--out D] put several machines' runs side by side
    sluice bench tls [options]                   TLS termination against nginx (see --help)
    sluice bench auth [options]                  key-auth and jwt-auth's cost, nginx alongside
    sluice bench traffic [options]               cors + request-id + limit-req and proxy-cache
                                                 hits, nginx alongside
    sluice bench accesslog [options]             the access log's cost, nginx's buffered
                                                 access_log alongside
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from benchkit import (accesslog_run, auth_run, compare_cli, runner, tls_run,  # noqa: E402
                      traffic_run)


def main(argv):
    if argv and argv[0] == "compare":
        return compare_cli.main(argv[1:])
    if argv and argv[0] == "tls":
        return tls_run.main(argv[1:])
    if argv and argv[0] == "auth":
        return auth_run.main(argv[1:])
    if argv and argv[0] == "traffic":
        return traffic_run.main(argv[1:])
    if argv and argv[0] == "accesslog":
        return accesslog_run.main(argv[1:])
    return runner.main(argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
