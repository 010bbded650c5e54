"""The kit's process helpers: CPU pinning plan, /proc accounting, machine facts."""

import os
import subprocess
import time

from benchkit import machine, procs


def test_pinning_gives_each_its_cores_or_keeps_the_load_generator_apart():
    assert procs.pin_plan(3, 1) == {"gateway": [0], "upstream": [1], "load": [2]}
    assert procs.pin_plan(16, 4) == {"gateway": [0, 1, 2, 3], "upstream": [4],
                                     "load": list(range(5, 16))}
    # One core short of that: the upstream shares the gateway's, the generator has CPU 0.
    assert procs.pin_plan(2, 1) == {"gateway": [1], "upstream": [1], "load": [0]}
    assert procs.pin_plan(5, 4) == {"gateway": [1, 2, 3, 4], "upstream": [1, 2, 3, 4],
                                    "load": [0]}
    # Fewer still: nothing to keep apart.
    assert procs.pin_plan(1, 1) is None
    assert procs.pin_plan(4, 4) is None
    # The CPUs this process may use (a container's cpuset), not the machine's count.
    assert procs.pin_plan([2, 5], 1) == {"gateway": [5], "upstream": [5], "load": [2]}
    assert procs.pin_plan([3], 1) is None
    assert procs.pin_plan([0, 1, 2], 1) == {"gateway": [0], "upstream": [1], "load": [2]}
    assert set(procs.usable_cpus()) == os.sched_getaffinity(0)


def test_cpu_seconds_counts_a_child_process_tree():
    # A shell whose child burns ~0.3 s of CPU: the tree's CPU includes the child's.
    p = subprocess.Popen(["/bin/sh", "-c",
                          "/usr/bin/python3 -c 'import time\nt=time.process_time()\n"
                          "while time.process_time()-t<0.3: pass\ntime.sleep(5)'"])
    try:
        deadline = time.monotonic() + 10
        used = 0
        while time.monotonic() < deadline:
            used = procs.cpu_seconds([p.pid])
            if used >= 0.25:
                break
            time.sleep(0.1)
        assert 0.25 <= used < 5
        assert procs.rss_kib([p.pid]) > 1000
    finally:
        for c in procs.tree(p.pid)[1:]:
            os.kill(c, 9)
        p.kill()
        p.wait()


def test_machine_facts():
    f = machine.facts()
    assert f["arch"] == os.uname().machine
    assert f["cores"] == os.cpu_count()
    assert f["kernel"] == os.uname().release
    assert f["cpu_model"] and f["cpu_model"] in f["label"]
    assert f["memory_gib"] > 0
