"""Sluice benchmark kit (``sluice bench``): reproduces the published APISIX single-worker
benchmark (scenario 1: no plugin; scenario 2: limit-count + prometheus; wrk -c16 -d5).

Modules: ``runner`` starts the targets and produces the results dict; ``phases`` takes the
measurements, cell by cell in rotation (``fair``: the run order and the overlap rule);
``report`` writes report.md, qps.svg and latency.svg from it (and compares several machines),
``report_fair`` the parts on spread and trust; ``svg`` is the bar-chart writer;
``compare_cli`` is the ``sluice bench compare`` command line.
"""
