#!/usr/bin/env python3
"""PostgreSQL stopped and started while three `authgate serve` replicas are under load.

With the fake authorization server and API of `authgate dev`, and requests in a loop on
every replica throughout:
1. right after a login, the database is stopped (pg_ctl stop -m fast): while the token
   lives, every replica serves it from memory (200);
2. once it has expired, a refresh cannot take the lease: 503 `refresh-unavailable` with
   `Retry-After`, never a 401; every replica still says logged in; `/readyz` says not
   ready (`store_unavailable`);
3. the database is started again: every replica answers 200 again, the same processes (no
   restart), with no reuse detection at the authorization server.
Run by scripts/scale-out-outage under scripts/with-postgres; bounded (under a minute).
"""

import json
import os
import subprocess
import sys
import time

from scale_out_lib import Cluster, Load, check, problem_field, problem_type, request, run, wait_until

LIFETIME = int(os.environ.get("TOKEN_LIFETIME", "4"))
OUTAGE = float(os.environ.get("OUTAGE_SECONDS", "8"))


def pg_ctl(action):
    bin_dir = os.environ["AUTHGATE_TEST_POSTGRES_BIN"]
    data = os.environ["AUTHGATE_TEST_POSTGRES_DATA"]
    prefix = os.environ.get("AUTHGATE_TEST_POSTGRES_RUN_AS", "").split()
    args = prefix + [bin_dir + "/pg_ctl", "-D", data, "-w", "-t", "60"]
    args += ["-m", "fast", "stop"] if action == "stop" else ["-l", os.path.dirname(data) + "/server.log", "start"]
    return subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=90).returncode == 0


def readyz(c, i):
    status, body, _ = request(c.replicas[i]["admin"], "GET", "/readyz")
    return status, body.decode(errors="replace")


def main():
    c = Cluster(3, lifetime=LIFETIME, auth_latency_ms=50, lease_seconds=2)
    if not c.start_all():
        return
    n = len(c.replicas)
    pids = [r["process"].pid for r in c.replicas]
    load = Load(c)
    stopped = False
    try:
        check(c.login(0) == 200, "login on replica 0")
        logged_in_at = time.monotonic()
        check(all(wait_until(lambda i=i: c.proxy(i)[0] == 200, what="login followed") for i in range(n)),
              "every replica serves the session")
        load.start()
        stopped = check(pg_ctl("stop"), "PostgreSQL stopped under load")
        down_at = time.monotonic()
        # 1. The token still lives: served from memory.
        time.sleep(max(0.5, LIFETIME - 1.5 - (down_at - logged_in_at)))
        cached = Load.since({}, load.snapshot())
        check(cached and all(k[1] == 200 for k in cached),
              "while the token lives, every replica serves it with the database down: %s" % sorted(cached.items()))
        # 2. Expired: refresh cannot take the lease.
        before = load.snapshot()
        time.sleep(max(0, logged_in_at + LIFETIME + OUTAGE - time.monotonic()))
        during = Load.since(before, load.snapshot())
        statuses = {k[1] for k in during}
        check(all(((i, 503) in during) for i in range(n)),
              "after expiry every replica answers 503 with the database down: %s" % sorted(during.items()))
        check(401 not in statuses, "no 401: the session is kept %s" % sorted(during.items()))
        body = load.bodies.get(503, b"{}")
        check(problem_type(body) == "refresh-unavailable" and load.retry_after and None not in load.retry_after,
              "the 503 is refresh-unavailable with Retry-After %s: %s" % (sorted(map(str, load.retry_after)),
                                                                          body.decode(errors="replace")))
        check(problem_field(body, "cause") == "token-store",
              "the 503 blames the token store, not the authorization server: %s" % body.decode(errors="replace"))
        check(all(c.logged_in(i) for i in range(n)), "every replica still says logged in")
        ready = [readyz(c, i) for i in range(n)]
        check(all(s == 503 and "store_unavailable" in b for s, b in ready), "/readyz says the store is unavailable: %s" % ready)
        # 3. The database returns: recovery without restart.
        stopped = not check(pg_ctl("start"), "PostgreSQL started again")
        up_at = time.monotonic()
        recovered = all(wait_until(lambda i=i: c.proxy(i)[0] == 200, timeout=30, what="replica %d to recover" % i)
                        for i in range(n))
        check(recovered, "every replica answers 200 again, %.1f s after the database returned" % (time.monotonic() - up_at))
        check(all(wait_until(lambda i=i: readyz(c, i)[0] == 200, what="ready") for i in range(n)), "/readyz ready again")
        check([r["process"].pid for r in c.replicas] == pids and all(r["process"].poll() is None for r in c.replicas),
              "the same processes: no restart")
    finally:
        load.stop()
        if stopped:
            pg_ctl("start")
    stats = c.stats()
    print("authorization server: %s" % json.dumps(stats), flush=True)
    print("load: %s" % sorted(load.statuses.items(), key=str), flush=True)
    check(stats["reuse_detections"] == 0, "no reuse detection (%d)" % stats["reuse_detections"])
    check(not c.leaks(), "no replica's log holds a secret %s" % c.leaks())


run(main)
