#!/usr/bin/env python3
"""Three `authgate serve` replicas sharing one session through PostgreSQL, against the fake
authorization server of `authgate dev` (refresh-token rotation and reuse detection) and its
fake API (which refuses expired tokens). Run by scripts/scale-out-storm under
scripts/with-postgres; every process is started here and stopped after.

1. storm: ROUNDS times, wait for the token to expire, then CONCURRENCY requests at once on
   every replica. Each round must cost exactly one refresh at the authorization server;
   no reuse detection; every request answered 200.
2. logout propagation: LOGOUTS times, log in on one replica (the others follow), log out
   there, and time until every other replica's proxy answers 401. p50 and p99 are printed
   (measured, never asserted against a number).

Ends with "N passed, N failed" and exits non-zero on any failure.
"""

import base64
import http.client
import json
import os
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

BIN = os.environ["AUTHGATE_BIN"]
PG_URL = urllib.parse.urlparse(os.environ["AUTHGATE_TEST_POSTGRES_URL"])
REPLICAS = int(os.environ.get("REPLICAS", "3"))
ROUNDS = int(os.environ.get("ROUNDS", "4"))
CONCURRENCY = int(os.environ.get("CONCURRENCY", "20"))
LIFETIME = int(os.environ.get("TOKEN_LIFETIME", "2"))
LOGOUTS = int(os.environ.get("LOGOUTS", "20"))
AUTH_LATENCY_MS = int(os.environ.get("AUTH_LATENCY_MS", "50"))

results = {"passed": 0, "failed": 0}
processes = []


def check(ok, what):
    results["passed" if ok else "failed"] += 1
    print(("ok     " if ok else "FAILED ") + what, flush=True)
    return ok


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def request(port, method, path, body=None, token=None, timeout=30):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    headers = {}
    if token:
        headers["Authorization"] = "Bearer " + token
    if body is not None:
        headers["Content-Type"] = "application/json"
        body = json.dumps(body)
    conn.request(method, path, body=body, headers=headers)
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, data


def wait_until(condition, timeout=30, what=""):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if condition():
                return True
        except OSError:
            pass
        time.sleep(0.02)
    print("timed out waiting for " + what, flush=True)
    return False


def start(args, log, env=None):
    p = subprocess.Popen(args, stdout=log, stderr=log, env=env, start_new_session=True)
    processes.append(p)
    return p


def stop_all():
    for p in processes:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in processes:
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()


