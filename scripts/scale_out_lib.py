"""What the scale-out scripts share: `authgate dev` for its fake authorization server and fake
API, N `authgate serve` replicas on one PostgreSQL table (scripts/with-postgres), plain HTTP
helpers, and a pass/fail tally. Every process is started here and stopped by `stop_all`.
"""

import base64
import http.client
import json
import os
import secrets
import shutil
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
PG_PASSWORD = urllib.parse.unquote(PG_URL.password)

results = {"passed": 0, "failed": 0}
processes = []
scratch = []  # the clusters' directories: removed after a run that passed, kept (logs) otherwise


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
    """One request on its own connection: (status, body bytes, headers dict). `port` is a
    port on 127.0.0.1, or a (host, port) pair."""
    host, port = port if isinstance(port, tuple) else ("127.0.0.1", port)
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    headers = {}
    if token:
        headers["Authorization"] = "Bearer " + token
    if body is not None:
        headers["Content-Type"] = "application/json"
        body = json.dumps(body)
    try:
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        data = response.read()
        return response.status, data, {k.lower(): v for k, v in response.getheaders()}
    finally:
        conn.close()


def problem_type(body):
    return problem_field(body, "type", "?").rsplit("/", 1)[-1]


def problem_field(body, name, missing=None):
    """One member of a problem+json body, `missing` when absent or not JSON."""
    try:
        document = json.loads(body)
    except ValueError:
        return missing
    value = document.get(name, missing) if isinstance(document, dict) else missing
    return value if isinstance(value, str) else missing


def wait_until(condition, timeout=30, what=""):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if condition():
                return True
        except (OSError, http.client.HTTPException):
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
            p.wait()


def psql(sql):
    """Runs `sql` as the application's role; its output, unaligned, tuples only."""
    env = dict(os.environ, PGPASSWORD=PG_PASSWORD)
    out = subprocess.run(
        ["psql", "-h", PG_URL.hostname, "-p", str(PG_URL.port), "-U", PG_URL.username, "-d", PG_URL.path.lstrip("/"),
         "-X", "-q", "-A", "-t", "-c", sql], env=env, capture_output=True, text=True, timeout=10)
    return out.stdout.strip() if out.returncode == 0 else None


class DelayRelay:
    """A TCP relay on 127.0.0.1 in front of `port` on 127.0.0.1 that holds every chunk
    `delay_ms` before passing it on, each way and in order: a database `2 * delay_ms` away
    in round trips, whatever the client does."""

    def __init__(self, port, delay_ms):
        self.target, self.delay = port, delay_ms / 1000.0
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accepting, daemon=True).start()

    def _accepting(self):
        while True:
            client, _ = self.listener.accept()
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                client.close()
                continue
            for a, b in ((client, upstream), (upstream, client)):
                self._pump(a, b)

    def _pump(self, a, b):
        import queue
        chunks = queue.Queue()

        def reading():
            while True:
                try:
                    data = a.recv(65536)
                except OSError:
                    data = b""
                chunks.put((time.monotonic() + self.delay, data))
                if not data:
                    return

        def sending():
            while True:
                due, data = chunks.get()
                wait = due - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                try:
                    if not data:
                        b.shutdown(socket.SHUT_WR)
                        return
                    b.sendall(data)
                except OSError:
                    return

        threading.Thread(target=reading, daemon=True).start()
        threading.Thread(target=sending, daemon=True).start()


