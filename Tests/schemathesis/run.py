#!/usr/bin/env python3
"""Orchard against its own OpenAPI document: schemathesis fuzzes every operation with every check.

Starts `orchard apple-emulator` and `orchard serve` (web flow on, a webhook sink, rate limiting off) and runs
schemathesis' CLI against the document the server serves at /openapi.yaml (or the file given with --schema, to try an
edited document without rebuilding). Every check is on (`--checks all`): no 5xx, responses that match the document
(status, content type, headers, body), schema-valid requests accepted and schema-invalid ones rejected, and the rest.
hooks.py supplies, for schema-valid cases, what only Orchard or Apple can mint (sessions, web-flow states, signed
notifications, identity tokens). The run also fails if orchard serve logs at error level or a server process dies.
About 1,300 cases with the default 150 examples per operation, in about 30 s on two cores; the seed is fixed, so a
run repeats exactly (given the same schemathesis and hypothesis versions); --seed explores further.

Exit status: 0 passed; 1 failed; 77 skipped because schemathesis is not installed, which is allowed only outside CI:
with CI=true a missing schemathesis is a failure. scripts/ci-setup installs it (the versions pinned below).

Usage: python3 Tests/schemathesis/run.py [--orchard .build/debug/orchard] [--out test-output/schemathesis]
                                         [--database-url postgres://…] [--schema PATH] [--max-examples N]
                                         [--seed N] [-- EXTRA SCHEMATHESIS ARGUMENTS]
"""

import argparse
import base64
import collections
import http.server
import importlib.metadata
import importlib.util
import json
import os
import queue
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree

SKIPPED = 77
# The versions this suite was written against; scripts/ci-setup pins the same. Hypothesis decides what a seed draws.
SCHEMATHESIS_VERSION = "4.32.5"
HYPOTHESIS_VERSION = "6.155.2"
TEAM_ID = "SCHEMA0001"
KEY_ID = "SCHEMAK001"
APP_CLIENT_ID = "com.example.orchard.app"
WEB_CLIENT_ID = "com.example.orchard.web"
CLIENT_IDS = APP_CLIENT_ID + "," + WEB_CLIENT_ID
HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class WebhookSink:
    """A local endpoint that takes Orchard's webhooks and answers 204, so that the webhook worker has somewhere to
    deliver (nothing is checked here: tests/ of the Swift suites check the webhooks themselves)."""

    def __enter__(self):
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/orchard-webhooks"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


