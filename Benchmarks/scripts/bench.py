#!/usr/bin/env python3
"""Orchard's benchmarks in one run, printed as one table (see Benchmarks/README.md). Run by Benchmarks/run.

1. In process, one thread: VerifyBenchmark (Orchard's AppleTokenVerifier on an emulator-signed identity token),
   `openssl speed rsa2048` on one core, PyJWT's jwt.decode on the same token and key.
2. `orchard apple-emulator` and `orchard serve` (release, SQLite) as separate processes on 127.0.0.1; wrk against
   GET /health/live (the anchor), GET /v1/session, POST /v1/auth/apple with a never-issued nonce (401), sign-in end to
   end from Python, and POST /v1/apple/notifications with distinct signed JWSs, watching whether processing keeps up.
3. The same session check and ingest on PostgreSQL when ORCHARD_BENCH_POSTGRES_URL (an admin URL) is set.

Serve's CPU comes from /proc/PID/stat and its peak RSS from VmHWM, reset before each phase. Performance is reported,
never asserted: the exit status is 1 only when something failed to start or answered wrongly.
"""

import argparse
import base64
import hashlib
import json
import os
import platform
import re
import secrets
import signal
import statistics
import subprocess
import sys
import threading
import time

from benchlib import BenchError, Child, Client, free_port, metric_sum, run_wrk, wait_until_answering

HERE = os.path.dirname(os.path.abspath(__file__))
WRK = os.path.join(HERE, "wrk")
CLIENT_ID = "com.example.orchard.app"
# One vault key for the run: every serve on one database (a second serve, the replicas) opens what another sealed.
VAULT_KEYS = "k1:" + base64.b64encode(secrets.token_bytes(32)).decode()


def options():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--orchard", required=True, help="the orchard binary (release build)")
    p.add_argument("--verify-benchmark", required=True, help="the VerifyBenchmark binary (release build)")
    p.add_argument("--work-dir", required=True, help="where logs, databases, payloads and results.json go")
    p.add_argument("--duration", type=int, default=5, help="seconds per HTTP path in each round")
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds of the anchor and the HTTP paths")
    p.add_argument("--warmup", type=int, default=2, help="seconds of unmeasured load before each HTTP path")
    p.add_argument("--threads", type=int, default=2, help="wrk threads")
    p.add_argument("--connections", type=int, default=32, help="wrk connections (ingest uses --ingest-connections)")
    p.add_argument("--ingest-duration", type=int, default=60)
    p.add_argument("--ingest-connections", type=int, default=16)
    p.add_argument("--payloads", type=int, help="distinct notification JWSs to sign beforehand "
                   "(default 4,000 per second of ingest: ingest outran 2,200/s on SQLite; a run that repeats them "
                   "says so, since repeats are answered as duplicates and cap the stored rate)")
    p.add_argument("--paced-rate", type=int, default=2000,
                   help="on PostgreSQL, first a burst paced near this many notifications/s (wrk pauses each connection "
                   "between requests), to see whether processing keeps up at that rate; 0 skips it")
    p.add_argument("--drain-timeout", type=int, default=120, help="seconds to wait for the inbox to empty after ingest")
    p.add_argument("--signin-duration", type=int, default=10)
    p.add_argument("--signin-workers", type=int, default=8, help="concurrent sign-ins (Python threads)")
    p.add_argument("--verify-seconds", type=float, default=5)
    p.add_argument("--sign-outs", type=int, default=300, help="sign-outs timed with three PostgreSQL replicas")
    p.add_argument("--skip-inprocess", action="store_true")
    p.add_argument("--postgres-url", default=os.environ.get("ORCHARD_BENCH_POSTGRES_URL"))
    opts = p.parse_args()
    if opts.rounds < 1 or opts.duration < 1:
        p.error("--rounds and --duration must be at least 1")
    return opts


# MARK: In process

