"""The facts of the machine a run was made on, for results.json and the report."""

import json
import os
import platform
import socket
import subprocess


def _lscpu():
    try:
        out = subprocess.run(["lscpu", "-J"], capture_output=True, text=True, timeout=10)
        fields = json.loads(out.stdout)["lscpu"]
        return {f["field"].rstrip(":"): f.get("data") for f in fields}
    except (OSError, ValueError, KeyError, subprocess.SubprocessError):
        return {}


def _cpuinfo_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith(("model name", "hardware", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _os_name():
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return platform.system()


def _memory_gib():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 1048576, 1)
    except OSError:
        pass
    return None


def facts():
    lscpu = _lscpu()
    model = lscpu.get("Model name") or _cpuinfo_model() or "unknown CPU"
    vendor = lscpu.get("Vendor ID")
    if model and vendor and vendor not in model and vendor.lower() not in ("genuineintel",
                                                                          "authenticamd"):
        model = "%s %s" % (vendor, model)  # Arm: "ARM Neoverse-N1"
    arch = platform.machine()
    cores = os.cpu_count() or 1
    return {
        "label": "%s %s (%d cores)" % (arch, model, cores),
        "hostname": socket.gethostname(),
        "cpu_model": model,
        "arch": arch,
        "cores": cores,
        "kernel": platform.release(),
        "os": _os_name(),
        "memory_gib": _memory_gib(),
    }
