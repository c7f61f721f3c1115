#!/usr/bin/env python3
"""A WebSocket echo server on loopback for AuthGate's upgrade tests (PyPI `websockets`).

Prints its port on the first line of standard output, then serves until stdin closes.
- The first N handshakes (--reject-first N) are answered 401 with
  `WWW-Authenticate: Bearer error="invalid_token"`; later ones need a bearer token that was
  never rejected (a refreshed one), else 403. `/ws/missing` is answered 404.
- Messages are echoed; the text message `close-please` makes the server close (1000).
- The text message `stats` is answered with JSON: the tokens rejected and accepted (as
  hashes, never the tokens), and how many connections have ended and how.
"""
import argparse
import asyncio
import hashlib
import json
import sys

from websockets.asyncio.server import serve
from websockets.exceptions import ConnectionClosed

state = {"rejected": [], "accepted": [], "ended": 0, "ended_ok": 0, "ended_error": 0, "reject_first": 0}


def digest(value):
    return hashlib.sha256((value or "").encode()).hexdigest()[:16]


def process_request(connection, request):
    auth = request.headers.get("Authorization")
    if request.path == "/ws/missing":
        return connection.respond(404, "no such socket\n")
    if state["reject_first"] > 0:
        state["reject_first"] -= 1
        state["rejected"].append(digest(auth))
        response = connection.respond(401, "token expired\n")
        response.headers["WWW-Authenticate"] = 'Bearer error="invalid_token"'
        return response
    if not auth or not auth.startswith("Bearer ") or digest(auth) in state["rejected"]:
        return connection.respond(403, "no valid token\n")
    if request.headers.get("Upgrade", "").lower() != "websocket":
        return connection.respond(400, "no Upgrade: websocket\n")
    state["accepted"].append(digest(auth))
    return None


async def echo(ws):
    try:
        async for message in ws:
            if message == "close-please":
                await ws.close(1000, "asked to")
                break
            if message == "stats":
                await ws.send(json.dumps({k: v for k, v in state.items() if k != "reject_first"}))
                continue
            await ws.send(message)
        state["ended_ok"] += 1
    except ConnectionClosed:
        state["ended_error"] += 1
    finally:
        state["ended"] += 1


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--reject-first", type=int, default=0)
    args = parser.parse_args()
    state["reject_first"] = args.reject_first
    async with serve(
        echo, "127.0.0.1", 0, process_request=process_request, max_size=None, ping_interval=None, close_timeout=5
    ) as server:
        port = server.sockets[0].getsockname()[1]
        print(port, flush=True)
        loop = asyncio.get_running_loop()
        # Serve until the parent closes our stdin (or dies).
        await loop.run_in_executor(None, sys.stdin.read)


if __name__ == "__main__":
    asyncio.run(main())