def inprocess(opts):
    out = os.path.join(opts.work_dir, "verify")
    os.makedirs(out, exist_ok=True)
    verify = json.loads(subprocess.run([opts.verify_benchmark, "--seconds", str(opts.verify_seconds), "--out", out],
                                       check=True, capture_output=True, text=True, timeout=120).stdout)
    speed = subprocess.run(["openssl", "speed", "-seconds", str(int(opts.verify_seconds)), "-multi", "1", "rsa2048"],
                           capture_output=True, text=True, timeout=120).stdout
    m = re.search(r"^rsa\s+2048 bits\s+\S+\s+\S+\s+([\d.]+)\s+([\d.]+)\s*$", speed, re.M)
    if not m:
        raise BenchError(f"unreadable openssl speed output:\n{speed}")
    ecdsa = subprocess.run(["openssl", "speed", "-seconds", str(int(opts.verify_seconds)), "-multi", "1", "ecdsap256"],
                           capture_output=True, text=True, timeout=120).stdout
    e = re.search(r"^\s*256 bits ecdsa \(nistp256\)\s+\S+\s+\S+\s+([\d.]+)\s+([\d.]+)\s*$", ecdsa, re.M)
    if not e:
        raise BenchError(f"unreadable openssl speed ecdsap256 output:\n{ecdsa}")
    pyjwt = json.loads(subprocess.run([sys.executable, os.path.join(HERE, "pyjwt_verify.py"), out,
                                       str(opts.verify_seconds)], check=True, capture_output=True, text=True,
                                      timeout=120).stdout)
    return {**verify, **pyjwt, "openssl_rsa2048_sign_per_s": float(m.group(1)),
            "openssl_rsa2048_verify_per_s": float(m.group(2)), "openssl_ecdsap256_sign_per_s": float(e.group(1))}


# MARK: Processes

def clean_environment():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ORCHARD_", "APPLE_"))}
    return env


def start_emulator(opts):
    port = free_port()
    key = os.path.join(opts.work_dir, "client-key.p8")
    child = Child("apple-emulator", [opts.orchard, "apple-emulator", "--host", "127.0.0.1", "--port", str(port),
                                     "--client-ids", CLIENT_ID, "--write-client-key", key],
                  clean_environment(), os.path.join(opts.work_dir, "emulator.log"))
    base = f"http://127.0.0.1:{port}"
    wait_until_answering(child, base, "/auth/keys")
    return child, base, key


def start_serve(opts, name, database_url, emulator_base, key, extra_env=None):
    port = free_port()
    env = clean_environment()
    env.update({
        "APPLE_TEAM_ID": "EMULATOR01", "APPLE_KEY_ID": "EMULATORK1", "APPLE_PRIVATE_KEY_FILE": key,
        "APPLE_CLIENT_IDS": CLIENT_ID, "APPLE_BASE_URL": emulator_base,
        "ORCHARD_VAULT_KEYS": VAULT_KEYS,
        "ORCHARD_DATABASE_URL": database_url, "ORCHARD_HOST": "127.0.0.1", "ORCHARD_PORT": str(port),
        # One load generator on one address: the per-client limit would measure the limiter, not the path.
        "ORCHARD_RATE_LIMIT_PER_MINUTE": "0",
    })
    env.update(extra_env or {})
    child = Child(name, [opts.orchard, "serve"], env, os.path.join(opts.work_dir, f"{name}.log"))
    base = f"http://127.0.0.1:{port}"
    wait_until_answering(child, base, "/health/live")
    return child, base


# MARK: Sign-in

def sign_in(orchard, emulator, sub=None):
    """nonce, the emulator's authorization for its SHA-256, POST /v1/auth/apple: (session token, sub)."""
    nonce = orchard.json("POST", "/v1/auth/apple/nonce", expect=201)["nonce"]
    body = {"nonce": hashlib.sha256(nonce.encode()).hexdigest()}
    if sub:
        body["user"] = {"sub": sub}
    grant = emulator.json("POST", "/_emulator/authorize", body)
    signed = orchard.json("POST", "/v1/auth/apple", {"identity_token": grant["identity_token"],
                                                    "authorization_code": grant["authorization_code"],
                                                    "nonce": nonce})
    return signed["session"]["token"], grant["sub"]


def signin_load(serve, orchard_base, emulator_base, seconds, workers):
    """Sign-ins of new users back to back from `workers` threads; Orchard's CPU per sign-in from /proc."""
    subs, latencies, failures, lock = [], [], [], threading.Lock()
    deadline = time.monotonic() + seconds

    def worker():
        orchard, emulator = Client(orchard_base), Client(emulator_base)
        while time.monotonic() < deadline:
            start = time.monotonic()
            try:
                _, sub = sign_in(orchard, emulator)
            except Exception as error:  # noqa: BLE001 - counted and reported
                with lock:
                    failures.append(str(error))
                continue
            with lock:
                subs.append(sub)
                latencies.append((time.monotonic() - start) * 1000)

    serve.reset_peak_rss()
    cpu0, wall0 = serve.cpu_seconds(), time.monotonic()
    threads = [threading.Thread(target=worker) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall, cpu = time.monotonic() - wall0, serve.cpu_seconds() - cpu0
    latencies.sort()
    pct = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] if latencies else None  # noqa: E731
    return {"rps": len(subs) / wall, "requests": len(subs), "p50_ms": pct(0.5), "p99_ms": pct(0.99),
            "cpu_ms_per_request": cpu * 1000 / max(1, len(subs)), "peak_rss_mib": serve.peak_rss_mib(),
            "failures": len(failures), "first_failure": failures[0] if failures else None}, subs


