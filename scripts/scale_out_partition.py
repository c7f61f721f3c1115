#!/usr/bin/env python3
"""One `authgate serve` replica cut off from PostgreSQL by a silent partition, then healed.

Three replicas on one table (the fake authorization server and API of `authgate dev`);
replica 0 runs in a network namespace of its own, reaching PostgreSQL, the authorization
server and the API over a veth pair (through plain TCP forwarders on the host side, since
they listen on 127.0.0.1). The partition is iptables dropping every packet of the database's
port on that veth, both ways: no reset, no FIN, the replica's connections just go silent.
Its HTTP ports stay reachable, so it can be asked throughout.

For a logout and then a login made on replica 1 during a cut of CUT_SECONDS:
1. during the cut, replica 0 still serves its session as it was;
2. once healed, replica 0 follows (session ended / adopted) within HEAL_LIMIT seconds of
   the heal (the issue's bound is 1 s); the time is printed.
Run by scripts/scale-out-partition as root under scripts/with-postgres.
"""

import os
import socket
import subprocess
import threading
import time

import scale_out_lib
from scale_out_lib import Cluster, check, request, run, wait_until

CUT = float(os.environ.get("CUT_SECONDS", "6"))
HEAL_LIMIT = float(os.environ.get("HEAL_LIMIT", "1.0"))
ROUNDS = int(os.environ.get("ROUNDS", "1"))
TAG = "%05d" % (os.getpid() % 100000)
NS = "agpart" + TAG
VETH_HOST, VETH_NS = "agh" + TAG, "agn" + TAG
OCTET = 16 + os.getpid() % 200
HOST_IP, NS_IP = "10.231.%d.1" % OCTET, "10.231.%d.2" % OCTET


def sh(*args, check_status=True):
    out = subprocess.run(list(args), capture_output=True, text=True)
    if check_status and out.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(args), out.stderr.strip()))
    return out.returncode == 0


def make_namespace():
    sh("ip", "netns", "add", NS)
    sh("ip", "link", "add", VETH_HOST, "type", "veth", "peer", "name", VETH_NS)
    sh("ip", "link", "set", VETH_NS, "netns", NS)
    sh("ip", "addr", "add", HOST_IP + "/30", "dev", VETH_HOST)
    sh("ip", "link", "set", VETH_HOST, "up")
    sh("ip", "netns", "exec", NS, "ip", "addr", "add", NS_IP + "/30", "dev", VETH_NS)
    sh("ip", "netns", "exec", NS, "ip", "link", "set", VETH_NS, "up")
    sh("ip", "netns", "exec", NS, "ip", "link", "set", "lo", "up")


def remove_namespace():
    heal(quiet=True)
    sh("ip", "netns", "del", NS, check_status=False)
    sh("ip", "link", "del", VETH_HOST, check_status=False)


def rules(pg_port):
    return [["INPUT", "-i", VETH_HOST, "-p", "tcp", "--dport", str(pg_port), "-j", "DROP"],
            ["OUTPUT", "-o", VETH_HOST, "-p", "tcp", "--sport", str(pg_port), "-j", "DROP"]]


def cut():
    for r in rules(scale_out_lib.PG_URL.port):
        sh("iptables", "-I", *r)


def heal(quiet=False):
    for r in rules(scale_out_lib.PG_URL.port):
        while sh("iptables", "-D", *r, check_status=False):
            pass


def forward(port):
    """Relays HOST_IP:port to 127.0.0.1:port (plain bytes, both ways) until the process ends."""
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((HOST_IP, port))
    listener.listen(64)

    def pump(a, b):
        try:
            while True:
                data = a.recv(65536)
                if not data:
                    break
                b.sendall(data)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def accepting():
        while True:
            client, _ = listener.accept()
            try:
                upstream = socket.create_connection(("127.0.0.1", port))
            except OSError:
                client.close()
                continue
            threading.Thread(target=pump, args=(client, upstream), daemon=True).start()
            threading.Thread(target=pump, args=(upstream, client), daemon=True).start()

    threading.Thread(target=accepting, daemon=True).start()


