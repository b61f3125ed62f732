#!/usr/bin/env python3
"""`orchard accounts import` beside a running `orchard serve`: accounts per minute and the import's peak memory.

For each size in --lines and each database (SQLite always; PostgreSQL with --postgres-url, an admin URL), a fresh
database is served by `orchard serve` (with `orchard apple-emulator` as Apple), an Orchard JSON Lines file of that many
accounts (each with an email, a name and an account id) is written, and `orchard accounts import FILE` runs against
the same database while serve answers `GET /v1/session` checks of a signed-in user from another thread (--checks-per-second). Reported:
accounts per minute (from the import's start to its exit), the import's peak RSS (wait4's ru_maxrss) and the file's
size, and that serve kept answering. A second run of the same file (up to --rerun-up-to lines) follows and must import
nothing (every line skipped). Figures are never asserted; exit 1 only if something failed or answered wrongly.

    python3 Benchmarks/scripts/import_bench.py --orchard Benchmarks/.build/release/orchard \
        --work-dir /tmp/import-bench --lines 100000 1000000 [--postgres-url postgres://USER@127.0.0.1:PORT/postgres]
"""

import argparse
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import VAULT_KEYS, CLIENT_ID, clean_environment, postgres_database, sign_in, start_emulator, start_serve  # noqa: E402
from benchlib import BenchError, Client  # noqa: E402


def write_export(path, lines):
    with open(path, "w") as f:
        for i in range(lines):
            f.write(json.dumps({
                "apple_sub": f"001234.{i:032x}.0456", "account_id": f"user-{i}", "client_id": CLIENT_ID,
                "email": f"user{i}@example.com", "email_verified": True, "is_private_email": False,
                "name": {"first_name": "Ada", "last_name": f"Lovelace {i}"}, "created_at": "2024-03-01T12:00:00Z",
            }) + "\n")


def run_import(opts, database_url, path, log_path):
    """Runs the import; (seconds, peak RSS in MiB, the closing counts)."""
    env = clean_environment()
    env.update({"ORCHARD_DATABASE_URL": database_url, "ORCHARD_VAULT_KEYS": VAULT_KEYS, "APPLE_CLIENT_IDS": CLIENT_ID})
    with open(log_path, "wb") as log:
        started = time.monotonic()
        pid = os.posix_spawn(opts.orchard, [opts.orchard, "accounts", "import", path, "--from", "orchard", "--json"], env,
                             file_actions=[(os.POSIX_SPAWN_DUP2, log.fileno(), 1),
                                           (os.POSIX_SPAWN_OPEN, 2, log_path + ".err", os.O_WRONLY | os.O_CREAT, 0o644)])
        _, status, usage = os.wait4(pid, 0)
        seconds = time.monotonic() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise BenchError(f"accounts import exited {os.waitstatus_to_exitcode(status)}: {open(log_path + '.err').read()[-2000:]}")
    with open(log_path) as f:
        counts = json.loads(f.read().strip().splitlines()[-1])
    return seconds, usage.ru_maxrss / 1024, counts


def checker(base, token, stop, tally, per_second):
    """Session checks at `per_second` (0: back to back) while the import runs: serve must keep answering them."""
    client = Client(base)
    next_at = time.monotonic()
    while not stop.is_set():
        status, _ = client.call("GET", "/v1/session", headers={"Authorization": f"Bearer {token}"})
        tally["ok" if status == 200 else "failed"] += 1
        if per_second:
            next_at += 1 / per_second
            stop.wait(max(0, next_at - time.monotonic()))


def measure(opts, label, database_url, emulator, emulator_base, key, lines):
    serve, base = start_serve(opts, f"serve-{label}-{lines}", database_url, emulator_base, key)
    try:
        token, _ = sign_in(Client(base), emulator)
        path = os.path.join(opts.work_dir, f"export-{lines}.jsonl")
        if not os.path.exists(path):
            write_export(path, lines)
        stop, tally = threading.Event(), {"ok": 0, "failed": 0}
        thread = threading.Thread(target=checker, args=(base, token, stop, tally, opts.checks_per_second))
        thread.start()
        try:
            seconds, rss, counts = run_import(opts, database_url, path, os.path.join(opts.work_dir, f"import-{label}-{lines}.log"))
        finally:
            stop.set()
            thread.join()
        if counts.get("imported") != lines:
            raise BenchError(f"{label}: {lines} lines, but the import says {counts}")
        again, again_rss = None, None
        if lines <= opts.rerun_up_to:
            again, again_rss, again_counts = run_import(opts, database_url, path,
                                                        os.path.join(opts.work_dir, f"reimport-{label}-{lines}.log"))
            if again_counts.get("imported") != 0:
                raise BenchError(f"{label}: the second run imported again: {again_counts}")
        result = {"database": label, "lines": lines, "file_mib": os.path.getsize(path) / 2**20, "seconds": seconds,
                  "per_minute": lines / seconds * 60, "peak_rss_mib": rss, "rerun_seconds": again,
                  "rerun_peak_rss_mib": again_rss, "session_checks_ok": tally["ok"], "session_checks_failed": tally["failed"]}
        print(f"{label:8} {lines:>9,} lines ({result['file_mib']:.0f} MiB): {seconds:6.1f} s, "
              f"{result['per_minute']:>9,.0f} accounts/min, peak RSS {rss:.0f} MiB; "
              + (f"re-run skips all in {again:.1f} s (peak {again_rss:.0f} MiB); " if again is not None else "")
              + f"serve answered {tally['ok']:,} session checks meanwhile, {tally['failed']} failed",
              flush=True)
        return result
    finally:
        serve.stop()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--orchard", required=True, help="the orchard binary (release build)")
    p.add_argument("--work-dir", required=True, help="where exports, databases and logs go")
    p.add_argument("--lines", type=int, nargs="+", default=[100_000, 1_000_000])
    p.add_argument("--checks-per-second", type=int, default=100,
                   help="session checks serve answers meanwhile (0: back to back, which takes a core of its own)")
    p.add_argument("--rerun-up-to", type=int, default=100_000, help="re-run the import of files up to this many lines")
    p.add_argument("--postgres-url", default=os.environ.get("ORCHARD_BENCH_POSTGRES_URL"),
                   help="an admin URL: a database is created for each run and dropped after")
    opts = p.parse_args()
    os.makedirs(opts.work_dir, exist_ok=True)
    emulator_child, emulator_base, key = start_emulator(opts)
    emulator = Client(emulator_base)
    results = []
    try:
        for lines in opts.lines:
            sqlite_path = os.path.join(opts.work_dir, f"import-{lines}.sqlite")
            for suffix in ("", "-wal", "-shm"):
                if os.path.exists(sqlite_path + suffix):
                    os.remove(sqlite_path + suffix)
            results.append(measure(opts, "sqlite", f"sqlite:{sqlite_path}", emulator, emulator_base, key, lines))
            if opts.postgres_url:
                name = f"orchard_import_bench_{lines}"
                url = postgres_database(opts.postgres_url, name, create=True)
                try:
                    results.append(measure(opts, "postgres", url, emulator, emulator_base, key, lines))
                finally:
                    postgres_database(opts.postgres_url, name, create=False)
    except BenchError as error:
        print(f"import_bench: {error}", file=sys.stderr)
        return 1
    finally:
        emulator_child.stop()
    with open(os.path.join(opts.work_dir, "import-results.json"), "w") as f:
        json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
