#!/usr/bin/env python3
"""Refresh storms against REAL authorization servers (a benchmark, not a test).

    storm.py run --as authlib|glewlwyd --rs slow|fast --mode expiry|lead50|direct
                 --bin AUTHGATE [--ttl 4] [--duration 17] [--connections 100]
                 [--max-requests 40000] [--timeout 30] [--log-level info]
                 [--json-out FILE] [--workdir DIR] [--pidfile FILE] [--keep]
    storm.py table FILE            # the markdown table of the JSON lines in FILE

One run starts, on 127.0.0.1 only:
  - the authorization server: authlib_server.py (rotation, reuse detection, the previous
    access token revoked at rotation; counters from its GET /stats) or a real glewlwyd
    (rotation, reuse detection; counters read from its sqlite database by
    glewlwyd_server.stats()), access tokens living --ttl seconds;
  - resource_server.py, which introspects (RFC 7662) every request at the AS:
    `slow` = a random 50-500 ms of work under 16 worker slots, so requests queue;
    `fast` = --fast (no delay, 1024 slots);
  - `authgate serve` (the binary given), a route /api → the resource server, with
    `refreshSkewSeconds: 0` (mode expiry: refresh when the token is due or rejected) or
    `refreshLead: "50%"` (mode lead50: proactive at half-life); maxReplays default (3).
    Mode direct: no AuthGate; the AS issues one long-lived token (1 h) and the load goes
    straight to the resource server with it: the RS's own latency, for comparison.
Then it follows GET /auth/events (SSE), opens --connections keep-alive connections, logs
in (password grant through POST /auth/login), and runs a closed loop for --duration
seconds: each connection sends its next request as soon as the previous one is answered,
at most --max-requests in all, each with a client timeout of --timeout seconds (with
--think-ms T, a connection pauses T ms after each answer, and connection i starts i/N of
T late, so the clients are not in step). It reads
the AS's counters, the RS's /stats and AuthGate's /metrics before and after, prints a
report and appends one JSON object to --json-out.

"Expiries" are the token lifetimes that ended between the login and the end of the load,
floor((load end - login) / ttl): what a session with no refresh at all would have seen.
With refresh on expiry a refresh follows each one (refreshes per expiry <= 1); with a
proactive refresh at half-life about two per lifetime are expected (AuthGate adds up to
min(5 s, lifetime/10) of jitter to the lead, so a little more than 2 with short tokens).

Every child runs in its own process group, its pid is appended to --pidfile (the caller
can kill what is left if this process is killed hard) and everything is stopped on the
way out (finally, SIGTERM, SIGINT). asyncio over raw TCP (scripts/storm_client.py's
HTTP/1.1 reader and SSE follower), on uvloop when it is installed.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import resource
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))  # scripts/: storm_client.py

from storm_client import EventWatcher, percentile, read_response, simple_request  # noqa: E402

SLOW = {"delay_min_ms": 50, "delay_max_ms": 500, "workers": 16}
# Fixed worker pools of 8 and 2 answering in 40-80 ms (issue 32's gunicorn APIs).
POOLS = {"pool8": {"delay_min_ms": 40, "delay_max_ms": 80, "workers": 8},
         "pool2": {"delay_min_ms": 40, "delay_max_ms": 80, "workers": 2}}
# gunicorn, one worker of 8 or 2 threads, gunicorn's defaults otherwise (gunicorn_api.py):
# the token introspected first, then 40-80 ms of work.
GUNICORN = {"gunicorn8": {"threads": 8, "delay_ms": "40,80"}, "gunicorn2": {"threads": 2, "delay_ms": "40,80"}}
LONG_TTL = 3600

# --------------------------------------------------------------------------------------
# Processes
# --------------------------------------------------------------------------------------

_children: list[subprocess.Popen] = []
_stops: list = []  # (module, dir) whose stop(dir) is owed
_pidfile = None


def note_pid(pid):
    if _pidfile and pid:
        with open(_pidfile, "a") as f:
            f.write(f"{pid}\n")


def spawn(cmd, log_path, stdout=None):
    logf = open(log_path, "ab")
    p = subprocess.Popen(cmd, stdout=stdout if stdout is not None else logf, stderr=logf,
                         stdin=subprocess.DEVNULL, start_new_session=True)
    logf.close()
    _children.append(p)
    note_pid(p.pid)
    return p


def kill_group(p, timeout=10.0):
    if p.poll() is None:
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        p.wait(5)
    except subprocess.TimeoutExpired:
        pass


def cleanup():
    for p in reversed(list(_children)):
        kill_group(p)
        _children.remove(p)
    for mod, d in list(_stops):
        try:
            mod.stop(d)
        except Exception:  # noqa: BLE001
            pass
        _stops.remove((mod, d))


def _on_signal(signum, frame):
    raise SystemExit(128 + signum)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_json_line(p, timeout):
    box = []
    t = threading.Thread(target=lambda: box.append(p.stdout.readline()), daemon=True)
    t.start()
    t.join(timeout)
    if not box or not box[0]:
        return None
    threading.Thread(target=lambda: [None for _ in p.stdout], daemon=True).start()
    return json.loads(box[0])


def http(method, url, body=None, headers=None, timeout=10):
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def write_secret(path, value):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, value.encode())
    os.close(fd)


# --------------------------------------------------------------------------------------
# Setup
# --------------------------------------------------------------------------------------

def start_as(kind, d, ttl, latency_ms):
    as_dir = os.path.join(d, "as")
    os.makedirs(as_dir, exist_ok=True)
    if kind == "authlib":
        import authlib_server as mod
        _stops.append((mod, as_dir))
        info = mod.start(as_dir, free_port(), ttl, latency_ms=latency_ms)
        try:
            with open(os.path.join(as_dir, "authlib-as.pid")) as f:
                note_pid(int(f.read()))
        except (OSError, ValueError):
            pass
    else:
        import glewlwyd_server as mod
        _stops.append((mod, as_dir))
        info = mod.start(as_dir, free_port(), ttl)
        note_pid(info.get("pid"))
    return mod, info


def as_stats(mod, info):
    if info.get("stats"):
        s, b = http("GET", info["stats"])
        if s != 200:
            raise RuntimeError(f"AS /stats answered {s}")
        return json.loads(b)
    return mod.stats(info)


def start_gunicorn(d, rs_kind, as_info_path):
    shape = GUNICORN[rs_kind]
    port = free_port()
    cmd = [sys.executable, "-m", "gunicorn", "-k", "gthread", "--workers", "1", "--threads", str(shape["threads"]),
           "-b", f"127.0.0.1:{port}", "--chdir", HERE, "--log-level", "warning", "gunicorn_api:app"]
    env = dict(os.environ, GUNICORN_API_AS_INFO=as_info_path, GUNICORN_API_DELAY_MS=shape["delay_ms"])
    logf = open(os.path.join(d, "rs.log"), "ab")
    p = subprocess.Popen(cmd, stdout=logf, stderr=logf, stdin=subprocess.DEVNULL, start_new_session=True, env=env)
    logf.close()
    _children.append(p)
    note_pid(p.pid)
    url = f"http://127.0.0.1:{port}"
    wait_until_answering(p, url + "/stats", "gunicorn", f"{d}/rs.log", 20)
    return {"url": url, "port": port, "stats": url + "/stats"}, cmd


def wait_until_answering(p, url, name, log, seconds):
    """Waits until GET url answers 200; raises when p exits first or after `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if p.poll() is not None:
            raise RuntimeError(f"{name} exited {p.returncode} at start; see {log}")
        try:
            if http("GET", url, timeout=2)[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{name} not ready within {seconds} s")


def start_rs(d, rs_kind, as_info_path):
    if rs_kind in GUNICORN:
        return start_gunicorn(d, rs_kind, as_info_path)
    cmd = [sys.executable, "-u", os.path.join(HERE, "resource_server.py"), "--port", "0",
           "--as-info", as_info_path]
    if rs_kind == "fast":
        cmd.append("--fast")
    else:
        shape = POOLS.get(rs_kind, SLOW)
        cmd += ["--delay-min-ms", str(shape["delay_min_ms"]), "--delay-max-ms", str(shape["delay_max_ms"]),
                "--workers", str(shape["workers"])]
    p = spawn(cmd, os.path.join(d, "rs.log"), stdout=subprocess.PIPE)
    rs = read_json_line(p, 15)
    if rs is None:
        raise RuntimeError("the resource server did not start")
    return rs, cmd


def authgate_config(d, kind, info, rs, mode, max_in_flight=0):
    state = os.path.join(d, "state")
    os.makedirs(state, exist_ok=True)
    os.chmod(state, 0o700)  # it holds the sealed tokens: authgate refuses a wider mode
    write_secret(os.path.join(d, "client-secret"), info["client_secret"])
    write_secret(os.path.join(d, "admin-token"), secrets.token_urlsafe(32))
    authz = {"clientID": info["client_id"], "clientSecretFile": os.path.join(d, "client-secret"),
             "clientAuthentication": "basic", "tokenEndpoint": info["token_endpoint"]}
    if info.get("revocation_endpoint"):
        authz["revocationEndpoint"] = info["revocation_endpoint"]
    if kind == "glewlwyd":
        # glewlwyd answers a dead refresh token with 400 and an empty body (no
        # invalid_grant): the declarative mapping makes that status terminal.
        authz["mapping"] = {"terminalStatuses": [400]}
    cfg = {
        "proxy": {"host": "127.0.0.1", "port": free_port()},
        "admin": {"host": "127.0.0.1", "port": free_port()},
        "adminTokenFile": os.path.join(d, "admin-token"),
        "authorization": authz,
        "routes": [{"prefix": "/api", "upstream": rs["url"], "requiresAuthentication": True}],
        "stateDirectory": state,
        "createKey": True,
        "keyFile": os.path.join(state, "key"),
        "loops": 2,
    }
    if max_in_flight > 0:
        cfg["routes"][0]["maxInFlight"] = max_in_flight
    elif max_in_flight < 0:
        cfg["routes"][0]["adaptiveLimit"] = False  # unbounded, as before the adaptive limit
    if mode == "lead50":
        cfg["refreshLead"] = "50%"
    elif mode == "expiry":
        cfg["refreshSkewSeconds"] = 0
    # mode default: no refresh setting at all, as a new user runs it
    path = os.path.join(d, "authgate.json")
    with open(path, "w") as f:
        json.dump(cfg, f, indent=2)
    return cfg, path


def start_authgate(binary, d, cfg_path, cfg, log_level):
    cmd = [binary, "serve", "--config", cfg_path, "--log-level", log_level]
    p = spawn(cmd, os.path.join(d, "authgate.log"))
    admin = f"http://127.0.0.1:{cfg['admin']['port']}"
    wait_until_answering(p, admin + "/readyz", "authgate", f"{d}/authgate.log", 30)
    return p, cmd


def direct_token(info):
    form = urllib.parse.urlencode({"grant_type": "password", "username": info["username"],
                                   "password": info["password"], "scope": info.get("scope") or ""}).encode()
    basic = base64.b64encode(f"{info['client_id']}:{info['client_secret']}".encode()).decode()
    s, b = http("POST", info["token_endpoint"], form, {"Content-Type": "application/x-www-form-urlencoded",
                                                       "Authorization": "Basic " + basic})
    if s != 200:
        raise RuntimeError(f"password grant at the AS answered {s}: {b[:200]!r}")
    return json.loads(b)["access_token"]


# --------------------------------------------------------------------------------------
# The load
# --------------------------------------------------------------------------------------

class Result:
    __slots__ = ("slot", "sent", "done", "status", "error", "token", "replay_header")

    def __init__(self, slot):
        self.slot = slot
        self.sent = self.done = None
        self.status = self.error = self.token = self.replay_header = None


def parse_metrics(text):
    out = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, _, value = line.rpartition(" ")
        try:
            out[name] = float(value)
        except ValueError:
            pass
    return out


async def load(args, host, port, auth_header, login, counters_cb):
    """Opens the connections, calls login() (returns its monotonic completion time),
    runs the closed loop; returns (results, login_done, load_start, load_end, counters)."""
    results: list[Result] = []
    state = {"sent": 0, "opened": 0, "connect_errors": 0, "reconnects": 0, "server_closes": 0,
             "bodies": {}}
    go = asyncio.Event()
    timing = {}
    req = ("GET /api/storm HTTP/1.1\r\nHost: %s:%d\r\nUser-Agent: interop-storm\r\n%s\r\n"
           % (host, port, ("Authorization: %s\r\n" % auth_header) if auth_header else "")).encode()

    async def worker(slot):
        reader = writer = None

        async def connect():
            nonlocal reader, writer
            reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), 10)

        try:
            await connect()
        except Exception:  # noqa: BLE001
            state["connect_errors"] += 1
            reader = writer = None
        state["opened"] += 1
        await go.wait()
        end = timing["end"]
        if args.think_ms:
            # Clients that pause between requests are not in step: connection i starts at a
            # fixed offset spread over one think time.
            await asyncio.sleep(args.think_ms / 1000.0 * slot / args.connections)
        while time.monotonic() < end and state["sent"] < args.max_requests:
            state["sent"] += 1
            r = Result(slot)
            results.append(r)
            try:
                if writer is None:
                    state["reconnects"] += 1
                    await connect()
                r.sent = time.monotonic()
                writer.write(req)
                status, headers, body = await asyncio.wait_for(read_response(reader), args.timeout)
                r.done = time.monotonic()
                r.status = status
                r.replay_header = headers.get("authgate-replay")
                if status in (200, 401):
                    # The RS names the token it accepted or rejected (its SHA-256).
                    try:
                        r.token = (json.loads(body).get("token_sha256") or "")[:12] or None
                    except ValueError:
                        pass
                if status != 200 and status not in state["bodies"]:
                    state["bodies"][status] = {"body": body[:400].decode("utf-8", "replace"),
                                               "authgate-replay": r.replay_header,
                                               "www-authenticate": headers.get("www-authenticate")}
                if headers.get("connection", "").lower() == "close":
                    writer.close()
                    writer = None
                    state["server_closes"] += 1
            except asyncio.TimeoutError:
                r.done = time.monotonic()
                r.error = "timeout"
            except (ConnectionError, asyncio.IncompleteReadError, OSError) as e:
                r.done = time.monotonic()
                r.error = "reset" if isinstance(e, (ConnectionResetError, asyncio.IncompleteReadError)) \
                    else type(e).__name__
            except Exception as e:  # noqa: BLE001
                r.done = time.monotonic()
                r.error = type(e).__name__
            if r.sent is None:
                r.sent = r.done
            if r.error is not None and writer is not None:
                writer.close()
                writer = None
            if args.think_ms:
                await asyncio.sleep(args.think_ms / 1000.0)
        if writer is not None:
            writer.close()

    tasks = [asyncio.ensure_future(worker(i)) for i in range(args.connections)]
    t0 = time.monotonic()
    while state["opened"] < args.connections:
        await asyncio.sleep(0.01)
        if time.monotonic() - t0 > 30:
            raise RuntimeError("could not open the connections in 30 s")
    before = await counters_cb()
    login_done = await login()
    timing["end"] = time.monotonic() + args.duration
    load_start = time.monotonic()
    go.set()
    await asyncio.gather(*tasks)
    load_end = time.monotonic()
    return results, before, login_done, load_start, load_end, state


async def run_async(args, ctx):
    host = "127.0.0.1"
    direct = args.mode == "direct"
    ag_admin_port = None if direct else ctx["cfg"]["admin"]["port"]
    admin_auth = None if direct else {"Authorization": "Bearer %s" % ctx["admin_token"]}
    loop = asyncio.get_running_loop()

    async def metrics():
        if direct:
            return {}
        s, _, b = await simple_request(host, ag_admin_port, "GET", "/metrics", admin_auth)
        return parse_metrics(b.decode()) if s == 200 else {}

    async def counters():
        a = await loop.run_in_executor(None, as_stats, ctx["mod"], ctx["info"])
        r = json.loads(http("GET", ctx["rs"]["url"] + "/stats")[1])
        return {"as": a, "rs": r, "metrics": await metrics()}

    watcher = None
    if not direct:
        watcher = EventWatcher(host, ag_admin_port, ctx["admin_token"])
        watch_task = asyncio.ensure_future(watcher.run())
        await asyncio.wait_for(watcher.connected.wait(), 10)
        if watcher.error:
            raise RuntimeError("cannot follow /auth/events: %s" % watcher.error)

    login_box = {}

    async def login():
        if direct:
            t = time.monotonic()
            tok = await loop.run_in_executor(None, direct_token, ctx["info"])
            login_box["header"] = "Bearer " + tok
            login_box["sent"] = t
            return time.monotonic()
        body = json.dumps({"grant_type": "password", "username": ctx["info"]["username"],
                           "password": ctx["info"]["password"], "scope": ctx["info"].get("scope")}).encode()
        login_box["sent"] = time.monotonic()
        s, _, b = await simple_request(host, ag_admin_port, "POST", "/auth/login",
                                       dict(admin_auth, **{"Content-Type": "application/json"}), body)
        if s != 200:
            raise RuntimeError("login answered %d: %s" % (s, b[:300]))
        return time.monotonic()

    if direct:
        # The token is part of each request: log in first (one long-lived token).
        await login()
        port, header = ctx["rs"]["port"], login_box["header"]
        async def nologin():
            return login_box["sent"]
        results, before, login_done, load_start, load_end, state = await load(
            args, host, port, header, nologin, counters)
    else:
        port = ctx["cfg"]["proxy"]["port"]
        trace = []

        async def sample_limit():
            # The in-flight limit over time, for the plot (authgate_upstream_limit).
            t0 = time.monotonic()
            while True:
                m = await metrics()
                lim = [v for k, v in m.items() if k.startswith("authgate_upstream_limit{")]
                fl = [v for k, v in m.items() if k.startswith("authgate_upstream_in_flight{")]
                if lim:
                    trace.append((round(time.monotonic() - t0, 2), max(lim), max(fl) if fl else None))
                await asyncio.sleep(0.5)

        sampler = asyncio.ensure_future(sample_limit())
        try:
            results, before, login_done, load_start, load_end, state = await load(
                args, host, port, None, login, counters)
        finally:
            sampler.cancel()
        ctx["limit_trace"] = trace
    await asyncio.sleep(0.3)
    after = await counters()
    session = None
    events = []
    if not direct:
        s, _, b = await simple_request(host, ag_admin_port, "GET", "/auth/session", admin_auth)
        session = json.loads(b) if s == 200 else {"status": s}
        watch_task.cancel()
        try:
            await watch_task
        except (asyncio.CancelledError, Exception):  # noqa: BLE001
            pass
        events = [(t, e, d) for (t, e, d) in watcher.events]
    return analyse(args, ctx, results, before, after, login_box["sent"], login_done, load_start, load_end,
                   state, session, events)


# --------------------------------------------------------------------------------------
# Analysis
# --------------------------------------------------------------------------------------

def mdelta(before, after, prefix, label="outcome"):
    """How much each series of `prefix` grew, summed by `label` (the whole label set when a
    series has none)."""
    out = {}
    for k, v in after.items():
        if k.startswith(prefix + "{"):
            d = v - before.get(k, 0.0)
            if d:
                labels = k[len(prefix) + 1:-1]
                outcome = next((p.split("=", 1)[1].strip('"') for p in labels.split(",")
                                if p.startswith(label + "=")), labels)
                out[outcome] = out.get(outcome, 0) + int(d)
    return out


def analyse(args, ctx, results, before, after, login_sent, login_done, load_start, load_end, state,
            session, events):
    ttl = ctx["ttl"]
    done = [r for r in results if r.done is not None]
    lat = sorted(r.done - r.sent for r in done if r.error is None)
    steady_from = load_start + args.warm_up
    steady = [r for r in done if r.sent >= steady_from]
    steady_lat = sorted(r.done - r.sent for r in steady if r.error is None)
    status_counts, error_counts = {}, {}
    for r in done:
        if r.error is not None:
            error_counts[r.error] = error_counts.get(r.error, 0) + 1
        else:
            status_counts[str(r.status)] = status_counts.get(str(r.status), 0) + 1
    # Generations as the RS saw them: each access token in order of its first 200.
    first_ok = {}
    for r in sorted((r for r in done if r.status == 200 and r.token), key=lambda r: r.done):
        first_ok.setdefault(r.token, r.done)
    gen_of = {tok: i + 1 for i, tok in enumerate(sorted(first_ok, key=first_ok.get))}
    rejections = []
    for r in sorted((r for r in done if r.status == 401), key=lambda r: r.done):
        g = gen_of.get(r.token)
        current = max((gen_of[t] for t, t0 in first_ok.items() if t0 <= r.done), default=None)
        rejections.append({
            "answered_s": round(r.done - login_done, 3), "latency_s": round(r.done - r.sent, 3),
            "rejected_generation": g, "newest_generation_seen_then": current,
            "rejected_token_first_accepted_s": round(first_ok[r.token] - login_done, 3) if g else None,
            "authgate_replay": r.replay_header})
    logged_out = [t for (t, e, _) in events if e == "logged_out" and t >= login_done]
    invalid_from = min(logged_out) if logged_out else float("inf")
    c401 = [r for r in done if r.status == 401]
    c401_valid = [r for r in c401 if r.done < invalid_from]
    a0, a1 = before["as"], after["as"]
    refreshes = (a1.get("refreshes") or 0) - (a0.get("refreshes") or 0)
    reuse = (a1.get("reuse_detections") or 0) - (a0.get("reuse_detections") or 0)
    elapsed = load_end - login_sent
    expiries = int(elapsed // ttl) if args.mode != "direct" else 0
    refreshed_events = [t for (t, e, _) in events if e == "refreshed" and t >= login_done]
    rs0, rs1 = before["rs"], after["rs"]
    out = {
        "label": args.label or f"{args.as_kind} {args.rs} {args.mode}",
        "as": args.as_kind, "rs": args.rs, "mode": args.mode, "ttl": ttl, "max_in_flight": args.max_in_flight, "limit_trace": ctx.get("limit_trace", []),
        "connections": args.connections, "duration": args.duration, "timeout": args.timeout,
        "requests": len(done), "ok": status_counts.get("200", 0),
        "status_counts": status_counts, "error_counts": error_counts,
        "client_401": len(c401), "client_401_while_session_valid": len(c401_valid),
        "session_logged_out_during_run": bool(logged_out),
        "session_after": (session or {}).get("state") if session else None,
        "timeouts": error_counts.get("timeout", 0),
        "gateway_timeouts_504": status_counts.get("504", 0),
        "non_200": sum(v for k, v in status_counts.items() if k != "200"),
        "p50_ms": percentile(lat, 50) * 1000 if lat else None,
        "p99_ms": percentile(lat, 99) * 1000 if lat else None,
        "max_ms": lat[-1] * 1000 if lat else None,
        "throughput_rps": len(done) / (load_end - load_start) if load_end > load_start else None,
        # The same after the first --warm-up seconds of load: what is left once the adaptive
        # limit's slow start from one request is over.
        "warm_up_s": args.warm_up,
        "steady_rps": len(steady) / (load_end - steady_from) if load_end > steady_from else None,
        "steady_p99_ms": percentile(steady_lat, 99) * 1000 if steady_lat else None,
        "elapsed_login_to_end_s": elapsed,
        "expiries": expiries,
        "refreshes": refreshes,
        "refreshes_per_expiry": (refreshes / expiries) if expiries else None,
        "refreshed_events": len(refreshed_events),
        "refresh_offsets_s": [round(t - login_done, 2) for t in refreshed_events],
        "reuse_detections": reuse,
        "as_token_errors_after": a1.get("token_errors"),
        "replays": mdelta(before["metrics"], after["metrics"], "authgate_replays_total"),
        "refreshes_total": mdelta(before["metrics"], after["metrics"], "authgate_refreshes_total"),
        "upstream_failures": mdelta(before["metrics"], after["metrics"], "authgate_upstream_failures_total"),
        # Why the adaptive limit moved during the load (slow_start, queue_found, probe_down…).
        "limit_changes": mdelta(before["metrics"], after["metrics"], "authgate_upstream_limit_changes_total",
                                label="reason"),
        "rs_requests": rs1["requests"] - rs0["requests"],
        "rs_401": rs1["unauthorized"] - rs0["unauthorized"],
        "rs_max_queued": rs1.get("max_queued"), "rs_max_in_flight": rs1.get("max_in_flight"),
        "distinct_tokens_seen": len({r.token for r in done if r.token}),
        "connect_errors": state["connect_errors"], "reconnects": state["reconnects"],
        "server_closes": state["server_closes"],
        "first_bodies": {str(k): v for k, v in state["bodies"].items()},
        "client_401_details": rejections,
        "think_ms": args.think_ms,
        "other_events": sorted({e for (_, e, _) in events if e not in ("refreshed", "state", "logged_in")}),
        "commands": ctx["commands"],
    }
    return out


def fmt(v, nd=1):
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.{nd}f}"
    return str(v)


def report(o):
    p = print
    p(f"## {o['label']}")
    p("")
    p("| measure | value |")
    p("|---|---|")
    p(f"| requests (closed loop, {o['connections']} keep-alive connections, "
      f"{'think ' + format(o['think_ms'], 'g') + ' ms, ' if o.get('think_ms') else ''}{o['duration']:g} s) | "
      f"{o['requests']} ({fmt(o['throughput_rps'], 0)} req/s), 200: {o['ok']} |")
    p(f"| client 401s (while the session was valid) | {o['client_401']} ({o['client_401_while_session_valid']}); "
      f"session logged out during the run: {'yes' if o['session_logged_out_during_run'] else 'no'}; "
      f"after: {o['session_after'] or 'n/a'} |")
    other = {k: v for k, v in o["status_counts"].items() if k not in ("200", "401")}
    p(f"| other non-200 | {json.dumps(other) if other else 'none'} |")
    p(f"| client timeouts ({o['timeout']:g} s) / other transport errors | {o['timeouts']} / "
      f"{json.dumps({k: v for k, v in o['error_counts'].items() if k != 'timeout'}) or 'none'} |")
    p(f"| latency p50 / p99 / max | {fmt(o['p50_ms'])} / {fmt(o['p99_ms'])} / {fmt(o['max_ms'])} ms |")
    if o["mode"] != "direct":
        p(f"| token lifetime; expiries (login → load end {o['elapsed_login_to_end_s']:.1f} s) | "
          f"{o['ttl']} s; {o['expiries']} |")
        p(f"| refreshes at the AS; per expiry | {o['refreshes']}; **{fmt(o['refreshes_per_expiry'], 2)}** |")
        p(f"| `refreshed` events (s after login) | {o['refreshed_events']} ({', '.join(map(str, o['refresh_offsets_s']))}) |")
        p(f"| reuse detections at the AS | {o['reuse_detections']} |")
        p(f"| authgate_replays_total by outcome | {json.dumps(o['replays']) if o['replays'] else 'none'} |")
        p(f"| authgate_refreshes_total by outcome | {json.dumps(o['refreshes_total']) if o['refreshes_total'] else 'none'} |")
        if o["upstream_failures"]:
            p(f"| authgate_upstream_failures_total | {json.dumps(o['upstream_failures'])} |")
        p(f"| distinct access tokens the RS accepted | {o['distinct_tokens_seen']} |")
    if o.get("limit_trace"):
        lims = [x[1] for x in o["limit_trace"]]
        half = lims[len(lims) // 2:]
        p(f"| authgate_upstream_limit: min / max / mean over the second half | {fmt(min(lims), 0)} / "
          f"{fmt(max(lims), 0)} / {fmt(sum(half) / len(half), 1)} |")
    p(f"| RS: requests / 401s / max queued / max in flight | {o['rs_requests']} / {o['rs_401']} / "
      f"{o['rs_max_queued']} / {o['rs_max_in_flight']} |")
    if o["other_events"]:
        p(f"| other session events | {', '.join(o['other_events'])} |")
    rej = o.get("client_401_details") or []
    if rej:
        why = {}
        for x in rej:
            why[x["authgate_replay"]] = why.get(x["authgate_replay"], 0) + 1
        stale = sum(1 for x in rej if x["rejected_generation"] and x["newest_generation_seen_then"]
                    and x["rejected_generation"] < x["newest_generation_seen_then"])
        p("")
        p(f"Client 401s: {len(rej)}; AuthGate-Replay: {json.dumps(why)}; the rejected token was older than "
          f"the newest one the RS had accepted by then in {stale}; latency of the 401s p50 "
          f"{fmt(percentile(sorted(x['latency_s'] for x in rej), 50) * 1000)} ms, max "
          f"{fmt(max(x['latency_s'] for x in rej) * 1000)} ms; first few: "
          + "; ".join(f"t={x['answered_s']} s gen {x['rejected_generation']} (newest {x['newest_generation_seen_then']})"
                      for x in rej[:5]))
    for status, b in sorted(o["first_bodies"].items()):
        p("")
        p(f"First {status}: `{json.dumps(b)[:600]}`")
    p("")


def table(path):
    rows = [json.loads(l) for l in open(path) if l.strip()]
    print("| AS | RS (client think time) | refresh | requests (req/s) | client 401s (session valid) | other non-200 | client timeouts |"
          " p50 / p99 / max ms | expiries | AS refreshes (per expiry) | reuse detections |"
          " replays by outcome | `authgate_refreshes_total` |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for o in rows:
        other = {k: v for k, v in o["status_counts"].items() if k not in ("200", "401")}
        direct = o["mode"] == "direct"
        mode = {"expiry": "on expiry (skew 0)", "lead50": "`refreshLead: 50%`", "default": "default",
                "direct": "direct, no AuthGate (1 h token)"}[o["mode"]]
        if o.get("max_in_flight", 0) > 0:
            mode += ", `maxInFlight: %d`" % o["max_in_flight"]
        elif o.get("max_in_flight", 0) < 0:
            mode += ", unbounded"
        elif not direct:
            mode += ", adaptive"
        print("| %s | %s | %s | %d (%s) | %s | %s | %d | %s / %s / %s | %s | %s | %s | %s | %s |" % (
            o["as"], o["rs"] + (" (%g ms)" % o["think_ms"] if o.get("think_ms") else " (0)"), mode, o["requests"], fmt(o["throughput_rps"], 0),
            "–" if direct else "%d (%d)" % (o["client_401"], o["client_401_while_session_valid"]),
            json.dumps(other) if other else "0", o["timeouts"],
            fmt(o["p50_ms"]), fmt(o["p99_ms"]), fmt(o["max_ms"]),
            "–" if direct else o["expiries"],
            "–" if direct else "%d (%s)" % (o["refreshes"], fmt(o["refreshes_per_expiry"], 2)),
            "–" if direct else o["reuse_detections"],
            "–" if direct else (", ".join(f"{k} {v}" for k, v in sorted(o["replays"].items())) or "0"),
            "–" if direct else (", ".join(f"{k} {v}" for k, v in sorted(o["refreshes_total"].items())) or "0")))


# --------------------------------------------------------------------------------------

def run(args):
    global _pidfile
    _pidfile = args.pidfile
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 4 * args.connections + 256)), hard))
    except (ValueError, OSError):
        pass
    d = args.workdir or tempfile.mkdtemp(prefix=f"interop-storm-{args.as_kind}-{args.rs}-{args.mode}-")
    os.makedirs(d, exist_ok=True)
    ttl = LONG_TTL if args.mode == "direct" else args.ttl
    ctx = {"ttl": ttl, "commands": {}}
    status = 1
    try:
        mod, info = start_as(args.as_kind, d, ttl, args.as_latency_ms)
        ctx.update(mod=mod, info=info)
        ctx["commands"]["as"] = (f"{args.as_kind}: access tokens {ttl} s"
                                 + (f", token endpoint latency {args.as_latency_ms} ms" if args.as_latency_ms else ""))
        as_info_path = os.path.join(d, "as-info.json")
        with open(as_info_path, "w") as f:
            json.dump(info, f)
        rs, rs_cmd = start_rs(d, args.rs, as_info_path)
        ctx["rs"] = rs
        ctx["commands"]["rs"] = " ".join(os.path.basename(c) if c.endswith(".py") else c for c in rs_cmd[2:])
        if args.mode != "direct":
            cfg, cfg_path = authgate_config(d, args.as_kind, info, rs, args.mode, args.max_in_flight)
            ctx["cfg"] = cfg
            with open(cfg["adminTokenFile"]) as f:
                ctx["admin_token"] = f.read().strip()
            _, ag_cmd = start_authgate(args.bin, d, cfg_path, cfg, args.log_level)
            ctx["commands"]["authgate"] = ("authgate serve --log-level %s; %s%s" % (
                args.log_level, {"lead50": "refreshLead 50%", "expiry": "refreshSkewSeconds 0"}.get(args.mode, "default refresh"),
                "; maxInFlight %d" % args.max_in_flight if args.max_in_flight > 0 else
                "; adaptiveLimit false (unbounded)" if args.max_in_flight < 0 else "; adaptive limit (default)"))
        try:
            import uvloop  # noqa: F401
            uvloop.install()
            loop_name = "uvloop " + uvloop.__version__
        except ImportError:
            loop_name = "asyncio"
        ctx["commands"]["client"] = loop_name
        out = asyncio.run(run_async(args, ctx))
        out["workdir"] = d if args.keep else None
        report(out)
        if args.json_out:
            with open(args.json_out, "a") as f:
                f.write(json.dumps(out) + "\n")
        status = 0
    finally:
        cleanup()
        if args.keep:
            print(f"(kept {d})", file=sys.stderr)
        else:
            shutil.rmtree(d, ignore_errors=True)
    return status


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--as", dest="as_kind", choices=["authlib", "glewlwyd"], required=True)
    r.add_argument("--rs", choices=["slow", "fast", "pool8", "pool2", *GUNICORN], required=True)
    r.add_argument("--mode", choices=["expiry", "lead50", "default", "direct"], required=True)
    r.add_argument("--bin", help="the authgate binary (not needed for --mode direct)")
    r.add_argument("--ttl", type=int, default=4, help="access-token lifetime, seconds")
    r.add_argument("--as-latency-ms", type=int, default=0, help="authlib only: token endpoint latency")
    r.add_argument("--duration", type=float, default=17.0)
    r.add_argument("--connections", type=int, default=100)
    r.add_argument("--max-requests", type=int, default=40000)
    r.add_argument("--timeout", type=float, default=30.0, help="per-request client timeout, seconds")
    r.add_argument("--think-ms", type=float, default=0, help="pause between a connection's requests")
    r.add_argument("--max-in-flight", type=int, default=0,
                   help="the route's maxInFlight (a fixed bound); 0: the default (the adaptive limit); "
                        "-1: unbounded (adaptiveLimit false)")
    r.add_argument("--log-level", default="info")
    r.add_argument("--label")
    r.add_argument("--json-out")
    r.add_argument("--warm-up", type=float, default=4.0,
                   help="seconds of load left out of the steady-state throughput and p99")
    r.add_argument("--workdir")
    r.add_argument("--pidfile")
    r.add_argument("--keep", action="store_true")
    t = sub.add_parser("table")
    t.add_argument("file")
    args = ap.parse_args(argv)
    if args.cmd == "table":
        table(args.file)
        return 0
    if args.as_kind == "glewlwyd" and args.as_latency_ms:
        ap.error("--as-latency-ms is for authlib only")
    if args.mode != "direct" and not (args.bin and os.access(args.bin, os.X_OK)):
        ap.error("--bin must name the authgate executable")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