# MARK: wrk paths

def measure(serve, opts, url, **wrk_args):
    """A warm-up, then one measured wrk run with serve's CPU and peak RSS over it."""
    if opts.warmup:
        run_wrk(url, opts.warmup, opts.threads, opts.connections, **wrk_args)
    serve.reset_peak_rss()
    cpu0 = serve.cpu_seconds()
    result = run_wrk(url, opts.duration, opts.threads, opts.connections, **wrk_args)
    result["cpu_ms_per_request"] = (serve.cpu_seconds() - cpu0) * 1000 / max(1, result["requests"])
    result["peak_rss_mib"] = serve.peak_rss_mib()
    return result


def expect_answers(name, result, all_non2xx=False):
    wrong = result["non2xx"] != (result["requests"] if all_non2xx else 0)
    if wrong:
        raise BenchError(f"{name}: {result['non2xx']} of {result['requests']} answers had an unexpected status")


def http_paths(opts, serve, base, emulator, session_token, results, prefix, with_nonce_path, bearers=None):
    """The anchor and the paths against it, in `--rounds` interleaved rounds (bare, session, nonce, bare, ...).

    Each path's ratio is the median of its per-round ratios to the anchor measured at the start of the same round, so a
    change in the host's load between the anchor's run and a path's run moves one round, not the figure.
    """
    Client(base).json("GET", "/v1/session", headers={"Authorization": f"Bearer {session_token}"})
    session = {"headers": [f"Authorization: Bearer {session_token}"]}
    if bearers:
        # Many sessions, one after another on each connection: a file of tokens, round robin.
        tokens_file = os.path.join(opts.work_dir, f"{prefix}bearers.txt")
        with open(tokens_file, "w") as f:
            f.write("\n".join(bearers) + "\n")
        session = {"script": os.path.join(WRK, "bearers.lua"), "script_args": [tokens_file]}
    paths = [("bare", "bare route", base + "/health/live", {}, False),
             ("session", "session check", base + "/v1/session", session, False)]
    if with_nonce_path:
        # A genuinely signed token whose nonce Orchard never issued: verification, then one nonce lookup, then 401.
        nonce = "never-issued-" + secrets.token_hex(16)
        grant = emulator.json("POST", "/_emulator/authorize", {"nonce": nonce})
        body_file = os.path.join(opts.work_dir, "nonce-mismatch.json")
        with open(body_file, "w") as f:
            json.dump({"identity_token": grant["identity_token"], "authorization_code": grant["authorization_code"],
                       "nonce": nonce}, f)
        status, answer = Client(base).call("POST", "/v1/auth/apple", open(body_file).read())
        if status != 401 or b"nonce_mismatch" not in answer:
            raise BenchError(f"the never-issued nonce was answered {status}: {answer[:300]!r}")
        paths.append(("nonce_mismatch", "never-issued nonce", base + "/v1/auth/apple",
                      {"script": os.path.join(WRK, "post_body.lua"), "script_args": [body_file]}, True))
    rounds = {name: [] for name, *_ in paths}
    for _ in range(opts.rounds):
        for name, label, url, wrk_args, all_non2xx in paths:
            result = measure(serve, opts, url, **wrk_args)
            expect_answers(label, result, all_non2xx=all_non2xx)
            rounds[name].append(result)
    for name, runs in rounds.items():
        results[prefix + name] = combine_rounds(runs, rounds["bare"])


def combine_rounds(runs, anchors):
    """One path's rounds as one row: median rate, p50, CPU and ratio to the round's anchor; the worst round's p99."""
    ratios = [run["rps"] / anchor["rps"] for run, anchor in zip(runs, anchors)]
    p50s = [run["p50_ms"] for run in runs if run["p50_ms"] is not None]
    p99s = [run["p99_ms"] for run in runs if run["p99_ms"] is not None]
    return {
        "rps": statistics.median(run["rps"] for run in runs), "requests": sum(run["requests"] for run in runs),
        "p50_ms": statistics.median(p50s) if p50s else None, "p99_ms": max(p99s) if p99s else None,
        "cpu_ms_per_request": statistics.median(run["cpu_ms_per_request"] for run in runs),
        "peak_rss_mib": max(run["peak_rss_mib"] for run in runs), "non2xx": sum(run["non2xx"] for run in runs),
        "socket_errors": sum(run.get("socket_errors", 0) for run in runs),
        "ratio_to_bare": statistics.median(ratios), "round_ratios": ratios, "rounds": runs,
    }


