#!/usr/bin/env python3
"""Other users' sign-outs while one signed-in client floods `DELETE /v1/sessions`, on two PostgreSQL replicas.

Two `orchard serve` replicas share one PostgreSQL database (with `orchard apple-emulator` as Apple) and the default
rate limit (120 a minute). Users sign in on replica 0, each from an address of its own (X-Forwarded-For from a trusted
loopback proxy), and their sessions are checked on both replicas, so that both memories hold them. Then half of them
sign out one at a time on replica 0, timed; then a flooder, signed in on replica 1, calls `DELETE /v1/sessions` as
fast as --flood-threads connections allow while the other half sign out. Reported: the sign-outs' p50 and p99 without
and with the flood, and what the flood's calls were answered. Run it against two binaries (before and after a change)
to compare. Figures are never asserted; exit 1 only if something failed or answered wrongly.

    python3 Benchmarks/scripts/flood_bench.py --orchard Benchmarks/.build/release/orchard --work-dir /tmp/flood \
        --postgres-url postgres://USER@127.0.0.1:PORT/postgres
"""

import argparse
import hashlib
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import postgres_database, start_emulator, start_serve  # noqa: E402
from benchlib import BenchError, Client  # noqa: E402


def sign_in(orchard, emulator, address):
    headers = {"X-Forwarded-For": address}
    nonce = orchard.json("POST", "/v1/auth/apple/nonce", headers=headers, expect=201)["nonce"]
    grant = emulator.json("POST", "/_emulator/authorize", {"nonce": hashlib.sha256(nonce.encode()).hexdigest()})
    signed = orchard.json("POST", "/v1/auth/apple", {"identity_token": grant["identity_token"],
                                                    "authorization_code": grant["authorization_code"],
                                                    "nonce": nonce}, headers=headers)
    return signed["session"]["token"]


def percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def sign_outs(base, tokens):
    client, times = Client(base), []
    for token in tokens:
        started = time.perf_counter()
        status, body = client.call("DELETE", "/v1/session", headers={"Authorization": f"Bearer {token}"})
        times.append((time.perf_counter() - started) * 1000)
        if status != 204:
            raise BenchError(f"a sign-out answered {status}: {body[:200]!r}")
    return times


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--orchard", required=True)
    p.add_argument("--work-dir", required=True)
    p.add_argument("--postgres-url", required=True, help="an admin URL: a database is made for the run and dropped")
    p.add_argument("--users", type=int, default=200, help="users signing out, half without and half with the flood")
    p.add_argument("--flood-threads", type=int, default=4)
    opts = p.parse_args()
    os.makedirs(opts.work_dir, exist_ok=True)
    emulator_child, emulator_base, key = start_emulator(opts)
    emulator = Client(emulator_base)
    name = f"orchard_flood_bench_{os.getpid()}"
    url = postgres_database(opts.postgres_url, name, create=True)
    replicas = []
    try:
        extra = {"ORCHARD_RATE_LIMIT_PER_MINUTE": "120", "ORCHARD_TRUSTED_PROXIES": "127.0.0.1/32"}
        for index in range(2):
            replicas.append(start_serve(opts, f"replica-{index}", url, emulator_base, key, extra))
        (_, base0), (_, base1) = replicas
        first, second = Client(base0), Client(base1)
        tokens = [sign_in(first, emulator, f"10.0.{i // 250}.{i % 250 + 1}") for i in range(opts.users)]
        flooder = sign_in(second, emulator, "10.9.9.9")
        for token in tokens:
            for client in (first, second):
                if client.call("GET", "/v1/session", headers={"Authorization": f"Bearer {token}"})[0] != 200:
                    raise BenchError("a fresh session was refused")
        half = len(tokens) // 2
        quiet = sign_outs(base0, tokens[:half])

        stop, answers, lock = threading.Event(), {}, threading.Lock()

        def flood():
            client = Client(base1)
            while not stop.is_set():
                status, _ = client.call("DELETE", "/v1/sessions", headers={"Authorization": f"Bearer {flooder}"})
                with lock:
                    answers[status] = answers.get(status, 0) + 1

        threads = [threading.Thread(target=flood) for _ in range(opts.flood_threads)]
        for thread in threads:
            thread.start()
        time.sleep(1)
        flood_started = time.monotonic()
        flooded = sign_outs(base0, tokens[half:])
        flood_seconds = time.monotonic() - flood_started
        stop.set()
        for thread in threads:
            thread.join()
        total = sum(answers.values())
        print(f"{opts.orchard}: {half} sign-outs each phase, two replicas on PostgreSQL")
        print(f"  without a flood: p50 {percentile(quiet, 50):.2f} ms, p99 {percentile(quiet, 99):.2f} ms")
        print(f"  with a flood:    p50 {percentile(flooded, 50):.2f} ms, p99 {percentile(flooded, 99):.2f} ms; "
              f"the flood sent {total:,} DELETE /v1/sessions ({total / (flood_seconds + 1):,.0f}/s), answered "
              + ", ".join(f"{status}: {count:,}" for status, count in sorted(answers.items())))
        return 0
    except BenchError as error:
        print(f"flood_bench: {error}", file=sys.stderr)
        return 1
    finally:
        for child, _ in replicas:
            child.stop()
        emulator_child.stop()
        postgres_database(opts.postgres_url, name, create=False)


if __name__ == "__main__":
    sys.exit(main())
