#!/usr/bin/env python3
"""The scale-out benchmark: 1, 2 and 3 `authgate serve` replicas sharing one session through
a real PostgreSQL (scripts/with-postgres), in front of the fake authorization server
(rotation, reuse detection, AUTH_LATENCY_MS per token request) and fake API of `authgate
dev`. Run by scripts/bench-replicas; every process is started here and stopped after.

For each replica count of REPLICAS_LIST:
1. Refresh bursts, ROUNDS times: wait for the token to expire, then CONCURRENCY requests at
   once on every replica (one new connection each). Every request of the burst needs the
   one refresh: its latency is the latency "during a refresh". A second burst right after,
   with the token current, is the baseline. Refreshes per expiry come from the authorization
   server's own count.
2. Steady load: wrk on every replica at once for DURATION (CONNECTIONS each) while the token
   expires every TOKEN_LIFETIME seconds: the replicas' summed requests/s, the worst p99, the
   refreshes the authorization server saw against the expiries the run spanned, and any
   non-2xx answer.
3. Logout propagation (2 replicas and more): LOGOUTS logouts on one replica, timed until
   every other replica's proxy answers 401; p50 and p99.
Prints one table row per replica count, and with CSV=FILE appends them there. Measured,
never asserted against a number; the run fails only when a refresh is duplicated, the
server detects a reuse or a client gets an error.
"""

import os
import re
import subprocess
import threading
import time

from scale_out_lib import Cluster, DelayRelay, PG_URL, check, logout_propagation, percentile, run, wait_until

REPLICAS_LIST = [int(n) for n in os.environ.get("REPLICAS_LIST", "1 2 3").split()]
ROUNDS = int(os.environ.get("ROUNDS", "5"))
CONCURRENCY = int(os.environ.get("CONCURRENCY", "20"))
LIFETIME = int(os.environ.get("TOKEN_LIFETIME", "2"))
AUTH_LATENCY_MS = int(os.environ.get("AUTH_LATENCY_MS", "50"))
DURATION = int(os.environ.get("DURATION", "8"))
CONNECTIONS = int(os.environ.get("CONNECTIONS", "16"))
LOGOUTS = int(os.environ.get("LOGOUTS", "20"))
CSV = os.environ.get("CSV", "")
# Milliseconds added to each direction of every replica's PostgreSQL traffic (a DelayRelay):
# DB_DELAY_MS=150 puts the database 300 ms away in round trips.
DB_DELAY_MS = int(os.environ.get("DB_DELAY_MS", "0"))

UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0}


