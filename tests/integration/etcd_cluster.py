"""A real etcd (3.4+) cluster on loopback for the integration tests.

    c = EtcdCluster(tmpdir, members=3)
    c.start()                       # every member, waits until each one answers /health
    c.urls                          # ["http://127.0.0.1:PORT", ...] (client URLs)
    c.put("/apisix/routes/1", json_text); c.get("/apisix/routes/1")
    c.kill_member(0); c.start_member(0)     # same data dir, --initial-cluster-state existing
    c.wipe()                        # a brand-new cluster on the same ports: revisions from 1
    c.close()                       # stops every member (by PID), deletes the data dirs

Every member gets free loopback client and peer ports and its own data dir under `workdir`;
its output goes to `workdir/memberN.log` (appended across restarts; `log_tail(i)`,
`print_logs()`). Heartbeat and election timeouts are small (50/500 ms) so that a cluster
starts and elects a leader in well under a second. Processes are only ever signalled by the
PIDs this object started.

The etcdctl helpers run the real `etcdctl` (ETCDCTL_API=3) against every running member
unless `endpoints=` names some (a list of URLs, or member indexes).
"""

import base64
import json
import os
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.request

from harness import free_port

ETCD_BIN = os.environ.get("SLUICE_ETCD_BIN", "etcd")
ETCDCTL_BIN = os.environ.get("SLUICE_ETCDCTL_BIN", "etcdctl")


class EtcdError(AssertionError):
    pass


def _distinct_free_ports(n):
    ports = set()
    while len(ports) < n:
        ports.add(free_port())  # below the ephemeral range: a member restarted
        # on its port cannot find it taken by an outgoing connection
    return list(ports)


def _b64(s):
    if isinstance(s, str):
        s = s.encode()
    return base64.b64encode(s).decode()


def _unb64(s):
    return base64.b64decode(s or "")


