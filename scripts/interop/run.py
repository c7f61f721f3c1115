#!/usr/bin/env python3
"""AuthGate interop driver: real authorization servers, a real resource server, the
real `authgate serve` binary. Standard library only.

    AUTHGATE_BIN=/path/to/authgate python3 scripts/interop/run.py [--servers authlib,glewlwyd]
        [--only SCENARIO,...] [--keep] [--access-ttl 4] [-v]

For each authorization server kind it starts the AS (through the kind's module:
start(dir, port, access_ttl) -> info, code(info, verifier) -> str, stop(dir)), the
resource server (resource_server.py, RFC 7662 introspection on every request), writes
an AuthGate configuration and its secret files into a temporary directory, starts
`$AUTHGATE_BIN serve --config FILE`, waits for the admin /readyz and runs the
scenarios. Each scenario prints exactly one line on stdout:

    PASS <server> <scenario> <detail>
    FAIL <server> <scenario> <reason>
    SKIP <server> <scenario> <reason>   (the check cannot be made against this server)

and the run ends with `N passed, N failed, N skipped`; the exit status is 1 when anything
failed (2 on a usage error); a skip is not a pass and does not fail the run. Diagnostics (log tails of failing scenarios) go to stderr.
Every child runs in its own process group and is killed on the way out (finally +
atexit + SIGINT/SIGTERM), and the temporary directory is removed unless --keep.

Adding a server kind: put a module next to this file with start/code/stop and add a
line to KINDS. The checks that count what the authorization server did need its
counters: either a `stats` URL in the info dict (GET → JSON) or a `stats(info) -> dict`
function in the module (glewlwyd: read from its database). Keys used: refreshes,
reuse_detections, revocations, token_requests, tokens_issued (and for DPoP dpop_proofs,
dpop_bound, dpop_refused). Without them those scenarios SKIP. A server that binds tokens
to a DPoP key says so in its info: `dpop_nonce` (Authlib's debug endpoint setting its
nonce) or `dpop` (glewlwyd: its settings; its module's dpop_nonce(info) reads its nonce).

The scenarios whose AuthGates share one session (`store.kind` postgres) use the PostgreSQL
of scripts/with-postgres: the one the driver runs under, if it does, or one it starts the
first time such a scenario runs and stops on the way out; they SKIP when none can be
started.
"""

from __future__ import annotations

import argparse
import atexit
import base64
import hashlib
import http.client
import importlib
import json
import re
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import mtls  # noqa: E402  (next to this file; standard library only)

# kind → (module name, extra keyword arguments for its start()).
KINDS = {
    # A little latency on the token endpoint widens the single-flight window the storm probes.
    "authlib": ("authlib_server", {"latency_ms": 100}),
    "glewlwyd": ("glewlwyd_server", {}),
}

# kind → extra fields of AuthGate's `authorization` configuration.
KIND_AUTHORIZATION = {
    # glewlwyd answers a dead refresh token (revoked, spent, its family disabled) with HTTP
    # 400 and an EMPTY body, not RFC 6749 5.2's {"error": "invalid_grant"}. AuthGate treats
    # a non-OAuth answer as transient (a proxy's error page must not log anyone out) unless
    # the declarative mapping lists the status as terminal: that is how AuthGate is
    # configured for a server that does not speak 5.2 errors.
    "glewlwyd": {"mapping": {"terminalStatuses": [400]}},
}

VERBOSE = False


def log(msg):
    if VERBOSE:
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------
# Processes: every child in its own process group, all killed on the way out.
# --------------------------------------------------------------------------------------

_children: list[subprocess.Popen] = []
_kind_stops: list = []  # (module, dir) whose stop(dir) is still owed


def spawn(cmd, log_path, stdout=None, env=None):
    logf = open(log_path, "ab")
    p = subprocess.Popen(cmd, stdout=stdout if stdout is not None else logf, stderr=logf,
                         stdin=subprocess.DEVNULL, start_new_session=True, env=env)
    logf.close()
    _children.append(p)
    return p


def kill_group(p: subprocess.Popen, sig=signal.SIGTERM, timeout=5.0):
    """Signals p's process group, waits up to `timeout`, then SIGKILLs the group.
    Returns p's exit status."""
    if p.poll() is None:
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            pass
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(p.pid, signal.SIGKILL)  # stragglers in the group, if any
    except (ProcessLookupError, PermissionError):
        pass
    try:
        p.wait(5)
    except subprocess.TimeoutExpired:
        pass
    if p in _children:
        _children.remove(p)
    return p.returncode


def cleanup_all():
    for mod, d in list(_kind_stops):
        try:
            mod.stop(d)
        except Exception:
            pass
        _kind_stops.remove((mod, d))
    for p in list(_children):
        kill_group(p, timeout=3)


atexit.register(cleanup_all)


# --------------------------------------------------------------------------------------
# PostgreSQL, for the scenarios whose AuthGates share one session (store.kind postgres).
# --------------------------------------------------------------------------------------

# The variables scripts/with-postgres exports. They are the harness's, not AuthGate's
# configuration (serve refuses AUTHGATE_* names it does not know), so main() takes them out
# of the environment every child inherits.
POSTGRES_VARIABLES = ("AUTHGATE_TEST_POSTGRES_URL", "AUTHGATE_TEST_POSTGRES_ADMIN_URL", "AUTHGATE_TEST_POSTGRES_BIN",
                      "AUTHGATE_TEST_POSTGRES_DATA", "AUTHGATE_TEST_POSTGRES_RUN_AS")
_postgres = {"url": None, "holder": None, "error": None}
WITH_POSTGRES = os.path.join(HERE, "..", "with-postgres")


def postgres_url():
    """The URL of a PostgreSQL role that owns its database: the one scripts/with-postgres
    gave this run (when the driver runs under it), or one started now through
    scripts/with-postgres, kept for the rest of the run and stopped on the way out. Raises
    Skip, with with-postgres's own words, when none can be started."""
    if _postgres["url"] or _postgres["error"]:
        if _postgres["error"]:
            raise Skip(_postgres["error"])
        return _postgres["url"]
    log_path = os.path.join(tempfile.gettempdir(), f"authgate-interop-postgres-{os.getpid()}.log")
    # with-postgres runs its command until that exits: a Python that prints the URL and
    # waits for its stdin to close (this driver exiting closes it too).
    try:
        with open(log_path, "ab") as err:
            holder = subprocess.Popen(
                [WITH_POSTGRES, sys.executable, "-c",
                 "import os, sys; print(os.environ['AUTHGATE_TEST_POSTGRES_URL'], flush=True); sys.stdin.read()"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, start_new_session=True)
    except OSError as e:
        os.unlink(log_path)
        _postgres["error"] = f"PostgreSQL could not be started: {WITH_POSTGRES}: {e.strerror}"
        raise Skip(_postgres["error"]) from e
    _postgres["holder"] = holder
    t0 = time.monotonic()
    line = read_line_within(holder.stdout, 120)
    if not line:
        stop_postgres()
        _postgres["error"] = f"PostgreSQL could not be started by scripts/with-postgres: {tail(log_path, 3) or 'no output'}"
    os.unlink(log_path)  # what with-postgres said is in the error, if anything went wrong
    if _postgres["error"]:
        raise Skip(_postgres["error"])
    _postgres["url"] = line.strip()
    log(f"PostgreSQL started in {time.monotonic() - t0:.1f}s")
    return _postgres["url"]


def read_line_within(stream, timeout):
    box = []
    t = threading.Thread(target=lambda: box.append(stream.readline().decode()), daemon=True)
    t.start()
    t.join(timeout)
    return box[0] if box else None


def stop_postgres():
    """Ends the server postgres_url() started (with-postgres stops it and removes its files)."""
    holder = _postgres["holder"]
    _postgres["holder"] = None
    if holder is None:
        return
    try:
        holder.stdin.close()  # the command exits; with-postgres cleans up
    except OSError:
        pass
    try:
        holder.wait(30)
    except subprocess.TimeoutExpired:
        kill_group(holder, timeout=10)


atexit.register(stop_postgres)


def _on_signal(signum, frame):
    # Once: a second signal (a terminal's SIGINT and the suite's forwarded one both reach a
    # driver) must not interrupt the cleanup the first one started.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    raise SystemExit(128 + signum)


signal.signal(signal.SIGTERM, _on_signal)
signal.signal(signal.SIGINT, _on_signal)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_json_line(p: subprocess.Popen, timeout):
    box = []
    t = threading.Thread(target=lambda: box.append(p.stdout.readline()), daemon=True)
    t.start()
    t.join(timeout)
    if not box or not box[0]:
        return None
    threading.Thread(target=lambda: [None for _ in p.stdout], daemon=True).start()
    return json.loads(box[0])


def tail(path, lines=8):
    try:
        with open(path, "rb") as f:
            data = f.read()[-6000:].decode(errors="replace")
        return "\n".join(data.strip().splitlines()[-lines:])
    except OSError:
        return ""


# --------------------------------------------------------------------------------------
# HTTP (http.client: no redirects, no proxies from the environment).
# --------------------------------------------------------------------------------------

class Resp:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    def json(self):
        try:
            return json.loads(self.body)
        except ValueError:
            return None

    def header(self, name):
        for k, v in self.headers:
            if k.lower() == name.lower():
                return v
        return None

    def __repr__(self):
        return f"{self.status} {self.body[:200]!r}"


def request(method, url, body=None, headers=None, timeout=15.0) -> Resp:
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    try:
        path = u.path or "/"
        if u.query:
            path += "?" + u.query
        if isinstance(body, str):
            body = body.encode()
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        return Resp(r.status, r.getheaders(), r.read())
    finally:
        conn.close()


def basic(user, password):
    return "Basic " + base64.b64encode(f"{urllib.parse.quote(user, safe='')}:{urllib.parse.quote(password, safe='')}"
                                       .encode()).decode()


def wait_until(pred, timeout, interval=0.1):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = pred()
        if last:
            return last
        time.sleep(interval)
    return last


class Fail(Exception):
    pass


class Skip(Exception):
    """The scenario's check cannot be made against this server (printed as SKIP)."""


def check(cond, msg):
    if not cond:
        raise Fail(msg)


# --------------------------------------------------------------------------------------
# AuthGate.
# --------------------------------------------------------------------------------------

# Every AuthGate's log, in the order they were made: a failing scenario shows the tails of
# the ones it made (_diagnose), whether or not it listed them in ctx.extra_logs.
_authgate_logs = []


class AuthGate:
    def __init__(self, binary, workdir, name, config):
        self.binary, self.workdir, self.name, self.config = binary, workdir, name, config
        self.config_path = os.path.join(workdir, f"{name}.json")
        self.log_path = os.path.join(workdir, f"{name}.log")
        if self.log_path not in _authgate_logs:
            _authgate_logs.append(self.log_path)
        self.proxy = f"http://127.0.0.1:{config['proxy']['port']}"
        self.admin = f"http://127.0.0.1:{config['admin']['port']}"
        with open(config["adminTokenFile"]) as f:
            self.admin_token = f.read().strip()
        self.proc = None
        with open(self.config_path, "w") as f:
            json.dump(config, f, indent=2)

    def start(self, timeout=30.0):
        with open(self.log_path, "ab") as f:
            f.write(f"--- start {time.strftime('%H:%M:%S')} ---\n".encode())
        self.proc = spawn([self.binary, "serve", "--config", self.config_path], self.log_path)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise Fail(f"authgate exited {self.proc.returncode} at start: {self.last_log_line()}")
            try:
                if request("GET", self.admin + "/readyz", timeout=2).status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise Fail(f"authgate not ready within {timeout}s: {self.last_log_line()}")

    def last_log_line(self):
        lines = [l for l in tail(self.log_path, 20).splitlines() if l.strip() and not l.startswith("---")]
        return lines[-1][:400] if lines else "(no output)"

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout=15.0):
        if self.proc is None:
            return None
        code = kill_group(self.proc, signal.SIGTERM, timeout)
        self.proc = None
        return code

    def admin_call(self, method, path, body=None) -> Resp:
        h = {"Authorization": "Bearer " + self.admin_token}
        if body is not None:
            h["Content-Type"] = "application/json"
            body = json.dumps(body)
        return request(method, self.admin + path, body=body, headers=h)

    def login(self, body):
        r = self.admin_call("POST", "/auth/login", body)
        check(r.status == 200, f"POST /auth/login ({body.get('grant_type')}) → {r.status} {r.body[:300]!r}")
        s = r.json() or {}
        check(s.get("state") == "logged_in", f"login answered state={s.get('state')!r}")
        return s

    def session(self):
        r = self.admin_call("GET", "/auth/session")
        check(r.status == 200, f"GET /auth/session → {r.status}")
        return r.json()

    def get(self, path, method="GET", body=None, headers=None) -> Resp:
        return request(method, self.proxy + path, body=body, headers=headers or {})


def authgate_config(ctx, name, discovery=False):
    state = os.path.join(ctx.dir, f"{name}-state")
    os.makedirs(state, mode=0o700, exist_ok=True)  # AuthGate refuses a state directory others can read
    info = ctx.info
    authz = {"clientID": info["client_id"], "clientSecretFile": ctx.secret_file, "clientAuthentication": "basic"}
    authz.update(json.loads(json.dumps(KIND_AUTHORIZATION.get(ctx.kind, {}))))
    if discovery:
        authz["issuer"] = info["issuer"]
    else:
        authz["tokenEndpoint"] = info["token_endpoint"]
        if info.get("revocation_endpoint"):
            authz["revocationEndpoint"] = info["revocation_endpoint"]
    return {
        "proxy": {"host": "127.0.0.1", "port": free_port()},
        "admin": {"host": "127.0.0.1", "port": free_port()},
        "adminTokenFile": ctx.admin_token_file,
        "authorization": authz,
        "routes": [{"prefix": "/api", "upstream": ctx.rs["url"], "requiresAuthentication": True}],
        "stateDirectory": state,
        "createKey": True,
        "keyFile": os.path.join(state, "key"),
        "refreshSkewSeconds": 1,
        "loops": 2,
    }


# --------------------------------------------------------------------------------------
# The context of one server kind.
# --------------------------------------------------------------------------------------

