#!/usr/bin/env python3
"""The session check through PgBouncer (pool_mode=transaction), beside the direct connection, each against the bare
route measured in the same round.

Starts Debian's pgbouncer in front of the cluster (as ORCHARD_TEST_POSTGRES_USER when run as root, since PgBouncer
refuses root), `orchard apple-emulator`, and three `orchard serve` on one database: direct; through PgBouncer with
ORCHARD_DATABASE_POOLER=transaction and ORCHARD_DATABASE_LISTEN_URL direct (the memory on); and through PgBouncer with
ORCHARD_SESSION_CACHE=off (every check a statement through PgBouncer). For each, bench.py's interleaved rounds of
`GET /health/live` and `GET /v1/session` with wrk. Figures are never asserted.

    python3 Benchmarks/scripts/pgbouncer_bench.py --orchard Benchmarks/.build/release/orchard --work-dir /tmp/pgb \
        --postgres-url postgres://USER@127.0.0.1:PORT/postgres
"""

import argparse
import os
import pwd
import subprocess
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import http_paths, postgres_database, sign_in, start_emulator, start_serve  # noqa: E402
from benchlib import BenchError, Child, Client, free_port  # noqa: E402


def start_pgbouncer(opts, admin_url):
    parsed = urllib.parse.urlsplit(admin_url)
    port = free_port()
    directory = os.path.join(opts.work_dir, "pgbouncer")
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "pgbouncer.ini"), "w") as f:
        f.write(f"""[databases]
* = host={parsed.hostname} port={parsed.port}
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {port}
auth_type = trust
auth_file = {directory}/userlist.txt
pool_mode = transaction
max_client_conn = 1000
default_pool_size = 40
ignore_startup_parameters = extra_float_digits
unix_socket_dir =
""")
    with open(os.path.join(directory, "userlist.txt"), "w") as f:
        f.write(f'"{parsed.username or "orchard"}" ""\n')
    argv = ["/usr/sbin/pgbouncer", os.path.join(directory, "pgbouncer.ini")]
    if os.geteuid() == 0:
        owner = pwd.getpwnam(os.environ.get("ORCHARD_TEST_POSTGRES_USER", "postgres"))
        for path in [directory, *(os.path.join(directory, n) for n in os.listdir(directory))]:
            os.chown(path, owner.pw_uid, owner.pw_gid)
        argv = ["/usr/sbin/pgbouncer", "-u", owner.pw_name, os.path.join(directory, "pgbouncer.ini")]
    child = Child("pgbouncer", argv, dict(os.environ), os.path.join(opts.work_dir, "pgbouncer.log"))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if subprocess.run(["psql", "-Atc", "select 1", through(admin_url, port)], capture_output=True).returncode == 0:
            return child, port
        time.sleep(0.2)
    raise BenchError(f"pgbouncer did not answer:\n{child.tail()}")


def through(url, port):
    parsed = urllib.parse.urlsplit(url)
    netloc = (parsed.username + "@" if parsed.username else "") + f"127.0.0.1:{port}"
    return urllib.parse.urlunsplit(parsed._replace(netloc=netloc))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--orchard", required=True)
    p.add_argument("--work-dir", required=True)
    p.add_argument("--postgres-url", required=True, help="an admin URL of the cluster")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--duration", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--connections", type=int, default=32)
    opts = p.parse_args()
    os.makedirs(opts.work_dir, exist_ok=True)
    bouncer, bouncer_port = start_pgbouncer(opts, opts.postgres_url)
    emulator_child, emulator_base, key = start_emulator(opts)
    emulator = Client(emulator_base)
    name = f"orchard_pgbouncer_bench_{os.getpid()}"
    url = postgres_database(opts.postgres_url, name, create=True)
    pooled = through(url, bouncer_port)
    results, rows = {}, []
    try:
        setups = [
            ("direct", url, {}),
            ("pgbouncer", pooled, {"ORCHARD_DATABASE_POOLER": "transaction", "ORCHARD_DATABASE_LISTEN_URL": url}),
            ("pgbouncer_off", pooled, {"ORCHARD_DATABASE_POOLER": "transaction", "ORCHARD_DATABASE_LISTEN_URL": url,
                                       "ORCHARD_SESSION_CACHE": "off"}),
        ]
        for label, database_url, extra in setups:
            serve, base = start_serve(opts, f"serve-{label}", database_url, emulator_base, key, extra)
            try:
                token, _ = sign_in(Client(base), emulator)
                http_paths(opts, serve, base, emulator, token, results, label + "_", with_nonce_path=False)
            finally:
                serve.stop()
            session = results[label + "_session"]
            rows.append(f"  {label:14} session check {session['ratio_to_bare']:.2f} x bare "
                        f"(rounds {', '.join(f'{r:.2f}' for r in session['round_ratios'])}), "
                        f"{session['rps']:,.0f}/s, p99 {session['p99_ms']:.2f} ms, bare p99 {results[label + '_bare']['p99_ms']:.2f} ms")
        print("The session check on PostgreSQL, direct and through PgBouncer (pool_mode=transaction):")
        print("\n".join(rows))
        return 0
    except BenchError as error:
        print(f"pgbouncer_bench: {error}", file=sys.stderr)
        return 1
    finally:
        emulator_child.stop()
        postgres_database(opts.postgres_url, name, create=False)
        bouncer.stop()


if __name__ == "__main__":
    sys.exit(main())
