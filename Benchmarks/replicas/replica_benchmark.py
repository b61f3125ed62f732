#!/usr/bin/env python3
"""Job throughput with 1, 2 and 4 `orchard serve` replicas on one PostgreSQL (issue 6).

For each replica count: a fresh database, `orchard apple-emulator`, N replicas of `orchard serve`. It signs up
accounts through the HTTP API, deletes them while the emulator fails /auth/revoke (all revocations pending), then
sets the emulator's latency (default 100 ms, so throughput is bound by waiting on Apple) and lets it answer: it
measures how fast the replicas drain the revocation outbox. Then it posts email-disabled notifications for other
accounts, spread over the replicas, and measures how fast they are processed. CPU seconds of each process are read
from /proc. Not a test: figures only.

Usage: python3 Benchmarks/replicas/replica_benchmark.py --orchard .build/release/orchard [--replicas 1,2,4]
       [--revocations 600] [--notifications 600] [--latency-ms 100]
Needs ORCHARD_TEST_POSTGRES_URL (eval "$(scripts/start-test-postgres)") and psql.
"""
import argparse, base64, concurrent.futures, hashlib, json, os, re, secrets, shutil, socket, subprocess, sys, tempfile, time
import urllib.request

CLIENT = "com.example.orchard.bench"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(method, url, body=None, bearer=None, timeout=60):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if bearer:
        request.add_header("Authorization", f"Bearer {bearer}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            text = response.read()
            return response.status, (json.loads(text) if text.strip() else {})
    except urllib.error.HTTPError as error:
        text = error.read()
        return error.code, (json.loads(text) if text.strip() else {})


def psql(url, sql):
    return subprocess.run(["psql", url, "-tAc", sql], check=True, capture_output=True, text=True).stdout.strip()


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_until(condition, timeout=600, step=0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)
    return False


def run(orchard, admin_url, replicas, revocations, notifications, latency_ms, workdir):
    name = "orchard_bench_" + secrets.token_hex(6)
    psql(admin_url, f"CREATE DATABASE {name}")
    # The admin URL's database swapped for the fresh one (the test cluster's URLs end in /postgres?sslmode=disable).
    url = admin_url.rsplit("/", 1)[0] + f"/{name}?sslmode=disable"
    processes = []
    try:
        key = os.path.join(workdir, f"key-{name}.p8")
        emulator_port = free_port()
        emulator = subprocess.Popen(
            [orchard, "apple-emulator", "--port", str(emulator_port), "--client-ids", CLIENT, "--write-client-key", key],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        processes.append(emulator)
        settings = {}
        for line in emulator.stdout:
            match = re.match(r"\s+([A-Z_]+)=(.*)", line)
            if match:
                settings[match.group(1)] = match.group(2)
            if "APPLE_PRIVATE_KEY_FILE" in settings:
                break
        apple = settings["APPLE_BASE_URL"]
        # One load generator on one address: the per-client rate limit would measure the limiter.
        env = dict(os.environ, ORCHARD_DATABASE_URL=url, ORCHARD_LOG_LEVEL="error", ORCHARD_RATE_LIMIT_PER_MINUTE="0",
                   ORCHARD_VAULT_KEYS="bench:" + base64.b64encode(secrets.token_bytes(32)).decode(), **settings)
        subprocess.run([orchard, "migrate"], env=env, check=True, capture_output=True)
        ports = [free_port() for _ in range(replicas)]
        bases = [f"http://127.0.0.1:{port}" for port in ports]

        def start_replicas():
            started = [subprocess.Popen([orchard, "serve"], env=dict(env, ORCHARD_PORT=str(port)),
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for port in ports]
            for base in bases:
                assert wait_until(lambda: _ready(base), timeout=60), "a replica did not start"
            return started

        serving = start_replicas()
        processes.extend(serving)

        def sign_up(index):
            base = bases[index % len(bases)]
            _, nonce = http("POST", f"{base}/v1/auth/apple/nonce")
            _, auth = http("POST", f"{apple}/_emulator/authorize",
                           {"client_id": CLIENT, "nonce": hashlib.sha256(nonce["nonce"].encode()).hexdigest()})
            status, body = http("POST", f"{base}/v1/auth/apple", {
                "identity_token": auth["identity_token"], "authorization_code": auth["authorization_code"],
                "nonce": nonce["nonce"]})
            assert status == 200, body
            return body["session"]["token"], auth["sub"]

        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            users = list(pool.map(sign_up, range(revocations + notifications)))
        doomed, kept = users[:revocations], users[revocations:]

        # Every deletion answers pending: the emulator refuses /auth/revoke until told otherwise.
        http("POST", f"{apple}/_emulator/failures", {"endpoint": "revoke", "status": 503, "count": 10_000_000})
        def delete(item):
            index, (token, _) = item
            status, body = http("DELETE", f"{bases[index % len(bases)]}/v1/account", bearer=token)
            assert status == 200 and body["apple_revocation"] == "pending", body
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            list(pool.map(delete, enumerate(doomed)))
        # Make the whole outbox due at once, as after an Apple outage, and restart the replicas on it: the drain then
        # measures the replicas' capacity rather than the pace at which the rows failed.
        for process in serving:
            process.terminate()
            process.wait(timeout=30)
            processes.remove(process)
        psql(url, "UPDATE revocations SET next_attempt_at = 0, lease_until = NULL")
        http("POST", f"{apple}/_emulator/latency", {"ms": latency_ms})
        http("DELETE", f"{apple}/_emulator/failures")
        http("DELETE", f"{apple}/_emulator/calls")
        emulator_before = cpu_seconds(emulator.pid)
        serving = start_replicas()
        processes.extend(serving)
        pids = [p.pid for p in serving]
        cpu_before = [0.0 for _ in pids]
        started = time.monotonic()
        # Rows retry 2-2.5 s after their failure; measure from the first success to the last.
        assert wait_until(lambda: psql(url, "SELECT count(*) FROM revocations") == "0"), "revocations did not drain"
        drained = time.monotonic() - started
        # The emulator's call log confirms every token was accepted (its timestamps have one-second resolution, so the
        # rate comes from the drain's wall time, polled every 100 ms).
        _, log = http("GET", f"{apple}/_emulator/calls")
        from datetime import datetime
        accepted = sorted(datetime.fromisoformat(c["time"].replace("Z", "+00:00")).timestamp()
                          for c in log["calls"] if c["endpoint"] == "revoke" and c.get("status") == 200)
        window = max(accepted[-1] - accepted[0], 0.001)
        cpu_revocations = sum(cpu_seconds(pid) - before for pid, before in zip(pids, cpu_before))
        emulator_cpu = cpu_seconds(emulator.pid) - emulator_before

        payloads = []
        for _, sub in kept:
            _, body = http("POST", f"{apple}/_emulator/notifications", {"type": "email-disabled", "sub": sub, "client_id": CLIENT})
            payloads.append(body["payload"])
        cpu_before = [cpu_seconds(pid) for pid in pids]
        started = time.monotonic()
        def notify(item):
            index, payload = item
            status, _ = http("POST", f"{bases[index % len(bases)]}/v1/apple/notifications", {"payload": payload})
            assert status == 200
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            list(pool.map(notify, enumerate(payloads)))
        received = time.monotonic() - started
        assert wait_until(lambda: psql(url, "SELECT count(*) FROM notification_inbox WHERE processed_at IS NOT NULL") == str(len(payloads)))
        processed = time.monotonic() - started
        cpu_notifications = sum(cpu_seconds(pid) - before for pid, before in zip(pids, cpu_before))
        return {
            "replicas": replicas, "revocations": revocations, "drain_seconds": round(drained, 2),
            "accepted_revocations": len(accepted),
            "revocations_per_second": round(revocations / drained, 1), "replica_cpu_seconds_revocations": round(cpu_revocations, 2),
            "emulator_cpu_seconds": round(emulator_cpu, 2), "notifications": len(payloads),
            "notifications_received_seconds": round(received, 2), "notifications_processed_seconds": round(processed, 2),
            "notifications_per_second": round(len(payloads) / processed, 1),
            "replica_cpu_seconds_notifications": round(cpu_notifications, 2),
        }
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
        psql(admin_url, f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _ready(base):
    try:
        return http("GET", f"{base}/health/ready", timeout=2)[0] == 200
    except OSError:
        return False


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--orchard", default=".build/release/orchard")
    parser.add_argument("--replicas", default="1,2,4")
    parser.add_argument("--revocations", type=int, default=600)
    parser.add_argument("--notifications", type=int, default=600)
    parser.add_argument("--latency-ms", type=int, default=100)
    args = parser.parse_args()
    admin = os.environ.get("ORCHARD_TEST_POSTGRES_URL")
    if not admin or not shutil.which("psql"):
        sys.exit("needs ORCHARD_TEST_POSTGRES_URL (eval \"$(scripts/start-test-postgres)\") and psql")
    workdir = tempfile.mkdtemp(prefix="orchard-replica-bench-")
    print(f"machine: {os.cpu_count()} cores; orchard: {args.orchard}; latency {args.latency_ms} ms")
    for replicas in [int(r) for r in args.replicas.split(",")]:
        result = run(os.path.abspath(args.orchard), admin, replicas, args.revocations, args.notifications, args.latency_ms, workdir)
        print(json.dumps(result), flush=True)
    shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