class Ctx:
    def __init__(self, kind, mod, info, rs, dir, binary, ag):
        self.kind, self.mod, self.info, self.rs, self.dir, self.binary, self.ag = kind, mod, info, rs, dir, binary, ag
        self.secret_file = self.admin_token_file = None
        self.extra_logs = []

    @property
    def ttl(self):
        return float(self.info.get("access_ttl", 4))

    def as_stats(self):
        """The AS's counters: its /stats, or the module's stats(info) (glewlwyd: read from
        its database). Raises Skip when the AS has neither, Fail when they cannot be read."""
        url = self.info.get("stats")
        if url:
            r = request("GET", url, timeout=5)
            check(r.status == 200, f"AS /stats → {r.status}")
            return r.json()
        fn = getattr(self.mod, "stats", None)
        if fn is None:
            raise Skip("the AS publishes no counters (no /stats, no stats() in its module)")
        try:
            return fn(self.info)
        except Exception as e:  # noqa: BLE001
            raise Fail(f"reading the AS's counters failed: {e!r}") from e

    def session_refresh_state(self, access_token):
        """Where the AS lets us see the refresh token of the session AuthGate holds (AuthGate
        stores it encrypted): returns a probe () -> bool "still usable at the AS", or None.
        Authlib: its debug list of families + RFC 7662 introspection. glewlwyd: its
        database (the newest refresh-token family of the user, right after the login)."""
        if self.info.get("debug_families"):
            fams = request("GET", self.info["debug_families"]).json()["families"]
            refresh = next((f["refresh_token"] for f in fams if f["access_token"] == access_token), None)
            check(refresh, "could not find the session's refresh token at the AS")
            return lambda: bool(self.introspect(refresh, "refresh_token").get("active"))
        latest = getattr(self.mod, "latest_family", None)
        if latest is not None:
            fam = latest(self.info)
            check(fam is not None, "the AS has no refresh token for the user")
            family = self.mod.family
            return lambda: bool((family(self.info, fam["jti"]) or {}).get("enabled"))
        return None

    def rs_stats(self):
        return request("GET", self.rs["url"] + "/stats", timeout=5).json()

    def introspect(self, token, hint=None):
        ia = self.info.get("introspection_auth") or {}
        form = {"token": token}
        if hint:
            form["token_type_hint"] = hint
        h = {"Content-Type": "application/x-www-form-urlencoded"}
        if ia.get("type", "basic") == "post":
            form.update(client_id=ia["client_id"], client_secret=ia["client_secret"])
        else:
            h["Authorization"] = basic(ia["client_id"], ia["client_secret"])
        r = request("POST", self.info["introspection_endpoint"], body=urllib.parse.urlencode(form), headers=h)
        if r.status != 200:
            raise Fail(f"introspection → {r.status} {r.body[:200]!r}")
        return r.json()

    def revoke(self, token, hint):
        r = request("POST", self.info["revocation_endpoint"],
                    body=urllib.parse.urlencode({"token": token, "token_type_hint": hint}),
                    headers={"Content-Type": "application/x-www-form-urlencoded",
                             "Authorization": basic(self.info["client_id"], self.info["client_secret"])})
        check(r.status == 200, f"revocation → {r.status} {r.body[:200]!r}")

    def password_login(self):
        body = {"grant_type": "password", "username": self.info["username"], "password": self.info["password"]}
        if self.info.get("scope"):
            body["scope"] = self.info["scope"]
        return self.ag.login(body)

    def api(self, path, method="GET", body=None, expect=200):
        r = self.ag.get(path, method=method, body=body)
        if expect is not None:
            check(r.status == expect, f"{method} {path} through authgate → {r.status} {r.body[:300]!r}, wanted {expect}")
        return r


def delta(a, b, key):
    if a is None or b is None:
        return None
    return (b.get(key) or 0) - (a.get(key) or 0)


def check_user(ctx, j):
    """The RS saw the resource owner: introspection's `sub` is the username at some servers
    and an opaque (pairwise) id with `username` beside it at others (Glewlwyd)."""
    who = ctx.info["username"]
    check(who in (j.get("sub"), j.get("username")),
          f"RS saw sub={j.get('sub')!r} username={j.get('username')!r}, wanted {who!r}")
    return j.get("username") or j.get("sub")


def logins_issued(stats):
    t = (stats or {}).get("tokens_issued") or {}
    return sum(v for k, v in t.items() if k != "refresh_token")


# --------------------------------------------------------------------------------------
# Scenarios: each returns its detail or raises Fail.
# --------------------------------------------------------------------------------------

def sc_password(ctx):
    s = ctx.password_login()
    payload = secrets.token_bytes(300)
    r = ctx.api("/api/password?x=1", method="POST", body=payload)
    j = r.json() or {}
    check_user(ctx, j)
    check(j.get("path") == "/api/password?x=1", f"RS saw path {j.get('path')!r}")
    check(j.get("body_sha256") == hashlib.sha256(payload).hexdigest(), "RS saw another body")
    return f"user={j.get('username') or j.get('sub')} generation={s.get('generation')} body forwarded intact"


def sc_client_credentials(ctx):
    body = {"grant_type": "client_credentials"}
    if ctx.info.get("scope"):
        body["scope"] = ctx.info["scope"]
    ctx.ag.login(body)
    j = ctx.api("/api/cc").json() or {}
    cid = j.get("client_id")
    check(cid in (None, ctx.info["client_id"]), f"RS saw client_id={cid!r}")
    return f"sub={j.get('sub')} client_id={cid}"


def sc_authorization_code(ctx):
    verifier = secrets.token_urlsafe(48)  # 64 characters of [A-Za-z0-9_-]
    code = ctx.mod.code(ctx.info, verifier)
    ctx.ag.login({"grant_type": "authorization_code", "code": code, "redirect_uri": ctx.info["redirect_uri"],
                  "code_verifier": verifier})
    j = ctx.api("/api/code").json() or {}
    return f"user={check_user(ctx, j)} (PKCE S256)"


def sc_refresh_on_expiry(ctx):
    ctx.password_login()
    t1 = (ctx.api("/api/expiry/1").json() or {}).get("token_sha256")
    a0, r0 = ctx.as_stats(), ctx.rs_stats()
    time.sleep(ctx.ttl + 1.5)
    t2 = (ctx.api("/api/expiry/2").json() or {}).get("token_sha256")
    a1, r1 = ctx.as_stats(), ctx.rs_stats()
    check(t1 and t2 and t1 != t2, "the RS saw the same access token after expiry")
    refreshes, reuse = delta(a0, a1, "refreshes"), delta(a0, a1, "reuse_detections")
    check(refreshes == 1, f"AS counted {refreshes} refreshes for one expiry, wanted 1")
    check(reuse == 0, f"AS detected refresh-token reuse {reuse} time(s)")
    return (f"new token after {ctx.ttl + 1.5:.1f}s; AS refreshes+{refreshes} reuse+{reuse}; "
            f"RS 401s+{delta(r0, r1, 'unauthorized')}")


def sc_refresh_after_401(ctx):
    ctx.password_login()  # a fresh token: no proactive refresh can hide the 401 path
    j = ctx.api("/api/revoked/1").json() or {}
    token = j.get("access_token")
    check(token, "the RS did not echo the token (run it with --echo-token)")
    ctx.revoke(token, "access_token")
    check(not ctx.introspect(token, "access_token").get("active"), "revoked access token still active at the AS")
    a0, r0 = ctx.as_stats(), ctx.rs_stats()
    j2 = ctx.api("/api/revoked/2").json() or {}
    a1, r1 = ctx.as_stats(), ctx.rs_stats()
    check(j2.get("access_token") and j2["access_token"] != token, "the replay carried the revoked token")
    rs401 = delta(r0, r1, "unauthorized")
    check(rs401 >= 1, f"the RS answered no 401 ({rs401}): the revoked token was never sent")
    refreshes, reuse = delta(a0, a1, "refreshes"), delta(a0, a1, "reuse_detections")
    check(refreshes == 1, f"AS counted {refreshes} refreshes, wanted 1")
    check(reuse == 0, f"AS detected refresh-token reuse {reuse} time(s)")
    return f"401 → refresh → replay 200; RS 401s+{rs401}; AS refreshes+{refreshes} reuse+{reuse}"


def sc_refresh_storm(ctx, n=48):
    ctx.password_login()
    ctx.api("/api/storm/warm")
    time.sleep(ctx.ttl + 1.5)
    a0, r0 = ctx.as_stats(), ctx.rs_stats()
    results = [None] * n

    def one(i):
        try:
            r = ctx.ag.get(f"/api/storm/{i}")
            results[i] = (r.status, (r.json() or {}).get("token_sha256"))
        except Exception as e:  # noqa: BLE001
            results[i] = (0, repr(e))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    a1, r1 = ctx.as_stats(), ctx.rs_stats()
    bad = [r for r in results if not r or r[0] != 200]
    check(not bad, f"{len(bad)}/{n} requests failed, e.g. {bad[:3]}")
    tokens = {r[1] for r in results}
    refreshes, reuse = delta(a0, a1, "refreshes"), delta(a0, a1, "reuse_detections")
    check(refreshes == 1, f"AS counted {refreshes} refreshes for one expiry (wanted 1: single-flight)")
    check(reuse == 0, f"AS detected refresh-token reuse {reuse} time(s)")
    return (f"{n} concurrent requests after expiry all 200; {len(tokens)} distinct token(s); "
            f"AS refreshes+{refreshes} reuse+{reuse}; RS 401s+{delta(r0, r1, 'unauthorized')}")


def sc_logout_revokes(ctx):
    ctx.password_login()
    j = ctx.api("/api/logout/1").json() or {}
    usable = ctx.session_refresh_state(j.get("access_token"))
    if usable is None:
        # The access token alone proves nothing here: it goes inactive by itself when it
        # expires, so waiting for that would pass whether or not AuthGate revoked.
        raise Skip("the AS shows neither the session's refresh token nor its state")
    check(usable(), "the session's refresh token is unusable at the AS before logout")
    a0 = ctx.as_stats()
    r = ctx.ag.admin_call("POST", "/auth/logout")
    check(r.status == 200, f"POST /auth/logout → {r.status} {r.body[:200]!r}")
    check((r.json() or {}).get("state") == "logged_out", f"logout answered {r.body[:200]!r}")
    # The revocation runs in the background after the logout answered.
    ok = wait_until(lambda: not usable(), timeout=5, interval=0.1)
    check(ok, "the session's refresh token is still usable at the AS 5 s after logout (revocation not sent?)")
    r0 = ctx.rs_stats()
    resp = ctx.ag.get("/api/logout/2")
    r1 = ctx.rs_stats()
    check(resp.status == 401, f"after logout the proxy answered {resp.status}, wanted 401")
    ptype = (resp.json() or {}).get("type", "")
    # The session ended here (a logout): every request says so until the next login.
    check(ptype.endswith("/session-ended"), f"after logout the problem type is {ptype!r}, wanted session-ended")
    check(delta(r0, r1, "requests") == 0, "a request reached the RS after logout")
    a1 = wait_until(lambda: (lambda a: a if delta(a0, a, "revocations") >= 1 else None)(ctx.as_stats()), 3) \
        or ctx.as_stats()
    revocations = delta(a0, a1, "revocations")
    check(revocations == 1, f"the AS counted {revocations} revocations for one logout, wanted 1")
    check(delta(a0, a1, "reuse_detections") == 0, "the AS detected refresh-token reuse")
    return (f"refresh token revoked at the AS after logout (AS revocations+{revocations}); "
            f"proxy 401 session-ended, RS untouched")


def sc_refresh_rejected(ctx):
    """The AS refuses the refresh token for good (revoked): AuthGate logs out, no loop."""
    revoke_all = getattr(ctx.mod, "revoke_user_refresh_tokens", None)
    if not ctx.info.get("debug_families") and revoke_all is None:
        raise Skip("no way to revoke the session's refresh token at this AS")
    ctx.password_login()
    access = (ctx.api("/api/rejected/1").json() or {}).get("access_token")
    if ctx.info.get("debug_families"):
        fams = request("GET", ctx.info["debug_families"]).json()["families"]
        refresh = next((f["refresh_token"] for f in fams if f["access_token"] == access), None)
        check(refresh, "could not find the session's refresh token at the AS")
        ctx.revoke(refresh, "refresh_token")  # revokes the family: the access token dies too
        how = "grant revoked (RFC 7009)"
    else:
        # glewlwyd: an administrator disables every refresh token of the user (its admin
        # API; glewlwyd disables the access tokens with them).
        n = revoke_all(ctx.info)
        check(n >= 1, f"the admin API disabled {n} refresh-token families, wanted at least 1")
        how = f"admin disabled the user's refresh tokens ({n} families)"
    a0, r0 = ctx.as_stats(), ctx.rs_stats()
    resp = ctx.ag.get("/api/rejected/2")
    r1 = ctx.rs_stats()
    a1 = wait_until(lambda: (lambda a: a if delta(a0, a, "token_requests") >= 1 else None)(ctx.as_stats()), 3) \
        or ctx.as_stats()
    s = ctx.ag.session()
    ptype = (resp.json() or {}).get("type", "")
    check(resp.status == 401, f"with the grant revoked the proxy answered {resp.status} {ptype}, wanted 401; "
          f"session {s.get('state')!r}")
    check(s.get("state") == "logged_out", f"the session is {s.get('state')!r} after the refusal, wanted logged_out")
    check(ptype.endswith("/session-ended"), f"problem type {ptype!r}, wanted session-ended")
    requests_ = delta(a0, a1, "token_requests")
    check(requests_ == 1, f"{requests_} token requests for one refusal (wanted 1: no retry loop)")
    # A second request must not reach the AS again: the session is over.
    resp2 = ctx.ag.get("/api/rejected/3")
    a2 = ctx.as_stats()
    check(resp2.status == 401, f"the next request got {resp2.status}, wanted 401")
    check(delta(a1, a2, "token_requests") == 0, "a request after the logout reached the token endpoint")
    return (f"{how} → proxy 401 {ptype.rsplit('/', 1)[-1]}, session logged_out; "
            f"AS token requests+{requests_}; RS 401s+{delta(r0, r1, 'unauthorized')}")


