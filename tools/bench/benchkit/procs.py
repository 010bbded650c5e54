"""Processes the kit starts: free ports, readiness, CPU and memory accounting, pinning.

CPU time comes from the kernel's own accounting of each process: utime + stime in
/proc/<pid>/stat (all threads, in SC_CLK_TCK ticks), summed over the process and its live
children (nginx and HAProxy run a master and a worker). RSS is VmRSS from /proc/<pid>/status,
summed the same way. Everything started here is stopped by PID, never by name.
"""

import os
import signal
import socket
import subprocess
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")


_HANDED_OUT = set()


def free_port():
    """A port nobody listens on now, never one this process handed out before: the kernel may
    pick a port again once its picker has closed it, and one target takes two or three ports
    in a row before any is bound."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port


def wait_port(port, proc=None, timeout=15.0, host="127.0.0.1"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return False
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.05)
    return False


def _stat_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime: fields 14 and 15 of proc(5)


def children(pid):
    out = []
    try:
        for tid in os.listdir("/proc/%d/task" % pid):
            try:
                with open("/proc/%d/task/%s/children" % (pid, tid)) as f:
                    out += [int(x) for x in f.read().split()]
            except FileNotFoundError:
                pass
    except FileNotFoundError:
        pass
    return out


def tree(pid):
    """pid and its descendants, as far as they are alive."""
    seen, todo = [], [pid]
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.append(p)
        todo += children(p)
    return seen


def cpu_seconds(pids):
    """CPU seconds (user + system) used so far by the processes and their live children."""
    total = 0
    for root in pids:
        for p in tree(root):
            try:
                total += _stat_ticks(p)
            except (FileNotFoundError, ProcessLookupError, IndexError):
                pass
    return total / CLK_TCK


def rss_kib(pids):
    total = 0
    for root in pids:
        for p in tree(root):
            try:
                with open("/proc/%d/status" % p) as f:
                    for line in f:
                        if line.startswith("VmRSS:"):
                            total += int(line.split()[1])
                            break
            except FileNotFoundError:
                pass
    return total


def pid_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


class Process:
    """A server the kit runs: own session, log file, optional CPU pinning, stopped by PID."""

    def __init__(self, name, cmd, port, log_path, cwd=None, cpus=None, env=None,
                 ready_timeout=15.0):
        self.name = name
        self.port = port
        self.cmd = cmd
        self.log_path = log_path
        self.log = open(log_path, "wb")
        preexec = None
        if cpus:
            cpu_set = set(cpus)

            def preexec():
                os.sched_setaffinity(0, cpu_set)
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=self.log, cwd=cwd, env=env,
                                     stdin=subprocess.DEVNULL, start_new_session=True,
                                     preexec_fn=preexec)
        if port is not None and not wait_port(port, self.proc, ready_timeout):
            tail = self.log_tail()
            self.stop()
            raise RuntimeError("%s did not start (%s); its log ends:\n%s" % (
                name, " ".join(cmd), tail))

    @property
    def pid(self):
        return self.proc.pid

    def log_tail(self, n=3000):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()[-n:]
        except OSError:
            return ""

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if not self.log.closed:
            self.log.close()


PLACEMENTS = ("own", "load-alone", "gateway-alone")


def place(cores, workers, name):
    """CPU sets for gateway, upstream and load generator under a named placement, or None
    when there are too few CPUs for it. `cores`: a count (CPUs 0..n-1) or the list of CPUs
    to use (usable_cpus()).

    - own: each its own CPUs (workers + 2 CPUs or more): gateway, upstream, load generator.
    - load-alone: the load generator alone on the first CPU (and any CPU left over); the
      gateway and its upstream share the others. The generator never competes with what it
      measures (the open loop keeps its schedule), and the gateway-to-upstream hop is local.
    - gateway-alone: the gateway alone on its CPUs; the upstream and the load generator
      share the rest. Every wake-up the gateway sends crosses CPUs.

    Which processes share a CPU changes a gateway's CPU per request more than most code
    changes (docs/performance.md measured 8.9 to 25.4 us for the same gateway), and it changes
    gateways unequally: docs/benchmark.md, "Placement", gives the figures."""
    cpus = list(range(cores)) if isinstance(cores, int) else sorted(cores)
    n, w = len(cpus), workers
    if name not in PLACEMENTS:
        raise ValueError("unknown placement %r (choose from %s)" % (name, ", ".join(PLACEMENTS)))
    if w < 1:
        return None
    if name == "own":
        if n < w + 2:
            return None
        return {"gateway": cpus[:w], "upstream": [cpus[w]], "load": cpus[w + 1:]}
    if n < w + 1:
        return None
    gateway, rest = cpus[1:w + 1], cpus[:1] + cpus[w + 1:]
    if name == "load-alone":
        return {"gateway": gateway, "upstream": list(gateway), "load": rest}
    return {"gateway": gateway, "upstream": list(rest), "load": rest}


def default_placement(cores, workers):
    """The placement the kits use unless told otherwise: each process its own CPUs where
    there are enough (workers + 2), else the load generator alone; None (unpinned) on
    smaller machines."""
    for name in ("own", "load-alone"):
        if place(cores, workers, name):
            return name
    return None


def pin_plan(cores, workers):
    """The default placement's CPU sets (None: too few CPUs, leave it to the scheduler)."""
    name = default_placement(cores, workers)
    return place(cores, workers, name) if name else None


def usable_cpus():
    """The CPUs this process may run on (a container's cpuset, taskset), not the machine's."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 1))
