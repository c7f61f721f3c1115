#!/usr/bin/env python3
"""Load client of scripts/bench-storm: a paced refresh storm against `authgate dev`.

asyncio streams over raw TCP, HTTP/1.1 keep-alive; on uvloop when it is installed
(scripts/bench-storm installs it), so that the client's own event loop adds as little
as possible to the latencies it measures. It

1. reads the fake authorization server's GET /stats and the admin GET /auth/session,
2. subscribes to the admin GET /auth/events (Server-Sent Events) to time every refresh,
3. logs in (POST /auth/login) and opens the client connections,
4. sends REQUESTS requests over CONNECTIONS keep-alive connections, paced evenly over
   DURATION seconds (request i is due at start + i * DURATION / REQUESTS and goes out on
   connection i % CONNECTIONS), recording each request's latency, status and error,
5. reads /stats and /auth/session again and prints a markdown report.

Refresh windows. Refresh k completes when the gateway publishes its `refreshed` event;
the client stamps it on arrival (monotonic clock, same process as the load). The gateway
counts the lifetime of the token that refresh installed from when its request left, about
LATENCY before the event; with --refresh-skew 0 the next refresh starts at that expiry,
when the first request after it finds the token expired in token() (or, should the
server disagree, gets 401 invalid_token from the fake API). So refresh k+1 is in flight
during [end_k - LATENCY + LIFETIME - margin, end_{k+1}], with end_0 the login's
completion. A
request is "in flight during a refresh" when its [sent, answered] interval overlaps
such a window. Every expiry that falls while the load runs must cause exactly one
refresh at the authorization server.
"""

import argparse
import asyncio
import json
import os
import resource
import sys
import time


def now() -> float:
    return time.monotonic()


def percentile(sorted_values, p):
    if not sorted_values:
        return float("nan")
    k = max(0, min(len(sorted_values) - 1, int(round(p / 100.0 * len(sorted_values) + 0.5)) - 1))
    return sorted_values[k]


class HTTPError(Exception):
    pass


