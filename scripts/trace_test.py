#!/usr/bin/env python3
"""AuthGate's spans end to end: a real `authgate serve` exporting over OTLP/HTTP to a real
receiver (otlp_receiver.py, decoding with `opentelemetry-proto`), in front of an upstream
that rejects the session's first access token, with a token endpoint that issues the next.

One request carrying a W3C `traceparent` is rejected, refreshed and replayed. Checked:
one trace, the client's, across the server, upstream, replay, refresh and token-endpoint
spans; each span's parent; the `traceparent` each upstream try and the token endpoint
received (the trace id, and the id of the span that sent it); the refresh span says this
request started the refresh; no token, secret or query value in any span.

    AUTHGATE_BIN=.build/debug/authgate python3 scripts/trace_test.py
Prints one line per check and exits non-zero on any failure; every process it starts is
stopped after, whatever happens.
"""

import base64
import json
import os
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
TRACE_ID = secrets.token_hex(16)
CLIENT_SPAN = secrets.token_hex(8)
FIRST_TOKEN, NEXT_TOKEN = "at1-" + secrets.token_hex(12), "at2-" + secrets.token_hex(12)
REFRESH_TOKENS = ["rt1-" + secrets.token_hex(12), "rt2-" + secrets.token_hex(12)]
CLIENT_SECRET, ADMIN_TOKEN, PASSWORD = secrets.token_hex(16), secrets.token_hex(24), "pw-" + secrets.token_hex(8)
QUERY_SECRET = "q-" + secrets.token_hex(8)
SECRETS = [FIRST_TOKEN, NEXT_TOKEN, *REFRESH_TOKENS, CLIENT_SECRET, ADMIN_TOKEN, PASSWORD, QUERY_SECRET]

seen = {"token": [], "upstream": []}  # (grant or token, traceparent, tracestate)
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


