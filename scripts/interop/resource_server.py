#!/usr/bin/env python3
"""A resource server for AuthGate's interop suite (stdlib only).

Every request but `GET /stats` must carry `Authorization: Bearer <token>`; the token is
checked by RFC 7662 introspection at the authorization server on EVERY request (no
cache: a revocation is seen at once).

    python3 resource_server.py --as-info as.json [--port 0] [--delay-min-ms 0]
        [--delay-max-ms 0] [--workers 8] [--fast] [--echo-token]
    python3 resource_server.py --introspection-url URL --client-id ID --client-secret S ...

- active token  → 200 JSON {"sub", "username", "path", "method", "body_sha256",
  "token_sha256", "client_id", "scope"} (sub/username/client_id/scope as introspected) (`access_token` too with --echo-token: TEST ONLY, lets the
  driver revoke exactly the token AuthGate attached);
- no token      → 401, `WWW-Authenticate: Bearer realm="interop"` (RFC 6750 3.1: no
  error code when the request has no credentials);
- inactive one  → 401, `WWW-Authenticate: Bearer realm="interop", error="invalid_token"`;
- introspection failed (AS down, bad answer) → 503.

Connections: one thread per connection (ThreadingHTTPServer, HTTP/1.1 keep-alive), so a
hundred keep-alive connections are held at once; the WORK (introspection + the random
delay of --delay-min-ms..--delay-max-ms) runs under a semaphore of --workers slots, so
requests queue when more arrive than workers — a realistically slow API. --fast: no
delay and 1024 workers.

--tls-pki DIR (a PKI of mtls.make_pki): serve TLS, ask for a client certificate, and
refuse a certificate-bound token (introspection's `cnf.x5t#S256`, RFC 8705 §3) unless
the connection shows that certificate: 401 invalid_token, counted as `bound_refused`.

A token bound to a DPoP key (introspection's `cnf.jkt`, RFC 9449) is accepted only as
`Authorization: DPoP …` with a proof of that key for this request (dpop.py: method,
`http://{Host}{path}`, `ath`, a `jti` never seen, iat within 60 s); else 401 with a `DPoP`
challenge. --dpop-nonce-seconds N: proofs must carry the current nonce, which changes every
N seconds (the previous one is still accepted); a proof without it is answered 401
`DPoP error="use_dpop_nonce"` with the nonce in `DPoP-Nonce`.

GET /stats (no auth): requests, by status, max in flight, max queued, distinct tokens.
Prints one JSON line {"url", "port", "stats"} on stdout once it listens.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import http.client
import os
import json
import random
import signal
import socketserver
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import dpop
import mtls


class Introspector:
    """RFC 7662 client: one keep-alive connection per thread."""

    def __init__(self, url, client_id, client_secret, auth="basic"):
        self.url = urllib.parse.urlsplit(url)
        self.client_id, self.client_secret, self.auth = client_id, client_secret, auth
        self.local = threading.local()
        basic = base64.b64encode(f"{client_id}:{client_secret}".encode()).decode()
        self.basic = "Basic " + basic

    def _conn(self, fresh=False):
        c = getattr(self.local, "conn", None)
        if c is None or fresh:
            if c is not None:
                c.close()
            c = http.client.HTTPConnection(self.url.hostname, self.url.port or 80, timeout=10)
            self.local.conn = c
        return c

    def introspect(self, token):
        form = {"token": token, "token_type_hint": "access_token"}
        headers = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"}
        if self.auth == "post":
            form.update(client_id=self.client_id, client_secret=self.client_secret)
        else:
            headers["Authorization"] = self.basic
        body = urllib.parse.urlencode(form)
        for attempt in range(2):  # a kept-alive connection the AS closed meanwhile: retry once
            conn = self._conn(fresh=attempt > 0)
            try:
                conn.request("POST", self.url.path or "/", body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                if resp.status != 200:
                    raise RuntimeError(f"introspection answered {resp.status}")
                return json.loads(data)
            except (http.client.HTTPException, OSError):
                if attempt:
                    raise
        raise RuntimeError("unreachable")


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.requests = 0
        self.by_status = {}
        self.in_flight = 0
        self.max_in_flight = 0
        self.queued = 0
        self.max_queued = 0
        self.connections = 0
        self.open_connections = 0
        self.max_open_connections = 0
        self.tokens = set()
        self.introspection_errors = 0
        self.bound_accepted = 0
        self.bound_refused = 0
        self.dpop_accepted = 0
        self.dpop_refused = {}  # reason -> count
        self.dpop_seen = set()

    def snapshot(self):
        with self.lock:
            return {"requests": self.requests, "ok": self.by_status.get(200, 0),
                    "unauthorized": self.by_status.get(401, 0),
                    "by_status": {str(k): v for k, v in self.by_status.items()},
                    "in_flight": self.in_flight, "max_in_flight": self.max_in_flight,
                    "queued": self.queued, "max_queued": self.max_queued,
                    "connections": self.connections, "open_connections": self.open_connections,
                    "max_open_connections": self.max_open_connections,
                    "distinct_tokens": len(self.tokens), "introspection_errors": self.introspection_errors,
                    "bound_accepted": self.bound_accepted, "bound_refused": self.bound_refused,
                    "dpop_accepted": self.dpop_accepted, "dpop_refused": dict(self.dpop_refused)}


def dpop_nonces(seconds):
    """The nonces a proof may carry now: the current one first, then the previous one."""
    if not seconds:
        return []
    step = int(time.time() // seconds)
    return [f"rs-{step}", f"rs-{step - 1}"]


def make_handler(introspector, stats, slots, delay_min, delay_max, echo_token, nonce_seconds=0):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "interop-rs/1"

        def log_message(self, *a):
            pass

        def setup(self):
            super().setup()
            with stats.lock:
                stats.connections += 1
                stats.open_connections += 1
                stats.max_open_connections = max(stats.max_open_connections, stats.open_connections)

        def finish(self):
            try:
                super().finish()
            finally:
                with stats.lock:
                    stats.open_connections -= 1

        def _body(self):
            te = (self.headers.get("Transfer-Encoding") or "").lower()
            if "chunked" in te:
                chunks = []
                while True:
                    line = self.rfile.readline(65537)
                    size = int(line.split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                            pass
                        break
                    chunks.append(self.rfile.read(size))
                    self.rfile.readline(3)
                return b"".join(chunks)
            n = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(n) if n else b""

        def _send(self, status, obj, extra=()):
            data = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            for k, v in extra:
                self.send_header(k, v)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)
            with stats.lock:
                stats.requests += 1
                stats.by_status[status] = stats.by_status.get(status, 0) + 1

        def _handle(self):
            body = self._body()
            path = self.path
            if path == "/stats" and self.command == "GET":
                data = json.dumps(stats.snapshot()).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            with stats.lock:
                stats.queued += 1
                stats.max_queued = max(stats.max_queued, stats.queued)
            slots.acquire()
            try:
                with stats.lock:
                    stats.queued -= 1
                    stats.in_flight += 1
                    stats.max_in_flight = max(stats.max_in_flight, stats.in_flight)
                self._work(path, body)
            finally:
                with stats.lock:
                    stats.in_flight -= 1
                slots.release()

        def _work(self, path, body):
            if delay_max > 0:
                time.sleep(random.uniform(delay_min, delay_max) / 1000.0)
            auth = self.headers.get("Authorization") or ""
            scheme, _, token = auth.partition(" ")
            token = token.strip()
            if scheme.lower() not in ("bearer", "dpop") or not token:
                self._send(401, {"error": "no bearer token"},
                           [("WWW-Authenticate", 'Bearer realm="interop"')])
                return
            try:
                result = introspector.introspect(token)
            except Exception as e:  # the AS is down or answered nonsense
                with stats.lock:
                    stats.introspection_errors += 1
                self._send(503, {"error": "introspection failed", "detail": str(e)[:200]})
                return
            token_sha = hashlib.sha256(token.encode()).hexdigest()
            if not result.get("active"):
                self._send(401, {"error": "invalid_token", "token_sha256": token_sha},
                           [("WWW-Authenticate",
                             'Bearer realm="interop", error="invalid_token", '
                             'error_description="the access token is not active"')])
                return
            jkt = (result.get("cnf") or {}).get("jkt")
            if jkt or scheme.lower() == "dpop":
                refusal = self._check_dpop(jkt, scheme, token)
                if refusal is not None:
                    error, reason = refusal
                    with stats.lock:
                        stats.dpop_refused[reason] = stats.dpop_refused.get(reason, 0) + 1
                    extra = [("WWW-Authenticate", f'DPoP error="{error}", algs="ES256 PS256 RS256"')]
                    if error == "use_dpop_nonce":
                        extra.append(("DPoP-Nonce", dpop_nonces(nonce_seconds)[0]))
                    self._send(401, {"error": error, "detail": reason, "token_sha256": token_sha}, extra)
                    return
                with stats.lock:
                    stats.dpop_accepted += 1
            bound = (result.get("cnf") or {}).get("x5t#S256")
            if bound:
                try:
                    der = self.connection.getpeercert(binary_form=True)
                except (AttributeError, ValueError):
                    der = None
                if der is None or mtls.thumbprint_der(der) != bound:
                    with stats.lock:
                        stats.bound_refused += 1
                    self._send(401, {"error": "invalid_token", "token_sha256": token_sha},
                               [("WWW-Authenticate",
                                 'Bearer realm="interop", error="invalid_token", '
                                 'error_description="the token is bound to a certificate this connection did not show"')])
                    return
                with stats.lock:
                    stats.bound_accepted += 1
            with stats.lock:
                stats.tokens.add(token_sha)
            out = {"sub": result.get("sub"), "username": result.get("username"), "client_id": result.get("client_id"),
                   "scope": result.get("scope"), "path": path, "method": self.command,
                   "body_sha256": hashlib.sha256(body).hexdigest(), "body_length": len(body),
                   "token_sha256": token_sha}
            if echo_token:
                out["access_token"] = token
            self._send(200, out)

        def _check_dpop(self, jkt, scheme, token):
            """None when the request proves the key `jkt` its token is bound to, else
            (error, reason)."""
            if not jkt:
                return "invalid_token", "a DPoP scheme with a token bound to no key"
            if scheme.lower() != "dpop":
                return "invalid_token", "a DPoP-bound token sent as a bearer token"
            proof = self.headers.get("DPoP")
            if not proof:
                return "invalid_token", "no DPoP proof"
            url = f"http://{self.headers.get('Host', '')}{self.path}"
            nonces = dpop_nonces(nonce_seconds)
            try:
                with stats.lock:
                    seen = stats.dpop_seen
                    # Any nonce of the window: try the current one, then the previous one.
                    for i, nonce in enumerate(nonces or [None]):
                        try:
                            thumbprint = dpop.verify(proof, self.command, url, seen, access_token=token, nonce=nonce)
                            break
                        except dpop.Refused as e:
                            if e.error != "use_dpop_nonce" or i == len(nonces or [None]) - 1:
                                raise
            except dpop.Refused as e:
                return e.error, e.description
            if thumbprint != jkt:
                return "invalid_token", "the proof's key is not the one the token is bound to"
            return None

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _handle

    return Handler


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 512
    allow_reuse_address = True


def main(argv=None):
    p = argparse.ArgumentParser(description="RFC 7662 resource server for the AuthGate interop suite")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--as-info", help="the JSON line the authorization server printed, in a file")
    p.add_argument("--introspection-url")
    p.add_argument("--client-id")
    p.add_argument("--client-secret")
    p.add_argument("--client-auth", choices=["basic", "post"], default=None)
    p.add_argument("--delay-min-ms", type=float, default=0)
    p.add_argument("--delay-max-ms", type=float, default=0)
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--fast", action="store_true", help="no delay, 1024 workers")
    p.add_argument("--echo-token", action="store_true", help="TEST ONLY: echo the access token in 200 answers")
    p.add_argument("--dpop-nonce-seconds", type=float, default=0,
                   help="DPoP proofs must carry a nonce that changes this often (0: none)")
    p.add_argument("--tls-pki", help="serve TLS with the PKI in this directory (mtls.make_pki) and check bound tokens")
    a = p.parse_args(argv)
    url, cid, secret, auth = a.introspection_url, a.client_id, a.client_secret, a.client_auth or "basic"
    if a.as_info:
        with open(a.as_info) as f:
            info = json.loads(f.read().strip().splitlines()[0])
        ia = info.get("introspection_auth") or {}
        url = url or info["introspection_endpoint"]
        cid = cid or ia.get("client_id")
        secret = secret or ia.get("client_secret")
        auth = a.client_auth or ia.get("type", "basic")
    if not (url and cid and secret):
        p.error("give --as-info, or --introspection-url, --client-id and --client-secret")
    if a.fast:
        a.delay_min_ms = a.delay_max_ms = 0
        a.workers = 1024
    if a.delay_max_ms < a.delay_min_ms:
        a.delay_max_ms = a.delay_min_ms
    stats = Stats()
    handler = make_handler(Introspector(url, cid, secret, auth), stats, threading.BoundedSemaphore(max(1, a.workers)),
                           a.delay_min_ms, a.delay_max_ms, a.echo_token, a.dpop_nonce_seconds)
    httpd = Server(("127.0.0.1", a.port), handler)
    port = httpd.server_address[1]
    scheme = "http"
    if a.tls_pki:
        pki = {"ca": os.path.join(a.tls_pki, "ca.pem"), "server_cert": os.path.join(a.tls_pki, "server.pem"),
               "server_key": os.path.join(a.tls_pki, "server.key"), "trusted": os.path.join(a.tls_pki, "trusted")}
        httpd.socket = mtls.server_context(pki).wrap_socket(httpd.socket, server_side=True)
        scheme = "https"
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=httpd.shutdown, daemon=True).start())
    print(json.dumps({"url": f"{scheme}://127.0.0.1:{port}", "port": port,
                      "stats": f"{scheme}://127.0.0.1:{port}/stats", "workers": a.workers,
                      "delay_ms": [a.delay_min_ms, a.delay_max_ms]}), flush=True)
    try:
        httpd.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()


if __name__ == "__main__":
    main()