def burst(c):
    """CONCURRENCY requests at once on every replica: their latencies (ms) and failures."""
    latencies, failures = [], []
    lock = threading.Lock()
    gate = threading.Barrier(len(c.replicas) * CONCURRENCY)

    def hit(i):
        gate.wait()
        started = time.monotonic()
        try:
            status = c.proxy(i)[0]
        except OSError as e:
            status = type(e).__name__
        elapsed = (time.monotonic() - started) * 1000
        with lock:
            latencies.append(elapsed)
            if status != 200:
                failures.append(status)

    threads = [threading.Thread(target=hit, args=(i,)) for i in range(len(c.replicas)) for _ in range(CONCURRENCY)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return latencies, failures


def wrk(port, out):
    """wrk on one replica for DURATION; fills `out` with requests/s, p99 (ms), non-2xx and errors."""
    text = subprocess.run(
        ["wrk", "-t1", "-c%d" % CONNECTIONS, "-d%ds" % DURATION, "--latency", "http://127.0.0.1:%d/api/item" % port],
        capture_output=True, text=True, timeout=DURATION + 30).stdout
    rps = re.search(r"Requests/sec:\s+([\d.]+)", text)
    p99 = re.search(r"^\s+99%\s+([\d.]+)(us|ms|s)\s*$", text, re.M)
    non2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", text)
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    out["rps"] = float(rps.group(1)) if rps else 0.0
    out["p99_ms"] = float(p99.group(1)) * UNITS[p99.group(2)] if p99 else float("nan")
    out["non2xx"] = int(non2xx.group(1)) if non2xx else 0
    out["errors"] = sum(int(e) for e in errors.groups()) if errors else 0


def measure(n):
    relay = DelayRelay(PG_URL.port, DB_DELAY_MS) if DB_DELAY_MS else None
    c = Cluster(n, lifetime=LIFETIME, auth_latency_ms=AUTH_LATENCY_MS, db_port=relay.port if relay else None)
    if not c.start_all():
        return None
    check(c.login(0) == 200, "%d replicas: login on replica 0" % n)
    check(all(wait_until(lambda i=i: c.logged_in(i), what="login to propagate") for i in range(n)),
          "%d replicas: every replica follows the login" % n)
    row = {"replicas": n}

    # 1. Bursts through an expiry, then with the token current.
    during, current, per_expiry, failures = [], [], [], []
    for _ in range(ROUNDS):
        time.sleep(LIFETIME + 0.3)
        before = c.stats()["refreshes"]
        latencies, failed = burst(c)
        per_expiry.append(c.stats()["refreshes"] - before)
        during += latencies
        failures += failed
        latencies, failed = burst(c)
        current += latencies
        failures += failed
    row.update(refreshes_per_expiry=max(per_expiry), during_p50_ms=percentile(during, 50),
               during_p99_ms=percentile(during, 99), current_p50_ms=percentile(current, 50),
               current_p99_ms=percentile(current, 99))
    check(all(r == 1 for r in per_expiry), "%d replicas: one refresh per expiry %s" % (n, per_expiry))
    check(not failures, "%d replicas: every burst request answered 200 %s" % (n, failures[:5]))

    # 2. Steady load through expiries.
    time.sleep(LIFETIME + 0.3)
    before = c.stats()["refreshes"]
    results = [{} for _ in range(n)]
    threads = [threading.Thread(target=wrk, args=(c.replicas[i]["proxy"], results[i])) for i in range(n)]
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - started
    refreshes = c.stats()["refreshes"] - before
    # The token expired as the run began and then once a lifetime after each refresh (no lead).
    expiries = max(1, int(elapsed // LIFETIME) + 1)
    row.update(steady_rps=sum(r["rps"] for r in results), steady_p99_ms=max(r["p99_ms"] for r in results),
               steady_refreshes=refreshes, steady_expiries=expiries,
               steady_non2xx=sum(r["non2xx"] + r["errors"] for r in results))
    check(refreshes <= expiries, "%d replicas: %d refreshes for at most %d expiries under load" % (n, refreshes, expiries))
    check(row["steady_non2xx"] == 0, "%d replicas: no non-2xx answer or socket error under load (%d)"
          % (n, row["steady_non2xx"]))

    # 3. Logout propagation.
    if n > 1:
        p = logout_propagation(c, LOGOUTS)
        check(len(p["latencies"]) == LOGOUTS, "%d replicas: %d logouts reached every replica" % (n, LOGOUTS))
        row.update(logout_p50_ms=p.get("p50_ms"), logout_p99_ms=p.get("p99_ms"))
    stats = c.stats()
    check(stats["reuse_detections"] == 0, "%d replicas: no reuse detection (%d)" % (n, stats["reuse_detections"]))
    check(not c.leaks(), "%d replicas: no replica's log holds a secret" % n)
    for r in c.replicas:
        r["process"].terminate()
        r["process"].wait(timeout=30)
    return row


def cell(value, form="%.1f"):
    return "–" if value is None else form % value


def main():
    rows = [r for r in (measure(n) for n in REPLICAS_LIST) if r]
    print()
    print("| replicas | refreshes per expiry | p50 / p99 during a refresh (ms) | p50 / p99 token current (ms) "
          "| steady req/s (sum) | steady p99 (ms) | refreshes / expiries under load | logout propagation p50 / p99 (ms) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %d | %d | %s / %s | %s / %s | %.0f | %s | %d / %d | %s / %s |" % (
            r["replicas"], r["refreshes_per_expiry"], cell(r["during_p50_ms"]), cell(r["during_p99_ms"]),
            cell(r["current_p50_ms"]), cell(r["current_p99_ms"]), r["steady_rps"], cell(r["steady_p99_ms"]),
            r["steady_refreshes"], r["steady_expiries"], cell(r.get("logout_p50_ms")), cell(r.get("logout_p99_ms"))))
    if CSV:
        keys = ["replicas", "refreshes_per_expiry", "during_p50_ms", "during_p99_ms", "current_p50_ms", "current_p99_ms",
                "steady_rps", "steady_p99_ms", "steady_refreshes", "steady_expiries", "logout_p50_ms", "logout_p99_ms"]
        new = not os.path.exists(CSV)
        with open(CSV, "a") as f:
            if new:
                f.write(",".join(keys) + "\n")
            for r in rows:
                f.write(",".join("" if r.get(k) is None else str(r[k]) for k in keys) + "\n")


run(main)
