#!/usr/bin/env python3
"""Legacy clients against a real `authgate serve`: curl, wget, ApacheBench (`ab`, with and
without `-k`), Python (urllib, http.client with keep-alive), Node (`http` with a keep-alive
agent) and Java (`java.net.http.HttpClient` forced to HTTP/1.1, `HttpURLConnection`), each
on a public route (`/public/...`) and an authenticated one (`/api/...`).

AuthGate runs in front of an upstream of this script's own, which records every request
(path, `Authorization`), and a token endpoint that issues one access token at login.
Checked for every client: 200 with the upstream's body on both routes (the client
programs check their own answers and print one line each); `ab` finishes with no failed and
no non-2xx request, and with `-k` every request kept alive; at the upstream, every request of
the authenticated route carried the session's bearer token and none of the public route did.

    AUTHGATE_BIN=.build/debug/authgate python3 scripts/legacy/run.py
Prints one line per check, ends with "N passed, N failed", exits non-zero on any failure;
every process it starts is stopped after, whatever happens.
"""

import collections
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.environ.get("AUTHGATE_BIN", "")
TOKEN = "at-" + secrets.token_hex(16)
CLIENT_SECRET, ADMIN_TOKEN, PASSWORD = secrets.token_hex(16), secrets.token_hex(24), "pw-" + secrets.token_hex(8)
BODY = "legacy-upstream-ok"
AB_REQUESTS, AB_CONCURRENCY = 2000, 20

lock = threading.Lock()
seen = collections.defaultdict(list)  # path -> [Authorization or None]
results = {"passed": 0, "failed": 0}


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    results["passed" if ok else "failed"] += 1
    return ok