def sc_restart(ctx):
    ctx.password_login()
    r = ctx.ag.admin_call("POST", "/auth/refresh")  # rotate once before the restart
    check(r.status == 200, f"POST /auth/refresh → {r.status} {r.body[:200]!r}")
    t1 = (ctx.api("/api/restart/1").json() or {}).get("token_sha256")
    a0 = ctx.as_stats()
    code = ctx.ag.stop(timeout=15)
    check(code == 0, f"authgate exited {code} on SIGTERM, wanted 0")
    ctx.ag.start()
    s = ctx.ag.session()
    check(s.get("state") == "logged_in", f"after restart the session is {s.get('state')!r}")
    t2 = (ctx.api("/api/restart/2").json() or {}).get("token_sha256")
    # The refresh token restored from the store must be the rotated one: refresh with it.
    r = ctx.ag.admin_call("POST", "/auth/refresh")
    check(r.status == 200, f"POST /auth/refresh after restart → {r.status} {r.body[:200]!r}")
    t3 = (ctx.api("/api/restart/3").json() or {}).get("token_sha256")
    a1 = ctx.as_stats()
    check(t3 != t2, "the refresh after restart did not change the access token")
    new = logins_issued(a1) - logins_issued(a0)
    check(new == 0, f"{new} new login(s) at the AS across the restart")
    check(delta(a0, a1, "reuse_detections") == 0, "the restored refresh token was a spent one (reuse detected)")
    check(delta(a0, a1, "refreshes") == 1, f"AS refreshes+{delta(a0, a1, 'refreshes')} for one POST /auth/refresh")
    return (f"exit 0 on SIGTERM; session restored ({'same token' if t1 == t2 else 'token refreshed'}), no new login; "
            f"the restored rotated refresh token refreshes (AS refreshes+{delta(a0, a1, 'refreshes')} reuse+0)")


def sc_discovery(ctx):
    cfg = authgate_config(ctx, "authgate-discovery", discovery=True)
    ag = AuthGate(ctx.binary, ctx.dir, "authgate-discovery", cfg)
    main = ctx.ag
    ctx.extra_logs.append(ag.log_path)
    try:
        ag.start()
        ctx.ag = ag
        ctx.password_login()
        j = ctx.api("/api/discovery").json() or {}
        check_user(ctx, j)
        usable = ctx.session_refresh_state(j.get("access_token"))
        r = ag.admin_call("POST", "/auth/logout")
        check(r.status == 200, f"logout → {r.status}")
        extra = "; the revocation endpoint's use not checked (the session's refresh token is not visible)"
        if usable is not None:
            ok = wait_until(lambda: not usable(), timeout=5, interval=0.1)
            check(ok, "logout did not revoke: the discovered revocation_endpoint was not used")
            extra = "; logout revoked through the discovered revocation_endpoint"
        return (f"token endpoint discovered from {ctx.info['issuer']}/.well-known/openid-configuration; "
                f"login + request 200{extra}")
    finally:
        ctx.ag = main
        ag.stop()


def sc_no_reuse(ctx):
    a = ctx.as_stats()
    check(a.get("reuse_detections") == 0, f"the AS detected refresh-token reuse {a.get('reuse_detections')} time(s)")
    errs = a.get("token_errors") or {}
    return f"0 reuse detections over the run; AS refreshes={a.get('refreshes')} token errors={errs}"


def openssl_key(path, kind):
    """A fresh private key in PEM at `path` (mode 0600): `ec` (P-256) or `rsa` (2048 bits);
    returns its public key in PEM."""
    algorithm = ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"] if kind == "ec" else \
        ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"]
    pem = subprocess.run(["openssl", "genpkey", *algorithm], check=True, capture_output=True).stdout
    fd = os.open(path + ".new", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, pem)
    os.close(fd)
    os.replace(path + ".new", path)  # atomically, as a secret manager swaps a file
    return subprocess.run(["openssl", "pkey", "-pubout"], input=pem, check=True, capture_output=True).stdout


def assertion_ag(ctx, name, authz):
    """A second AuthGate for a JWT client-authentication scenario, started; stop it after."""
    config = authgate_config(ctx, name)
    config["authorization"] = {k: v for k, v in config["authorization"].items()
                               if k not in ("clientSecretFile", "clientAuthentication", "clientID")}
    config["authorization"].update(authz)
    ag = AuthGate(ctx.binary, ctx.dir, name, config)
    ag.start()
    return ag


def expiry_refresh(ctx, ag, path):
    """Waits out the access token and calls the API once: one refresh, no reuse."""
    a0 = ctx.as_stats()
    time.sleep(ctx.ttl + 1.5)
    r = ag.get(path)
    check(r.status == 200, f"{path} after expiry → {r.status} {r.body[:200]!r}")
    a1 = ctx.as_stats()
    refreshes, reuse = delta(a0, a1, "refreshes"), delta(a0, a1, "reuse_detections")
    check(refreshes == 1, f"AS counted {refreshes} refreshes for one expiry, wanted 1")
    check(reuse == 0, f"AS detected refresh-token reuse {reuse} time(s)")
    return a0, a1


def storm_expiries(ctx, ag, path, expiries=3, n=24):
    """`expiries` times: wait out the access token, then `n` concurrent requests. Every one
    must be 200, with one refresh per expiry and no reuse detected. `ag` may be a list of
    AuthGates sharing one session: the requests are dealt to them in turn."""
    ags = ag if isinstance(ag, list) else [ag]
    a0, r0 = ctx.as_stats(), ctx.rs_stats()
    for e in range(expiries):
        time.sleep(ctx.ttl + 1.5)
        results = [None] * n

        bodies = [b""] * n

        def one(i):
            try:
                r = ags[i % len(ags)].get(f"{path}/{e}/{i}")
                results[i], bodies[i] = r.status, r.body
            except Exception as x:  # noqa: BLE001
                results[i] = repr(x)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        bad = [r for r in results if r != 200]
        # The first failing answer's body names AuthGate's reason (its problem document).
        why = next((bodies[i][:300] for i, r in enumerate(results) if r != 200 and bodies[i]), b"")
        check(not bad, f"expiry {e + 1}: {len(bad)}/{n} requests failed, e.g. {bad[:3]} {why!r}")
    a1, r1 = ctx.as_stats(), ctx.rs_stats()
    refreshes, reuse = delta(a0, a1, "refreshes"), delta(a0, a1, "reuse_detections")
    check(refreshes == expiries, f"AS counted {refreshes} refreshes for {expiries} expiries, wanted one each")
    check(reuse == 0, f"AS detected refresh-token reuse {reuse} time(s)")
    return a0, a1


def assertions(stats, method):
    return (stats.get("client_assertions") or {}).get(method, 0)


def password_grant(ctx):
    """The body of a password login, with the scope the server grants where it names one (as
    Ctx.password_login: glewlwyd refuses a token request without a scope)."""
    body = {"grant_type": "password", "username": ctx.info["username"], "password": ctx.info["password"]}
    if ctx.info.get("scope"):
        body["scope"] = ctx.info["scope"]
    return body


def register_client_key(ctx, client_id, public_pem):
    """Makes the AS trust `public_pem` (and no other key) for the private_key_jwt client:
    through the AS module's register_client_keys (glewlwyd: the client's `pubkey`, set through
    its admin API) or the key file the AS reads at every verification (Authlib)."""
    register = getattr(ctx.mod, "register_client_keys", None)
    if register is not None:
        register(ctx.info, client_id, [public_pem.decode() if isinstance(public_pem, bytes) else public_pem])
        return
    with open(ctx.info["jwt_client_key_file"], "wb") as f:
        f.write(public_pem)


def refusal_logged(ctx, ag):
    """AuthGate's log shows the token endpoint's refusal of the client's credential: an
    RFC 6749 invalid_client where the AS answers one; glewlwyd answers an empty 403."""
    if ctx.kind == "glewlwyd":
        return wait_until(lambda: "status=403: no OAuth error body" in tail(ag.log_path, 40), 5)
    return wait_until(lambda: "invalid_client" in tail(ag.log_path, 40), 5)


def sc_private_key_jwt(ctx):
    if not ctx.info.get("jwt_client_key_file") and not getattr(ctx.mod, "register_client_keys", None):
        raise Skip("this server registers no private_key_jwt client here")
    key = os.path.join(ctx.dir, "pkjwt-key.pem")
    client = ctx.info["jwt_client_id"]
    register_client_key(ctx, client, openssl_key(key, "ec"))
    ag = assertion_ag(ctx, "pkjwt", {"clientID": ctx.info["jwt_client_id"],
                                     "clientAuthentication": "private_key_jwt", "clientKeyFile": key})
    try:
        a0 = ctx.as_stats()
        ag.login(password_grant(ctx))
        check(ag.get("/api/pkjwt/1").status == 200, "the API call after login failed")
        check(assertions(ctx.as_stats(), "private_key_jwt") - assertions(a0, "private_key_jwt") == 1,
              "the login was not authenticated by an ES256 assertion")
        expiry_refresh(ctx, ag, "/api/pkjwt/2")
        _, a1 = storm_expiries(ctx, ag, "/api/pkjwt/storm")
        check(assertions(a1, "private_key_jwt") - assertions(a0, "private_key_jwt") == 5,
              "the login and four refreshes should each have sent one assertion")
        # The key rotated on disk (RSA now, RS256 by default), registered at the AS at once.
        register_client_key(ctx, client, openssl_key(key, "rsa"))
        _, a2 = expiry_refresh(ctx, ag, "/api/pkjwt/3")
        check(assertions(a2, "private_key_jwt") - assertions(a0, "private_key_jwt") == 6,
              "login and five refreshes should each have sent one assertion")
        # A key the AS does not know: the refresh is refused as invalid_client, logged, and
        # the session is kept (the key can be put right on disk).
        openssl_key(key, "ec")
        r0 = ctx.as_stats()
        time.sleep(ctx.ttl + 1.5)
        ag.get("/api/pkjwt/4")
        refused = sum((ctx.as_stats().get("client_assertions_refused") or {}).values()) - \
            sum((r0.get("client_assertions_refused") or {}).values())
        check(refused >= 1, "the AS did not refuse an assertion signed with an unknown key")
        check(refusal_logged(ctx, ag), f"AuthGate's log does not show the refusal: {ag.last_log_line()}")
        check(ag.session().get("state") == "logged_in", "a refused assertion ended the session")
        # Put right on disk: the next try refreshes with the registered key.
        register_client_key(ctx, client, openssl_key(key, "ec"))
        check(wait_until(lambda: ag.get("/api/pkjwt/5").status == 200, 15),
              "the session did not recover once the key was registered")
        how = "an empty 403, the refusal from glewlwyd's log" if ctx.kind == "glewlwyd" else "invalid_client"
        return (f"ES256 login, refresh, 3 expiries x 24 concurrent requests all 200 with one refresh each, "
                f"rotation to RS256 without restart, unknown key refused and the session kept until the key is put right "
                f"({how}, {refused} refusal(s))")
    finally:
        ag.stop()


def sc_client_secret_jwt(ctx):
    if not ctx.info.get("jwt_client_key_file") and not ctx.info.get("hs_client_id"):
        raise Skip("this server takes no client_secret_jwt here")
    # The main client's secret; glewlwyd has a client for this method alone, with that secret.
    client = ctx.info.get("hs_client_id") or ctx.info["client_id"]
    ag = assertion_ag(ctx, "csjwt", {"clientID": client, "clientSecretFile": ctx.secret_file,
                                     "clientAuthentication": "client_secret_jwt"})
    try:
        a0 = ctx.as_stats()
        ag.login(password_grant(ctx))
        check(ag.get("/api/csjwt/1").status == 200, "the API call after login failed")
        expiry_refresh(ctx, ag, "/api/csjwt/2")
        _, a1 = storm_expiries(ctx, ag, "/api/csjwt/storm", expiries=2)
        sent = assertions(a1, "client_secret_jwt") - assertions(a0, "client_secret_jwt")
        check(sent == 4, f"{sent} HS256 assertions for a login and three refreshes, wanted 4")
        return "HS256 login, refresh, 2 expiries x 24 concurrent requests all 200 with one refresh each"
    finally:
        ag.stop()


def mint_assertion(ctx, path, key, kid, lifetime):
    """A JWT like a projected service-account token, signed with `key` (PEM, RS256), for
    the private_key_jwt client, written to `path` as a token volume would hold it."""
    from joserfc import jwt as jose_jwt
    from joserfc.jwk import RSAKey
    now = int(time.time())
    claims = {"iss": ctx.info["jwt_client_id"], "sub": ctx.info["jwt_client_id"], "aud": ctx.info["token_endpoint"],
              "iat": now, "exp": now + lifetime, "jti": secrets.token_urlsafe(16)}
    token = jose_jwt.encode({"alg": "RS256", "kid": kid}, claims, RSAKey.import_key(key))
    with open(path + ".new", "w") as f:
        f.write(token + "\n")
    os.replace(path + ".new", path)


def assertion_signer(ctx, name):
    """A new RSA key registered as the assertion client's (the server reads its public half
    from a file at each verification): the private half, PEM. Skips where the server has
    no such file."""
    if not ctx.info.get("jwt_client_key_file"):
        # The checks that an expired assertion sends nothing count the server's token requests.
        raise Skip("needs a registered key read from a file and a count of the server's token requests")
    signer = os.path.join(ctx.dir, name)
    with open(ctx.info["jwt_client_key_file"], "wb") as f:
        f.write(openssl_key(signer, "rsa"))
    with open(signer) as f:
        return f.read()


def sc_client_assertion_file(ctx):
    key = assertion_signer(ctx, "issuer-key.pem")
    token = os.path.join(ctx.dir, "token")
    mint_assertion(ctx, token, key, "k1", 60)
    ag = assertion_ag(ctx, "asfile", {"clientID": ctx.info["jwt_client_id"],
                                      "clientAuthentication": "private_key_jwt", "clientAssertionFile": token})
    try:
        a0 = ctx.as_stats()
        ag.login({"grant_type": "password", "username": ctx.info["username"], "password": ctx.info["password"]})
        # The token volume is refreshed (each assertion is single-use at this AS, as jti says).
        mint_assertion(ctx, token, key, "k1", 60)
        _, a1 = expiry_refresh(ctx, ag, "/api/asfile/1")
        check(assertions(a1, "private_key_jwt") - assertions(a0, "private_key_jwt") == 2,
              "the login and the refresh should each have sent the file's assertion")
        # An expired token in the file: nothing is sent, the error says why, the session stays.
        mint_assertion(ctx, token, key, "k1", -10)
        before = ctx.as_stats()
        time.sleep(ctx.ttl + 1.5)
        ag.get("/api/asfile/2")
        check(ctx.as_stats().get("token_requests") == before.get("token_requests"),
              "a token request was sent with an expired assertion")
        logged = tail(ag.log_path, 40)
        check("client_credentials_unusable" in logged and "expired" in logged,
              f"AuthGate's log does not say why: {ag.last_log_line()}")
        with open(token) as f:
            check(f.read().strip().split(".")[2] not in logged, "the log quotes the assertion")
        check(ag.session().get("state") == "logged_in", "an unusable assertion file ended the session")
        ready = request("GET", ag.admin + "/readyz")
        check(ready.status == 503 and b"client_credentials_unusable" in ready.body,
              f"/readyz → {ready.status} {ready.body[:200]!r}, wanted 503 client_credentials_unusable")
        mint_assertion(ctx, token, key, "k1", 60)
        check(request("GET", ag.admin + "/readyz").status == 200, "/readyz did not recover with a renewed file")
        return ("file read per request, rotated without restart; expired → client_credentials_unusable "
                "(refresh and /readyz), nothing sent; renewed → ready")
    finally:
        ag.stop()