async def read_response(reader):
    """Reads one HTTP/1.1 response; returns (status, headers dict, body bytes)."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1."):
        raise HTTPError("bad status line: %r" % lines[0])
    status = int(parts[1])
    headers = {}
    for line in lines[1:]:
        if not line:
            continue
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if "content-length" in headers:
        body = await reader.readexactly(int(headers["content-length"]))
    elif headers.get("transfer-encoding", "").lower() == "chunked":
        chunks = []
        while True:
            size_line = await reader.readuntil(b"\r\n")
            size = int(size_line.split(b";")[0].strip(), 16)
            if size == 0:
                while (await reader.readuntil(b"\r\n")) != b"\r\n":
                    pass
                break
            chunks.append(await reader.readexactly(size))
            await reader.readexactly(2)
        body = b"".join(chunks)
    elif status in (204, 304) or 100 <= status < 200:
        body = b""
    else:
        body = await reader.read()  # close-delimited
    return status, headers, body


async def simple_request(host, port, method, path, headers=None, body=b"", timeout=10.0):
    """One request on its own connection (control-plane calls, not measured)."""
    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    try:
        lines = ["%s %s HTTP/1.1" % (method, path), "Host: %s:%d" % (host, port), "Connection: close"]
        for k, v in (headers or {}).items():
            lines.append("%s: %s" % (k, v))
        if body or method in ("POST", "PUT"):
            lines.append("Content-Length: %d" % len(body))
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        await writer.drain()
        return await asyncio.wait_for(read_response(reader), timeout)
    finally:
        writer.close()


class EventWatcher:
    """Follows GET /auth/events and stamps each event on arrival."""

    def __init__(self, host, port, token):
        self.host, self.port, self.token = host, port, token
        self.events = []  # (monotonic arrival, type, data dict)
        self.connected = asyncio.Event()
        self.error = None

    async def run(self):
        try:
            reader, writer = await asyncio.open_connection(self.host, self.port)
            writer.write(
                (
                    "GET /auth/events HTTP/1.1\r\nHost: %s:%d\r\nAuthorization: Bearer %s\r\n"
                    "Accept: text/event-stream\r\n\r\n" % (self.host, self.port, self.token)
                ).encode()
            )
            await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
            if b" 200 " not in head.split(b"\r\n")[0]:
                raise HTTPError("events: %r" % head[:100])
            chunked = b"chunked" in head.lower()
            self.connected.set()
            buf = b""
            while True:
                if chunked:
                    size_line = await reader.readuntil(b"\r\n")
                    size = int(size_line.split(b";")[0].strip(), 16)
                    if size == 0:
                        break
                    data = await reader.readexactly(size)
                    await reader.readexactly(2)
                else:
                    data = await reader.read(65536)
                    if not data:
                        break
                stamp = now()
                buf += data
                while b"\n\n" in buf:
                    message, buf = buf.split(b"\n\n", 1)
                    etype, edata = None, None
                    for line in message.decode("utf-8", "replace").split("\n"):
                        if line.startswith("event:"):
                            etype = line[6:].strip()
                        elif line.startswith("data:"):
                            edata = line[5:].strip()
                    if etype:
                        try:
                            parsed = json.loads(edata) if edata else {}
                        except ValueError:
                            parsed = {"raw": edata}
                        self.events.append((stamp, etype, parsed))
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - reported, not fatal
            self.error = repr(e)
            self.connected.set()


class Result:
    __slots__ = ("index", "due", "sent", "done", "status", "error")

    def __init__(self, index, due):
        self.index, self.due = index, due
        self.sent = self.done = None
        self.status = None
        self.error = None


async def connection_worker(args, slot, results, start, gate, counters):
    """Owns one keep-alive connection and sends its share of the requests in order."""
    reader = writer = None
    request_bytes = (
        "GET %s HTTP/1.1\r\nHost: %s:%d\r\nUser-Agent: storm-client\r\n\r\n" % (args.path, args.host, args.port)
    ).encode()

    async def connect():
        nonlocal reader, writer
        reader, writer = await asyncio.wait_for(asyncio.open_connection(args.host, args.port), args.timeout)

    try:
        async with gate:
            await connect()
    except Exception as e:  # noqa: BLE001
        counters["connect_errors"] += 1
        counters.setdefault("connect_error_kinds", {}).setdefault(type(e).__name__, 0)
        counters["connect_error_kinds"][type(e).__name__] += 1
        reader = writer = None
    counters["opened"] += 1
    await start["event"].wait()
    t0 = start["t0"]
    for r in results:
        delay = t0 + r.due - now()
        if delay > 0:
            await asyncio.sleep(delay)
        try:
            if writer is None:
                counters["reconnects"] += 1
                await connect()
            r.sent = now()
            writer.write(request_bytes)
            status, headers, body = await asyncio.wait_for(read_response(reader), args.timeout)
            r.done = now()
            r.status = status
            if status != 200 and status not in counters["bodies"]:
                counters["bodies"][status] = body[:400].decode("utf-8", "replace")
            if headers.get("connection", "").lower() == "close":
                writer.close()
                writer = None
                counters["server_closes"] += 1
        except asyncio.TimeoutError:
            r.done = now()
            r.error = "timeout"
        except (ConnectionError, asyncio.IncompleteReadError, OSError) as e:
            r.done = now()
            r.error = "reset" if isinstance(e, (ConnectionResetError, asyncio.IncompleteReadError)) else type(e).__name__
        except Exception as e:  # noqa: BLE001
            r.done = now()
            r.error = type(e).__name__
        if r.error is not None and writer is not None:
            writer.close()
            writer = None
        if r.sent is None:
            r.sent = r.done
    if writer is not None:
        writer.close()


def cpu_seconds_of(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return float("nan")


def fmt_ms(seconds):
    return "%.1f" % (seconds * 1000.0)


async def main_async(args):
    auth = {"Authorization": "Bearer %s" % args.admin_token}

    async def stats():
        s, _, b = await simple_request(args.host, args.auth_port, "GET", "/stats")
        if s != 200:
            raise HTTPError("/stats answered %d" % s)
        return json.loads(b)

    async def session():
        s, _, b = await simple_request(args.host, args.admin_port, "GET", "/auth/session", auth)
        if s != 200:
            raise HTTPError("/auth/session answered %d" % s)
        return json.loads(b)

    async def metrics():
        s, _, b = await simple_request(args.host, args.admin_port, "GET", "/metrics", auth)
        if s != 200:
            return {}
        out = {}
        for line in b.decode().splitlines():
            if line.startswith("#") or not line.strip():
                continue
            name, _, value = line.rpartition(" ")
            try:
                out[name] = float(value)
            except ValueError:
                pass
        return out

    watcher = EventWatcher(args.host, args.admin_port, args.admin_token)
    watch_task = asyncio.ensure_future(watcher.run())
    await asyncio.wait_for(watcher.connected.wait(), 10)
    if watcher.error:
        raise SystemExit("cannot follow /auth/events: %s" % watcher.error)

    # Open the connections first (bounded concurrency), so connecting is not measured.
    n, c = args.requests, min(args.connections, args.requests)
    spacing = args.duration / n
    per_slot = [[] for _ in range(c)]
    all_results = []
    for i in range(n):
        r = Result(i, i * spacing)
        per_slot[i % c].append(r)
        all_results.append(r)
    counters = {"opened": 0, "connect_errors": 0, "reconnects": 0, "server_closes": 0, "bodies": {}}
    start = {"event": asyncio.Event(), "t0": None}
    gate = asyncio.Semaphore(args.connect_concurrency)
    workers = [
        asyncio.ensure_future(connection_worker(args, slot, per_slot[slot], start, gate, counters)) for slot in range(c)
    ]
    connect_started = now()
    while counters["opened"] < c:
        await asyncio.sleep(0.01)
        if now() - connect_started > 30:
            raise SystemExit("could not open %d connections in 30 s (%d opened)" % (c, counters["opened"]))
    connect_seconds = now() - connect_started

    stats_before = await stats()
    metrics_before = await metrics()
    # Log in last, right before the load, so the first expiry falls LIFETIME after it.
    body = json.dumps({"grant_type": "password", "username": args.username, "password": args.password}).encode()
    s, _, b = await simple_request(
        args.host, args.admin_port, "POST", "/auth/login", dict(auth, **{"Content-Type": "application/json"}), body
    )
    login_done = now()
    if s != 200:
        raise SystemExit("login answered %d: %s" % (s, b[:300]))
    session_before = await session()
    generation_before = session_before.get("generation")
    cpu_server_before = cpu_seconds_of(args.server_pid) if args.server_pid else float("nan")
    cpu_client_before = resource.getrusage(resource.RUSAGE_SELF)
    load_start = now() + 0.05
    start["t0"] = load_start
    start["event"].set()
    await asyncio.gather(*workers)
    load_end = now()
    cpu_server_after = cpu_seconds_of(args.server_pid) if args.server_pid else float("nan")
    cpu_client_after = resource.getrusage(resource.RUSAGE_SELF)
    await asyncio.sleep(0.3)  # let the last events arrive
    stats_after = await stats()
    metrics_after = await metrics()
    session_after = await session()
    watch_task.cancel()
    try:
        await watch_task
    except (asyncio.CancelledError, Exception):  # noqa: BLE001
        pass

    # ---- analysis ----
    lifetime = args.lifetime
    margin = args.window_margin_ms / 1000.0
    # The gateway counts a token's lifetime from when its request left, about one
    # authorization-server latency before the answer (and the event) arrived.
    latency = args.auth_latency_ms / 1000.0
    refreshed = [(t, d) for (t, e, d) in watcher.events if e == "refreshed" and t >= login_done]
    other_events = [(t, e, d) for (t, e, d) in watcher.events if e not in ("refreshed", "state", "logged_in") and t >= login_done]
    ends = [login_done] + [t for t, _ in refreshed]
    windows = []  # (start, end) of each refresh that completed
    for k in range(1, len(ends)):
        start_k = ends[k - 1] - latency + lifetime - margin
        if ends[k] < start_k:
            # Not after an expiry (a second refresh right after the previous one): the
            # window runs from the previous refresh's end.
            start_k = ends[k - 1]
        windows.append((start_k, ends[k]))
    # Expiries while load ran: each token's expiry point that fell before the load ended.
    # Token k (installed at ends[k]) expired in service when its expiry came before the
    # load ended and before a later refresh replaced it. A refresh that completes less
    # than half a lifetime after the previous one replaced a token that had not expired:
    # a second refresh for the same expiry.
    expiries = 0
    for k, e in enumerate(ends):
        replaced = ends[k + 1] if k + 1 < len(ends) else float("inf")
        if e + lifetime < load_end and replaced >= e + lifetime / 2:
            expiries += 1
    early = [(ends[k] - ends[k - 1]) for k in range(1, len(ends)) if ends[k] - ends[k - 1] < lifetime / 2]

    ok = [r for r in all_results if r.error is None and r.status == 200]
    bad_status = [r for r in all_results if r.error is None and r.status != 200]
    errored = [r for r in all_results if r.error is not None]
    status_counts = {}
    for r in bad_status:
        status_counts[r.status] = status_counts.get(r.status, 0) + 1
    error_counts = {}
    for r in errored:
        error_counts[r.error] = error_counts.get(r.error, 0) + 1

    def latency(r):
        return r.done - r.sent

    def overlaps(r, w):
        return r.sent <= w[1] and r.done >= w[0]

    in_window = [r for r in all_results if r.done is not None and any(overlaps(r, w) for w in windows)]
    at_completion = [r for r in all_results if r.done is not None and any(r.sent <= w[1] <= r.done for w in windows)]
    in_window_ids = {id(r) for r in in_window}
    outside = [r for r in all_results if r.done is not None and id(r) not in in_window_ids]

    def row(name, rs):
        lat = sorted(latency(r) for r in rs)
        errs = sum(1 for r in rs if r.error is not None or r.status != 200)
        if not lat:
            return "| %s | 0 | - | - | - | - |" % name
        return "| %s | %d | %d | %s | %s | %s |" % (
            name, len(lat), errs, fmt_ms(percentile(lat, 50)), fmt_ms(percentile(lat, 99)), fmt_ms(lat[-1]))

    lateness = sorted(r.sent - (load_start + r.due) for r in all_results if r.sent is not None)
    span = max(r.done for r in all_results) - load_start
    refreshes = stats_after["refreshes"] - stats_before["refreshes"]
    attempts = stats_after["refresh_attempts"] - stats_before["refresh_attempts"]
    gen_after = session_after.get("generation")
    gen_delta = (gen_after - generation_before) if (gen_after is not None and generation_before is not None) else None
    window_lengths = [w[1] - w[0] - (margin if w[0] != ends[k] else 0) for k, w in enumerate(windows)]
    during = sorted(latency(r) for r in in_window)
    p99_during = percentile(during, 99) if during else float("nan")
    budget = args.auth_latency_ms / 1000.0 + 0.005
    client_errors = len(bad_status) + len(errored) + counters["connect_errors"]
    ratio = (refreshes / expiries) if expiries else float("nan")

    out = []
    p = out.append
    p("| measure | value |")
    p("|---|---|")
    p("| requests sent / answered 200 | %d / %d |" % (n, len(ok)))
    p("| connections (keep-alive), opened in | %d, %.2f s (%d connect errors, %d reconnects, %d closed by server) |"
      % (c, connect_seconds, counters["connect_errors"], counters["reconnects"], counters["server_closes"]))
    p("| load span (first due → last answer) | %.2f s, paced at %.0f req/s |" % (span, n / args.duration))
    p("| client-visible errors | %d (non-200: %s; transport: %s) |"
      % (client_errors, json.dumps(status_counts) if status_counts else "none", json.dumps(error_counts) if error_counts else "none"))
    p("| token lifetime, refresh skew, auth latency | %g s, 0 s, %d ms |" % (lifetime, args.auth_latency_ms))
    p("| expiries while the load ran | %d (elapsed/lifetime from login to load end: %.2f) |"
      % (expiries, (load_end - login_done) / lifetime))
    p("| refreshes at the authorization server (/stats delta) | %d (refresh attempts %d, reuse detections %d) |"
      % (refreshes, attempts, stats_after["reuse_detections"] - stats_before["reuse_detections"]))
    p("| generation increments (/auth/session) | %s |" % (gen_delta if gen_delta is not None else "n/a"))
    p("| `refreshed` events seen | %d |" % len(refreshed))
    p("| **refreshes per expiry** | **%.2f** |" % ratio)
    p("| refreshes that replaced an unexpired token (completed < lifetime/2 after the previous) | %s |"
      % ("none" if not early else "%d, %s ms after the previous" % (len(early), ", ".join(fmt_ms(x) for x in early))))
    p("| refresh windows (expiry → `refreshed` event) | %s ms |" % ", ".join(fmt_ms(x) for x in window_lengths))
    if other_events:
        kinds = {}
        for _, e, _ in other_events:
            kinds[e] = kinds.get(e, 0) + 1
        p("| other session events | %s |" % json.dumps(kinds))
    def mdelta(name):
        return int(metrics_after.get(name, 0) - metrics_before.get(name, 0))

    replayed = mdelta('authgate_replays_total{session="default",outcome="replayed"}')
    p("| requests replayed after 401 invalid_token (gateway metric) | %d |" % replayed)
    edges = ["0.01", "0.025", "0.05"]
    hist = 'authgate_request_duration_seconds_bucket{route_kind="authenticated",le="%s"}'
    server_total = mdelta('authgate_request_duration_seconds_count{route_kind="authenticated"}')
    if server_total:
        server_over = [server_total - mdelta(hist % e) for e in edges]
        lat_all = [latency(r) for r in all_results if r.done is not None]
        client_over = [sum(1 for x in lat_all if x > float(e)) for e in edges]
        p("| requests slower than 10 / 25 / 50 ms: gateway's own histogram vs client | %s vs %s (of %d vs %d) |" % (
            " / ".join(map(str, server_over)), " / ".join(map(str, client_over)), server_total, len(lat_all)))
    p("| client send lateness p50 / p99 / max | %s / %s / %s ms |"
      % (fmt_ms(percentile(lateness, 50)), fmt_ms(percentile(lateness, 99)), fmt_ms(lateness[-1])))
    p("| CPU during the load: gateway process / client | %.2f s / %.2f s over %.2f s wall |" % (
        cpu_server_after - cpu_server_before,
        (cpu_client_after.ru_utime + cpu_client_after.ru_stime) - (cpu_client_before.ru_utime + cpu_client_before.ru_stime),
        load_end - load_start))
    p("")
    p("| requests | count | errors | p50 ms | p99 ms | max ms |")
    p("|---|---|---|---|---|---|")
    p(row("all", all_results))
    p(row("outside refresh windows", outside))
    p(row("in flight during a refresh", in_window))
    p(row("in flight when a refresh completed", at_completion))
    p("")
    goal_refresh = expiries > 0 and refreshes == expiries
    goal_errors = client_errors == 0
    goal_p99 = p99_during <= budget
    p("Goals: refreshes per expiry = 1 → %s; 0 errors → %s; p99 during a refresh ≤ %d + 5 ms → %s (%s ms, %s)."
      % ("met" if goal_refresh else "MISSED (%d refreshes for %d expiries)" % (refreshes, expiries),
         "met" if goal_errors else "MISSED (%d)" % client_errors,
         args.auth_latency_ms,
         "met" if goal_p99 else "MISSED",
         fmt_ms(p99_during),
         ("%+.1f ms vs budget" % ((p99_during - budget) * 1000.0))))
    for status, text in sorted(counters["bodies"].items()):
        p("")
        p("First %d body: `%s`" % (status, text.replace("`", "'")))
    print("\n".join(out))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({
                "requests": n, "connections": c, "ok": len(ok), "client_errors": client_errors,
                "status_counts": status_counts, "error_counts": error_counts, "expiries": expiries,
                "refreshes": refreshes, "refresh_attempts": attempts, "generation_delta": gen_delta,
                "window_ms": [x * 1000 for x in window_lengths],
                "p99_during_ms": p99_during * 1000, "budget_ms": budget * 1000,
                "events": [(t - load_start, e, d) for (t, e, d) in watcher.events],
                "samples": [(r.due, (r.sent or 0) - load_start, (r.done or 0) - load_start, r.status, r.error) for r in all_results],
            }, f)
    return 0 if (goal_refresh and goal_errors) else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True, help="proxy port")
    ap.add_argument("--admin-port", type=int, required=True)
    ap.add_argument("--auth-port", type=int, required=True, help="fake authorization server port (GET /stats)")
    ap.add_argument("--admin-token", required=True)
    ap.add_argument("--path", default="/api/item")
    ap.add_argument("--requests", type=int, default=10000)
    ap.add_argument("--connections", type=int, default=1000)
    ap.add_argument("--duration", type=float, default=9.0, help="seconds over which the requests are paced")
    ap.add_argument("--lifetime", type=float, default=2.0, help="access-token lifetime the server was started with")
    ap.add_argument("--auth-latency-ms", type=int, default=20)
    ap.add_argument("--timeout", type=float, default=5.0, help="per-request timeout, seconds")
    ap.add_argument("--connect-concurrency", type=int, default=100)
    ap.add_argument("--window-margin-ms", type=float, default=5.0,
                    help="a refresh window starts this long before end_k + lifetime (issue-to-event gap)")
    ap.add_argument("--username", default="alice")
    ap.add_argument("--password", default="wonderland")
    ap.add_argument("--server-pid", type=int, default=0, help="to report the gateway's CPU time")
    ap.add_argument("--json", help="write raw samples and events here")
    args = ap.parse_args()
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = min(hard, max(soft, args.connections + 256))
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    except (ValueError, OSError):
        pass
    try:
        import uvloop  # a faster event loop for the client; the standard one otherwise

        uvloop.install()
        print(f"client event loop: uvloop {uvloop.__version__}")
    except ImportError:
        print("client event loop: asyncio (uvloop not installed)")
    sys.exit(asyncio.run(main_async(args)))


if __name__ == "__main__":
    main()
