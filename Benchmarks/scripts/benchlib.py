"""Plumbing for bench.py: child processes and their /proc figures, small HTTP calls, wrk runs and their output.

Everything talks to 127.0.0.1 only. Nothing here knows Orchard's internals: only its CLI, HTTP API and the emulator's
control API.
"""

import http.client
import json
import os
import re
import signal
import socket
import subprocess
import time

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class BenchError(Exception):
    """Something failed to start or answered wrongly: the run stops and exits non-zero."""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Child:
    """A child process whose output goes to a log file, with its CPU time and peak RSS read from /proc."""

    def __init__(self, name, argv, env, log_path):
        self.name, self.log_path = name, log_path
        self.log = open(log_path, "wb")
        self.proc = subprocess.Popen(argv, env=env, stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        self.pid = self.proc.pid

    def cpu_seconds(self):
        """User + system CPU seconds of every thread so far (/proc/PID/stat fields 14 and 15)."""
        with open(f"/proc/{self.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS

    def status_kib(self, key):
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
        return 0

    def peak_rss_mib(self):
        return self.status_kib("VmHWM") / 1024

    def reset_peak_rss(self):
        """Resets VmHWM to the current RSS (`echo 5 > /proc/PID/clear_refs`), so a phase's peak is its own."""
        try:
            with open(f"/proc/{self.pid}/clear_refs", "w") as f:
                f.write("5")
        except OSError:
            pass

    def alive(self):
        return self.proc.poll() is None

    def tail(self, lines=30):
        self.log.flush()
        with open(self.log_path, "rb") as f:
            return b"\n".join(f.read().splitlines()[-lines:]).decode(errors="replace")

    def stop(self):
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


class Client:
    """One keep-alive HTTP/1.1 connection to a loopback base URL (http://127.0.0.1:PORT)."""

    def __init__(self, base, timeout=15):
        self.host, self.port = base.split("//")[1].split(":")
        self.timeout, self.conn = timeout, None

    def call(self, method, path, body=None, headers=None):
        data = None if body is None else (body if isinstance(body, (bytes, str)) else json.dumps(body))
        hdrs = dict(headers or {})
        if data is not None:
            hdrs.setdefault("Content-Type", "application/json")
        for attempt in (0, 1):
            if self.conn is None:
                self.conn = http.client.HTTPConnection(self.host, int(self.port), timeout=self.timeout)
            try:
                self.conn.request(method, path, body=data, headers=hdrs)
                response = self.conn.getresponse()
                return response.status, response.read()
            except (http.client.HTTPException, ConnectionError):
                self.conn.close()
                self.conn = None
                if attempt:
                    raise

    def json(self, method, path, body=None, headers=None, expect=200):
        status, data = self.call(method, path, body, headers)
        if status != expect:
            raise BenchError(f"{method} {path} answered {status}, not {expect}: {data[:300]!r}")
        return json.loads(data) if data else None


def wait_until_answering(child, base, path, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not child.alive():
            raise BenchError(f"{child.name} exited at start:\n{child.tail()}")
        try:
            if Client(base, timeout=2).call("GET", path)[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise BenchError(f"{child.name} did not answer {path} within {timeout} s:\n{child.tail()}")


def metric_sum(text, name, labels=None):
    """The sum of a Prometheus metric's samples whose labels include `labels` (a dict), 0 when absent."""
    total = 0.0
    for line in text.splitlines():
        m = re.match(rf"^{name}(\{{[^}}]*\}})?\s+(\S+)$", line)
        if m and all(f'{k}="{v}"' in (m.group(1) or "") for k, v in (labels or {}).items()):
            total += float(m.group(2))
    return total


_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3}


def parse_wrk(out):
    """req/s, request count, p50/p99 (ms), non-2xx count and socket errors from `wrk --latency` output."""
    def latency(pct):
        m = re.search(rf"^\s+{pct}%\s+([\d.]+)(us|ms|s|m)\s*$", out, re.M)
        return float(m.group(1)) * _UNITS[m.group(2)] if m else None
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    count = re.search(r"(\d+) requests in ([\d.]+)(\w+)", out)
    if not rps or not count:
        raise BenchError(f"unreadable wrk output:\n{out}")
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    return {
        "rps": float(rps.group(1)), "requests": int(count.group(1)),
        "p50_ms": latency(50), "p99_ms": latency(99),
        "non2xx": int(non2xx.group(1)) if non2xx else 0,
        "socket_errors": sum(map(int, sock.groups())) if sock else 0,
        "lua": "\n".join(l for l in out.splitlines() if l.startswith("lua:")),
    }


def run_wrk(url, seconds, threads, connections, script=None, script_args=(), headers=()):
    argv = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--latency", "--timeout", "5s"]
    for header in headers:
        argv += ["-H", header]
    if script:
        argv += ["-s", script]
    argv.append(url)
    if script_args:
        argv += ["--", *map(str, script_args)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=seconds + 60)
    if done.returncode != 0:
        raise BenchError(f"wrk failed ({done.returncode}): {done.stderr}{done.stdout}")
    return parse_wrk(done.stdout)