class Base(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def answer(self, status, body, headers=()):
        data = json.dumps(body).encode()
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class TokenEndpoint(Base):
    def do_POST(self):
        form = urllib.parse.parse_qs(self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode())
        grant = form.get("grant_type", [""])[0]
        seen["token"].append((grant, self.headers.get("traceparent"), self.headers.get("tracestate")))
        basic = "Basic " + base64.b64encode(f"authgate:{CLIENT_SECRET}".encode()).decode()
        if self.headers.get("Authorization") != basic:
            return self.answer(401, {"error": "invalid_client"})
        if grant == "password" and form.get("password") == [PASSWORD]:
            access, refresh = FIRST_TOKEN, REFRESH_TOKENS[0]
        elif grant == "refresh_token" and form.get("refresh_token") == [REFRESH_TOKENS[0]]:
            access, refresh = NEXT_TOKEN, REFRESH_TOKENS[1]
        else:
            return self.answer(400, {"error": "invalid_grant"})
        self.answer(200, {"access_token": access, "token_type": "Bearer", "expires_in": 3600, "refresh_token": refresh},
                    [("Cache-Control", "no-store")])


class Upstream(Base):
    """Rejects the first access token as expired (as an API does once it has expired)."""

    def do_GET(self):
        token = self.headers.get("Authorization", "").removeprefix("Bearer ")
        seen["upstream"].append((token, self.headers.get("traceparent"), self.headers.get("tracestate")))
        if token == NEXT_TOKEN:
            return self.answer(200, {"ok": True})
        self.answer(401, {"error": "invalid_token"},
                    [("WWW-Authenticate", 'Bearer error="invalid_token", error_description="The access token expired"')])


def serve(handler):
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
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


def request(method, url, body=None, headers=None):
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def main():
    if not BIN or not os.access(BIN, os.X_OK):
        raise SystemExit("trace_test: set AUTHGATE_BIN to an authgate binary")
    tmp = tempfile.mkdtemp(prefix="ag-trace-")
    spans_file = os.path.join(tmp, "spans.jsonl")
    procs = []
    try:
        receiver = subprocess.Popen([sys.executable, os.path.join(HERE, "otlp_receiver.py"), "--out", spans_file],
                                    stdout=subprocess.PIPE, text=True)
        procs.append(receiver)
        endpoint = json.loads(receiver.stdout.readline())["endpoint"]
        token_server, upstream = serve(TokenEndpoint), serve(Upstream)
        for name, value in (("admin-token", ADMIN_TOKEN), ("client-secret", CLIENT_SECRET)):
            path = os.path.join(tmp, name)
            with open(path, "w") as f:
                f.write(value)
            os.chmod(path, 0o600)
        config = {
            "proxy": {"host": "127.0.0.1", "port": 0}, "admin": {"host": "127.0.0.1", "port": 0},
            "adminTokenFile": os.path.join(tmp, "admin-token"),
            "authorization": {"tokenEndpoint": f"http://127.0.0.1:{token_server.server_address[1]}/token",
                              "clientID": "authgate", "clientSecretFile": os.path.join(tmp, "client-secret"),
                              "clientAuthentication": "basic"},
            "routes": [{"prefix": "/", "upstream": f"http://127.0.0.1:{upstream.server_address[1]}",
                        "requiresAuthentication": True}],
            "stateDirectory": os.path.join(tmp, "state"), "createKey": True, "keyFile": os.path.join(tmp, "state", "key"),
            "loops": 1,
        }
        os.mkdir(os.path.join(tmp, "state"), 0o700)
        with open(os.path.join(tmp, "authgate.json"), "w") as f:
            json.dump(config, f)
        env = dict(os.environ, OTEL_TRACES_EXPORTER="otlp", OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
                   OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf", OTEL_SERVICE_NAME="authgate-trace-test",
                   OTEL_BSP_SCHEDULE_DELAY="600000")  # nothing leaves before the flush at shutdown
        log_path = os.path.join(tmp, "authgate.log")
        log = open(log_path, "w")
        ag = subprocess.Popen([BIN, "serve", "--config", os.path.join(tmp, "authgate.json")], stdout=log, stderr=log, env=env)
        procs.append(ag)

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
        login = json.dumps({"grant_type": "password", "username": "alice", "password": PASSWORD}).encode()
        status, _ = request("POST", f"http://127.0.0.1:{admin_port}/auth/login", login,
                            {"Authorization": f"Bearer {ADMIN_TOKEN}", "Content-Type": "application/json"})
        check(status == 200, f"login through the admin API: {status}")

        traceparent = f"00-{TRACE_ID}-{CLIENT_SPAN}-01"
        status, body = request("GET", f"http://127.0.0.1:{proxy_port}/api/orders?access_token={QUERY_SECRET}",
                               headers={"traceparent": traceparent, "tracestate": "vendor=blue"})
        check(status == 200, f"the rejected request was refreshed and replayed: {status} {body[:200]!r}")

        # Spans are held for ten minutes (OTEL_BSP_SCHEDULE_DELAY): only the flush at a clean
        # stop sends them.
        check(not os.path.exists(spans_file), "no span exported before the stop")
        ag.send_signal(signal.SIGTERM)
        check(ag.wait(timeout=30) == 0, "authgate serve stopped cleanly")
        log.close()

        def spans():
            if not os.path.exists(spans_file):
                return None
            got = [json.loads(line) for line in open(spans_file)]
            return got if len(got) >= 6 else None

        got = wait_for(spans, 15, "six spans at the receiver")
        print(f"     {len(got)} spans received; written to {spans_file}", flush=True)
        for s in got:
            print(f"     {s['name']:<16} kind={s['kind']} span={s['span_id']} parent={s['parent_span_id'] or '-'}", flush=True)
        ours = [s for s in got if s["trace_id"] == TRACE_ID]
        check(len(ours) == len(got) == 6, f"every span is in the client's trace ({len(ours)} of {len(got)})")
        check(all(s["service"] == "authgate-trace-test" for s in got), "OTEL_SERVICE_NAME names the service")
        by_name = {}
        for s in ours:
            by_name.setdefault(s["name"], []).append(s)
        server = (by_name.get("GET /") or [None])[0]
        tries = sorted(by_name.get("upstream", []), key=lambda s: s["attributes"].get("authgate.attempt", -1))
        replay = (by_name.get("replay") or [None])[0]
        refresh = (by_name.get("refresh") or [None])[0]
        token = (by_name.get("token endpoint") or [None])[0]
        check(None not in (server, replay, refresh, token) and len(tries) == 2,
              "server, two upstream tries, replay, refresh and token-endpoint spans: " + ", ".join(sorted(by_name)))
        if failures:
            return 1
        SERVER, CLIENT, INTERNAL = 2, 3, 1
        check(server["kind"] == SERVER and server["parent_span_id"] == CLIENT_SPAN,
              "the server span's parent is the client's span")
        check(server["attributes"].get("http.response.status_code") == 200
              and server["attributes"].get("authgate.replayed") is True
              and server["attributes"].get("http.route") == "/", "the server span: route, status 200, replayed")
        check(tries[0]["kind"] == CLIENT and tries[0]["parent_span_id"] == server["span_id"]
              and tries[0]["attributes"].get("http.response.status_code") == 401
              and tries[0]["attributes"].get("authgate.token_rejected") is True, "the first try: child of the server span, 401")
        check(replay["kind"] == INTERNAL and replay["parent_span_id"] == server["span_id"], "the replay: child of the server span")
        check(refresh["parent_span_id"] == replay["span_id"]
              and refresh["attributes"].get("authgate.refresh.role") == "started",
              "the refresh: child of the replay, started by this request")
        check(token["kind"] == CLIENT and token["parent_span_id"] == refresh["span_id"]
              and token["attributes"].get("http.response.status_code") == 200, "the token-endpoint call: child of the refresh")
        check(tries[1]["parent_span_id"] == replay["span_id"] and tries[1]["attributes"].get("authgate.attempt") == 1
              and tries[1]["attributes"].get("http.response.status_code") == 200, "the replay's try: child of the replay, 200")

        def parent_of(tp):
            parts = (tp or "").split("-")
            return (parts[1], parts[2]) if len(parts) == 4 else (None, None)

        up = [parent_of(tp) for _, tp, _ in seen["upstream"]]
        check(up == [(TRACE_ID, tries[0]["span_id"]), (TRACE_ID, tries[1]["span_id"])],
              f"each upstream try carried the trace and its own span as parent: {up}")
        check([ts for _, _, ts in seen["upstream"]] == ["vendor=blue", "vendor=blue"], "the client's tracestate went upstream")
        refreshes = [parent_of(tp) for grant, tp, _ in seen["token"] if grant == "refresh_token"]
        check(refreshes == [(TRACE_ID, token["span_id"])],
              f"the token endpoint got the trace with the token-endpoint span as parent: {refreshes}")
        dump = json.dumps(got)
        leaked = [i for i, s in enumerate(SECRETS) if s in dump]
        check(not leaked, f"no token, secret or query value in any span (leaked: {leaked})")
        return 1 if failures else 0
    finally:
        for p in procs:
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
        # The directory holds the admin token and the client secret: kept only when a check
        # failed, for its log and spans.
        if failures:
            print(f"trace test: files kept in {tmp}", flush=True)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    code = main()
    print("trace test: " + ("passed" if code == 0 else f"{len(failures)} failed"), flush=True)
    sys.exit(code)