# MARK: Notifications

def sign_notifications(opts, emulator_base, subs):
    """Has the emulator sign `--payloads` distinct notifications (wrk, 2 threads); returns the file of JWSs."""
    subs_file = os.path.join(opts.work_dir, "subjects.txt")
    with open(subs_file, "w") as f:
        f.write("\n".join(subs) + "\n")
    prefix = os.path.join(opts.work_dir, "signed")
    share = -(-opts.payloads // 2)
    argv = ["wrk", "-t2", "-c8", "-d600s", "-s", os.path.join(WRK, "sign_notifications.lua"),
            emulator_base + "/_emulator/notifications", "--", subs_file, prefix, str(share)]
    start = time.monotonic()
    wrk = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while not all(os.path.exists(f"{prefix}.{i}.done") for i in range(2)):
            if wrk.poll() is not None:
                raise BenchError("wrk stopped before the emulator had signed every notification")
            time.sleep(0.5)
    finally:
        wrk.terminate()
        wrk.wait()
    payloads = os.path.join(opts.work_dir, "notifications.txt")
    with open(payloads, "w") as out:
        for i in range(2):
            out.write(open(f"{prefix}.{i}").read())
    count = sum(1 for _ in open(payloads))
    return payloads, count, time.monotonic() - start


def inbox_backlog(base, database_url):
    """Notifications stored but not yet acted on, from /metrics and from the table itself."""
    text = Client(base).call("GET", "/metrics")[1].decode()
    stored = metric_sum(text, "orchard_notifications_total", {"outcome": "stored"})
    duplicates = metric_sum(text, "orchard_notifications_total", {"outcome": "duplicate"})
    processed = metric_sum(text, "orchard_notifications_processed_total")
    query = "SELECT count(*) FROM notification_inbox WHERE processed_at IS NULL"
    if database_url.startswith("sqlite:"):
        argv = ["sqlite3", "-readonly", "-cmd", ".timeout 5000", database_url[len("sqlite:"):], query]
    else:
        argv = ["psql", "-Atc", query, database_url]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    table = int(done.stdout.strip()) if done.returncode == 0 and done.stdout.strip().isdigit() else None
    return {"stored": stored, "duplicates": duplicates, "processed": processed,
            "metrics_backlog": stored - processed, "table_backlog": table}


def ingest(opts, serve, base, database_url, payloads, distinct, pace_ms=0, skip=0, connections=None):
    samples, stop = [], threading.Event()
    before = inbox_backlog(base, database_url)

    def sampler():
        start = time.monotonic()
        while not stop.wait(5):
            samples.append({"t": round(time.monotonic() - start), **inbox_backlog(base, database_url)})

    watcher = threading.Thread(target=sampler)
    serve.reset_peak_rss()
    cpu0 = serve.cpu_seconds()
    watcher.start()
    try:
        result = run_wrk(base + "/v1/apple/notifications", opts.ingest_duration, opts.threads,
                         connections or opts.ingest_connections, script=os.path.join(WRK, "notifications.lua"),
                         script_args=[payloads, opts.threads, pace_ms, skip])
    finally:
        stop.set()
        watcher.join()
    end = inbox_backlog(base, database_url)
    cpu_during = serve.cpu_seconds() - cpu0
    drain_start = time.monotonic()
    after = end
    while (after["metrics_backlog"] > 0 or (after["table_backlog"] or 0) > 0) \
            and time.monotonic() - drain_start < opts.drain_timeout:
        time.sleep(1)
        after = inbox_backlog(base, database_url)
    expect_answers("notification ingest", result)
    stored = end["stored"] - before["stored"]
    result.update({
        "distinct_payloads": distinct, "wraps": int(result["lua"].split()[-1]) if result["lua"] else None,
        "stored": stored, "duplicates": end["duplicates"] - before["duplicates"],
        "processed_during": end["processed"] - before["processed"],
        "processed_per_s": (end["processed"] - before["processed"]) / opts.ingest_duration,
        "backlog_samples": [s["table_backlog"] if s["table_backlog"] is not None else s["metrics_backlog"]
                            for s in samples],
        "backlog_at_end": end["table_backlog"] if end["table_backlog"] is not None else end["metrics_backlog"],
        "drain_s": time.monotonic() - drain_start, "drained": after["metrics_backlog"] <= 0,
        "backlog_after_drain": after["metrics_backlog"], "stored_per_s": stored / opts.ingest_duration,
        "cpu_ms_per_request": (serve.cpu_seconds() - cpu0) * 1000
        / max(1, stored + end["duplicates"] - before["duplicates"]),
        "cpu_ms_per_request_during": cpu_during * 1000 / max(1, result["requests"]),
        "peak_rss_mib": serve.peak_rss_mib(),
    })
    return result


# MARK: PostgreSQL

def postgres_database(admin_url, name, create):
    sql = f"CREATE DATABASE {name}" if create else f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"
    subprocess.run(["psql", "-Atc", sql, admin_url], check=True, capture_output=True, timeout=60)
    head, _, tail = admin_url.partition("?")
    return head.rsplit("/", 1)[0] + "/" + name + (("?" + tail) if tail else "")


def pgbench(opts, admin_url):
    """PostgreSQL's own limit on this machine: `pgbench -S -M prepared` (one indexed SELECT per transaction, as a
    session check that misses the memory is) with --connections clients on a scale-1 database of the same cluster."""
    binary = next((os.path.join(d, "pgbench") for d in sorted(os.listdir("/usr/lib/postgresql"), reverse=True)
                   for d in [os.path.join("/usr/lib/postgresql", d, "bin")] if os.path.exists(os.path.join(d, "pgbench"))),
                  "pgbench")
    name = f"orchard_pgbench_{os.getpid()}"
    url = postgres_database(admin_url, name, create=True)
    try:
        subprocess.run([binary, "-i", "-s", "1", "-q", url], check=True, capture_output=True, timeout=300)
        done = subprocess.run([binary, "-S", "-M", "prepared", "-n", "-c", str(opts.connections), "-j",
                               str(opts.threads), "-T", str(opts.duration), url],
                              check=True, capture_output=True, text=True, timeout=opts.duration + 120)
        m = re.search(r"tps = ([\d.]+) \(without initial connection time\)", done.stdout)
        latency = re.search(r"latency average = ([\d.]+) ms", done.stdout)
        if not m:
            raise BenchError(f"unreadable pgbench output:\n{done.stdout}")
        return {"tps": float(m.group(1)), "latency_avg_ms": float(latency.group(1)) if latency else None}
    finally:
        postgres_database(admin_url, name, create=False)


def sign_out_latency(opts, pg_url, emulator_base, key, count):
    """Three replicas with the session memory on one database: `count` users signed in round robin, every session
    checked on every replica (so each memory holds it), then signed out one at a time, each on the replica after the
    one that signed it in. The sign-out's latency includes waiting for the two other replicas' acknowledgements."""
    replicas = [start_serve(opts, f"serve-replica-{i}", pg_url, emulator_base, key) for i in range(3)]
    try:
        clients = [Client(base) for _, base in replicas]
        emulator = Client(emulator_base)
        tokens = [sign_in(clients[i % 3], emulator)[0] for i in range(count)]
        # Each replica warms up for 5.5 s after it starts listening before its memory answers.
        time.sleep(6)
        for token in tokens:
            for client in clients:
                client.json("GET", "/v1/session", headers={"Authorization": f"Bearer {token}"})
        latencies = []
        for i, token in enumerate(tokens):
            start = time.monotonic()
            status, body = clients[(i + 1) % 3].call("DELETE", "/v1/session", None,
                                                      headers={"Authorization": f"Bearer {token}"})
            latencies.append((time.monotonic() - start) * 1000)
            if status != 204:
                raise BenchError(f"a sign-out was answered {status}: {body[:300]!r}")
        refused = 0
        for token in tokens[:50]:
            for client in clients:
                status, _ = client.call("GET", "/v1/session", None, headers={"Authorization": f"Bearer {token}"})
                refused += status == 401
        if refused != 3 * min(50, len(tokens)):
            raise BenchError("a replica accepted a session after its sign-out was answered")
        latencies.sort()
        pct = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))]  # noqa: E731
        return {"sign_outs": len(latencies), "p50_ms": pct(0.5), "p99_ms": pct(0.99), "max_ms": latencies[-1]}
    finally:
        for child, _ in replicas:
            child.stop()