class Cluster:
    """`authgate dev` (fake authorization server and API) and REPLICAS `authgate serve`
    processes sharing one session through one new PostgreSQL table."""

    def __init__(self, replicas=3, lifetime=2, auth_latency_ms=50, reuse_grace_ms=0, lease_seconds=None, db_port=None):
        self.tmp = tempfile.mkdtemp(prefix="authgate-scale-out.")
        scratch.append(self.tmp)
        proxy, admin, self.auth, self.api = free_ports(4)
        dev_log = open(os.path.join(self.tmp, "dev.log"), "w")
        # `authgate dev` for its fake authorization server and fake API (its own gateway is unused).
        start([BIN, "dev", "--port", str(proxy), "--admin-port", str(admin), "--auth-port", str(self.auth),
               "--api-port", str(self.api), "--token-lifetime", str(lifetime), "--auth-latency-ms", str(auth_latency_ms),
               "--auth-reuse-grace-ms", str(reuse_grace_ms), "--state-dir", os.path.join(self.tmp, "dev-state"),
               "--loops", "1"], dev_log, {k: v for k, v in os.environ.items() if not k.startswith("AUTHGATE_")})
        self.admin_token = secrets.token_hex(16)
        with open(os.path.join(self.tmp, "admin-token"), "w") as f:
            f.write(self.admin_token + "\n")
        with open(os.path.join(self.tmp, "client-secret"), "w") as f:
            f.write("s3cret\n")
        with open(os.path.join(self.tmp, "db-password"), "w") as f:
            f.write(PG_PASSWORD + "\n")
        # serve refuses AUTHGATE_* variables that name no field: the harness's own stay out.
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("AUTHGATE_")}
        self.env["AUTHGATE_STORE_KEY"] = base64.b64encode(secrets.token_bytes(32)).decode()
        self.table = "scale_out_%s" % secrets.token_hex(4)
        store = {"kind": "postgres", "url": "postgres://%s@%s:%d%s" % (PG_URL.username, PG_URL.hostname,
                                                                      db_port or PG_URL.port, PG_URL.path),
                 "passwordFile": os.path.join(self.tmp, "db-password"), "tlsMode": "disable", "table": self.table}
        if lease_seconds is not None:
            store["leaseSeconds"] = lease_seconds
        self.replicas = []
        for i in range(replicas):
            p_proxy, p_admin = free_ports(2)
            state = os.path.join(self.tmp, "state-%d" % i)
            os.makedirs(state, mode=0o700)
            config = {
                "proxy": {"host": "127.0.0.1", "port": p_proxy}, "admin": {"host": "127.0.0.1", "port": p_admin},
                "adminTokenFile": os.path.join(self.tmp, "admin-token"),
                "authorization": {"tokenEndpoint": "http://127.0.0.1:%d/oauth/token" % self.auth, "clientID": "authgate",
                                  "clientSecretFile": os.path.join(self.tmp, "client-secret")},
                "routes": [{"prefix": "/api", "upstream": "http://127.0.0.1:%d/api" % self.api, "stripPrefix": True}],
                "stateDirectory": state, "loops": 1, "refreshLead": 0, "refreshJitterSeconds": 0,
                "refreshLoopLimit": 1000, "store": store,
            }
            log = os.path.join(self.tmp, "replica-%d.log" % i)
            with open(log + ".json", "w") as f:
                json.dump(config, f)
            self.replicas.append({"proxy": p_proxy, "admin": p_admin, "log": log, "process": None})

    def stats(self):
        return json.loads(request(self.auth, "GET", "/stats")[1])

    def start_replica(self, i):
        r = self.replicas[i]
        r["process"] = start([BIN, "serve", "--config", r["log"] + ".json"], open(r["log"], "a"), self.env)
        return r["process"]

    def ready(self, i, timeout=30):
        r = self.replicas[i]
        return wait_until(lambda: request(r["admin"], "GET", "/readyz", token=self.admin_token)[0] == 200,
                          timeout=timeout, what="replica %d ready" % i)

    def start_all(self):
        """Starts the fake servers' process's wait, then every replica; whether all came up."""
        if not wait_until(lambda: request(self.auth, "GET", "/stats")[0] == 200, what="the fake authorization server"):
            return False
        for i in range(len(self.replicas)):
            self.start_replica(i)
        return all(check(self.ready(i), "replica %d started on the shared table %s" % (i, self.table))
                   for i in range(len(self.replicas)))

    def session(self, i):
        status, body, _ = request(self.replicas[i]["admin"], "GET", "/auth/session", token=self.admin_token)
        return json.loads(body) if status == 200 else {}

    def logged_in(self, i):
        return self.session(i).get("state") == "logged_in"

    def login(self, i=0):
        return request(self.replicas[i]["admin"], "POST", "/auth/login", token=self.admin_token,
                       body={"grant_type": "password", "username": "alice", "password": "wonderland"})[0]

    def logout(self, i=0):
        return request(self.replicas[i]["admin"], "POST", "/auth/logout", token=self.admin_token)[0]

    def proxy(self, i, path="/api/item", timeout=30):
        return request(self.replicas[i]["proxy"], "GET", path, timeout=timeout)

    def leaks(self):
        """The replicas whose log holds the admin token or the database password."""
        leaked = []
        for i, r in enumerate(self.replicas):
            with open(r["log"]) as f:
                text = f.read()
            if self.admin_token in text or PG_PASSWORD in text:
                leaked.append(i)
        return leaked