def sc_client_assertion_file_replicas(ctx):
    key = assertion_signer(ctx, "replicas-issuer-key.pem")
    work = os.path.join(ctx.dir, "client-assertion-file-replicas")
    url = urllib.parse.urlsplit(postgres_url())
    table = "interop_replicas_%s" % secrets.token_hex(4)
    store_key = base64.b64encode(secrets.token_bytes(32)).decode()
    files, ags = {}, []

    def mint(name, lifetime=60):
        # Each assertion is single-use at this AS (jti): a fresh one before each expiry, as
        # a kubelet refreshes a projected token.
        mint_assertion(ctx, files[name], key, "k1", lifetime)

    try:
        for name in ("a", "b"):
            d = os.path.join(work, name)
            os.makedirs(d, mode=0o700, exist_ok=True)
            files[name] = os.path.join(d, "token")
            mint(name)
            adjust = replica_store(d, url, table, store_key, urllib.parse.unquote(url.password or ""))
            config = authgate_config(ctx, f"asreplicas-{name}")
            config["authorization"] = {k: v for k, v in config["authorization"].items()
                                       if k not in ("clientSecretFile", "clientAuthentication", "clientID")}
            config["authorization"].update({"clientID": ctx.info["jwt_client_id"],
                                            "clientAuthentication": "private_key_jwt",
                                            "clientAssertionFile": files[name]})
            adjust(config)
            ags.append(AuthGate(ctx.binary, ctx.dir, f"asreplicas-{name}", config))
            ags[-1].start()
            ctx.extra_logs.append(ags[-1].log_path)
        a, b = ags
        a0 = ctx.as_stats()
        a.login(password_grant(ctx))
        check(wait_until(lambda: b.session().get("state") == "logged_in", 10),
              "replica b did not follow the login made on replica a")
        check(b.get("/api/asreplicas/b/1").status == 200, "replica b's first API call failed")
        # Two expiries, 24 requests each over both: one refresh per expiry, one assertion,
        # whichever replica's file it was.
        for e in range(2):
            mint("a")
            mint("b")
            storm_expiries(ctx, [a, b], f"/api/asreplicas/storm{e}", expiries=1)
        a1 = ctx.as_stats()
        sent = assertions(a1, "private_key_jwt") - assertions(a0, "private_key_jwt")
        check(sent == 3, f"{sent} client assertions for a login and two refreshes across both replicas, wanted 3")
        # Replica a's file expires; b's is fresh. b renews, a serves b's renewal, and only a's
        # /readyz says its credentials are unusable.
        mint("a", lifetime=-10)
        mint("b")
        time.sleep(ctx.ttl + 1.5)
        check(b.get("/api/asreplicas/b/2").status == 200, "replica b did not renew with its own file")
        check(wait_until(lambda: a.get("/api/asreplicas/a/2").status == 200, 10),
              "replica a did not serve the renewal replica b made")
        ready_a, ready_b = request("GET", a.admin + "/readyz"), request("GET", b.admin + "/readyz")
        check(ready_a.status == 503 and b"client_credentials_unusable" in ready_a.body,
              f"replica a's /readyz → {ready_a.status} {ready_a.body[:200]!r}, wanted 503 client_credentials_unusable")
        check(ready_b.status == 200, f"replica b's /readyz → {ready_b.status} {ready_b.body[:200]!r}")
        check(a.session().get("state") == "logged_in", "replica a's broken file ended the session")
        check(ctx.as_stats().get("reuse_detections") == a0.get("reuse_detections"), "the AS detected reuse")
        mint("a")
        check(request("GET", a.admin + "/readyz").status == 200, "replica a's /readyz did not recover with a renewed file")
        for ag in ags:
            with open(ag.log_path, errors="replace") as f:
                logged = f.read()
            for name in files:
                with open(files[name]) as f:
                    check(f.read().strip().split(".")[2] not in logged, f"{ag.name}'s log quotes an assertion")
        return ("two replicas on one PostgreSQL table, each reading its own assertion file: login on a, b follows; "
                "2 expiries x 24 requests over both all 200 with one refresh and one assertion each; a's file "
                "expired → b renews, a serves it, only a's /readyz 503 client_credentials_unusable; renewed → ready")
    finally:
        for ag in ags:
            ag.stop()


def certificates(stats, method):
    return (stats.get("client_certificates") or {}).get(method, 0)


def tls_rs(ctx, name):
    """A resource server over TLS that refuses a certificate-bound token shown without its
    certificate; returns (its info, a function reading its /stats)."""
    pki = ctx.info["mtls"]
    rsp = spawn([sys.executable, "-u", os.path.join(HERE, "resource_server.py"), "--port", "0",
                 "--as-info", os.path.join(ctx.dir, "as-info.json"), "--tls-pki", pki["dir"],
                 "--workers", "32", "--delay-min-ms", "0", "--delay-max-ms", "20"],
                os.path.join(ctx.dir, f"{name}-rs.log"), stdout=subprocess.PIPE)
    rs = read_json_line(rsp, 15)
    if rs is None:
        raise Fail(f"the TLS resource server did not start: {tail(os.path.join(ctx.dir, f'{name}-rs.log'), 3)}")
    tls = ssl.create_default_context(cafile=pki["ca"])

    def stats():
        conn = http.client.HTTPSConnection("127.0.0.1", rs["port"], timeout=5, context=tls)
        try:
            conn.request("GET", "/stats")
            return json.loads(conn.getresponse().read())
        finally:
            conn.close()
    return rs, stats


def certificate_ag(ctx, name, rs, authz, adjust=None):
    """An AuthGate that finds its endpoints by discovery (the mutual-TLS aliases, since it
    shows a certificate), trusts the test CA and routes /api to the TLS resource server.
    glewlwyd names its aliases under its plain external URL, not the TLS proxy's: there
    AuthGate is given the aliases the proxy serves as its endpoints. `adjust(config)` may
    change the configuration before the start."""
    config = authgate_config(ctx, name, discovery=True)
    pki = ctx.info["mtls"]
    if pki.get("token_endpoint"):
        where = {"tokenEndpoint": pki["token_endpoint"], "revocationEndpoint": pki["revocation_endpoint"]}
    else:
        where = {"issuer": ctx.info["issuer"]}
    config["authorization"] = {**where, **json.loads(json.dumps(KIND_AUTHORIZATION.get(ctx.kind, {}))), **authz}
    config["caFile"] = ctx.info["mtls"]["ca"]
    config["routes"] = [{"prefix": "/api", "upstream": rs["url"], "requiresAuthentication": True}]
    if adjust is not None:
        adjust(config)
    ag = AuthGate(ctx.binary, ctx.dir, name, config)
    ag.start()
    return ag


def mtls_work(ctx, name):
    """The server's mutual-TLS settings and a work directory of `name` for a scenario that
    needs them; Skip when the server has no mutual-TLS listener here."""
    if not ctx.info.get("mtls"):
        raise Skip(ctx.info.get("mtls_unavailable") or "this server has no mutual-TLS listener here")
    work = os.path.join(ctx.dir, name)
    os.makedirs(work, exist_ok=True)
    return ctx.info["mtls"], work


def sc_tls_client_auth(ctx):
    pki, work = mtls_work(ctx, "tls-client-auth")
    shown_cert, shown_key = os.path.join(work, "shown.pem"), os.path.join(work, "shown.key")
    first = mtls.issue(work, "first", pki["client_id"], pki["ca"], pki["ca_key"])
    mtls.install(*first, shown_cert, shown_key)
    rs, rs_stats = tls_rs(ctx, "tls-client-auth")
    ag = certificate_ag(ctx, "tlsauth", rs, {
        "clientID": pki["client_id"], "clientAuthentication": "tls_client_auth",
        "clientCertificateFile": shown_cert, "clientCertificateKeyFile": shown_key})
    try:
        a0, r0 = ctx.as_stats(), rs_stats()
        ag.login(password_grant(ctx))
        check(ag.get("/api/mtls/1").status == 200, "the API call after login failed")
        a1 = ctx.as_stats()
        check(certificates(a1, "tls_client_auth") - certificates(a0, "tls_client_auth") == 1,
              "the login was not authenticated by the client certificate (through the mtls alias)")
        with open(first[0]) as f:
            thumb = mtls.thumbprint(f.read())
        check((a1.get("bound_thumbprints") or {}).get(thumb, 0) >= 1, "the token was not bound to the certificate")
        expiry_refresh(ctx, ag, "/api/mtls/2")
        storm_expiries(ctx, ag, "/api/mtls/storm", expiries=2)
        r1 = rs_stats()
        check(r1["bound_accepted"] - r0["bound_accepted"] >= 50, "the API did not see the bound tokens with their certificate")
        check(r1["bound_refused"] == r0["bound_refused"], "the API saw a bound token without its certificate")
        # Renewed on disk (same subject, new key): the token endpoint and the API see the new
        # one from the next connection on; no client sees a 401 meanwhile.
        second = mtls.issue(work, "second", pki["client_id"], pki["ca"], pki["ca_key"])
        mtls.install(*second, shown_cert, shown_key)
        time.sleep(1.5)
        _, a2 = expiry_refresh(ctx, ag, "/api/mtls/3")
        with open(second[0]) as f:
            renewed = mtls.thumbprint(f.read())
        check((a2.get("bound_thumbprints") or {}).get(renewed, 0) >= 1,
              "the refresh after the renewal was not bound to the renewed certificate")
        check(ag.get("/api/mtls/4").status == 200, "the API refused the token bound to the renewed certificate")
        # A certificate for another subject: refused as invalid_client, the session kept.
        intruder = mtls.issue(work, "intruder", "intruder", pki["ca"], pki["ca_key"])
        mtls.install(*intruder, shown_cert, shown_key)
        f0 = ctx.as_stats()
        time.sleep(ctx.ttl + 1.5)
        ag.get("/api/mtls/5")
        refused = sum((ctx.as_stats().get("client_certificates_refused") or {}).values()) - \
            sum((f0.get("client_certificates_refused") or {}).values())
        check(refused >= 1, "the AS did not refuse a certificate for another subject")
        check(refusal_logged(ctx, ag), f"AuthGate's log does not show the refusal: {ag.last_log_line()}")
        check(ag.session().get("state") == "logged_in", "a refused certificate ended the session")
        mtls.install(*second, shown_cert, shown_key)
        check(wait_until(lambda: ag.get("/api/mtls/6").status == 200, 20),
              "the session did not recover once the right certificate was back")
        r2 = rs_stats()
        if pki.get("token_endpoint"):
            where, how = f"the mtls alias behind {pki.get('proxy', 'a TLS proxy')}", "an empty 403, glewlwyd's log"
        else:
            where, how = "the discovered mtls alias", "invalid_client"
        return (f"tls_client_auth through {where}: login, refresh, 2 expiries x 24 requests "
                f"all 200 with one refresh each, tokens bound to the certificate and checked by a TLS API "
                f"({r2['bound_accepted'] - r0['bound_accepted']} bound requests), renewal used without restart, "
                f"another subject refused ({how}) with the session kept until put right")
    finally:
        ag.stop()


def register_self_signed(ctx, pki, pair):
    """Makes the self-signed certificate of `pair` the one the server holds for the
    self_signed_tls_client_auth client, and trusted by the PKI's TLS listeners."""
    mtls.trust(pki, pair[0])  # the TLS listeners of the PKI (the API's; Authlib's too)
    register = getattr(ctx.mod, "register_client_certificate", None)
    if register is not None:  # glewlwyd: the client's jwks, and its TLS proxy's trust list
        with open(pair[0]) as f:
            register(ctx.info, pki["self_signed_client_id"], f.read())
    else:
        shutil.copy(pair[0], pki["registered"])


def sc_self_signed_tls_client_auth(ctx):
    pki, work = mtls_work(ctx, "self-signed")
    shown_cert, shown_key = os.path.join(work, "shown.pem"), os.path.join(work, "shown.key")

    def register(pair):
        register_self_signed(ctx, pki, pair)

    first = mtls.self_signed(work, "first", "authgate self-signed")
    register(first)
    mtls.install(*first, shown_cert, shown_key)
    rs, rs_stats = tls_rs(ctx, "self-signed")
    ag = certificate_ag(ctx, "selfsigned", rs, {
        "clientID": pki["self_signed_client_id"], "clientAuthentication": "self_signed_tls_client_auth",
        "clientCertificateFile": shown_cert, "clientCertificateKeyFile": shown_key})
    try:
        a0 = ctx.as_stats()
        ag.login(password_grant(ctx))
        check(ag.get("/api/self/1").status == 200, "the API call after login failed")
        expiry_refresh(ctx, ag, "/api/self/2")
        _, a1 = storm_expiries(ctx, ag, "/api/self/storm", expiries=2)
        sent = certificates(a1, "self_signed_tls_client_auth") - certificates(a0, "self_signed_tls_client_auth")
        check(sent == 4, f"{sent} certificate authentications for a login and three refreshes, wanted 4")
        # A new self-signed certificate, registered at the AS and put on disk together.
        # (Another subject: OpenSSL's trusted directory keeps the first certificate it found
        # under a subject's hash.)
        second = mtls.self_signed(work, "second", "authgate self-signed 2")
        register(second)
        mtls.install(*second, shown_cert, shown_key)
        time.sleep(1.5)
        expiry_refresh(ctx, ag, "/api/self/3")
        check(rs_stats()["bound_refused"] == 0, "the API saw a bound token without its certificate")
        return ("self_signed_tls_client_auth: login, refresh, 2 expiries x 24 requests all 200 with one refresh each, "
                "bound tokens checked by a TLS API, a new registered certificate used without restart")
    finally:
        ag.stop()