# MARK: Run

def main():
    opts = options()
    paced = opts.paced_rate * opts.ingest_duration * 11 // 10 if opts.postgres_url else 0
    opts.payloads = opts.payloads or 4000 * opts.ingest_duration + paced
    # SIGTERM (Benchmarks/run forwards Ctrl-C as one) unwinds like Ctrl-C, so the finally below stops the children.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    os.makedirs(opts.work_dir, exist_ok=True)
    results, children = {"machine": machine(), "options": vars(opts)}, []
    pg_name = None
    try:
        if not opts.skip_inprocess:
            print("in process: VerifyBenchmark, openssl speed, PyJWT ...", flush=True)
            results["inprocess"] = inprocess(opts)
        emulator_child, emulator_base, key = start_emulator(opts)
        children.append(emulator_child)
        emulator = Client(emulator_base)
        sqlite_url = "sqlite:" + os.path.join(opts.work_dir, "orchard.sqlite")
        serve, base = start_serve(opts, "serve-sqlite", sqlite_url, emulator_base, key)
        children.append(serve)
        print(f"serve (SQLite) at {base}, emulator at {emulator_base}; HTTP paths ...", flush=True)
        token, _ = sign_in(Client(base), emulator)
        http_paths(opts, serve, base, emulator, token, results, "sqlite_", with_nonce_path=True)
        print("sign-in end to end ...", flush=True)
        results["sqlite_signin"], subs = signin_load(serve, base, emulator_base, opts.signin_duration,
                                                     opts.signin_workers)
        if results["sqlite_signin"]["failures"]:
            raise BenchError(f"sign-ins failed: {results['sqlite_signin']['first_failure']}")
        subs = subs[:500]
        if opts.postgres_url:
            # The PostgreSQL accounts must exist before the notifications are signed: an event older than its account
            # is recorded and not acted on (the contract's "Late notifications"), which is not the path to measure.
            pg_name = f"orchard_bench_{os.getpid()}"
            pg_url = postgres_database(opts.postgres_url, pg_name, create=True)
            pg_serve, pg_base = start_serve(opts, "serve-postgres", pg_url, emulator_base, key)
            children.append(pg_serve)
            print(f"serve (PostgreSQL) at {pg_base}: signing in {len(subs)} users ...", flush=True)
            pg_tokens = [sign_in(Client(pg_base), emulator, sub)[0] for sub in subs]
            pg_token = pg_tokens[-1]
        print(f"signing {opts.payloads} notifications in the emulator ...", flush=True)
        payloads, distinct, took = sign_notifications(opts, emulator_base, subs)
        results["payloads"] = {"count": distinct, "seconds": took}
        print(f"ingest for {opts.ingest_duration} s ...", flush=True)
        results["sqlite_ingest"] = ingest(opts, serve, base, sqlite_url, payloads, distinct)
        serve.stop()
        if opts.postgres_url:
            print(f"serve (PostgreSQL) at {pg_base}: session check, ingest ...", flush=True)
            http_paths(opts, pg_serve, pg_base, emulator, pg_token, results, "postgres_", with_nonce_path=False,
                       bearers=pg_tokens[:opts.connections])
            sent = 0
            if opts.paced_rate:
                # Twice the connections, each pausing between requests: wrk's pause comes on top of about 4 ms of
                # its own timer and the answer (measured), hence the - 4.
                connections = 2 * opts.ingest_connections
                pace_ms = max(0, connections * 1000 // opts.paced_rate - 4)
                print(f"ingest paced near {opts.paced_rate}/s ({connections} connections, {pace_ms} ms between a "
                      "connection's requests) ...", flush=True)
                results["postgres_ingest_paced"] = ingest(opts, pg_serve, pg_base, pg_url, payloads, distinct,
                                                          pace_ms=pace_ms, connections=connections)
                sent = results["postgres_ingest_paced"]["requests"]
            results["postgres_ingest"] = ingest(opts, pg_serve, pg_base, pg_url, payloads, distinct - sent, skip=sent)
            pg_serve.stop()
            off, off_base = start_serve(opts, "serve-postgres-nocache", pg_url, emulator_base, key,
                                        {"ORCHARD_SESSION_CACHE": "off"})
            children.append(off)
            print(f"serve (PostgreSQL, ORCHARD_SESSION_CACHE=off) at {off_base}: session check ...", flush=True)
            http_paths(opts, off, off_base, emulator, pg_token, results, "postgres_nocache_", with_nonce_path=False,
                       bearers=pg_tokens[:opts.connections])
            off.stop()
            print("pgbench -S -M prepared on the same cluster ...", flush=True)
            results["postgres_pgbench"] = pgbench(opts, opts.postgres_url)
            print("sign-out latency with three replicas ...", flush=True)
            results["postgres_sign_out"] = sign_out_latency(opts, pg_url, emulator_base, key, opts.sign_outs)
        status = 0
    except BenchError as error:
        print(f"FAILED: {error}", file=sys.stderr)
        status = 1
    finally:
        for child in reversed(children):
            child.stop()
        if pg_name:
            postgres_database(opts.postgres_url, pg_name, create=False)
    with open(os.path.join(opts.work_dir, "results.json"), "w") as f:
        json.dump(results, f, indent=2)
    print_table(results)
    return status


def machine():
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    swift = subprocess.run(["swift", "--version"], capture_output=True, text=True).stdout.splitlines()
    return {"nproc": os.cpu_count(), "cpu": cpu, "kernel": platform.release(), "load_at_start": os.getloadavg(),
            "swift": swift[0] if swift else "?", "memory_gib": round(os.sysconf("SC_PAGE_SIZE")
                                                                     * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)}


def print_table(r):
    m = r["machine"]
    print(f"\nMachine: {m['nproc']} cores ({m['cpu']}), {m['memory_gib']} GiB, Linux {m['kernel']}, {m['swift']}; "
          f"load at start {', '.join(f'{x:.2f}' for x in m['load_at_start'])}, now "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    ip = r.get("inprocess")
    if ip:
        o, s, p = ip["orchard_verify_per_s"], ip["openssl_rsa2048_verify_per_s"], ip["pyjwt_decode_per_s"]
        print("\nIdentity-token verification, one thread          per s    ratio")
        print(f"  Orchard AppleTokenVerifier (whole check)     {o:9.0f}")
        print(f"  openssl speed rsa2048, verify, 1 core        {s:9.0f}   Orchard / openssl = {o / s:.2f} (goal >= 0.6)")
        print(f"  PyJWT {ip['pyjwt_version']} jwt.decode (django-allauth)     {p:9.0f}   Orchard / PyJWT = {o / p:.2f}")
        print(f"  RS256 alone, BoringSSL via swift-crypto      {ip['boringssl_rs256_per_s']:9.0f}   "
              f"Orchard / BoringSSL RS256 = {o / ip['boringssl_rs256_per_s']:.2f}")
        print(f"  RS256 alone, OpenSSL via Python cryptography {ip['python_openssl_rs256_per_s']:9.0f}")
        if "foundation_claims_decode_per_s" in ip:
            j, js = ip["foundation_claims_decode_per_s"], ip["foundation_json_serialization_per_s"]
            print(f"  claims JSON alone, Foundation JSONDecoder    {j:9.0f}")
            print(f"  the same JSON, Foundation JSONSerialization  {js:9.0f}")
            budget = 1e6 / (0.6 * s) - 1e6 / s
            print(f"  per verification: Orchard {1e6 / o:.1f} us, openssl's RSA {1e6 / s:.1f} us, the 0.6 goal leaves "
                  f"{budget:.1f} us around it; Foundation's JSON alone takes {1e6 / j:.1f} us "
                  f"(JSONSerialization {1e6 / js:.1f} us)")
    if ip and "orchard_access_token_issue_per_s" in ip:
        t, es = ip["orchard_access_token_issue_per_s"], ip["openssl_ecdsap256_sign_per_s"]
        print("\nAccess-token minting, one thread                  per s    ratio")
        print(f"  Orchard AccessTokens.issue (session + ES256) {t:9.0f}")
        print(f"  openssl speed ecdsap256, sign, 1 core        {es:9.0f}   Orchard / openssl = {t / es:.2f}")
    rows = [("sqlite_bare", "GET /health/live (anchor)", None, "sqlite_bare"),
            ("sqlite_session", "GET /v1/session", ">=0.6, p99<5ms", "sqlite_bare"),
            ("sqlite_nonce_mismatch", "POST /v1/auth/apple, nonce 401", ">=0.5", "sqlite_bare"),
            ("sqlite_signin", "sign-in end to end", None, None),
            ("sqlite_ingest", "POST /v1/apple/notifications", ">=2000/s", "sqlite_bare"),
            ("postgres_bare", "PG GET /health/live", None, "postgres_bare"),
            ("postgres_session", "PG GET /v1/session (memory)", ">=0.5, p99<=2x", "postgres_bare"),
            ("postgres_nocache_bare", "PG GET /health/live, cache off", None, "postgres_nocache_bare"),
            ("postgres_nocache_session", "PG GET /v1/session, cache off", ">=0.3", "postgres_nocache_bare"),
            ("postgres_ingest_paced", "PG notifications, paced", "kept up", "postgres_bare"),
            ("postgres_ingest", "PG POST /v1/apple/notifications", ">=2000/s", "postgres_bare")]
    print(f"\n{'path':34} {'req/s':>8} {'p50 ms':>7} {'p99 ms':>7} {'x bare':>6} {'CPU ms/req':>10} "
          f"{'peak RSS':>9}  target")
    for key, label, target, anchor in rows:
        x = r.get(key)
        if not x:
            continue
        if "ratio_to_bare" in x and anchor:
            ratio = f"{x['ratio_to_bare']:.2f}"
        else:
            ratio = f"{x['rps'] / r[anchor]['rps']:.2f}" if anchor and r.get(anchor) else "-"
        f = lambda v: f"{v:7.2f}" if v is not None else "      -"  # noqa: E731
        print(f"{label:34} {x['rps']:8.0f} {f(x['p50_ms'])} {f(x['p99_ms'])} {ratio:>6} "
              f"{x['cpu_ms_per_request']:10.3f} {x['peak_rss_mib']:6.0f} MiB  {target or ''}")
    rounds = [(label, r[key]["round_ratios"]) for key, label, _, anchor in rows
              if r.get(key) and anchor and key != anchor and "round_ratios" in r[key]]
    if rounds:
        print(f"\nHTTP paths: medians of {r['options']['rounds']} interleaved rounds of {r['options']['duration']} s "
              "(p99: the worst round's); x bare is the median of each round's ratio to that round's anchor:")
        for label, ratios in rounds:
            print(f"  {label:32} {', '.join(f'{x:.3f}' for x in ratios)}")
    for key in ("sqlite_ingest", "postgres_ingest_paced", "postgres_ingest"):
        x = r.get(key)
        if x:
            kept = "kept up" if x["drained"] and x["backlog_at_end"] < x["stored"] * 0.05 else "did NOT keep up"
            print(f"\n{key}: {x['stored']:.0f} stored in {r['options']['ingest_duration']} s "
                  f"({x['stored_per_s']:.0f}/s; {x['distinct_payloads']} distinct JWSs signed beforehand, "
                  f"{x['duplicates']:.0f} repeats answered duplicate), processed {x['processed_per_s']:.0f}/s "
                  f"during the run; backlog every 5 s {x['backlog_samples']}, {x['backlog_at_end']} at the end, "
                  + (f"drained {x['drain_s']:.1f} s later" if x["drained"] else
                     f"still {x['backlog_after_drain']:.0f} after {x['drain_s']:.0f} s") + f": {kept}. serve's CPU per notification answered (ingest and "
                  f"processing, through the drain) {x['cpu_ms_per_request']:.3f} ms")
            if x["duplicates"]:
                print(f"  WARNING: the {x['distinct_payloads']} JWSs ran out and were sent again; the stored rate is a "
                      f"floor (the repeats, answered duplicate, count in req/s): run again with more --payloads")
    if r.get("postgres_pgbench"):
        g = r["postgres_pgbench"]
        bare = r.get("postgres_bare", {}).get("rps")
        print(f"\npgbench -S -M prepared, same cluster, {r['options']['connections']} clients: {g['tps']:.0f} "
              f"transactions/s (average latency {g['latency_avg_ms']} ms)"
              + (f"; Orchard's bare route / pgbench = {bare / g['tps']:.2f}" if bare else ""))
    if r.get("postgres_sign_out"):
        o = r["postgres_sign_out"]
        print(f"\nsign-out with three replicas remembering the session: {o['sign_outs']} sign-outs, p50 "
              f"{o['p50_ms']:.2f} ms, p99 {o['p99_ms']:.2f} ms, max {o['max_ms']:.2f} ms (target p99 < 20 ms)")
    if r.get("sqlite_signin"):
        s = r["sqlite_signin"]
        print(f"\nsign-in: {s['requests']} new users in {r['options']['signin_duration']} s from "
              f"{r['options']['signin_workers']} threads; Orchard's own CPU {s['cpu_ms_per_request']:.2f} ms per "
              f"sign-in (the emulator's excluded)")


if __name__ == "__main__":
    sys.exit(main())