class Load:
    """Requests in a loop on every replica until stopped; tallies what came back."""

    def __init__(self, cluster, per_replica=3):
        self.c = cluster
        self.lock = threading.Lock()
        self.statuses = {}  # (replica, status or error) -> count
        self.bodies = {}
        self.retry_after = set()
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self.run, args=(i,), daemon=True)
                        for i in range(len(cluster.replicas)) for _ in range(per_replica)]

    def run(self, i):
        while not self.stopping.is_set():
            try:
                status, body, headers = self.c.proxy(i, timeout=20)
                key = status
                if status != 200:
                    with self.lock:
                        self.bodies.setdefault(status, body[:300])
                        if status == 503:
                            self.retry_after.add(headers.get("retry-after"))
            except OSError as e:
                key = type(e).__name__
                time.sleep(0.05)  # the replica is down: do not spin
            with self.lock:
                self.statuses[(i, key)] = self.statuses.get((i, key), 0) + 1

    def start(self):
        for t in self.threads:
            t.start()

    def stop(self):
        self.stopping.set()
        for t in self.threads:
            t.join(timeout=30)


    def snapshot(self):
        with self.lock:
            return dict(self.statuses)

    @staticmethod
    def since(before, after):
        """The tally between two snapshots."""
        return {k: v - before.get(k, 0) for k, v in after.items() if v - before.get(k, 0)}


def percentile(values, q):
    """The q-th percentile (0-100) of `values`, inclusive method; nil-safe for one value."""
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def logout_propagation(c, count):
    """`count` times: log in on replica 0 (the others follow), log out there, and time until
    every other replica's proxy answers 401. The latencies (s), their p50/p99 (ms), what the
    other replicas answered and what replica 0 answered after its own logout."""
    latencies, answers, local_answers = [], set(), set()
    n_replicas = len(c.replicas)

    def described(status, body):
        try:
            reason = json.loads(body).get("reason", "-")
        except ValueError:
            reason = "?"
        return "%s (%s)" % (problem_type(body), reason)

    for n in range(count):
        if not c.logged_in(0):
            c.login(0)
        if not all(wait_until(lambda i=i: c.proxy(i)[0] == 200, what="login") for i in range(n_replicas)):
            check(False, "login followed before logout %d" % n)
            break
        started = time.monotonic()
        c.logout(0)
        pending = set(range(1, n_replicas))
        while pending and time.monotonic() - started < 10:
            for i in list(pending):
                status, body, _ = c.proxy(i)
                if status == 401:
                    answers.add(described(status, body))
                    pending.discard(i)
        latencies.append(time.monotonic() - started)
        if pending:
            check(False, "logout %d reached every replica" % n)
            break
        status, body, _ = c.proxy(0)
        local_answers.add("%d %s" % (status, described(status, body)))
    result = {"latencies": latencies, "answers": answers, "local_answers": local_answers}
    if latencies:
        result["p50_ms"] = statistics.median(latencies) * 1000
        result["p99_ms"] = percentile(latencies, 99) * 1000
    return result


def finish():
    stop_all()
    print("%d passed, %d failed" % (results["passed"], results["failed"]), flush=True)
    failed = results["failed"] or not results["passed"]
    for directory in scratch:
        if failed:
            print("logs kept in %s" % directory, flush=True)
        else:
            shutil.rmtree(directory, ignore_errors=True)
    return 1 if failed else 0


def run(main):
    """Runs a script's checks, then stops every process it started and exits 0 only when
    every check passed."""
    try:
        main()
    finally:
        code = finish()
    sys.exit(code)


def pid_of(owner):
    """The process id in a replica name (host/pid/random), as a lease's owner column holds it."""
    try:
        return int(owner.split("/")[-2])
    except (AttributeError, IndexError, ValueError):
        return None
