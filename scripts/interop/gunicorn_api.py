"""An API under gunicorn with a fixed pool of threads, for the storms of issue 32 (WSGI).

    GUNICORN_API_AS_INFO=as.json GUNICORN_API_DELAY_MS=40,80 \
        gunicorn -k gthread --workers 1 --threads 8 -b 127.0.0.1:PORT gunicorn_api:app

It is what a legacy client's API usually is: one gunicorn worker whose threads serve one
request each, the rest waiting in gunicorn's queue, with gunicorn's own defaults otherwise
(backlog 2048, keep-alive 2 s). Every request but `GET /stats` is authenticated the way a
framework's middleware does it, before any work: RFC 7662 introspection at the
authorization server (resource_server.Introspector, no cache, so a revocation is seen at
once), then 40-80 ms of work (GUNICORN_API_DELAY_MS=min,max; 0,0 for none).

- active token   → 200 JSON {"sub", "path", "token_sha256"};
- inactive one   → 401 `WWW-Authenticate: Bearer realm="interop", error="invalid_token"`;
- no token       → 401 `WWW-Authenticate: Bearer realm="interop"`;
- introspection failed → 503.

`GET /stats`: requests, ok, unauthorized, by_status, in_flight, max_in_flight (requests in
a thread at once: never more than the threads), distinct_tokens. Queued requests are not
visible to the application (they wait in gunicorn), so max_queued is null.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from resource_server import Introspector  # noqa: E402


def _introspector():
    with open(os.environ["GUNICORN_API_AS_INFO"]) as f:
        info = json.loads(f.read().strip().splitlines()[0])
    auth = info.get("introspection_auth") or {}
    return Introspector(info["introspection_endpoint"], auth["client_id"], auth["client_secret"],
                        auth.get("type", "basic"))


_delay = [float(x) / 1000.0 for x in os.environ.get("GUNICORN_API_DELAY_MS", "40,80").split(",")]
_lock = threading.Lock()
_stats = {"requests": 0, "ok": 0, "unauthorized": 0, "by_status": {}, "in_flight": 0, "max_in_flight": 0,
          "max_queued": None, "introspection_errors": 0}
_tokens: set[str] = set()
_introspector_instance = None


def _count(status):
    with _lock:
        _stats["requests"] += 1
        _stats["by_status"][str(status)] = _stats["by_status"].get(str(status), 0) + 1
        if status == 200:
            _stats["ok"] += 1
        elif status == 401:
            _stats["unauthorized"] += 1


def _answer(start_response, status, obj, extra=()):
    data = json.dumps(obj).encode()
    reason = {200: "OK", 401: "Unauthorized", 503: "Service Unavailable"}[status]
    start_response(f"{status} {reason}", [("Content-Type", "application/json"), ("Content-Length", str(len(data))),
                                          ("Cache-Control", "no-store"), *extra])
    return [data]


def app(environ, start_response):
    global _introspector_instance
    if environ.get("PATH_INFO") == "/stats" and environ.get("REQUEST_METHOD") == "GET":
        with _lock:
            snapshot = dict(_stats, by_status=dict(_stats["by_status"]), distinct_tokens=len(_tokens))
        data = json.dumps(snapshot).encode()
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
        return [data]
    with _lock:
        _stats["in_flight"] += 1
        _stats["max_in_flight"] = max(_stats["max_in_flight"], _stats["in_flight"])
        if _introspector_instance is None:
            _introspector_instance = _introspector()
    try:
        status, body, extra = _handle(environ)
    finally:
        with _lock:
            _stats["in_flight"] -= 1
    _count(status)
    return _answer(start_response, status, body, extra)


def _handle(environ):
    scheme, _, token = (environ.get("HTTP_AUTHORIZATION") or "").partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return 401, {"error": "no bearer token"}, [("WWW-Authenticate", 'Bearer realm="interop"')]
    try:
        result = _introspector_instance.introspect(token)
    except Exception as e:  # noqa: BLE001 (the AS is down or answered nonsense)
        with _lock:
            _stats["introspection_errors"] += 1
        return 503, {"error": "introspection failed", "detail": str(e)[:200]}, []
    token_sha = hashlib.sha256(token.encode()).hexdigest()
    if not result.get("active"):
        return 401, {"error": "invalid_token", "token_sha256": token_sha}, [
            ("WWW-Authenticate", 'Bearer realm="interop", error="invalid_token", '
                                 'error_description="the access token is not active"')]
    with _lock:
        _tokens.add(token_sha)
    if _delay[1] > 0:
        time.sleep(random.uniform(_delay[0], _delay[1]))
    return 200, {"sub": result.get("sub"), "path": environ.get("PATH_INFO"), "token_sha256": token_sha}, []
