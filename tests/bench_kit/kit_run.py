"""What the end-to-end kit tests share: the binary under test, the environment that points
it at this checkout's kit, running `sluice bench ...`, and finding processes left behind."""

import os
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SLUICE = os.environ.get("SLUICE_BIN", os.path.join(REPO, "build", "sluice"))
KIT_ENV = dict(os.environ, SLUICE_BENCH_KIT=os.path.join(REPO, "tools", "bench",
                                                         "sluice_bench.py"))


def sluice_bench(*args, timeout=300):
    """`sluice bench ARGS...`, its output captured."""
    return subprocess.run([SLUICE, "bench", *args], capture_output=True, text=True,
                          timeout=timeout, env=KIT_ENV)


def processes_mentioning(text):
    """PIDs of live processes whose command line contains text."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                if text.encode() in f.read():
                    out.append(int(pid))
        except OSError:
            pass
    return out