def main():
    tmp = tempfile.mkdtemp(prefix="authgate-scale-out.")
    proxy, admin, auth, api = free_ports(4)
    dev_log = open(os.path.join(tmp, "dev.log"), "w")
    # `authgate dev` for its fake authorization server and fake API (its own gateway is unused).
    start([BIN, "dev", "--port", str(proxy), "--admin-port", str(admin), "--auth-port", str(auth), "--api-port", str(api),
           "--token-lifetime", str(LIFETIME), "--auth-latency-ms", str(AUTH_LATENCY_MS),
           "--state-dir", os.path.join(tmp, "dev-state"), "--loops", "1"], dev_log)
    if not wait_until(lambda: request(auth, "GET", "/stats")[0] == 200, what="the fake authorization server"):
        return
    stats = lambda: json.loads(request(auth, "GET", "/stats")[1])

    admin_token = secrets.token_hex(16)
    with open(os.path.join(tmp, "admin-token"), "w") as f:
        f.write(admin_token + "\n")
    with open(os.path.join(tmp, "client-secret"), "w") as f:
        f.write("s3cret\n")
    with open(os.path.join(tmp, "db-password"), "w") as f:
        f.write(urllib.parse.unquote(PG_URL.password) + "\n")
    key = base64.b64encode(secrets.token_bytes(32)).decode()
    env = dict(os.environ, AUTHGATE_STORE_KEY=key)
    replicas = []
    for i in range(REPLICAS):
        p_proxy, p_admin = free_ports(2)
        state = os.path.join(tmp, "state-%d" % i)
        os.makedirs(state, mode=0o700)
        config = {
            "proxy": {"host": "127.0.0.1", "port": p_proxy}, "admin": {"host": "127.0.0.1", "port": p_admin},
            "adminTokenFile": os.path.join(tmp, "admin-token"),
            "authorization": {"tokenEndpoint": "http://127.0.0.1:%d/oauth/token" % auth, "clientID": "authgate",
                              "clientSecretFile": os.path.join(tmp, "client-secret")},
            "routes": [{"prefix": "/api", "upstream": "http://127.0.0.1:%d/api" % api, "stripPrefix": True}],
            "stateDirectory": state, "loops": 1, "refreshLead": 0, "refreshJitterSeconds": 0,
            "refreshLoopLimit": 1000,
            "store": {"kind": "postgres", "url": "postgres://%s@%s:%d%s" % (PG_URL.username, PG_URL.hostname,
                                                                           PG_URL.port, PG_URL.path),
                      "passwordFile": os.path.join(tmp, "db-password"), "tlsMode": "disable",
                      "table": "scale_out_%s" % secrets.token_hex(4)} if i == 0 else None,
        }
        replicas.append({"proxy": p_proxy, "admin": p_admin, "config": config, "log": os.path.join(tmp, "replica-%d.log" % i)})
    table = replicas[0]["config"]["store"]["table"]
    for r in replicas:
        r["config"]["store"] = replicas[0]["config"]["store"]
        path = r["log"] + ".json"
        with open(path, "w") as f:
            json.dump(r["config"], f)
        start([BIN, "serve", "--config", path], open(r["log"], "w"), env)
    for i, r in enumerate(replicas):
        if not check(wait_until(lambda: request(r["admin"], "GET", "/readyz", token=admin_token)[0] == 200,
                                what="replica %d" % i), "replica %d started on the shared table %s" % (i, table)):
            return

    def logged_in(r):
        status, body = request(r["admin"], "GET", "/auth/session", token=admin_token)
        return status == 200 and json.loads(body).get("state") == "logged_in"

    status, body = request(replicas[0]["admin"], "POST", "/auth/login", token=admin_token,
                           body={"grant_type": "password", "username": "alice", "password": "wonderland"})
    check(status == 200, "login on replica 0 (%d)" % status)
    check(all(wait_until(lambda r=r: logged_in(r), what="login to propagate") for r in replicas[1:]),
          "every other replica follows the login")

    # 1. The storm.
    errors = []
    lock = threading.Lock()

    def hit(port):
        try:
            status, body = request(port, "GET", "/api/item")
            if status != 200:
                with lock:
                    errors.append((status, body[:200]))
        except OSError as e:
            with lock:
                errors.append((0, repr(e).encode()))

    per_round = []
    for round_ in range(ROUNDS):
        time.sleep(LIFETIME + 0.3)  # every replica's token has expired
        before = stats()
        threads = [threading.Thread(target=hit, args=(r["proxy"],)) for r in replicas for _ in range(CONCURRENCY)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        after = stats()
        per_round.append(after["refreshes"] - before["refreshes"])
    s = stats()
    check(all(n == 1 for n in per_round), "one refresh per expiry across %d replicas: %s" % (REPLICAS, per_round))
    check(s["reuse_detections"] == 0, "no reuse detection (%d)" % s["reuse_detections"])
    check(not errors, "%d requests, client errors: %d %s" % (ROUNDS * REPLICAS * CONCURRENCY, len(errors), errors[:3]))

    # 2. Logout propagation.
    latencies = []
    answers = set()
    for n in range(LOGOUTS):
        if not logged_in(replicas[0]):
            request(replicas[0]["admin"], "POST", "/auth/login", token=admin_token,
                    body={"grant_type": "password", "username": "alice", "password": "wonderland"})
        if not all(wait_until(lambda r=r: request(r["proxy"], "GET", "/api/item")[0] == 200, what="login")
                   for r in replicas):
            check(False, "login followed before logout %d" % n)
            break
        started = time.monotonic()
        request(replicas[0]["admin"], "POST", "/auth/logout", token=admin_token)
        pending = set(range(1, REPLICAS))
        while pending and time.monotonic() - started < 10:
            for i in list(pending):
                status, body = request(replicas[i]["proxy"], "GET", "/api/item")
                if status == 401:
                    answers.add(json.loads(body).get("type", "?").rsplit("/", 1)[-1])
                    pending.discard(i)
        latencies.append(time.monotonic() - started)
        if pending:
            check(False, "logout %d reached every replica" % n)
            break
    if latencies:
        q = statistics.quantiles(latencies, n=100, method="inclusive") if len(latencies) > 1 else latencies * 99
        print("logout propagation over %d logouts: p50 %.1f ms, p99 %.1f ms, max %.1f ms; other replicas answered 401 %s"
              % (len(latencies), statistics.median(latencies) * 1000, q[98] * 1000, max(latencies) * 1000,
                 sorted(answers)), flush=True)
        check(len(latencies) == LOGOUTS, "%d logouts reached every replica" % LOGOUTS)
    check(stats()["reuse_detections"] == 0, "still no reuse detection")
    for i, r in enumerate(replicas):
        with open(r["log"]) as f:
            text = f.read()
        leaked = admin_token in text or urllib.parse.unquote(PG_URL.password) in text
        check(not leaked, "replica %d's log holds no secret" % i)


try:
    main()
finally:
    stop_all()
    print("%d passed, %d failed" % (results["passed"], results["failed"]), flush=True)
sys.exit(1 if results["failed"] or not results["passed"] else 0)
