#!/usr/bin/env python3
"""A real WebSocket client (PyPI `websockets`) through AuthGate: runs each scenario against
`--url` (the gateway's ws:// route, served by echo_server.py) and prints one JSON line per
scenario; exits 1 if any failed. Every wait is bounded.
"""
import argparse
import asyncio
import json
import os
import socket
import sys
import time

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

results = []
# Seconds an opening handshake may take (--open-timeout).
OPEN_TIMEOUT = 10


def record(name, ok, **facts):
    results.append(ok)
    print(json.dumps({"scenario": name, "ok": ok, **facts}), flush=True)


async def stats(url):
    async with connect(url + "/stats", max_size=None, ping_interval=None, open_timeout=OPEN_TIMEOUT) as ws:
        await ws.send("stats")
        return json.loads(await asyncio.wait_for(ws.recv(), 10))


async def echo_both_ways(url):
    async with connect(url + "/echo", max_size=None, ping_interval=None, open_timeout=OPEN_TIMEOUT) as ws:
        await ws.send("hello")
        text = await asyncio.wait_for(ws.recv(), 10)
        big = os.urandom(3 * 1024 * 1024 + 17)
        await ws.send(big)
        back = await asyncio.wait_for(ws.recv(), 30)
        many = [f"m{i}" for i in range(200)]
        for m in many:
            await ws.send(m)
        got = [await asyncio.wait_for(ws.recv(), 10) for _ in many]
        upgrade = ws.response.headers.get("Upgrade")
    record(
        "echo", text == "hello" and back == big and got == many and upgrade == "websocket",
        big_bytes=len(big), big_equal=back == big, in_order=got == many, upgrade=upgrade)


async def refreshed_once(url):
    s = await stats(url)
    ok = len(s["rejected"]) == 1 and len(s["accepted"]) >= 1 and s["rejected"][0] not in s["accepted"]
    record("refresh-and-retry", ok, rejected=len(s["rejected"]), accepted=len(s["accepted"]))


async def not_switched(url):
    try:
        async with connect(url + "/missing", open_timeout=OPEN_TIMEOUT):
            record("non-101", False, why="connected")
    except InvalidStatus as e:
        record("non-101", e.response.status_code == 404, status=e.response.status_code)


async def idle_closes(url, idle):
    async with connect(url + "/idle", ping_interval=None, open_timeout=OPEN_TIMEOUT, close_timeout=5) as ws:
        started = time.monotonic()
        try:
            await asyncio.wait_for(ws.recv(), idle * 5 + 10)
            record("idle-timeout", False, why="a message arrived")
            return
        except ConnectionClosed:
            waited = time.monotonic() - started
    record("idle-timeout", waited >= idle * 0.9, waited_seconds=round(waited, 2))


async def server_closes(url):
    async with connect(url + "/close", ping_interval=None, open_timeout=OPEN_TIMEOUT) as ws:
        await ws.send("close-please")
        try:
            await asyncio.wait_for(ws.recv(), 10)
            record("server-closes", False, why="a message arrived")
            return
        except ConnectionClosed as e:
            code = e.rcvd.code if e.rcvd else None
        await asyncio.wait_for(ws.wait_closed(), 10)
    record("server-closes", code == 1000, code=code)


async def client_closes(url):
    before = (await stats(url))["ended"]
    async with connect(url + "/bye", ping_interval=None, open_timeout=OPEN_TIMEOUT) as ws:
        await ws.send("x")
        await asyncio.wait_for(ws.recv(), 10)
        await asyncio.wait_for(ws.close(1000, "done"), 10)
    # The client then drops its TCP connection without any close handshake.
    async with connect(url + "/drop", ping_interval=None, open_timeout=OPEN_TIMEOUT) as ws:
        await ws.send("y")
        await asyncio.wait_for(ws.recv(), 10)
        ws.transport.abort()
    deadline = time.monotonic() + 15
    ended = before
    while time.monotonic() < deadline:
        # +2 for the two connections above, +1 for the stats connection of the check before.
        ended = (await stats(url))["ended"]
        if ended >= before + 3:
            break
        await asyncio.sleep(0.2)
    record("client-closes", ended >= before + 3, ended=ended - before)


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--idle", type=float, required=True)
    parser.add_argument("--open-timeout", type=float, default=10)
    args = parser.parse_args()
    global OPEN_TIMEOUT
    OPEN_TIMEOUT = args.open_timeout
    url = args.url.rstrip("/")
    for scenario in (
        lambda: echo_both_ways(url), lambda: refreshed_once(url), lambda: not_switched(url),
        lambda: server_closes(url), lambda: client_closes(url), lambda: idle_closes(url, args.idle),
    ):
        try:
            await asyncio.wait_for(scenario(), 90)
        except Exception as e:  # a failure of one scenario is reported, the others still run
            record("error", False, error=f"{type(e).__name__}: {e}")
    sys.exit(0 if all(results) else 1)


if __name__ == "__main__":
    asyncio.run(main())
