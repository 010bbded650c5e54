"""Load generators: wrk (closed loop, as the articles ran it) or Sluice's built-in generator
(`sluice bench load`: closed loop of the same shape, and open loop at a fixed rate with
latency counted from each request's intended send time).

Every run comes back in one shape:
    {"rps", "requests", "non2xx", "errors", "unsent",
     "latency_ms": {"mean", "p50", "p90", "p99", "p99.9", "max"}, "raw": <the tool's output>}
"""

import json
import os
import shutil
import subprocess

# wrk's done() hook prints its own figures as one JSON line (latency in microseconds).
WRK_SCRIPT = r"""
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'SLUICE_WRK {"requests":%d,"duration_us":%d,"bytes":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency_us":{"min":%d,"mean":%.3f,"stdev":%.3f,"max":%d,"p50":%d,"p75":%d,' ..
    '"p90":%d,"p99":%d,"p99.9":%d,"p99.99":%d}}\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency.min, latency.mean, latency.stdev, latency.max,
    latency:percentile(50), latency:percentile(75), latency:percentile(90),
    latency:percentile(99), latency:percentile(99.9), latency:percentile(99.99)))
end
"""

PERCENTILES = ("p50", "p90", "p99", "p99.9")


class LoadError(RuntimeError):
    pass


def have_wrk():
    return shutil.which("wrk") is not None


def _latency_ms(lat_us):
    out = {"mean": lat_us["mean"] / 1000.0, "max": lat_us["max"] / 1000.0}
    for p in PERCENTILES:
        out[p] = lat_us[p] / 1000.0
    return out


class Generator:
    def __init__(self, sluice_bin, kind, workdir, threads=1, cpus=None, timeout_ms=2000):
        if kind == "wrk" and not have_wrk():
            raise LoadError("wrk is not installed (apt-get install wrk), use --load builtin")
        self.sluice_bin = sluice_bin
        self.kind = kind
        self.threads = max(1, threads)
        self.cpus = set(cpus) if cpus else None
        self.timeout_ms = timeout_ms
        self.wrk_script = os.path.join(workdir, "report.lua")
        with open(self.wrk_script, "w") as f:
            f.write(WRK_SCRIPT)

    def _preexec(self):
        if self.cpus:
            os.sched_setaffinity(0, self.cpus)

    def _run(self, cmd, budget_s):
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=budget_s,
                               preexec_fn=self._preexec)
        except subprocess.TimeoutExpired:
            raise LoadError("%s did not finish within %d s" % (cmd[0], budget_s))
        if p.returncode != 0:
            raise LoadError("%s exited %d: %s" % (" ".join(cmd), p.returncode,
                                                   (p.stderr or p.stdout)[-2000:]))
        return p

    def closed(self, url, connections, duration):
        """Closed loop: each connection sends its next request when the last one is answered."""
        if self.kind == "wrk":
            return self._wrk(url, connections, duration)
        return self._builtin(url, connections, duration, None)

    def open(self, url, connections, duration, rate):
        """Open loop at `rate` requests/s; latency from each request's intended send time."""
        return self._builtin(url, connections, duration, rate)

    def _wrk(self, url, connections, duration):
        threads = min(self.threads, connections)
        cmd = ["wrk", "-t%d" % threads, "-c%d" % connections, "-d%ds" % max(1, round(duration)),
               "--timeout", "%ds" % max(1, self.timeout_ms // 1000), "-s", self.wrk_script, url]
        p = self._run(cmd, duration + 60)
        line = next((ln for ln in p.stdout.splitlines() if ln.startswith("SLUICE_WRK ")), None)
        if line is None:
            raise LoadError("wrk printed no summary:\n" + p.stdout[-2000:] + p.stderr[-2000:])
        raw = json.loads(line[len("SLUICE_WRK "):])
        seconds = raw["duration_us"] / 1e6
        e = raw["errors"]
        return {
            "rps": raw["requests"] / seconds if seconds > 0 else 0.0,
            "requests": raw["requests"],
            "non2xx": e["status"],
            "errors": e["connect"] + e["read"] + e["write"] + e["timeout"],
            "unsent": 0,
            "latency_ms": _latency_ms(raw["latency_us"]),
            "raw": {"tool": "wrk", "command": cmd, **raw},
        }

    def _builtin(self, url, connections, duration, rate):
        cmd = [self.sluice_bin, "bench", "load", "--url", url, "-c", str(connections),
               "-d", "%g" % duration, "--threads", str(min(self.threads, connections)),
               "--timeout-ms", str(self.timeout_ms)]
        if rate is not None:
            cmd += ["--rate", "%g" % rate]
        p = self._run(cmd, duration + 60)
        try:
            raw = json.loads(p.stdout)
        except ValueError:
            raise LoadError("sluice bench load printed no JSON:\n" + p.stdout[-2000:] +
                            p.stderr[-2000:])
        return {
            "rps": raw["rps"],
            "requests": raw["requests"],
            "non2xx": raw["non2xx"],
            "errors": sum(raw["errors"].values()),
            "unsent": raw.get("unsent", 0),
            "latency_ms": _latency_ms(raw["latency_us"]),
            "raw": {"tool": "sluice bench load", "command": cmd, **raw},
        }