class Quiet(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Each answer leaves in one write (flushed after each request), without Nagle's delay:
    # head and body written apart would wait on the peer's delayed ACK, 40 ms an answer.
    wbufsize = -1
    disable_nagle_algorithm = True

    def log_message(self, *a):
        pass

    def answer(self, status, body, content_type="application/json"):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class TokenEndpoint(Quiet):
    def do_POST(self):
        form = urllib.parse.parse_qs(self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode())
        if form.get("grant_type") == ["password"] and form.get("password") == [PASSWORD]:
            return self.answer(200, json.dumps({"access_token": TOKEN, "token_type": "Bearer", "expires_in": 3600,
                                                "refresh_token": "rt-" + secrets.token_hex(8)}))
        self.answer(400, json.dumps({"error": "invalid_grant"}))


class Upstream(Quiet):
    """Answers every GET 200 with BODY, recording its path and Authorization."""

    def do_GET(self):
        with lock:
            seen[self.path].append(self.headers.get("Authorization"))
        self.answer(200, BODY, "text/plain")


def serve(handler):
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    server.request_queue_size = 256
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def wait_for(predicate, seconds, what):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise SystemExit(f"FAIL timed out waiting for {what}")


def run(argv, timeout=120):
    """Runs a client; its exit status and output (standard error after standard output)."""
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout + p.stderr


def upstream_saw(path, count, authenticated, who):
    """The upstream got `count` requests for `path` (at least one when `count` is None),
    each with the session's token exactly when the route is authenticated."""
    with lock:
        got = list(seen.get(path, []))
    wanted = f"Bearer {TOKEN}" if authenticated else None
    enough = len(got) == count if count is not None else len(got) >= 1
    check(enough and all(a == wanted for a in got),
          f"{who}: the upstream got {len(got)} request(s) for {path}, "
          + ("each with the session's token" if authenticated else "none with a token")
          + ("" if all(a == wanted for a in got) else f" (Authorization seen: {sorted(set(map(str, got)))[:3]})"))


def client_program(who, argv, base, paths, timeout=120):
    """A client program that checks its own answers: one `ok`/`FAIL` line per check."""
    code, out = run(argv + [base, BODY], timeout)
    lines = [line for line in out.splitlines() if line.strip()]
    for line in lines:
        print(f"     {who}: {line}", flush=True)
    check(code == 0 and lines and not any(line.startswith("FAIL") for line in lines), f"{who}: exit {code}")
    for path in paths:
        upstream_saw(path, None, path.startswith("/api/"), who)


def ab(base, keep_alive):
    for prefix in ("/public", "/api"):
        path = f"{prefix}/ab{'-k' if keep_alive else ''}"
        who = f"ab {'-k ' if keep_alive else ''}-n {AB_REQUESTS} -c {AB_CONCURRENCY} {prefix}"
        argv = ["ab", "-q", "-n", str(AB_REQUESTS), "-c", str(AB_CONCURRENCY)] + (["-k"] if keep_alive else []) + [base + path]
        code, out = run(argv, timeout=180)

        def number(label):
            m = re.search(rf"^{label}:\s+(\d+)", out, re.M)
            return int(m.group(1)) if m else None

        complete, failed, non2xx, kept = (number("Complete requests"), number("Failed requests"),
                                          number("Non-2xx responses") or 0, number("Keep-Alive requests"))
        check(code == 0 and complete == AB_REQUESTS and failed == 0 and non2xx == 0,
              f"{who}: exit {code}, {complete} complete, {failed} failed, {non2xx} non-2xx")
        if keep_alive:
            check(kept == AB_REQUESTS, f"{who}: {kept} of {AB_REQUESTS} requests kept the connection alive")
        rate = re.search(r"^Requests per second:\s+([\d.]+)", out, re.M)
        print(f"     {who}: {rate.group(1) if rate else '?'} requests/s", flush=True)
        upstream_saw(path, AB_REQUESTS, prefix == "/api", who)


def main():
    if not BIN or not os.access(BIN, os.X_OK):
        raise SystemExit("legacy clients: set AUTHGATE_BIN to an authgate binary")
    missing = [tool for tool in ("curl", "wget", "ab", "node", "java") if shutil.which(tool) is None]
    if missing:
        raise SystemExit(f"legacy clients: missing {', '.join(missing)} (scripts/install-deps installs them)")
    tmp = tempfile.mkdtemp(prefix="ag-legacy-")
    ag = None
    try:
        token_server, upstream = serve(TokenEndpoint), serve(Upstream)
        for name, value in (("admin-token", ADMIN_TOKEN), ("client-secret", CLIENT_SECRET)):
            path = os.path.join(tmp, name)
            with open(path, "w") as f:
                f.write(value)
            os.chmod(path, 0o600)
        up = f"http://127.0.0.1:{upstream.server_address[1]}"
        config = {
            "proxy": {"host": "127.0.0.1", "port": 0}, "admin": {"host": "127.0.0.1", "port": 0},
            "adminTokenFile": os.path.join(tmp, "admin-token"),
            "authorization": {"tokenEndpoint": f"http://127.0.0.1:{token_server.server_address[1]}/token",
                              "clientID": "authgate", "clientSecretFile": os.path.join(tmp, "client-secret"),
                              "clientAuthentication": "basic"},
            "routes": [{"prefix": "/public", "upstream": up, "requiresAuthentication": False},
                       {"prefix": "/api", "upstream": up, "requiresAuthentication": True}],
            "stateDirectory": os.path.join(tmp, "state"), "createKey": True, "keyFile": os.path.join(tmp, "state", "key"),
            "loops": 2, "accessLog": {"enabled": False},
        }
        os.mkdir(os.path.join(tmp, "state"), 0o700)
        with open(os.path.join(tmp, "authgate.json"), "w") as f:
            json.dump(config, f)
        log_path = os.path.join(tmp, "authgate.log")
        log = open(log_path, "w")
        ag = subprocess.Popen([BIN, "serve", "--config", os.path.join(tmp, "authgate.json")], stdout=log, stderr=log)

        def ports():
            text = open(log_path).read()
            if ag.poll() is not None:
                raise SystemExit(f"FAIL authgate serve exited {ag.returncode}:\n{text}")
            for line in text.splitlines():
                if '"listening"' in line:
                    entry = json.loads(line)
                    meta = entry.get("metadata", entry)
                    return int(meta["proxy.port"]), int(meta["admin.port"])
            return None

        proxy_port, admin_port = wait_for(ports, 30, "authgate serve to listen")
        login = urllib.request.Request(
            f"http://127.0.0.1:{admin_port}/auth/login", method="POST",
            data=json.dumps({"grant_type": "password", "username": "alice", "password": PASSWORD}).encode(),
            headers={"Authorization": f"Bearer {ADMIN_TOKEN}", "Content-Type": "application/json"})
        with urllib.request.urlopen(login, timeout=10) as r:
            if not check(r.status == 200, f"login through the admin API: {r.status}"):
                return 1
        base = f"http://127.0.0.1:{proxy_port}"

        for prefix in ("/public", "/api"):
            for flag, who in ((["--http1.1"], "curl"), (["--http1.0"], "curl --http1.0")):
                path = f"{prefix}/{who.replace(' ', '').replace('--', '-')}"
                code, out = run(["curl", "-sS", "-o", "-", "-w", "\n%{http_code}"] + flag + [base + path], 30)
                check(code == 0 and out == f"{BODY}\n200", f"{who} {path}: exit {code}, {out.splitlines()[-1:]} ")
                upstream_saw(path, 1, prefix == "/api", who)
            # Two URLs in one invocation: curl keeps the connection for the second.
            code, out = run(["curl", "-sS", "-w", "\n%{http_code} %{num_connects}\n", base + f"{prefix}/curl-kept",
                             base + f"{prefix}/curl-kept"], 30)
            check(code == 0 and out == f"{BODY}\n200 1\n{BODY}\n200 0\n",
                  f"curl, two requests on one connection {prefix}: exit {code}, {out.split()[1::3]} connects")
            upstream_saw(f"{prefix}/curl-kept", 2, prefix == "/api", "curl kept alive")
            path = f"{prefix}/wget"
            code, out = run(["wget", "-q", "-O", "-", base + path], 30)
            check(code == 0 and out == BODY, f"wget {path}: exit {code}")
            upstream_saw(path, 1, prefix == "/api", "wget")

        client_program("python", [sys.executable, os.path.join(HERE, "python_clients.py")], base,
                       [f"{p}/{c}" for p in ("/public", "/api") for c in ("urllib", "http-client")])
        client_program("node", ["node", os.path.join(HERE, "node_client.js")], base, ["/public/node", "/api/node"])
        client_program("java", ["java", os.path.join(HERE, "LegacyJavaClients.java")], base,
                       [f"{p}/{c}" for p in ("/public", "/api") for c in ("java-httpclient", "java-urlconnection")])
        ab(base, keep_alive=False)
        ab(base, keep_alive=True)

        ag.send_signal(signal.SIGTERM)
        check(ag.wait(timeout=30) == 0, "authgate serve stopped cleanly")
        return 1 if results["failed"] else 0
    finally:
        if ag is not None and ag.poll() is None:
            ag.kill()
            ag.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    code = main()
    print(f"legacy-clients: {results['passed']} passed, {results['failed']} failed", flush=True)
    sys.exit(code)
