#!/usr/bin/env python3
"""kill -9 the replica holding the refresh lease, KILLS times at random points of its refresh.

Three `authgate serve` replicas share one session through PostgreSQL, in front of the fake
authorization server of `authgate dev` with rotation, reuse detection and a reuse grace
window (GRACE_MS), whose token requests take AUTH_LATENCY_MS. Each round: wait for the token
to expire, put load on every replica, find the replica that took the lease through the
admin API (`GET /auth/session` of any replica names the holder in `store.lease.holder`,
whose process id it carries; the row's `lease_owner` must agree), kill -9 it after a random
delay (before its token request, while it is at the server, or as it commits), then start it
again.

The other replicas take the lapsed lease over after at most its term (LEASE_SECONDS) and
refresh with the pair still stored: when the dead replica's request had already rotated
it at the server, the grace window accepts it once more. Checked: no reuse detection, the
session never lost (no 401 to any client, every replica logged in), service resumes on
every replica after each kill, nothing but 200 from the replicas that were not killed
(or 503 `refresh-unavailable` should a wait outlast its bound). Run by
scripts/scale-out-kill under scripts/with-postgres; bounded (about 5 s a round).
"""

import os
import random
import signal
import sys
import time

from scale_out_lib import Cluster, Load, check, pid_of, problem_type, psql, run, wait_until

KILLS = int(os.environ.get("KILLS", "20"))
LIFETIME = int(os.environ.get("TOKEN_LIFETIME", "2"))
AUTH_LATENCY_MS = int(os.environ.get("AUTH_LATENCY_MS", "300"))
LEASE_SECONDS = int(os.environ.get("LEASE_SECONDS", "1"))
GRACE_MS = int(os.environ.get("GRACE_MS", "10000"))
SEED = int(os.environ.get("SEED", str(random.randrange(1 << 30))))


def main():
    print("seed %d (SEED=%d reproduces the kill points)" % (SEED, SEED), flush=True)
    rng = random.Random(SEED)
    c = Cluster(3, lifetime=LIFETIME, auth_latency_ms=AUTH_LATENCY_MS, reuse_grace_ms=GRACE_MS,
                lease_seconds=LEASE_SECONDS)
    if not c.start_all():
        return
    n = len(c.replicas)
    check(c.login(0) == 200, "login on replica 0")
    check(all(wait_until(lambda i=i: c.logged_in(i), what="login to propagate") for i in range(n)),
          "every replica follows the login")
    pids = {c.replicas[i]["process"].pid: i for i in range(n)}

    kinds = {(c.session(i).get("store") or {}).get("kind") for i in range(n)}
    replicas = {(c.session(i).get("store") or {}).get("replica") for i in range(n)}
    check(kinds == {"postgres"} and len(replicas) == n and None not in replicas,
          "each replica's admin API shows the postgres store and its own replica name: %s %s" % (kinds, replicas))
    agreements = 0
    disagreements = []
    kills = []  # (round, replica, delay ms, what the row said)
    resumed = []
    missed = 0
    load = Load(c)
    load.start()
    try:
        for round_ in range(KILLS):
            # Wait for the token to expire; the load then makes some replica take the lease.
            deadline = time.monotonic() + LIFETIME + 5
            holder = None
            asked = 0
            while time.monotonic() < deadline:
                # Any live replica can tell who holds the lease.
                asker = sorted(pids.values())[asked % len(pids)]
                asked += 1
                lease = (c.session(asker).get("store") or {}).get("lease") or {}
                owner = lease.get("holder")
                if owner and pid_of(owner) in pids:
                    holder = pids[pid_of(owner)]
                    if lease.get("this_replica") != (holder == asker):
                        disagreements.append((round_, "this_replica", asker, lease))
                    row = psql("SELECT lease_owner FROM %s WHERE account = 'default' AND lease_owner IS NOT NULL" % c.table)
                    if row == owner:
                        agreements += 1
                    elif row:
                        disagreements.append((round_, "row", row, owner))
                    break
                time.sleep(0.005)
            if holder is None:
                missed += 1
                continue
            delay = rng.uniform(0, AUTH_LATENCY_MS * 1.3) / 1000
            time.sleep(delay)
            process = c.replicas[holder]["process"]
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
            kills.append((round_, holder, int(delay * 1000)))
            del pids[process.pid]
            # Service resumes: every other replica answers 200 (the lease lapses within its term).
            others = [i for i in range(n) if i != holder]
            started = time.monotonic()
            ok = all(wait_until(lambda i=i: c.proxy(i, timeout=20)[0] == 200, timeout=LEASE_SECONDS + 15,
                                what="replica %d after the kill" % i) for i in others)
            resumed.append(time.monotonic() - started if ok else None)
            c.start_replica(holder)
            pids[c.replicas[holder]["process"].pid] = holder
            if not c.ready(holder):
                check(False, "replica %d restarted after kill %d" % (holder, round_))
                break
    finally:
        load.stop()
    stats = c.stats()
    print("kills (round, replica, ms after it took the lease): %s" % kills, flush=True)
    times = sorted(t for t in resumed if t is not None)
    if times:
        print("service resumed on the other replicas after each kill in: median %.0f ms, max %.0f ms"
              % (times[len(times) // 2] * 1000, times[-1] * 1000), flush=True)
    print("authorization server: %s" % stats, flush=True)
    print("load: %s" % sorted(load.statuses.items(), key=str), flush=True)
    check(len(kills) == KILLS, "%d of %d rounds killed the lease holder mid-refresh (%d found no holder)"
          % (len(kills), KILLS, missed))
    check(all(t is not None for t in resumed), "service resumed on every other replica after every kill")
    check(agreements >= 1 and not disagreements,
          "the admin API named the lease holder the row names (%d agreed, disagreements %s)" % (agreements, disagreements))
    check(stats["reuse_detections"] == 0, "no reuse detection (%d; %d reuses inside the grace window)"
          % (stats["reuse_detections"], stats["grace_reuses"]))
    unauthorized = {k: v for k, v in load.statuses.items() if k[1] == 401}
    check(not unauthorized, "no client ever got 401: the session was never lost %s %s"
          % (unauthorized, problem_type(load.bodies.get(401, b"{}"))))
    unexpected = {k: v for k, v in load.statuses.items() if isinstance(k[1], int) and k[1] not in (200, 503)}
    check(not unexpected, "no answer other than 200 or 503 %s" % unexpected)
    if 503 in load.bodies:
        print("a 503 meanwhile: %s" % load.bodies[503].decode(errors="replace"), flush=True)
    check(all(wait_until(lambda i=i: c.logged_in(i) and c.proxy(i)[0] == 200, what="replica %d at the end" % i)
              for i in range(n)), "every replica still logged in and serving at the end")
    check(not c.leaks(), "no replica's log holds a secret %s" % c.leaks())


run(main)