class Servers:
    """The emulator and Orchard, as separate processes; their logs go to the output folder."""

    def __init__(self, orchard_bin, out, database_url, webhook_url):
        self.orchard_bin = orchard_bin
        self.out = out
        self.database_url = database_url
        self.webhook_url = webhook_url
        self.tmp = tempfile.mkdtemp(prefix="orchard-schemathesis-")
        self.processes = []
        self.logs = []

    def log(self, name):
        handle = open(os.path.join(self.out, name), "w")
        self.logs.append(handle)
        return handle

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.__exit__()
            raise
        return self

    def start(self):
        key = os.path.join(self.tmp, "client-key.p8")
        emulator = subprocess.Popen(
            [self.orchard_bin, "apple-emulator", "--host", "127.0.0.1", "--port", "0", "--team-id", TEAM_ID,
             "--key-id", KEY_ID, "--client-ids", CLIENT_IDS, "--write-client-key", key],
            stdout=subprocess.PIPE, stderr=self.log("apple-emulator.log"), text=True, cwd=self.tmp)
        self.processes.append(emulator)
        lines = queue.Queue()
        threading.Thread(target=lambda: [lines.put(line) for line in emulator.stdout], daemon=True).start()
        deadline = time.time() + 60
        apple = None
        while apple is None and time.time() < deadline:
            try:
                line = lines.get(timeout=1)
            except queue.Empty:
                if emulator.poll() is not None:
                    raise RuntimeError("orchard apple-emulator exited; see apple-emulator.log")
                continue
            if line.strip().startswith("APPLE_BASE_URL="):
                apple = line.strip().split("=", 1)[1]
        if apple is None:
            raise RuntimeError("orchard apple-emulator did not print its URL")
        self.apple = apple

        port = free_port()
        self.orchard = f"http://127.0.0.1:{port}"
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": self.tmp,
            "ORCHARD_HOST": "127.0.0.1",
            "ORCHARD_PORT": str(port),
            "ORCHARD_DATABASE_URL": self.database_url or "sqlite:" + os.path.join(self.tmp, "orchard.sqlite"),
            "ORCHARD_VAULT_KEYS": "k1:" + base64.b64encode(secrets.token_bytes(32)).decode(),
            "ORCHARD_LOG_LEVEL": "info",
            # Fuzzing sends hundreds of anonymous requests a minute from one address: no throttling here.
            "ORCHARD_RATE_LIMIT_PER_MINUTE": "0",
            "ORCHARD_WEBHOOK_URLS": self.webhook_url,
            "ORCHARD_WEBHOOK_SECRET": "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode(),
            "APPLE_TEAM_ID": TEAM_ID,
            "APPLE_KEY_ID": KEY_ID,
            "APPLE_PRIVATE_KEY_FILE": key,
            "APPLE_CLIENT_IDS": CLIENT_IDS,
            "APPLE_WEB_CLIENT_ID": WEB_CLIENT_ID,
            "APPLE_BASE_URL": self.apple,
            "APPLE_REDIRECT_URI": self.orchard + "/v1/auth/apple/callback",
        }
        serve = subprocess.Popen([self.orchard_bin, "serve"], env=env, stdout=self.log("orchard-serve.log"),
                                 stderr=subprocess.STDOUT, cwd=self.tmp)
        self.processes.append(serve)
        deadline = time.time() + 60
        while time.time() < deadline:
            if serve.poll() is not None:
                raise RuntimeError("orchard serve exited; see orchard-serve.log")
            try:
                if urllib.request.urlopen(self.orchard + "/health/ready", timeout=2).status == 200:
                    return
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.2)
        raise RuntimeError("orchard serve did not become ready")

    def exited(self):
        """The processes that died under the run (a crash is a failure even if every answer before it was fine)."""
        return [process.args[1] for process in self.processes if process.poll() is not None]

    def __exit__(self, *exc):
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        for handle in self.logs:
            handle.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def server_errors(log):
    """What Orchard logged at error or critical level: a bug, or a background job (notifications, webhooks,
    revocations) that failed on what the run fed it. Schemathesis sees only the answers; this sees the rest."""
    found = []
    with open(log, errors="replace") as lines:
        for line in lines:
            fields = line.split(None, 2)
            if len(fields) > 1 and fields[1] in ("error", "critical"):
                found.append(line.rstrip())
    return found


def summarize(har):
    """The statuses each documented operation answered, so a reader sees which paths the run reached."""
    try:
        with open(har) as report:
            entries = json.load(report)["log"]["entries"]
    except (OSError, ValueError, KeyError):
        return
    counts = collections.defaultdict(collections.Counter)
    for entry in entries:
        path = urllib.parse.urlsplit(entry["request"]["url"]).path
        counts[(path, entry["request"]["method"])][entry["response"]["status"]] += 1
    print(f"{len(entries)} requests; statuses by operation (405s are schemathesis probing undocumented methods):")
    for (path, method), statuses in sorted(counts.items()):
        if set(statuses) == {405}:
            continue
        print(f"  {method:6} {path:28} " + ", ".join(f"{code}×{n}" for code, n in sorted(statuses.items())))


