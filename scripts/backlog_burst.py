"""The two ends of scripts/bench-backlog.

`upstream PORT BACKLOG DELAY_MS`: an HTTP/1.1 keep-alive server as a development server is
(one accepting thread, a thread per connection, each answer after DELAY_MS), listening with
a backlog of BACKLOG; prints one line once it listens.

`burst URL N`: N requests at once, each on a connection of its own; prints the latencies,
sorted, one JSON list on one line.
"""
import asyncio
import json
import socket
import sys
import threading
import time
import urllib.parse


def upstream(port, backlog, delay_ms):
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(backlog)
    print("listening", flush=True)

    def serve(conn):
        with conn:
            data = b""
            while True:
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                _, _, data = data.partition(b"\r\n\r\n")
                time.sleep(delay_ms / 1000)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")

    while True:
        conn, _ = listener.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


async def one(host, port, path):
    start = time.monotonic()
    reader, writer = await asyncio.open_connection(host, port)
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
    await writer.drain()
    await reader.read()
    writer.close()
    return time.monotonic() - start


async def burst(url, n):
    u = urllib.parse.urlsplit(url)
    results = await asyncio.gather(*(one(u.hostname, u.port, u.path) for _ in range(n)), return_exceptions=True)
    latencies = sorted(r for r in results if isinstance(r, float))
    print(json.dumps({"latencies": latencies, "failed": sum(1 for r in results if not isinstance(r, float))}))


if __name__ == "__main__":
    if sys.argv[1] == "upstream":
        upstream(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
    else:
        asyncio.run(burst(sys.argv[2], int(sys.argv[3])))
