#!/usr/bin/env python3
"""Python's own HTTP clients through AuthGate: `urllib.request` (a connection per request)
and `http.client` (one connection kept alive across requests of both routes).

    python3 python_clients.py BASE_URL EXPECTED_BODY
Requests BASE/public/urllib, BASE/api/urllib, then BASE/public/http-client and
BASE/api/http-client twice each on one connection; prints one line per check and exits
non-zero on any failure.
"""

import http.client
import sys
import urllib.parse
import urllib.request

base, body = sys.argv[1], sys.argv[2].encode()
failed = False


def check(ok, what):
    global failed
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    failed |= not ok


for prefix in ("/public", "/api"):
    with urllib.request.urlopen(base + prefix + "/urllib", timeout=10) as r:
        got = r.read()
        check(r.status == 200 and got == body, f"urllib {prefix}: {r.status} {got[:60]!r}")

url = urllib.parse.urlsplit(base)
conn = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
first_socket = None
for i, prefix in enumerate(("/public", "/api", "/public", "/api")):
    conn.request("GET", prefix + "/http-client")
    r = conn.getresponse()
    got = r.read()
    check(r.status == 200 and got == body, f"http.client {prefix} #{i}: {r.status} {got[:60]!r}")
    first_socket = first_socket or conn.sock
    check(conn.sock is first_socket and not r.will_close, f"http.client {prefix} #{i}: the connection is kept")
conn.close()
sys.exit(1 if failed else 0)