def operation_counts(junit):
    """(passed, failed) operations from schemathesis' JUnit report, or None without one."""
    try:
        suite = xml.etree.ElementTree.parse(junit).getroot()
    except (OSError, xml.etree.ElementTree.ParseError):
        return None
    tests = int(suite.get("tests", 0))
    failed = int(suite.get("failures", 0)) + int(suite.get("errors", 0))
    return tests - failed - int(suite.get("skipped", 0)), failed


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--orchard", default=".build/debug/orchard", help="the orchard executable")
    parser.add_argument("--out", default="test-output/schemathesis", help="where server logs and reports go")
    parser.add_argument("--database-url", help="ORCHARD_DATABASE_URL for orchard serve (default: SQLite in a temp dir)")
    parser.add_argument("--schema", help="an OpenAPI file to test with instead of the served /openapi.yaml")
    parser.add_argument("--max-examples", type=int, default=150, help="generated test cases per operation (fuzzing phase)")
    parser.add_argument("--seed", type=int, default=20240611, help="schemathesis' random seed (fixed: runs repeat)")
    parser.add_argument("extra", nargs="*", help="further schemathesis arguments (after --)")
    args = parser.parse_args()

    if importlib.util.find_spec("schemathesis") is None:
        missing = f"the Python package 'schemathesis' is not installed (pip install schemathesis=={SCHEMATHESIS_VERSION})"
        if os.environ.get("CI") == "true":
            print(f"FAIL: the schemathesis suite must run under CI=true, but {missing}. Run scripts/ci-setup.", flush=True)
            return 1
        print("\n" + "!" * 100 + f"\n!!! SCHEMATHESIS SKIPPED: {missing}.\n"
              "!!! Install it with scripts/ci-setup.\n" + "!" * 100 + "\n", flush=True)
        return SKIPPED

    installed = importlib.metadata.version("schemathesis")
    for package, pinned in (("schemathesis", SCHEMATHESIS_VERSION), ("hypothesis", HYPOTHESIS_VERSION)):
        if importlib.metadata.version(package) != pinned:
            print(f"WARNING: {package} {importlib.metadata.version(package)} is installed; this suite pins {pinned}",
                  flush=True)
    orchard_bin = os.path.abspath(args.orchard)
    if not os.access(orchard_bin, os.X_OK):
        print(f"FAIL: no orchard executable at {orchard_bin} (build it, or pass --orchard)", flush=True)
        return 1
    os.makedirs(args.out, exist_ok=True)
    out = os.path.abspath(args.out)
    junit, har = os.path.join(out, "junit.xml"), os.path.join(out, "requests.har.json")
    for stale in (junit, har):
        if os.path.exists(stale):
            os.remove(stale)
    started = time.monotonic()
    try:
        status, dead = run_schemathesis(args, orchard_bin, out, junit, har)
    except RuntimeError as error:
        print(f"FAIL: {error}", flush=True)
        return 1
    elapsed = time.monotonic() - started
    summarize(har)
    logged = server_errors(os.path.join(out, "orchard-serve.log"))
    counts = operation_counts(junit)
    if counts:
        print(f"schemathesis: {counts[0]} passed, {counts[1]} failed", flush=True)
    if dead:
        print(f"FAIL: {', '.join(dead)} exited during the run; see the logs in {out}", flush=True)
        return 1
    if logged:
        print(f"FAIL: orchard serve logged {len(logged)} line(s) at error or critical level, e.g.:", flush=True)
        for line in logged[:10]:
            print("  " + line[:400])
        return 1
    if status != 0:
        print(f"FAIL: schemathesis found problems (exit {status}) in {elapsed:.0f} s; reports and logs in {out}", flush=True)
        return 1
    print(f"PASS: schemathesis {installed}, every check on every operation, no failures, in {elapsed:.0f} s; "
          f"reports and logs in {out}", flush=True)
    return 0


def run_schemathesis(args, orchard_bin, out, junit, har):
    """Starts the servers, runs schemathesis against them: (its exit status, the server processes that died)."""
    with WebhookSink() as sink, Servers(orchard_bin, out, args.database_url, sink.url) as servers:
        location = os.path.abspath(args.schema) if args.schema else servers.orchard + "/openapi.yaml"
        print(f"Apple emulator at {servers.apple}, Orchard at {servers.orchard}; schema {location}", flush=True)
        command = [
            sys.executable, "-m", "schemathesis.cli",
            "--config-file", os.path.join(HERE, "schemathesis.toml"),
            "run", location,
            "--url", servers.orchard,
            "--checks", "all",
            "--max-examples", str(args.max_examples),
            "--seed", str(args.seed),
            "--report", "junit,har",
            "--report-junit-path", junit,
            "--report-har-path", har,
            "--no-color",
            *args.extra,
        ]
        env = dict(os.environ,
                   SCHEMATHESIS_HOOKS=os.path.join(HERE, "hooks.py"),
                   ORCHARD_SCHEMATHESIS_ORCHARD_URL=servers.orchard,
                   ORCHARD_SCHEMATHESIS_APPLE_URL=servers.apple,
                   ORCHARD_SCHEMATHESIS_APP_CLIENT_ID=APP_CLIENT_ID,
                   ORCHARD_SCHEMATHESIS_WEB_CLIENT_ID=WEB_CLIENT_ID)
        print("$ " + " ".join(command), flush=True)
        status = subprocess.run(command, cwd=out, env=env).returncode
        return status, servers.exited()


if __name__ == "__main__":
    sys.exit(main())