def replica_store(d, url, table, store_key, db_password):
    """Writes a replica's own copies of the store key and the database password into its
    directory `d`; returns the change to its configuration that makes it use the table
    `table` of the PostgreSQL at `url` (a split URL) with them."""
    for file, text in (("store.key", store_key), ("db-password", db_password)):
        fd = os.open(os.path.join(d, file), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(fd, (text + "\n").encode())
        os.close(fd)

    def adjust(config):
        config.pop("createKey", None)  # every replica must open the others' rows
        config["keyFile"] = os.path.join(d, "store.key")
        config["store"] = {"kind": "postgres", "url": "postgres://%s@%s:%d%s" % (
            url.username, url.hostname, url.port, url.path), "passwordFile": os.path.join(d, "db-password"),
            "tlsMode": "disable", "table": table}
    return adjust


class CertificateReplicas:
    """Two `authgate serve` replicas ("a", "b") sharing one session through one new table of
    the run's PostgreSQL, each with its own copies of the files a deployment mounts: the
    client certificate and its key, the store key and the database password. Both route /api
    to the TLS resource server `rs`."""

    def __init__(self, ctx, work, rs, pair, prefix, names=("a", "b"), client_id=None, method="tls_client_auth"):
        pki = ctx.info["mtls"]
        self.client_id = client_id or pki["client_id"]
        self.method = method
        url = urllib.parse.urlsplit(postgres_url())
        self.db_password = urllib.parse.unquote(url.password or "")
        self.store_key = base64.b64encode(secrets.token_bytes(32)).decode()
        self.table = "interop_replicas_%s" % secrets.token_hex(4)
        self.key_pem = open(pair[1]).read()
        self.dirs, self.ags = {}, []
        try:
            self._start(ctx, work, rs, pair, prefix, names, pki, url)
        except BaseException:
            self.stop()
            raise

    def _start(self, ctx, work, rs, pair, prefix, names, pki, url):
        for name in names:
            d = os.path.join(work, name)
            os.makedirs(d, mode=0o700, exist_ok=True)
            self.dirs[name] = d
            mtls.install(*pair, os.path.join(d, "client.pem"), os.path.join(d, "client.key"))
            adjust = replica_store(d, url, self.table, self.store_key, self.db_password)
            self.ags.append(certificate_ag(ctx, f"{prefix}-{name}", rs, {
                "clientID": self.client_id, "clientAuthentication": self.method,
                "clientCertificateFile": os.path.join(d, "client.pem"),
                "clientCertificateKeyFile": os.path.join(d, "client.key")}, adjust))
            ctx.extra_logs.append(self.ags[-1].log_path)  # their tails, should the scenario fail

    def install(self, name, pair):
        """Puts `pair` in replica `name`'s own certificate files."""
        d = self.dirs[name]
        mtls.install(*pair, os.path.join(d, "client.pem"), os.path.join(d, "client.key"))

    def stop(self):
        for ag in self.ags:
            ag.stop()

    def leaked(self, ctx):
        """What of the run's secrets a replica's log holds: the admin token, the database
        password, the store key, the certificate's private key, and at Authlib every access
        and refresh token it issued."""
        with open(ctx.admin_token_file) as f:
            named = {"the admin token": f.read().strip(), "the database password": self.db_password,
                     "the store key": self.store_key}
        # The PEM's lines after the first: the first is mostly the algorithm's header, the
        # same for every P-256 key; the others hold this key's private scalar.
        body = [l for l in self.key_pem.splitlines() if l and not l.startswith("-----")][1:]
        tokens = []
        if ctx.info.get("debug_families"):
            for fam in request("GET", ctx.info["debug_families"]).json()["families"]:
                tokens += [t for t in (fam.get("access_token"), fam.get("refresh_token")) if t]
        found = []
        for ag in self.ags:
            text = open(ag.log_path, errors="replace").read()
            found += [f"{what} in {ag.name}.log" for what, value in named.items() if value and value in text]
            found += [f"the certificate's private key in {ag.name}.log" for l in body if l in text][:1]
            found += [f"a token in {ag.name}.log" for t in tokens if t in text][:1]
        return found, len(tokens)


def sc_tls_client_auth_replicas(ctx):
    pki, work = mtls_work(ctx, "tls-client-auth-replicas")
    # One certificate for the client, copied into each replica's own files.
    shared = mtls.issue(work, "shared", pki["client_id"], pki["ca"], pki["ca_key"])
    with open(shared[0]) as f:
        thumb = mtls.thumbprint(f.read())
    rs, rs_stats = tls_rs(ctx, "tls-client-auth-replicas")
    replicas = CertificateReplicas(ctx, work, rs, shared, "replicas")
    a, b = replicas.ags
    try:
        a0, r0 = ctx.as_stats(), rs_stats()
        a.login(password_grant(ctx))
        check(a.get("/api/replicas/a/1").status == 200, "the API call on replica a after its login failed")
        a1 = ctx.as_stats()
        check(certificates(a1, "tls_client_auth") - certificates(a0, "tls_client_auth") == 1,
              "the login was not authenticated by the client certificate")
        check((a1.get("bound_thumbprints") or {}).get(thumb, 0) - (a0.get("bound_thumbprints") or {}).get(thumb, 0) == 1,
              "the login's token was not bound to the shared certificate")
        # Replica b serves the session replica a logged in, with no token of its own.
        replica_follows_login(ctx, b, "/api/replicas/b/1", a1)
        stores = [ag.session().get("store") or {} for ag in (a, b)]
        check(all(s.get("kind") == "postgres" for s in stores) and stores[0].get("replica") != stores[1].get("replica"),
              f"the replicas do not both serve the postgres store under names of their own: {stores}")
        # Two expiries, 24 concurrent requests each dealt to both replicas: one refresh per
        # expiry across both, every bound request accepted by the TLS API.
        s0 = ctx.as_stats()
        _, s1 = storm_expiries(ctx, [a, b], "/api/replicas/storm", expiries=2)
        check(certificates(s1, "tls_client_auth") - certificates(s0, "tls_client_auth") == 2,
              "the two refreshes were not each one certificate authentication")
        check((s1.get("bound_thumbprints") or {}).get(thumb, 0) - (s0.get("bound_thumbprints") or {}).get(thumb, 0) == 2,
              "the refreshed tokens were not bound to the shared certificate")
        r1 = rs_stats()
        accepted = r1["bound_accepted"] - r0["bound_accepted"]
        refused = r1["bound_refused"] - r0["bound_refused"]
        check(accepted >= 50, f"the TLS API accepted {accepted} bound requests, wanted 50 (2 + 2 x 24)")
        check(refused == 0, f"the TLS API refused {refused} bound request(s) shown without their certificate")
        check(ctx.as_stats().get("reuse_detections") == a0.get("reuse_detections"), "the AS detected reuse")
        leaks, tokens = replicas.leaked(ctx)
        check(not leaks, f"a secret in the logs: {', '.join(leaks)}")
        tokens = f", {tokens} issued tokens" if tokens else ""
        return (f"two replicas on one PostgreSQL table, each with its own copy of the certificate: login on a, "
                f"b serves the session with no request of its own, 2 expiries x 24 requests over both all 200 "
                f"with one refresh each (one certificate authentication, bound to the shared certificate), "
                f"{accepted} bound requests accepted by the TLS API, none refused, 0 reuse; no secret "
                f"(admin token, database password, store key, private key{tokens}) in either log")
    finally:
        replicas.stop()


def replica_follows_login(ctx, b, path, after_login):
    """Replica b follows the login another replica made, serves `path` with it, and asks
    the server for no token of its own (`after_login`: the server's counters then)."""
    check(wait_until(lambda: b.session().get("state") == "logged_in", 10),
          "replica b did not follow the login made on replica a")
    r = b.get(path)
    check(r.status == 200, f"replica b's first API call → {r.status} {r.body[:200]!r}")
    now = ctx.as_stats()
    check(logins_issued(now) == logins_issued(after_login) and delta(after_login, now, "refreshes") == 0,
          "replica b asked the server for tokens of its own instead of serving the shared session")


def sc_self_signed_tls_client_auth_replicas(ctx):
    pki, work = mtls_work(ctx, "self-signed-tls-client-auth-replicas")
    # One self-signed certificate, held by the server for the client, copied into each
    # replica's own files.
    shared = mtls.self_signed(work, "shared", "authgate self-signed replicas")
    register_self_signed(ctx, pki, shared)
    with open(shared[0]) as f:
        thumb = mtls.thumbprint(f.read())
    method = "self_signed_tls_client_auth"
    rs, rs_stats = tls_rs(ctx, "self-signed-tls-client-auth-replicas")
    replicas = CertificateReplicas(ctx, work, rs, shared, "ssreplicas", client_id=pki["self_signed_client_id"],
                                   method=method)
    a, b = replicas.ags
    try:
        a0, r0 = ctx.as_stats(), rs_stats()
        a.login(password_grant(ctx))
        check(a.get("/api/ssreplicas/a/1").status == 200, "the API call on replica a after its login failed")
        a1 = ctx.as_stats()
        check(certificates(a1, method) - certificates(a0, method) == 1,
              "the login was not authenticated by the self-signed certificate")
        replica_follows_login(ctx, b, "/api/ssreplicas/b/1", a1)
        # Two expiries, 24 concurrent requests each dealt to both replicas: one refresh per
        # expiry across both, each one certificate authentication.
        s0 = ctx.as_stats()
        _, s1 = storm_expiries(ctx, [a, b], "/api/ssreplicas/storm", expiries=2)
        sent = certificates(s1, method) - certificates(s0, method)
        check(sent == 2, f"{sent} certificate authentications for two expiries across both replicas, wanted 2")
        bound = (s1.get("bound_thumbprints") or {}).get(thumb, 0) - (s0.get("bound_thumbprints") or {}).get(thumb, 0)
        if s1.get("bound_thumbprints") is not None:
            check(bound == 2, f"{bound} refreshed tokens bound to the shared certificate, wanted 2")
        r1 = rs_stats()
        accepted = r1["bound_accepted"] - r0["bound_accepted"]
        refused = r1["bound_refused"] - r0["bound_refused"]
        check(accepted >= 50, f"the TLS API accepted {accepted} bound requests, wanted 50 (2 + 2 x 24)")
        check(refused == 0, f"the TLS API refused {refused} bound request(s) shown without their certificate")
        check(ctx.as_stats().get("reuse_detections") == a0.get("reuse_detections"), "the AS detected reuse")
        leaks, tokens = replicas.leaked(ctx)
        check(not leaks, f"a secret in the logs: {', '.join(leaks)}")
        return (f"two replicas on one PostgreSQL table, each with its own copy of the self-signed certificate: login "
                f"on a, b serves the session with no request of its own, 2 expiries x 24 requests over both all 200 "
                f"with one refresh each (one self_signed_tls_client_auth authentication each), {accepted} bound "
                f"requests accepted by the TLS API, none refused, 0 reuse; no secret in either log")
    finally:
        replicas.stop()


def problem_type(r):
    """The last part of a problem+json answer's `type` (and its `reason` when it has one)."""
    j = r.json() if isinstance(r.json(), dict) else {}
    kind = str(j.get("type") or "?").rsplit("/", 1)[-1]
    return f"{kind} ({j['reason']})" if j.get("reason") else kind


def sc_tls_client_auth_replicas_mismatch(ctx, seconds=8.0):
    """Replica b's files hold another certificate of the same subject, older than the one the
    shared tokens are bound to (a's). The token endpoint would accept it (tls_client_auth
    checks the subject) and bind new tokens to it, which the TLS API then refuses on a's
    connections: the binding would ping-pong between the replicas. The binding only moves
    forward, to a newer certificate: a keeps serving every request, refreshing as a replica
    alone does; b does not refresh (no token is ever bound to its certificate), answers 503 `client-certificate-outdated` with Retry-After
    and is not ready (`client_certificate_outdated`) until its certificate is put right."""
    pki, work = mtls_work(ctx, "tls-client-auth-replicas-mismatch")
    # b's certificate starts a second earlier than the shared one: older, whatever the
    # thumbprints (notBefore has a resolution of one second).
    other = mtls.issue(work, "other", pki["client_id"], pki["ca"], pki["ca_key"])
    time.sleep(1.1)
    shared = mtls.issue(work, "shared", pki["client_id"], pki["ca"], pki["ca_key"])
    with open(other[0]) as f:
        other_thumb = mtls.thumbprint(f.read())
    rs, rs_stats = tls_rs(ctx, "tls-client-auth-replicas-mismatch")
    replicas = CertificateReplicas(ctx, work, rs, shared, "mismatch")
    a, b = replicas.ags
    try:
        a.login(password_grant(ctx))
        check(a.get("/api/mismatch/a/0").status == 200, "the API call on replica a after its login failed")
        check(wait_until(lambda: b.session().get("state") == "logged_in", 10),
              "replica b did not follow the login made on replica a")
        check(b.get("/api/mismatch/b/0").status == 200, "replica b failed before its certificate was changed")
        replicas.install("b", other)
        time.sleep(1.5)  # certificate files are looked at again within a second
        a0, r0 = ctx.as_stats(), rs_stats()
        tally, retry_after, lock, stop = {}, set(), threading.Lock(), threading.Event()

        def load(ag, name):
            n = 0
            while not stop.is_set():
                n += 1
                try:
                    r = ag.get(f"/api/mismatch/{name}/{n}")
                    key = (name, r.status, problem_type(r) if r.status != 200 else "")
                    if r.status == 503:
                        with lock:
                            retry_after.add(r.header("retry-after"))
                except Exception as e:  # noqa: BLE001
                    key = (name, type(e).__name__, "")
                with lock:
                    tally[key] = tally.get(key, 0) + 1
                time.sleep(0.05)

        threads = [threading.Thread(target=load, args=(ag, name), daemon=True)
                   for ag, name in ((a, "a"), (a, "a"), (b, "b"), (b, "b"))]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        time.sleep(seconds)
        b_ready = request("GET", b.admin + "/readyz")
        a_ready = request("GET", a.admin + "/readyz")
        stop.set()
        for t in threads:
            t.join(30)
        elapsed = time.monotonic() - t0
        a1, r1 = ctx.as_stats(), rs_stats()
        refreshes, reuse = delta(a0, a1, "refreshes"), delta(a0, a1, "reuse_detections")
        refused = r1["bound_refused"] - r0["bound_refused"]
        bound_to_b = (a1.get("bound_thumbprints") or {}).get(other_thumb, 0) - \
            (a0.get("bound_thumbprints") or {}).get(other_thumb, 0)
        # Under steady load a session refreshes ahead of expiry, at half its tokens' life
        # here (the refresh lead is at most half the lifetime): what one replica alone does.
        healthy = int(elapsed // (ctx.ttl / 2)) + 1
        seen = ", ".join(f"{n} {s}{' ' + p if p else ''} x{c}" for (n, s, p), c in sorted(tally.items(), key=str))
        observed = (f"over {elapsed:.0f}s ({int(elapsed // ctx.ttl)} token lifetimes): {refreshes} refreshes "
                    f"(at most {healthy}: one per half lifetime, plus one), {bound_to_b} tokens bound to b's "
                    f"certificate, {reuse} reuse detections, {refused} requests b sent refused by the API; "
                    f"answers: {seen}; "
                    f"/readyz a {a_ready.status}, b {b_ready.status} {b_ready.body[:80]!r}")
        log("mismatch: " + observed)
        a_bad = sum(c for (n, s, _), c in tally.items() if n == "a" and s != 200)
        b_other = sum(c for (n, s, p), c in tally.items() if n == "b" and (s, p) != (503, "client-certificate-outdated"))
        wrong = [what for what, bad in (
            ("a replica exited", not all(ag.alive() for ag in (a, b))),
            ("the AS detected refresh-token reuse", reuse != 0),
            (f"{a_bad} requests on replica a, whose certificate is the tokens', were not answered 200", a_bad != 0),
            (f"{b_other} requests on replica b were not answered 503 client-certificate-outdated", b_other != 0),
            ("no 503 carried Retry-After", not retry_after or None in retry_after),
            ("replica b's /readyz did not say client_certificate_outdated",
             b_ready.status != 503 or b"client_certificate_outdated" not in b_ready.body),
            ("replica a was not ready", a_ready.status != 200),
            ("more refreshes than a single replica makes", refreshes > healthy),
            (f"{bound_to_b} tokens were bound to b's older certificate", bound_to_b != 0),
            ("the session ended", a.session().get("state") != "logged_in")) if bad]
        # The shared certificate back in b's files: both replicas serve the session again.
        replicas.install("b", shared)
        if not wait_until(lambda: all(ag.get("/api/mismatch/back").status == 200 for ag in (a, b))
                          and request("GET", b.admin + "/readyz").status == 200, 40, 0.5):
            wrong.append("the replicas did not recover once the shared certificate was back in b's files")
        check(not wrong, f"{'; '.join(wrong)}: {observed}")
        return (f"replica b with an older certificate of the same subject: {observed}; a served throughout, "
                f"b answered client-certificate-outdated and was not ready, then recovered with the shared one")
    finally:
        replicas.stop()


def dpop_resource_server(ctx, name, nonce_seconds=None):
    """A resource server that checks DPoP proofs with joserfc (and asks for a nonce that
    changes every `nonce_seconds`, when given); its URL and a function reading its counters."""
    args = [sys.executable, "-u", os.path.join(HERE, "resource_server.py"), "--port", "0",
            "--as-info", os.path.join(ctx.dir, "as-info.json"), "--echo-token",
            "--workers", "32", "--delay-min-ms", "0", "--delay-max-ms", "20"]
    if nonce_seconds:
        args += ["--dpop-nonce-seconds", str(nonce_seconds)]
    rsp = spawn(args, os.path.join(ctx.dir, f"{name}.log"), stdout=subprocess.PIPE)
    rs = read_json_line(rsp, 15)
    check(rs is not None, f"the DPoP resource server did not start: {tail(os.path.join(ctx.dir, name + '.log'), 3)}")
    return rs, lambda: request("GET", rs["url"] + "/stats", timeout=5).json()


NONCE_REFUSAL = "the proof must carry the server's nonce"


def dpop_as(ctx):
    """Raises Skip unless the AS binds tokens to a DPoP key here: Authlib's test server (its
    nonce set through a debug endpoint) or glewlwyd (its own nonces, one per client)."""
    if not ctx.info.get("dpop_nonce") and not ctx.info.get("dpop"):
        raise Skip("this server issues no DPoP-bound tokens here")


def set_as_nonce(ctx, nonce):
    """Makes Authlib's token endpoint want `nonce` (None: none); glewlwyd makes its own."""
    if ctx.info.get("dpop_nonce"):
        r = request("POST", ctx.info["dpop_nonce"], body=json.dumps({"nonce": nonce}),
                    headers={"Content-Type": "application/json"})
        check(r.status == 200, f"setting the AS's DPoP nonce → {r.status}")


def jwt_cnf_jkt(token):
    """The `cnf.jkt` of an access token that is a JWT (glewlwyd's), or None (opaque)."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        return (json.loads(base64.urlsafe_b64decode(parts[1] + "==")).get("cnf") or {}).get("jkt")
    except ValueError:
        return None


def as_proofs_refused(a0, a1):
    """The AS's proof refusals between two counters, by reason, but for nonce requests."""
    refused = {k: v - (a0.get("dpop_refused") or {}).get(k, 0) for k, v in (a1.get("dpop_refused") or {}).items()}
    refused = {k: v for k, v in refused.items() if v and k != NONCE_REFUSAL}
    reused = delta(a0, a1, "dpop_jti_reused")
    if reused:
        refused["jti used before"] = reused
    return refused


def sc_dpop(ctx):
    dpop_as(ctx)
    from joserfc.jwk import ECKey
    key = os.path.join(ctx.dir, "dpop-key.pem")
    public = openssl_key(key, "ec")
    jkt = ECKey.import_key(public.decode()).thumbprint()
    # An API whose nonce changes every 4 s, and an AS that wants one too.
    rs, rs_stats = dpop_resource_server(ctx, "dpop-rs", nonce_seconds=4)
    set_as_nonce(ctx, "as-nonce-1")
    config = authgate_config(ctx, "dpop")
    config["authorization"]["dpop"] = {"keyFile": key}
    config["routes"] = [{"prefix": "/api", "upstream": rs["url"], "requiresAuthentication": True}]
    if ctx.info.get("userinfo_endpoint"):  # glewlwyd's checks the proof too (ath, its nonce)
        config["userInfo"] = {"url": ctx.info["userinfo_endpoint"]}
    ag = AuthGate(ctx.binary, ctx.dir, "dpop", config)
    ag.start()
    try:
        a0, r0 = ctx.as_stats(), rs_stats()
        ag.login(password_grant(ctx))
        if "userInfo" in config:
            check(wait_until(lambda: ag.session().get("registration") == "signed_up", 10),
                  f"the user-info call with a proof did not succeed: {ag.session().get('registration')!r}")
            check(delta(a0, ctx.as_stats(), "dpop_userinfo_proofs") == 1, "the AS did not check the user-info proof")
        first = ag.get("/api/dpop/1")
        check(first.status == 200, f"the API call after login → {first.status} {first.body[:300]!r}")
        token = first.json()["access_token"]
        bound = (ctx.introspect(token, "access_token").get("cnf") or {}).get("jkt")
        check(bound == jkt, f"the access token is bound to {bound!r}, not to the key's thumbprint {jkt!r}")
        check(jwt_cnf_jkt(token) in (None, jkt), f"the access token's own cnf.jkt is {jwt_cnf_jkt(token)!r}")
        bearer = request("GET", rs["url"] + "/api/dpop/2", headers={"Authorization": "Bearer " + token})
        check(bearer.status == 401, f"the bound token sent as a bearer token → {bearer.status}, wanted 401")
        r0 = rs_stats()  # from here on, every refusal would be AuthGate's
        a1 = ctx.as_stats()
        if ctx.info.get("dpop_nonce"):
            asks = a1["dpop_refused"].get(NONCE_REFUSAL, 0) - a0["dpop_refused"].get(NONCE_REFUSAL, 0)
            check(asks == 1, f"the AS asked for its nonce {asks} times, wanted once")
            as_nonce = "AS nonce followed once"
        else:  # glewlwyd refuses a proof without its nonce; it logs no count of them
            n0 = ctx.mod.dpop_nonce(ctx.info)
            check(n0 is not None, "the AS made no DPoP nonce for the client")
        expiry_refresh(ctx, ag, "/api/dpop/3")
        _, a2 = storm_expiries(ctx, ag, "/api/dpop/storm", expiries=3)
        r2 = rs_stats()
        refused = {k: v - r0["dpop_refused"].get(k, 0) for k, v in r2["dpop_refused"].items()}
        nonce_asks = refused.pop(NONCE_REFUSAL, 0)
        refused = {k: v for k, v in refused.items() if v}
        check(not refused, f"the API refused proofs: {refused}")
        check(nonce_asks >= 1, "the API's rotating nonce was never asked for")
        check(not as_proofs_refused(a0, a2), f"the AS refused proofs: {as_proofs_refused(a0, a2)}")
        accepted = r2["dpop_accepted"] - r0["dpop_accepted"]
        proofs = a2["dpop_proofs"] - a0["dpop_proofs"]
        check(proofs == a2["dpop_bound"] - a0["dpop_bound"], "a token request with a proof got an unbound token")
        if not ctx.info.get("dpop_nonce"):
            keys = {k: v - (a0.get("dpop_bound_keys") or {}).get(k, 0) for k, v in a2["dpop_bound_keys"].items()}
            check({k for k, v in keys.items() if v} == {jkt}, f"refresh tokens bound to other keys: {keys}")
            n1 = ctx.mod.dpop_nonce(ctx.info)
            check(n1["nonce"] != n0["nonce"], f"the AS's nonce did not change in {proofs} proofs")
            as_nonce = (f"{proofs} proofs accepted by the AS under its nonce, which changed every "
                        f"{ctx.info['dpop']['nonce_uses'] + 1}, with no proof refused")
        return (f"ES256 key, tokens bound to its thumbprint (cnf.jkt), bearer use refused; login, refresh, "
                f"3 expiries x 24 requests all 200 with one refresh each; {accepted} proofs accepted by the API, "
                f"0 refused, {nonce_asks} nonce request(s) followed without a refresh; {as_nonce}"
                + ("; user-info call proved to the AS" if "userInfo" in config else ""))
    finally:
        ag.stop()
        set_as_nonce(ctx, None)


def sc_dpop_key_life(ctx):
    """A generated key sealed with the tokens survives a restart and ends with the session;
    a key file that changes under a session ends it (key_changed), and the next login proves
    the new key."""
    dpop_as(ctx)
    from joserfc.jwk import ECKey
    rs, rs_stats = dpop_resource_server(ctx, "dpop-life-rs")
    password = password_grant(ctx)

    def bound(ag, path):
        r = ag.get(path)
        check(r.status == 200, f"{path} → {r.status} {r.body[:300]!r}")
        return (ctx.introspect(r.json()["access_token"], "access_token").get("cnf") or {}).get("jkt")

    config = authgate_config(ctx, "dpop-generated")
    config["authorization"]["dpop"] = {"generate": True}
    config["routes"] = [{"prefix": "/api", "upstream": rs["url"], "requiresAuthentication": True}]
    ag = AuthGate(ctx.binary, ctx.dir, "dpop-generated", config)
    ag.start()
    try:
        announced = ag.session().get("dpop_jkt")
        check(announced, "GET /auth/session names no dpop_jkt before the login")
        ag.login(password)
        check(bound(ag, "/api/gen/1") == announced, "the tokens are not bound to the announced key")
        state = open_state_files(config["stateDirectory"])
        check(b"PRIVATE KEY" not in state, "the generated key is readable in the state directory")
        ag.stop()
        ag.start()
        r0 = rs_stats()
        check(bound(ag, "/api/gen/2") == announced, "after a restart the tokens are proved with another key")
        expiry_refresh(ctx, ag, "/api/gen/3")
        check(bound(ag, "/api/gen/4") == announced, "the refreshed tokens are bound to another key")
        refused = {k: v - r0["dpop_refused"].get(k, 0) for k, v in rs_stats()["dpop_refused"].items()}
        check(not any(refused.values()), f"the API refused proofs after the restart: {refused}")
        r = ag.admin_call("POST", "/auth/logout")
        check(r.status == 200, f"logout → {r.status}")
        ag.login(password)
        second = bound(ag, "/api/gen/5")
        check(second and second != announced, "the session after a logout proves the same key")
    finally:
        ag.stop()

    key = os.path.join(ctx.dir, "dpop-life-key.pem")
    first = ECKey.import_key(openssl_key(key, "ec").decode()).thumbprint()
    config = authgate_config(ctx, "dpop-key-file")
    config["authorization"]["dpop"] = {"keyFile": key}
    config["routes"] = [{"prefix": "/api", "upstream": rs["url"], "requiresAuthentication": True}]
    ag = AuthGate(ctx.binary, ctx.dir, "dpop-key-file", config)
    ag.start()
    try:
        ag.login(password)
        check(bound(ag, "/api/file/1") == first, "the tokens are not bound to the key file's key")
        os.replace(key, key + ".old")
        renewed = ECKey.import_key(openssl_key(key, "ec").decode()).thumbprint()
        a0 = ctx.as_stats()
        time.sleep(ctx.ttl + 1.5)
        r = ag.get("/api/file/2")
        check(r.status == 401 and "key_changed" in r.body.decode(errors="replace"),
              f"after the key file changed and the token expired → {r.status} {r.body[:300]!r}, wanted 401 key_changed")
        check(delta(a0, ctx.as_stats(), "refreshes") == 0, "a refresh was sent with a key the tokens are not bound to")
        s = ag.session()
        check(s.get("state") == "logged_out" and s.get("dpop_jkt") == renewed,
              f"after key_changed: state {s.get('state')!r}, next key {s.get('dpop_jkt')!r}")
        ag.login(password)
        check(bound(ag, "/api/file/3") == renewed, "the next login does not prove the new key")
    finally:
        ag.stop()
    return ("generated key: announced as dpop_jkt, bound (cnf.jkt), sealed in the store, proved again after a "
            "restart and a refresh, a new key after a logout; key file replaced: the session ends key_changed at "
            "expiry without a refresh, and the next login proves the new key")


def open_state_files(directory):
    """The bytes of every file in `directory`, concatenated."""
    out = b""
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if os.path.isfile(path):
            with open(path, "rb") as f:
                out += f.read()
    return out


# --------------------------------------------------------------------------------------
# Grants that need no person: JWT bearer (RFC 7523 §2.1), token exchange (RFC 8693),
# authorization.autoLogin.
# --------------------------------------------------------------------------------------

def workload_token(ctx, path, key_pem, lifetime=300):
    """A workload JWT (as a projected service-account token) signed with `key_pem`, written
    to `path` atomically, as a token volume is updated."""
    import authlib_grants
    token = authlib_grants.sign(key_pem, authlib_grants.workload_claims(ctx.info["token_endpoint"], lifetime))
    with open(path + ".new", "w") as f:
        f.write(token + "\n")
    os.replace(path + ".new", path)
    return token


def workload_keys(ctx):
    """A fresh workload issuer key registered at the AS; returns its private PEM."""
    key = os.path.join(ctx.dir, "workload-signer.pem")
    public = openssl_key(key, "ec")
    with open(ctx.info["workload_key_file"], "wb") as f:
        f.write(public)
    with open(key, "rb") as f:
        return f.read()


def issued(stats, grant):
    return ((stats or {}).get("tokens_issued") or {}).get(grant, 0)


def renewal_storm(ctx, ag, path, grant, expiries=3, n=24):
    """`expiries` times: wait out the token, then `n` concurrent requests, all 200, with
    exactly one new grant per expiry (no refresh token: the grant is presented again)."""
    a0 = ctx.as_stats()
    for e in range(expiries):
        time.sleep(ctx.ttl + 1.5)
        results = [None] * n

        def one(i):
            try:
                results[i] = ag.get(f"{path}/{e}/{i}").status
            except Exception as x:  # noqa: BLE001
                results[i] = repr(x)

        threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        bad = [r for r in results if r != 200]
        check(not bad, f"expiry {e + 1}: {len(bad)}/{n} requests failed (client 401s included), e.g. {bad[:3]}")
    a1 = ctx.as_stats()
    renewed = issued(a1, grant) - issued(a0, grant)
    check(renewed == expiries, f"AS issued {renewed} tokens by {grant} for {expiries} expiries, wanted one each")
    check(delta(a0, a1, "refreshes") == 0, "a refresh_token grant was used, though none was issued")
    return a1


def grant_ag(ctx, name, authz):
    config = authgate_config(ctx, name)
    config["authorization"].update(authz)
    ag = AuthGate(ctx.binary, ctx.dir, name, config)
    ag.start()
    return ag


def refused_since(a0, a1):
    r0, r1 = (a0.get("grant_refusals") or {}), (a1.get("grant_refusals") or {})
    return {k: v - r0.get(k, 0) for k, v in r1.items() if v - r0.get(k, 0) > 0}


def sc_jwt_bearer(ctx):
    if not ctx.info.get("workload_key_file"):
        raise Skip("this server has no JWT bearer grant here")
    from authlib_grants import JWT_BEARER
    key = workload_keys(ctx)
    assertion = os.path.join(ctx.dir, "jwtb-assertion")
    workload_token(ctx, assertion, key)
    ag = grant_ag(ctx, "jwtb", {"jwtBearer": {"assertionFile": assertion, "scope": ctx.info["scope"]}})
    try:
        a0 = ctx.as_stats()
        # The command line, as an operator would: `authgate login --grant jwt-bearer`.
        out = subprocess.run([ctx.binary, "login", "--admin", ag.admin, "--token-file", ctx.admin_token_file,
                              "--grant", "jwt-bearer"], capture_output=True, text=True, timeout=30)
        check(out.returncode == 0, f"authgate login --grant jwt-bearer exited {out.returncode}: {out.stdout[:300]}")
        check(ag.get("/api/jwtb/1").status == 200, "the API call after login failed")
        check(issued(ctx.as_stats(), JWT_BEARER) - issued(a0, JWT_BEARER) == 1, "the AS did not issue by jwt-bearer")
        renewal_storm(ctx, ag, "/api/jwtb/storm", JWT_BEARER)
        # The issuer's key rotates and the token volume with it: the next renewal reads the
        # new file (the old assertion no longer verifies), with no restart.
        key = workload_keys(ctx)
        workload_token(ctx, assertion, key)
        renewal_storm(ctx, ag, "/api/jwtb/rotated", JWT_BEARER, expiries=1)
        # Signed by a key the AS does not know: refused with its precise error, logged, and
        # the session keeps serving while its token lasts.
        a1 = ctx.as_stats()
        stranger = os.path.join(ctx.dir, "stranger.pem")
        openssl_key(stranger, "ec")
        with open(stranger, "rb") as f:
            workload_token(ctx, assertion, f.read())
        time.sleep(ctx.ttl + 1.5)
        ag.get("/api/jwtb/2")
        refusals = refused_since(a1, ctx.as_stats())
        check(refusals, "the AS did not refuse an assertion signed with an unknown key")
        check(wait_until(lambda: "invalid_grant" in tail(ag.log_path, 40), 5),
              f"AuthGate's log does not name invalid_grant: {ag.last_log_line()}")
        check(ag.session().get("state") == "logged_in", "a refused assertion ended the session")
        # Expired in the file: nothing sent, the reason logged, /readyz says so.
        workload_token(ctx, assertion, key, lifetime=-10)
        before = ctx.as_stats()
        time.sleep(1.5)
        ag.get("/api/jwtb/3")
        check(ctx.as_stats().get("token_requests") == before.get("token_requests"),
              "a token request was sent with an expired assertion")
        logged = tail(ag.log_path, 40)
        check("client_credentials_unusable" in logged and "expired" in logged,
              f"AuthGate's log does not say why: {ag.last_log_line()}")
        ready = request("GET", ag.admin + "/readyz")
        check(ready.status == 503 and b"client_credentials_unusable" in ready.body,
              f"/readyz → {ready.status} {ready.body[:200]!r}")
        with open(assertion) as f:
            check(f.read().strip().split(".")[2] not in tail(ag.log_path, 200), "the log quotes the assertion")
        workload_token(ctx, assertion, key)
        check(wait_until(lambda: ag.get("/api/jwtb/4").status == 200, 20),
              "the session did not recover once the file was put right")
        return (f"login by `authgate login --grant jwt-bearer`, 3 expiries x 24 "
                f"concurrent requests all 200 with one new grant each, key+file rotated without restart, unknown key "
                f"refused ({list(refusals)[0]!r}) with the session kept, expired file → nothing sent, "
                f"client_credentials_unusable; put right → 200")
    finally:
        ag.stop()


def sc_token_exchange(ctx):
    if not ctx.info.get("workload_key_file"):
        raise Skip("this server has no token exchange here")
    from authlib_grants import TOKEN_EXCHANGE, ACCESS_TOKEN_TYPE
    key = workload_keys(ctx)
    subject = os.path.join(ctx.dir, "tx-subject")
    workload_token(ctx, subject, key)
    # Two audiences and two resources: each is a form field of its own (RFC 8693 §2.1).
    exchange = {"subjectTokenFile": subject, "audience": ctx.info["exchange_audiences"][:2],
                "resource": ctx.info["exchange_resources"][:2], "scope": ctx.info["scope"],
                "requestedTokenType": ACCESS_TOKEN_TYPE}
    ag = grant_ag(ctx, "tx", {"tokenExchange": exchange})
    try:
        a0 = ctx.as_stats()
        s = ag.login({"grant_type": TOKEN_EXCHANGE})
        fields = ctx.as_stats().get("exchange_fields")
        wanted = ["audience", "audience", "grant_type", "requested_token_type", "resource", "resource", "scope",
                  "subject_token", "subject_token_type"]
        check(fields == wanted, f"the exchange sent {fields}, wanted {wanted}")
        check(issued(ctx.as_stats(), TOKEN_EXCHANGE) - issued(a0, TOKEN_EXCHANGE) == 1, "no exchange at the AS")
        check(s.get("issued_token_type") == ACCESS_TOKEN_TYPE,
              f"the session does not name what the exchange issued: {s.get('issued_token_type')!r}")
        check(ag.get("/api/tx/1").status == 200, "the API call after the exchange failed")
        renewal_storm(ctx, ag, "/api/tx/storm", TOKEN_EXCHANGE)
        key = workload_keys(ctx)
        workload_token(ctx, subject, key)
        renewal_storm(ctx, ag, "/api/tx/rotated", TOKEN_EXCHANGE, expiries=1)
        # A target the AS does not serve: invalid_target, named in the login's answer.
        bad = grant_ag(ctx, "tx-bad", {"tokenExchange": {**exchange, "audience": [exchange["audience"][0], "payroll"]}})
        try:
            r = bad.admin_call("POST", "/auth/login", {"grant_type": TOKEN_EXCHANGE})
            check(r.status >= 400 and b"invalid_target" in r.body, f"login to another audience → {r.status} {r.body[:200]!r}")
        finally:
            bad.stop()
        # A subject token signed by a stranger: invalid_request (RFC 8693 §2.2.2), the
        # session kept while its token lasts.
        a1 = ctx.as_stats()
        stranger = os.path.join(ctx.dir, "stranger-tx.pem")
        openssl_key(stranger, "ec")
        with open(stranger, "rb") as f:
            workload_token(ctx, subject, f.read())
        time.sleep(ctx.ttl + 1.5)
        ag.get("/api/tx/2")
        refusals = refused_since(a1, ctx.as_stats())
        check(any(k.startswith("subject_token") for k in refusals), f"the AS refused {refusals}")
        check(wait_until(lambda: "invalid_request" in tail(ag.log_path, 40), 5),
              f"AuthGate's log does not name invalid_request: {ag.last_log_line()}")
        check(ag.session().get("state") == "logged_in", "a refused subject token ended the session")
        workload_token(ctx, subject, key)
        check(wait_until(lambda: ag.get("/api/tx/3").status == 200, 20), "no recovery once the file was put right")
        return (f"exchange sent every RFC 8693 field {wanted} (two audiences, two resources), answered with "
                f"issued_token_type, shown by GET /auth/session; 3 expiries x 24 "
                f"concurrent requests all 200, exchanged again each time (no refresh token); rotated without restart; "
                f"invalid_target and a stranger's subject token ({list(refusals)[0]!r}) refused precisely")
    finally:
        ag.stop()


def sc_auto_login(ctx):
    if not ctx.info.get("workload_key_file"):
        raise Skip("this server has no token exchange here")
    from authlib_grants import TOKEN_EXCHANGE
    key = workload_keys(ctx)
    subject = os.path.join(ctx.dir, "auto-subject")
    workload_token(ctx, subject, key)
    a0 = ctx.as_stats()
    # start() returns once /readyz says ready: that is, once the session logged itself in.
    ag = grant_ag(ctx, "auto", {"tokenExchange": {"subjectTokenFile": subject},
                                "autoLogin": {"grant": "token-exchange"}})
    try:
        check(ag.session().get("state") == "logged_in", "autoLogin did not log in at start")
        check(issued(ctx.as_stats(), TOKEN_EXCHANGE) - issued(a0, TOKEN_EXCHANGE) == 1, "no exchange at start")
        check(ag.get("/api/auto/1").status == 200, "the API call with the auto login failed")
        renewal_storm(ctx, ag, "/api/auto/storm", TOKEN_EXCHANGE, expiries=1)
        # An operator's logout stays: no new login, /readyz not ready.
        check(ag.admin_call("POST", "/auth/logout").status in (200, 204), "logout failed")
        time.sleep(2)
        check(ag.session().get("state") == "logged_out", "autoLogin logged back in after an operator's logout")
        ready = request("GET", ag.admin + "/readyz")
        check(ready.status == 503 and b"not_logged_in" in ready.body, f"/readyz → {ready.status} {ready.body[:200]!r}")
        # A restart logs in again.
        ag.stop()
        ag.start()
        check(ag.session().get("state") == "logged_in", "autoLogin did not log in after a restart")
        return ("logged in at start before /readyz said ready, renewed by exchange, stayed out after an operator's "
                "logout (/readyz not_logged_in), logged in again at restart")
    finally:
        ag.stop()


def device_login(ag, scope=None):
    """POST /auth/login with the device grant: the 202 answer's document."""
    body = {"grant_type": DEVICE_CODE_GRANT}
    if scope:
        body["scope"] = scope
    r = ag.admin_call("POST", "/auth/login", body)
    check(r.status == 202, f"device login → {r.status} {r.body[:300]!r}")
    return r.json() or {}


def device_decision(ctx, user_code, approve=True):
    if hasattr(ctx.mod, "approve_device"):
        # glewlwyd: its own verification page, with a user session and consent.
        check(approve, "declining is not driven at this server")
        ctx.mod.approve_device(ctx.info, user_code)
        return
    r = request("POST", ctx.info["device_decision"], body=json.dumps(
        {"user_code": user_code, "username": ctx.info["username"], "password": ctx.info["password"],
         "approve": approve}), headers={"Content-Type": "application/json"})
    check(r.status == 200, f"the decision on {user_code} → {r.status} {r.body[:200]!r}")


def device_settings(ctx, **settings):
    if not ctx.info.get("device_settings"):
        return
    request("POST", ctx.info["device_settings"], body=json.dumps(settings), headers={"Content-Type": "application/json"})


DEVICE_CODE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"


def read_line(stream, timeout):
    """One line of a child's output, or "" when none comes within `timeout` seconds."""
    import select
    ready, _, _ = select.select([stream], [], [], timeout)
    return stream.readline() if ready else ""


def sc_device_code(ctx):
    # Authlib: a decision route and counters; glewlwyd: its own verification page (a user
    # session through its auth API, consent, then the device page), and no poll counters.
    full = bool(ctx.info.get("device_decision"))
    if not full and not hasattr(ctx.mod, "approve_device"):
        raise Skip("this server's device verification is not driven here")
    config = authgate_config(ctx, "device", discovery=True)
    ag = AuthGate(ctx.binary, ctx.dir, "device", config)
    ag.start()
    cli = None
    try:
        a0 = ctx.as_stats()
        # The command line, as a person at a headless box would: it prints where to go and the
        # code, and waits.
        cli = subprocess.Popen([ctx.binary, "login", "--admin", ag.admin, "--token-file", ctx.admin_token_file,
                                "--grant", "device", "--scope", ctx.info["scope"]],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = read_line(cli.stdout, 20)
        m = re.search(r"enter the code (\S+)", first)
        check(m is not None, f"authgate login --grant device printed {first!r}")
        user_code = m.group(1)
        pending = ag.session().get("device_authorization") or {}
        check(pending.get("user_code") == user_code, f"the session shows {pending!r}")
        check(pending.get("verification_uri") == ctx.info["issuer"] + "/device",
              f"verification_uri {pending.get('verification_uri')!r}")
        second = ag.admin_call("POST", "/auth/login", {"grant_type": DEVICE_CODE_GRANT})
        check(second.status == 409 and (second.json() or {}).get("user_code") == user_code,
              f"a second device login → {second.status} {second.body[:200]!r}")
        if full:
            check(wait_until(lambda: (ctx.as_stats().get("device_polls") or {}).get("authorization_pending", 0) >= 1,
                             15), "AuthGate never polled")
        device_decision(ctx, user_code)
        out, err = cli.communicate(timeout=30)
        check(cli.returncode == 0, f"authgate login --grant device exited {cli.returncode}: {out[-300:]!r} {err[-300:]!r}")
        check("logged in" in out, f"the command said {out[-200:]!r}")
        check(ag.session().get("state") == "logged_in", "the session is not logged in after the approval")
        check(ag.get("/api/device/1").status == 200, "the API call after the device login failed")
        if not full:
            expiry_refresh(ctx, ag, "/api/device/2")
            logged = open(ag.log_path, errors="replace").read()
            check("device_code" not in logged.replace("grant-type:device_code", ""), "the log names a device_code")
            return (f"discovered endpoint; `authgate login --grant device` printed {user_code}, a second login 409, "
                    f"approved at the server's own verification page (user session, consent), exit 0, API 200, "
                    f"refresh at expiry (declining, expiry and poll counters are checked at Authlib)")
        a1 = ctx.as_stats()
        polls = {k: v - (a0.get("device_polls") or {}).get(k, 0) for k, v in (a1.get("device_polls") or {}).items()}
        check(polls.get("issued") == 1, f"polls by answer {polls}")
        check(polls.get("slow_down", 0) == 0, f"AuthGate polled sooner than the interval: {polls}")
        check(a1.get("device_fields") == ["device_code", "grant_type"],
              f"the device token request carried {a1.get('device_fields')} (client authenticated with Basic)")
        expiry_refresh(ctx, ag, "/api/device/2")

        # Declined: the waiting login ends with access_denied; the session it would have
        # replaced keeps serving.
        declined = device_login(ag)
        device_decision(ctx, declined["user_code"], approve=False)
        check(wait_until(lambda: "device_authorization" not in ag.session(), 15), "the declined login still waits")
        check(wait_until(lambda: "access_denied" in tail(ag.log_path, 40), 5), "the log does not say access_denied")
        check(ag.get("/api/device/3").status == 200, "a declined device login ended the session")

        # Expired: codes living 3 s with a 2 s interval end after one poll, nothing approved.
        device_settings(ctx, expires_in=3, interval=2)
        expired = device_login(ag)
        check(expired.get("expires_in") == 3, f"expires_in {expired.get('expires_in')!r}")
        check(wait_until(lambda: "device_authorization" not in ag.session(), 15), "the expired login still waits")
        check("expired_token" in tail(ag.log_path, 40), "the log does not say expired_token")
        device_settings(ctx, expires_in=600, interval=2)

        # A logout cancels the waiting login: an approval after it logs nobody in.
        cancelled = device_login(ag)
        check(ag.admin_call("POST", "/auth/logout").status == 200, "logout failed")
        check("device_authorization" not in ag.session(), "the logout left the device login waiting")
        device_decision(ctx, cancelled["user_code"])
        issued_before = (ctx.as_stats().get("device_polls") or {}).get("issued", 0)
        time.sleep(3)
        check((ctx.as_stats().get("device_polls") or {}).get("issued", 0) == issued_before,
              "AuthGate polled after the logout")
        check(ag.session().get("state") == "logged_out", "an approval after the logout logged the session in")

        logged = open(ag.log_path, errors="replace").read()
        for code in ctx.as_stats().get("device_codes") or []:
            check(code not in logged, "AuthGate's log holds a device code")
        return (f"discovered endpoint; `authgate login --grant device` printed {user_code}, a second login 409, "
                f"approved after {polls.get('authorization_pending', 0)} pending poll(s) with no slow_down, exit 0, "
                f"API 200, refresh at expiry; declined → access_denied with the session kept; 3 s codes → "
                f"expired_token; logout cancelled a waiting login; no device code in the log")
    finally:
        if cli is not None and cli.poll() is None:
            cli.kill()
        device_settings(ctx, expires_in=600, interval=2)
        ag.stop()


SCENARIOS = [
    ("password", sc_password),
    ("client-credentials", sc_client_credentials),
    ("authorization-code-pkce", sc_authorization_code),
    ("refresh-on-expiry", sc_refresh_on_expiry),
    ("refresh-after-401", sc_refresh_after_401),
    ("refresh-storm", sc_refresh_storm),
    ("logout-revokes", sc_logout_revokes),
    ("refresh-rejected-logs-out", sc_refresh_rejected),
    ("restart-keeps-session", sc_restart),
    ("oidc-discovery", sc_discovery),
    ("no-reuse-detected", sc_no_reuse),
    ("private-key-jwt", sc_private_key_jwt),
    ("client-secret-jwt", sc_client_secret_jwt),
    ("client-assertion-file", sc_client_assertion_file),
    ("client-assertion-file-replicas", sc_client_assertion_file_replicas),
    ("tls-client-auth", sc_tls_client_auth),
    ("self-signed-tls-client-auth", sc_self_signed_tls_client_auth),
    ("tls-client-auth-replicas", sc_tls_client_auth_replicas),
    ("self-signed-tls-client-auth-replicas", sc_self_signed_tls_client_auth_replicas),
    ("tls-client-auth-replicas-mismatch", sc_tls_client_auth_replicas_mismatch),
    ("dpop", sc_dpop),
    ("dpop-key-life", sc_dpop_key_life),
    ("jwt-bearer", sc_jwt_bearer),
    ("token-exchange", sc_token_exchange),
    ("auto-login", sc_auto_login),
    ("device-code", sc_device_code),
]


# --------------------------------------------------------------------------------------
# One server kind.
# --------------------------------------------------------------------------------------

def run_kind(kind, args, binary, results):
    modname, opts = KINDS[kind]
    wanted = [(n, f) for n, f in SCENARIOS if not args.only or n in args.only]

    def fail_all(reason):
        for n, _ in wanted:
            print(f"FAIL {kind} {n} {reason}", flush=True)
            results.append("fail")

    try:
        mod = importlib.import_module(modname)
    except Exception as e:  # noqa: BLE001
        fail_all(f"cannot load {modname}.py: {e!r}")
        return
    d = tempfile.mkdtemp(prefix=f"authgate-interop-{kind}-")
    log(f"{kind}: work directory {d}")
    as_dir = os.path.join(d, "as")
    os.makedirs(as_dir)
    ag = None
    try:
        try:
            _kind_stops.append((mod, as_dir))
            info = mod.start(as_dir, free_port(), args.access_ttl, **opts)
            with open(os.path.join(d, "as-info.json"), "w") as f:
                json.dump(info, f)
            log(f"{kind}: AS at {info['issuer']}")
            rs_cmd = [sys.executable, "-u", os.path.join(HERE, "resource_server.py"), "--port", "0",
                      "--as-info", os.path.join(d, "as-info.json"), "--echo-token",
                      "--workers", "32", "--delay-min-ms", "0", "--delay-max-ms", "20"]
            rsp = spawn(rs_cmd, os.path.join(d, "rs.log"), stdout=subprocess.PIPE)
            rs = read_json_line(rsp, 15)
            if rs is None:
                raise Fail(f"resource server did not start: {tail(os.path.join(d, 'rs.log'), 3)}")
            ctx = Ctx(kind, mod, info, rs, d, binary, None)
            ctx.secret_file = os.path.join(d, "client-secret")
            ctx.admin_token_file = os.path.join(d, "admin-token")
            for path, value in ((ctx.secret_file, info["client_secret"]),
                                (ctx.admin_token_file, secrets.token_urlsafe(32))):
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                os.write(fd, value.encode())
                os.close(fd)
            ag = AuthGate(binary, d, "authgate", authgate_config(ctx, "authgate"))
            ctx.ag = ag
            ag.start()
        except Exception as e:  # noqa: BLE001
            fail_all(f"setup failed: {e}")
            if VERBOSE:
                traceback.print_exc()
            return
        for name, fn in wanted:
            t0 = time.monotonic()
            log_size = os.path.getsize(ag.log_path) if os.path.exists(ag.log_path) else 0
            # Only this scenario's logs are worth showing should it fail.
            ctx.extra_logs.clear()
            made_before = len(_authgate_logs)
            try:
                if not ag.alive():
                    ag.start()  # a previous scenario left it dead: the line above it said so
                detail = fn(ctx)
                print(f"PASS {kind} {name} {detail} ({time.monotonic() - t0:.1f}s)", flush=True)
                results.append("pass")
            except Skip as e:
                print(f"SKIP {kind} {name} {e} ({time.monotonic() - t0:.1f}s)", flush=True)
                results.append("skip")
            except Exception as e:  # noqa: BLE001
                reason = str(e) if isinstance(e, Fail) else f"{type(e).__name__}: {e}"
                print(f"FAIL {kind} {name} {reason} ({time.monotonic() - t0:.1f}s)", flush=True)
                results.append("fail")
                _diagnose(ctx, name, log_size, _authgate_logs[made_before:])
                if VERBOSE and not isinstance(e, Fail):
                    traceback.print_exc()
    finally:
        if ag is not None:
            ag.stop()
        for m, dd in list(_kind_stops):
            if dd == as_dir:
                try:
                    m.stop(dd)
                finally:
                    _kind_stops.remove((m, dd))
        for p in list(_children):
            kill_group(p, timeout=3)
        if args.keep:
            print(f"(kept {d})", file=sys.stderr)
        else:
            shutil.rmtree(d, ignore_errors=True)


def _diagnose(ctx, name, log_offset, made=()):
    """The AuthGate and AS log lines of a failing scenario, on stderr: the shared AuthGate's
    since the scenario began, and the last lines of each AuthGate the scenario made (`made`)
    or listed in ctx.extra_logs."""
    try:
        with open(ctx.ag.log_path, "rb") as f:
            f.seek(log_offset)
            lines = f.read().decode(errors="replace").strip().splitlines()
        print(f"--- {ctx.kind} {name}: authgate log (last {min(len(lines), 12)} lines) ---", file=sys.stderr)
        for l in lines[-12:]:
            print("  " + l[:400], file=sys.stderr)
        for path in dict.fromkeys([*made, *ctx.extra_logs]):
            if path == ctx.ag.log_path:
                continue
            # Warnings and errors first: in a storm the last lines are access lines.
            try:
                with open(path, "rb") as f:
                    lines = f.read().decode(errors="replace").strip().splitlines()
            except OSError:
                lines = []
            # Every line but the access log's: a refresh that failed is logged at info, with
            # the token endpoint's error.
            notable = [l for l in lines if '"logger":"authgate.access"' not in l]
            print(f"--- {ctx.kind} {name}: {os.path.basename(path)} (last {min(len(notable), 16)} lines "
                  f"but access lines, then the last 6 lines) ---", file=sys.stderr)
            for l in notable[-16:] + ["  ..."] + lines[-6:]:
                print("  " + l[:600], file=sys.stderr)
        ctx.extra_logs.clear()
        for as_log in (os.path.join(ctx.dir, "as", "authlib-as.stderr"), os.path.join(ctx.dir, "as", "glewlwyd.log")):
            if os.path.exists(as_log):
                print(f"--- {ctx.kind} {name}: AS log (last 12 lines) ---", file=sys.stderr)
                for l in tail(as_log, 12).splitlines():
                    print("  " + l[:300], file=sys.stderr)
    except Exception:  # noqa: BLE001
        pass


def main(argv=None):
    global VERBOSE
    p = argparse.ArgumentParser(description="AuthGate interop suite driver")
    p.add_argument("--servers", default="authlib", help="comma-separated: " + ",".join(KINDS))
    p.add_argument("--only", default="", help="comma-separated scenario names: " + ",".join(n for n, _ in SCENARIOS))
    p.add_argument("--access-ttl", type=int, default=4)
    p.add_argument("--keep", action="store_true", help="keep the temporary directory (logs, configs)")
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args(argv)
    VERBOSE = args.verbose
    # Under scripts/with-postgres: its server serves the scenarios that need one; its
    # variables stay out of every child's environment (AuthGate would refuse them).
    _postgres["url"] = os.environ.get("AUTHGATE_TEST_POSTGRES_URL")
    for name in POSTGRES_VARIABLES:
        os.environ.pop(name, None)
    args.only = [s for s in args.only.split(",") if s]
    unknown = [s for s in args.only if s not in dict(SCENARIOS)]
    kinds = [s for s in args.servers.split(",") if s]
    bad = [k for k in kinds if k not in KINDS]
    if unknown or bad or not kinds:
        p.error(f"unknown scenario(s) {unknown} or server kind(s) {bad}")
    binary = os.environ.get("AUTHGATE_BIN")
    if not binary or not os.access(binary, os.X_OK):
        print("AUTHGATE_BIN must name the authgate executable", file=sys.stderr)
        return 2
    results: list[str] = []  # "pass" | "fail" | "skip", one per scenario
    t0 = time.monotonic()
    interrupted = None
    try:
        for kind in kinds:
            run_kind(kind, args, binary, results)
    except SystemExit as e:  # SIGINT/SIGTERM: everything was stopped on the way out
        interrupted = e.code
        print(f"interrupted (signal {int(e.code or 128) - 128}); children stopped", file=sys.stderr)
    finally:
        cleanup_all()
    passed, failed, skipped = (results.count(k) for k in ("pass", "fail", "skip"))
    log(f"total {time.monotonic() - t0:.1f}s")
    print(f"{passed} passed, {failed} failed, {skipped} skipped", flush=True)
    if interrupted is not None:
        return interrupted
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
