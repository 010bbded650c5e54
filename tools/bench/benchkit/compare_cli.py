"""``sluice bench compare a.json b.json [...] [--out DIR]``.

``main(argv) -> int`` reads two or more results.json files (see ``benchkit.report`` for the
schema), writes report.md, qps.svg and latency.svg into DIR (default ``bench-compare``)
and prints the report's path. A leading ``compare`` word in argv is accepted (and
skipped), so the entry point may pass its arguments through as they are.

Exit status: 0 on success; 2 on bad usage or bad input (a missing file, invalid JSON, a
wrong schema), with the reason on stderr; 1 when the output cannot be written.
"""

from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

from . import report

DEFAULT_OUT = "bench-compare"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="sluice bench compare",
        description="Compare sluice bench results from several machines (for example one "
                    "arm64 and one x86 box) in one report with the articles' table and charts.")
    p.add_argument("files", nargs="+", metavar="RESULTS.json",
                   help="results.json files written by `sluice bench` (the first is A; ratios are B / A)")
    p.add_argument("--out", "-o", default=DEFAULT_OUT, metavar="DIR",
                   help=f"output directory (default: {DEFAULT_OUT})")
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    if args_in and args_in[0] == "compare":
        args_in = args_in[1:]
    parser = _parser()
    try:
        args = parser.parse_args(args_in)
    except SystemExit as e:  # argparse: --help (0) or a usage error (2)
        return int(e.code) if isinstance(e.code, int) else 2
    if len(args.files) < 2:
        print("sluice bench compare: give at least two results files to compare "
              "(one report per machine is `sluice bench` itself)", file=sys.stderr)
        return 2
    results = []
    for path in args.files:
        try:
            results.append(report.load_results(path))
        except ValueError as e:
            print(f"sluice bench compare: {e}", file=sys.stderr)
            return 2
    try:
        paths = report.compare(results, args.out, sources=args.files)
    except OSError as e:
        print(f"sluice bench compare: cannot write {args.out}: {e.strerror or e}", file=sys.stderr)
        return 1
    print(paths[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
