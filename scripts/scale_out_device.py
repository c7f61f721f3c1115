#!/usr/bin/env python3
"""One device login shared by three replicas with `autoLogin: device` (issue 28).

Three `authgate serve` replicas share one session through PostgreSQL, each configured with
`autoLogin: {grant: device}` and the device authorization endpoint of `authgate dev`'s fake
authorization server (interval 5 s; `slow_down` for a poll sooner than the interval after
the previous one, whoever sent it). Checks:
- every replica's `GET /auth/session` shows the same user code, from one device
  authorization although they start together (one claims the start, the others wait);
- the device code is sealed in the row: neither the table nor any log holds it;
- one poll per interval across the replicas, no `slow_down`;
- the row names the poller (`device_owner`, host/pid/random); kill -9 of that process, and
  another replica polls on within a lease term and an interval, still without `slow_down`;
- an approval at the verification URI logs every surviving replica in, and ends the device
  login everywhere.
scripts/scale-out-device under scripts/with-postgres; bounded (about a minute).
"""

import json
import os
import signal
import time
import urllib.request

from scale_out_lib import Cluster, check, pid_of, psql, request, run, wait_until

INTERVAL = 5


def main():
    c = Cluster(replicas=3, lease_seconds=1)
    for r in c.replicas:
        with open(r["log"] + ".json") as f:
            config = json.load(f)
        config["authorization"]["deviceAuthorizationEndpoint"] = "http://127.0.0.1:%d/oauth/device_authorization" % c.auth
        config["authorization"]["autoLogin"] = {"grant": "device"}
        with open(r["log"] + ".json", "w") as f:
            json.dump(config, f)
    if not check(wait_until(lambda: request(c.auth, "GET", "/stats")[0] == 200, what="the fake authorization server"),
                 "the fake authorization server answers"):
        return
    for i in range(len(c.replicas)):
        c.start_replica(i)

    def codes():
        return [(c.session(i).get("device_authorization") or {}).get("user_code") for i in range(len(c.replicas))]

    shown = wait_until(lambda: None not in codes(), timeout=30, what="a device login on every replica")
    if not check(shown, "every replica shows a waiting device login"):
        return
    seen = codes()
    stats = c.stats()
    check(len(set(seen)) == 1, "every replica shows the same user code: %s" % seen)
    check(stats["device_authorizations"] == 1,
          "one device authorization asked for, the replicas starting together (%d)" % stats["device_authorizations"])
    user_code = seen[0]

    # One poll per interval, whoever polls.
    start = c.stats()["device_polls"]
    time.sleep(3 * INTERVAL + 1)
    stats = c.stats()
    polls = stats["device_polls"] - start
    check(2 <= polls <= 4, "%d polls in %d s at a %d s interval" % (polls, 3 * INTERVAL + 1, INTERVAL))
    check(stats["slow_downs"] == 0, "no poll sooner than the interval (%d slow_down)" % stats["slow_downs"])

    table = c.table
    row = psql("SELECT encode(device_sealed, 'hex') || ' ' || coalesce(device_owner, '') FROM %s" % table) or ""
    check(user_code.encode().hex() not in row and "dc_".encode().hex() not in row,
          "the row holds the codes sealed (%d bytes)" % (len(row) // 2))
    owner = psql("SELECT device_owner FROM %s WHERE device_until > clock_timestamp()" % table)
    pids = {c.replicas[i]["process"].pid: i for i in range(len(c.replicas))}
    poller = pids.get(pid_of(owner))
    if not check(poller is not None, "the row names the polling replica: %s" % owner):
        return
    os.kill(c.replicas[poller]["process"].pid, signal.SIGKILL)
    c.replicas[poller]["process"].wait()
    killed_at = time.monotonic()
    before = c.stats()["device_polls"]
    took_over = wait_until(lambda: pids.get(pid_of(psql(
        "SELECT device_owner FROM %s WHERE device_until > clock_timestamp()" % table))) not in (None, poller),
        timeout=1 + 2 * INTERVAL + 5, what="another replica polling")
    check(took_over, "another replica took the polling over %.1f s after kill -9 of replica %d"
          % (time.monotonic() - killed_at, poller))
    time.sleep(2 * INTERVAL)
    stats = c.stats()
    check(stats["device_polls"] > before, "and polls the same device code (%d polls since)" % (stats["device_polls"] - before))
    check(stats["slow_downs"] == 0, "still no slow_down (%d)" % stats["slow_downs"])

    survivors = [i for i in range(len(c.replicas)) if i != poller]
    approve = urllib.request.Request(
        "http://127.0.0.1:%d/oauth/device" % c.auth, data=("user_code=%s&decision=approve" % user_code).encode(),
        headers={"Content-Type": "application/x-www-form-urlencoded"}, method="POST")
    with urllib.request.urlopen(approve, timeout=10) as answer:
        status = answer.status
    check(status == 200, "the person approves %s at the verification URI" % user_code)
    logged_in = wait_until(lambda: all(c.logged_in(i) for i in survivors), timeout=2 * INTERVAL + 10,
                           what="every surviving replica logged in")
    check(logged_in, "the approval logs every surviving replica in")
    check(all(c.session(i).get("device_authorization") is None for i in survivors), "no device login waits any more")
    stats = c.stats()
    check(stats["grants"].get("urn:ietf:params:oauth:grant-type:device_code") == 1, "one device login: %s" % stats["grants"])
    for i in survivors:
        check(c.proxy(i)[0] == 200, "replica %d serves the session" % i)
    leaked = []
    for i, r in enumerate(c.replicas):
        with open(r["log"]) as f:
            if "dc_" in f.read():
                leaked.append(i)
    check(not leaked and not c.leaks(), "no replica's log holds a device code or a secret %s" % leaked)


if __name__ == "__main__":
    run(main)