class PartitionedCluster(Cluster):
    """Replica 0 in the namespace, reaching everything through HOST_IP."""

    def __init__(self):
        super().__init__(3, lifetime=30, auth_latency_ms=20)
        r = self.replicas[0]
        path = r["log"] + ".json"
        import json
        with open(path) as f:
            config = json.load(f)
        # Its upstreams are on the host side of the veth, not on its loopback.
        config["allowInsecureHTTP"] = True
        config["proxy"]["host"] = NS_IP
        config["admin"]["host"] = NS_IP
        config["authorization"]["tokenEndpoint"] = "http://%s:%d/oauth/token" % (HOST_IP, self.auth)
        config["routes"][0]["upstream"] = "http://%s:%d/api" % (HOST_IP, self.api)
        pg = scale_out_lib.PG_URL
        config["store"]["url"] = "postgres://%s@%s:%d%s" % (pg.username, HOST_IP, pg.port, pg.path)
        with open(path, "w") as f:
            json.dump(config, f)
        r["proxy"] = (NS_IP, r["proxy"])
        r["admin"] = (NS_IP, r["admin"])
        for port in (pg.port, self.auth, self.api):
            forward(port)

    def start_replica(self, i):
        if i != 0:
            return super().start_replica(i)
        r = self.replicas[0]
        r["process"] = scale_out_lib.start(["ip", "netns", "exec", NS, scale_out_lib.BIN, "serve", "--config",
                                            r["log"] + ".json"], open(r["log"], "a"), self.env)
        return r["process"]


def timed_heal(condition):
    """Heals the cut; the seconds until `condition` held (None: not within 30 s)."""
    heal()
    healed = time.monotonic()
    if not wait_until(condition, timeout=30, what="the healed replica"):
        return None
    return time.monotonic() - healed


def main():
    make_namespace()
    try:
        c = PartitionedCluster()
        if not c.start_all():
            return
        check(c.login(1) == 200, "login on replica 1")
        check(wait_until(lambda: c.logged_in(0), what="login followed"), "replica 0 (in the namespace) follows it")
        logout_times, login_times = [], []
        for round in range(ROUNDS):
            # A logout elsewhere during the cut.
            cut()
            time.sleep(CUT / 2)
            check(c.logout(1) == 200, "logout on replica 1 during the cut")
            time.sleep(CUT / 2)
            check(c.logged_in(0), "the cut-off replica still holds its session (it cannot know yet)")
            t = timed_heal(lambda: not c.logged_in(0))
            check(t is not None and t <= HEAL_LIMIT,
                  "round %d: the healed replica ends the session %s s after the heal (bound %.1f s)"
                  % (round, "never" if t is None else "%.3f" % t, HEAL_LIMIT))
            if t is not None:
                logout_times.append(t)
            # A login elsewhere during the cut.
            cut()
            time.sleep(CUT / 2)
            check(c.login(1) == 200, "login on replica 1 during the cut")
            time.sleep(CUT / 2)
            check(not c.logged_in(0), "the cut-off replica is still logged out")
            t = timed_heal(lambda: c.logged_in(0) and c.proxy(0, timeout=5)[0] == 200)
            check(t is not None and t <= HEAL_LIMIT,
                  "round %d: the healed replica adopts the login %s s after the heal (bound %.1f s)"
                  % (round, "never" if t is None else "%.3f" % t, HEAL_LIMIT))
            if t is not None:
                login_times.append(t)
        for what, times in (("logout", logout_times), ("login", login_times)):
            if times:
                print("partition of %.0f s, %s followed after the heal: min %.3f s, max %.3f s over %d"
                      % (CUT, what, min(times), max(times), len(times)), flush=True)
        check(not c.leaks(), "no secret in any replica's log")
    finally:
        scale_out_lib.stop_all()
        remove_namespace()


if __name__ == "__main__":
    run(main)