class EtcdCluster:
    def __init__(self, workdir, members=1, heartbeat_ms=50, election_ms=500,
                 start_timeout=20.0, log_level="info"):
        if members < 1:
            raise ValueError("members must be >= 1")
        self.dir = str(workdir)
        os.makedirs(self.dir, exist_ok=True)
        self.n = members
        self.heartbeat_ms = heartbeat_ms
        self.election_ms = election_ms
        self.start_timeout = start_timeout
        self.log_level = log_level
        ports = _distinct_free_ports(2 * members)
        self.client_ports = ports[:members]
        self.peer_ports = ports[members:]
        self.names = ["m%d" % i for i in range(members)]
        self.procs = [None] * members
        self._logs = [None] * members
        self.generation = 0  # bumped by wipe(): part of the cluster token
        self._token = "sluice-test-%d-%d" % (os.getpid(), id(self))

    # ---- addresses

    @property
    def urls(self):
        """The client URLs of every member, in member order."""
        return [self.client_url(i) for i in range(self.n)]

    def client_url(self, i):
        return "http://127.0.0.1:%d" % self.client_ports[i]

    def peer_url(self, i):
        return "http://127.0.0.1:%d" % self.peer_ports[i]

    def data_dir(self, i):
        return os.path.join(self.dir, "member%d.data" % i)

    def log_path(self, i):
        return os.path.join(self.dir, "member%d.log" % i)

    def initial_cluster(self):
        return ",".join("%s=%s" % (self.names[i], self.peer_url(i)) for i in range(self.n))

    # ---- processes

    def _spawn(self, i, state):
        if self.alive(i):
            raise EtcdError("member %d is already running (pid %d)" % (i, self.procs[i].pid))
        os.makedirs(self.data_dir(i), exist_ok=True)
        cmd = [ETCD_BIN,
               "--name", self.names[i],
               "--data-dir", self.data_dir(i),
               "--listen-client-urls", self.client_url(i),
               "--advertise-client-urls", self.client_url(i),
               "--listen-peer-urls", self.peer_url(i),
               "--initial-advertise-peer-urls", self.peer_url(i),
               "--initial-cluster", self.initial_cluster(),
               "--initial-cluster-state", state,
               "--initial-cluster-token", "%s-%d" % (self._token, self.generation),
               "--heartbeat-interval", str(self.heartbeat_ms),
               "--election-timeout", str(self.election_ms),
               "--logger", "zap", "--log-outputs", "stderr", "--log-level", self.log_level]
        if self._logs[i] is None:
            self._logs[i] = open(self.log_path(i), "ab")
        self._logs[i].write(("\n=== %s start (%s): %s\n" % (
            time.strftime("%H:%M:%S"), state, " ".join(cmd))).encode())
        self._logs[i].flush()
        env = dict(os.environ)
        for k in list(env):  # an ETCD_* variable in the caller's environment would be a flag
            if k.startswith("ETCD_") or k.startswith("ETCDCTL_"):
                del env[k]
        self.procs[i] = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=self._logs[i],
                                         stderr=self._logs[i], env=env,
                                         start_new_session=True)

    def alive(self, i):
        p = self.procs[i]
        return p is not None and p.poll() is None

    def pid(self, i):
        return self.procs[i].pid if self.procs[i] is not None else None

    def running(self):
        """Indexes of the members whose process is running."""
        return [i for i in range(self.n) if self.alive(i)]

    def start(self, timeout=None):
        """Starts every member of a new cluster (or restarts the existing one: a member
        that has a data dir already ignores the initial-cluster flags) and waits until each
        answers healthy."""
        for i in range(self.n):
            if not self.alive(i):
                self._spawn(i, "new")
        self.wait_healthy(timeout=timeout)
        return self

    def start_member(self, i, wait=True, timeout=None):
        """Restarts member i on its data dir, ports and name (--initial-cluster-state
        existing). wait: until it answers healthy (needs a quorum of running members)."""
        self._spawn(i, "existing" if os.path.isdir(os.path.join(self.data_dir(i), "member"))
                    else "new")
        if wait:
            self.wait_healthy([i], timeout=timeout)

    def start_all(self, wait=True, timeout=None):
        """Starts every stopped member (data kept) and waits until all are healthy."""
        for i in range(self.n):
            if not self.alive(i):
                self.start_member(i, wait=False)
        if wait:
            self.wait_healthy(timeout=timeout)

    def _end(self, i, sig, timeout):
        p = self.procs[i]
        if p is None:
            return None
        if p.poll() is None:
            os.kill(p.pid, sig)
            try:
                p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.kill(p.pid, signal.SIGKILL)
                p.wait()
        if self._logs[i] is not None:
            self._logs[i].write(("\n=== %s %s, exit %s\n" % (
                time.strftime("%H:%M:%S"), signal.Signals(sig).name, p.returncode)).encode())
            self._logs[i].flush()
        return p.returncode

    def _settle(self, wait_quorum):
        """After losing a member: when the running members still have a quorum, waits until
        they answer healthy again (a new leader elected). Without that wait, a write sent
        while the followers still believe in a dead leader is dropped and hangs until its
        deadline: etcd does not retry it."""
        run = self.running()
        if wait_quorum and run and len(run) > self.n // 2:
            self.wait_healthy(run)

    def stop_member(self, i, timeout=10, wait_quorum=True):
        """SIGTERM to member i's PID; waits for it to exit (SIGKILL after timeout), then,
        with wait_quorum, until the remaining members are healthy (when they can be)."""
        rc = self._end(i, signal.SIGTERM, timeout)
        self._settle(wait_quorum)
        return rc

    def kill_member(self, i, wait_quorum=True):
        """SIGKILL to member i's PID; reaps it; then as stop_member."""
        rc = self._end(i, signal.SIGKILL, 10)
        self._settle(wait_quorum)
        return rc

    def stop_all(self):
        for i in range(self.n):
            self._end(i, signal.SIGTERM, 10)

    def kill_all(self):
        for i in range(self.n):
            self._end(i, signal.SIGKILL, 10)

    def wipe(self, timeout=None):
        """Stops every member, deletes their data and starts a brand-new cluster (new
        cluster token) on the same ports: everything is gone and revisions restart at 1."""
        self.stop_all()
        for i in range(self.n):
            shutil.rmtree(self.data_dir(i), ignore_errors=True)
        self.generation += 1
        for i in range(self.n):
            self._spawn(i, "new")
        self.wait_healthy(timeout=timeout)

    def close(self, print_logs=True, keep_data=False):
        """Stops every member and deletes the data dirs (the logs stay in workdir). With
        print_logs, prints each member's log tail (pytest shows it when the test fails)."""
        self.stop_all()
        if print_logs:
            self.print_logs()
        for i in range(self.n):
            if self._logs[i] is not None:
                self._logs[i].close()
                self._logs[i] = None
            if not keep_data:
                shutil.rmtree(self.data_dir(i), ignore_errors=True)

    # ---- health

    def member_healthy(self, i, timeout=1.0):
        """GET /health on member i: true when it has a leader and serves (a quorum read)."""
        if not self.alive(i):
            return False
        try:
            with urllib.request.urlopen(self.client_url(i) + "/health", timeout=timeout) as r:
                return json.loads(r.read()).get("health") == "true"
        except (OSError, ValueError, urllib.error.URLError):
            return False

    def wait_healthy(self, members=None, timeout=None):
        members = self.running() if members is None else list(members)
        timeout = self.start_timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        pending = list(members)
        while pending:
            for i in list(pending):
                if not self.alive(i):
                    raise EtcdError("etcd member %d exited with %s while starting\n%s"
                                    % (i, self.procs[i].returncode, self.log_tail(i)))
                if self.member_healthy(i):
                    pending.remove(i)
            if not pending:
                break
            if time.monotonic() > deadline:
                raise EtcdError("etcd members %s not healthy within %.0fs\n%s" % (
                    pending, timeout, "\n".join(self.log_tail(i) for i in pending)))
            time.sleep(0.05)

    # ---- logs

    def log_text(self, i):
        try:
            with open(self.log_path(i), "rb") as f:
                return f.read().decode(errors="replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, i, lines=40):
        return "--- etcd member %d (%s) ---\n%s" % (
            i, self.log_path(i), "\n".join(self.log_text(i).splitlines()[-lines:]))

    def print_logs(self, lines=40):
        for i in range(self.n):
            print("\n" + self.log_tail(i, lines))

    # ---- etcdctl

    def _endpoints(self, endpoints):
        if endpoints is None:
            run = self.running()
            eps = [self.client_url(i) for i in (run or range(self.n))]
        elif isinstance(endpoints, (int, str)):
            eps = [endpoints]
        else:
            eps = list(endpoints)
        return ",".join(self.client_url(e) if isinstance(e, int) else e for e in eps)

    def ctl(self, *args, endpoints=None, input=None, check=False, timeout=15,
            command_timeout="5s"):
        """Runs `etcdctl --endpoints=... ARGS` (ETCDCTL_API=3); returns the CompletedProcess
        (text mode). check=True raises EtcdError on a non-zero exit."""
        env = dict(os.environ)
        env["ETCDCTL_API"] = "3"
        cmd = [ETCDCTL_BIN, "--endpoints=" + self._endpoints(endpoints),
               "--dial-timeout=2s", "--command-timeout=" + command_timeout] + [str(a) for a in args]
        p = subprocess.run(cmd, input=input, capture_output=True, text=True, env=env,
                           timeout=timeout)
        if check and p.returncode != 0:
            raise EtcdError("%s failed (%d): %s%s" % (" ".join(cmd), p.returncode, p.stdout,
                                                      p.stderr))
        return p

    def put(self, key, value, endpoints=None, lease=None):
        """Puts the value exactly as given (str or bytes; a dict/list is JSON-encoded).
        Returns the new revision (the key's mod_revision)."""
        if isinstance(value, (dict, list)):
            value = json.dumps(value)
        if isinstance(value, bytes):
            value = value.decode()
        args = ["put", key, "-w", "json"]
        if lease is not None:
            args += ["--lease=%x" % lease if isinstance(lease, int) else "--lease=" + lease]
        # The value goes on stdin: a value starting with '-' would read as a flag.
        p = self.ctl(*args, endpoints=endpoints, input=value, check=True)
        return int(json.loads(p.stdout)["header"]["revision"])

    def delete(self, key, prefix=False, endpoints=None):
        """Deletes the key (or every key under it); returns how many were deleted."""
        args = ["del", key] + (["--prefix"] if prefix else [])
        p = self.ctl(*args, endpoints=endpoints, check=True)
        return int(p.stdout.strip().splitlines()[0] or 0)

    def get_json(self, key, prefix=False, endpoints=None):
        """`etcdctl get KEY -w json`, parsed (keys and values still base64, as etcdctl
        prints them)."""
        args = ["get", key, "-w", "json"] + (["--prefix"] if prefix else [])
        p = self.ctl(*args, endpoints=endpoints, check=True)
        return json.loads(p.stdout)

    def get_kv(self, key, endpoints=None):
        """The key's kv decoded: {key, value (str), create_revision, mod_revision, version,
        lease (int, 0 = none)}; None when the key does not exist."""
        kvs = self.get_json(key, endpoints=endpoints).get("kvs") or []
        return self._decode_kv(kvs[0]) if kvs else None

    @staticmethod
    def _decode_kv(kv):
        return {"key": _unb64(kv.get("key")).decode(errors="replace"),
                "value": _unb64(kv.get("value")).decode(errors="replace"),
                "create_revision": int(kv.get("create_revision", 0)),
                "mod_revision": int(kv.get("mod_revision", 0)),
                "version": int(kv.get("version", 0)),
                "lease": int(kv.get("lease", 0))}

    def get(self, key, endpoints=None):
        """The key's value as a str, or None when it does not exist."""
        kv = self.get_kv(key, endpoints=endpoints)
        return None if kv is None else kv["value"]

    def get_value_json(self, key, endpoints=None):
        """The key's value parsed as JSON, or None when it does not exist."""
        v = self.get(key, endpoints=endpoints)
        return None if v is None else json.loads(v)

    def get_prefix(self, prefix, endpoints=None):
        """{key: value} for every key under prefix."""
        kvs = self.get_json(prefix, prefix=True, endpoints=endpoints).get("kvs") or []
        return {d["key"]: d["value"] for d in map(self._decode_kv, kvs)}

    def revision(self, endpoints=None):
        """The store's current revision (the header revision of a range)."""
        return int(self.get_json("/", endpoints=endpoints)["header"]["revision"])

    def compact(self, rev, physical=True, endpoints=None):
        """`etcdctl compact REV [--physical]`."""
        args = ["compact", str(rev)] + (["--physical"] if physical else [])
        return self.ctl(*args, endpoints=endpoints, check=True)

    def lease_grant(self, ttl, endpoints=None):
        """Grants a lease; returns its id (int)."""
        p = self.ctl("lease", "grant", str(ttl), "-w", "json", endpoints=endpoints, check=True)
        return int(json.loads(p.stdout)["ID"])

    def lease_ttl(self, lease, endpoints=None):
        """The lease's remaining TTL in seconds (-1 when it has expired or never existed)."""
        p = self.ctl("lease", "timetolive", "%x" % lease, "-w", "json", endpoints=endpoints,
                     check=True)
        return int(json.loads(p.stdout).get("ttl", -1))

    def member_list(self, endpoints=None):
        p = self.ctl("member", "list", "-w", "json", endpoints=endpoints, check=True)
        return json.loads(p.stdout).get("members") or []

    def endpoint_status(self, members=None):
        """{member index: `etcdctl endpoint status -w json` Status} for the running members
        (or those named) that answer."""
        members = self.running() if members is None else list(members)
        out = {}
        for i in members:
            p = self.ctl("endpoint", "status", "-w", "json", endpoints=[i])
            if p.returncode == 0:
                out[i] = json.loads(p.stdout)[0]["Status"]
        return out

    def cluster_id(self):
        st = self.endpoint_status()
        return next(iter(st.values()))["header"]["cluster_id"] if st else None

    def leader(self):
        """The index of the current leader among the running members, or None."""
        for i, st in self.endpoint_status().items():
            if st["header"]["member_id"] == st["leader"]:
                return i
        return None

    def move_leader(self, i, timeout=10.0):
        """Makes member i the leader (etcdctl move-leader) and waits until it is."""
        deadline = time.monotonic() + timeout
        while True:
            st = self.endpoint_status()
            cur = self.leader()
            if cur == i:
                return
            if cur is not None and i in st:
                self.ctl("move-leader", "%x" % st[i]["header"]["member_id"], endpoints=[cur])
            if time.monotonic() > deadline:
                raise EtcdError("member %d did not become the leader within %.0fs" % (i, timeout))
            time.sleep(0.1)

    # ---- context manager

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.close(print_logs=exc[0] is not None)
