#!/usr/bin/env python3
"""Drive a real glewlwyd (Debian package `glewlwyd`, 2.7.x) OAuth2/OIDC
authorization server unattended on loopback, for the interop suite.

Usage:
  glewlwyd_server.py start --dir DIR --port PORT [--access-ttl S] [--refresh-ttl S]
      writes DIR/glewlwyd.conf + DIR/glewlwyd.sqlite3 (from the schema the
      package ships), starts glewlwyd bound to 127.0.0.1:PORT (pid in
      DIR/glewlwyd.pid, log in DIR/glewlwyd.log), configures it through its
      admin REST API and prints ONE JSON object describing it on stdout
      (also saved as DIR/info.json).
  glewlwyd_server.py code --dir DIR --verifier V
      logs alice in (cookie jar), grants consent, GETs the authorization
      endpoint with the S256 challenge of V and prints the `code`.
  glewlwyd_server.py stop --dir DIR
      TERM, then KILL after a few seconds; always exits 0.
  glewlwyd_server.py stats --dir DIR
      prints the counters of stats() as one JSON object.

Importable: start(dir, port, access_ttl=4, refresh_ttl=...) -> dict,
code(info, verifier) -> str, stop(dir), and for checks:
stats(dir_or_info) -> dict (refreshes, reuse detections, revocations... read
from glewlwyd's sqlite database, read-only, and its log),
latest_family(dir_or_info) -> dict (the session's refresh-token family),
revoke_user_refresh_tokens(info) -> int (admin API),
register_client_keys(info, client_id, pems) (admin API: the `pubkey` of the
private_key_jwt client), register_client_certificate(info, client_id, pem)
(admin API: the `jwks` of the self_signed_tls_client_auth client, and the
TLS proxy's trust list), dpop_nonce(info) -> dict (the client's current DPoP
nonce, from its database).

Besides `authgate` (client_secret_basic/post) it creates one client per
RFC 7523 / RFC 8705 method, each allowed that method only: `authgate-jwt`
(private_key_jwt, key from register_client_keys), `authgate-hs`
(client_secret_jwt with authgate's secret), `authgate-mtls` (tls_client_auth,
subject DN CN=authgate-mtls) and `authgate-self-signed`
(self_signed_tls_client_auth, certificate from register_client_certificate).

Mutual TLS the way glewlwyd is deployed for it: glewlwyd itself speaks plain
HTTP on loopback, and HAProxy (when installed) terminates TLS in front of it
on a second port, asks for a client certificate (`verify optional`, trusting
the test CA of mtls.make_pki and the registered self-signed certificates),
and passes a verified certificate to glewlwyd in a header (glewlwyd's
`client-cert-source: header`), which glewlwyd reads on its `/mtls/` endpoint
aliases only. HAProxy's pid, log and admin socket are in DIR/haproxy/.

Stdlib only (and mtls.py next to it).  Needs the Debian packages `glewlwyd`
(which pulls `sqlite3`) and `openssl` (RSA signing key; falls back to HS256
when absent); `haproxy` for mutual TLS (without it, info has no `mtls`).
"""

from __future__ import annotations

import argparse
import base64
import gzip
import hashlib
import http.cookiejar
import json
import os
import secrets
import shutil
import signal
import socket
import sqlite3
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

GLEWLWYD_BIN = "/usr/bin/glewlwyd"
LIB_DIR = "/usr/lib/glewlwyd"
SCHEMA_CANDIDATES = [
    # Full init: all tables + default admin/password user, scopes, modules.
    "/usr/share/doc/glewlwyd/database/init.sqlite3.sql.gz",
    "/usr/share/doc/glewlwyd/database/init.sqlite3.sql",
]

ADMIN_USER = "admin"
ADMIN_PASSWORD = "password"  # set by the package's init.sqlite3.sql
PLUGIN_NAME = "oidc"
CLIENT_ID = "authgate"
RS_CLIENT_ID = "resource-server"
JWT_CLIENT_ID = "authgate-jwt"  # private_key_jwt only
HS_CLIENT_ID = "authgate-hs"  # client_secret_jwt only
MTLS_CLIENT_ID = "authgate-mtls"  # tls_client_auth only, subject DN CN=authgate-mtls
SELF_SIGNED_CLIENT_ID = "authgate-self-signed"  # self_signed_tls_client_auth only
# The header in which the TLS proxy passes the verified client certificate.
# Lower case: HAProxy sends header names in lower case, and glewlwyd looks the
# name up case-sensitively.
CERT_HEADER = "x-client-cert"
HAPROXY_BIN = "/usr/sbin/haproxy"
USERNAME = "alice"
PASSWORD = "wonderland"
SCOPE = "api"
INTROSPECT_SCOPE = "introspect"
REDIRECT_URI = "http://127.0.0.1/callback"
DPOP_IAT_SECONDS = 60
DPOP_NONCE_USES = 2

HTTP_TIMEOUT = 10.0
START_TIMEOUT = 20.0


class GlewlwydError(RuntimeError):
    pass


def _log(msg: str) -> None:
    print(f"[glewlwyd_server] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# HTTP helpers (stdlib). Redirects are never followed.


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


def _opener(jar: http.cookiejar.CookieJar | None = None):
    handlers = [_NoRedirect()]
    if jar is not None:
        handlers.append(urllib.request.HTTPCookieProcessor(jar))
    # Never use a proxy for loopback.
    handlers.append(urllib.request.ProxyHandler({}))
    return urllib.request.build_opener(*handlers)


def _request(opener, method: str, url: str, *, json_body=None, form=None,
             basic: tuple[str, str] | None = None, headers=None,
             timeout: float = HTTP_TIMEOUT):
    """Returns (status, headers, body_bytes). Never raises on HTTP status."""
    data = None
    hdrs = dict(headers or {})
    if json_body is not None:
        data = json.dumps(json_body).encode()
        hdrs["Content-Type"] = "application/json"
    elif form is not None:
        data = urllib.parse.urlencode(form).encode()
        hdrs["Content-Type"] = "application/x-www-form-urlencoded"
    if basic is not None:
        tok = base64.b64encode(f"{basic[0]}:{basic[1]}".encode()).decode()
        hdrs["Authorization"] = f"Basic {tok}"
    req = urllib.request.Request(url, data=data, method=method, headers=hdrs)
    try:
        with opener.open(req, timeout=timeout) as resp:
            return resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as e:
        body = e.read() if e.fp is not None else b""
        return e.code, e.headers, body


def _expect(status, body, ok, what):
    if status not in ok:
        raise GlewlwydError(
            f"{what}: HTTP {status}: {body[:500].decode('utf-8', 'replace')}")


# --------------------------------------------------------------------------
# Process management


def _paths(d: str) -> dict:
    d = os.path.abspath(d)
    return {
        "dir": d,
        "conf": os.path.join(d, "glewlwyd.conf"),
        "db": os.path.join(d, "glewlwyd.sqlite3"),
        "pid": os.path.join(d, "glewlwyd.pid"),
        "log": os.path.join(d, "glewlwyd.log"),
        "stdout": os.path.join(d, "glewlwyd.stdout.log"),
        "info": os.path.join(d, "info.json"),
        "key": os.path.join(d, "signing-key.pem"),
        "pub": os.path.join(d, "signing-pub.pem"),
    }


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # Zombie? (our own child not yet reaped)
    try:
        with open(f"/proc/{pid}/stat") as f:
            if f.read().split(")")[-1].split()[0] == "Z":
                return False
    except OSError:
        pass
    return True


def _read_pid(d: str) -> int | None:
    try:
        with open(_paths(d)["pid"]) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def stop(dir: str, timeout: float = 5.0) -> None:  # noqa: A002 - interface name
    """TERM, then KILL after `timeout` seconds (glewlwyd and its TLS proxy).
    Never raises."""
    _stop_proxy(dir, timeout)
    p = _paths(dir)
    pid = _read_pid(dir)
    if pid is None:
        return
    try:
        # Only signal it if it is really glewlwyd (pid reuse guard).
        try:
            with open(f"/proc/{pid}/comm") as f:
                comm = f.read().strip()
        except OSError:
            comm = None
        if comm is not None and comm != "glewlwyd":
            _log(f"pid {pid} is '{comm}', not glewlwyd; not signalling it")
        elif _pid_alive(pid):
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and _pid_alive(pid):
                _reap(pid)
                time.sleep(0.05)
            if _pid_alive(pid):
                _log(f"glewlwyd pid {pid} ignored SIGTERM, sending SIGKILL")
                os.kill(pid, signal.SIGKILL)
                deadline = time.monotonic() + 3
                while time.monotonic() < deadline and _pid_alive(pid):
                    _reap(pid)
                    time.sleep(0.05)
    except (ProcessLookupError, PermissionError):
        pass
    except Exception as e:  # stop must always succeed
        _log(f"stop: {e}")
    finally:
        try:
            os.unlink(p["pid"])
        except OSError:
            pass


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
    except OSError:
        pass


# --------------------------------------------------------------------------
# The TLS proxy in front of glewlwyd's mutual-TLS endpoints (HAProxy)
#
# glewlwyd reads the header as one PEM certificate. nginx 1.22 can pass a
# client certificate only URL-escaped ($ssl_client_escaped_cert) or folded
# over several header lines ($ssl_client_cert), and glewlwyd decodes neither
# (both were tried: an empty 403). HAProxy writes it as glewlwyd wants it: the
# DER in base64 between the PEM armour lines, on one line.


def _proxy_paths(d: str) -> dict:
    n = os.path.join(os.path.abspath(d), "haproxy")
    return {"dir": n, "conf": os.path.join(n, "haproxy.cfg"), "pid": os.path.join(n, "master.pid"),
            "log": os.path.join(n, "haproxy.log"), "crt": os.path.join(n, "server.pem"),
            "trust": os.path.join(n, "client-trust.pem"), "sock": os.path.join(n, "admin.sock"),
            "registered": os.path.join(n, "registered.json")}


def _trust_pems(d: str, ca: str) -> str:
    """The proxy's client-certificate issuers: the test CA and every
    self-signed certificate registered (a self-signed certificate is its own
    issuer)."""
    try:
        with open(_proxy_paths(d)["registered"]) as f:
            registered = json.load(f)
    except (OSError, ValueError):
        registered = {}
    with open(ca) as f:
        pems = [f.read()] + list(registered.values())
    return "".join(p if p.endswith("\n") else p + "\n" for p in pems)


def _start_proxy(d: str, port: int, glewlwyd_port: int, pki: dict) -> int:
    """HAProxy on 127.0.0.1:`port` over TLS, proxying to glewlwyd on loopback.
    It asks for a client certificate and verifies it against its trust list
    (`verify optional`: a certificate that fails is refused in the
    handshake); a verified one is passed in CERT_HEADER, and a header of that
    name sent by the client is always removed."""
    n = _proxy_paths(d)
    os.makedirs(n["dir"], exist_ok=True)
    with open(n["crt"], "w") as out:
        for path in (pki["server_cert"], pki["server_key"]):
            with open(path) as f:
                out.write(f.read())
    os.chmod(n["crt"], 0o600)
    with open(n["trust"], "w") as f:
        f.write(_trust_pems(d, pki["ca"]))
    conf = f"""# generated by scripts/interop/glewlwyd_server.py -- loopback only
global
    maxconn 1024
    stats socket {n['sock']} mode 600 level admin
    log stdout format raw local0 info
defaults
    mode http
    log global
    timeout connect 5s
    timeout client 60s
    timeout server 60s
frontend mtls
    bind 127.0.0.1:{port} ssl crt {n['crt']} ca-file {n['trust']} verify optional
    http-request del-header {CERT_HEADER}
    http-request set-header {CERT_HEADER} "-----BEGIN CERTIFICATE-----%[ssl_c_der,base64]-----END CERTIFICATE-----" if {{ ssl_c_used }} {{ ssl_c_verify 0 }}
    http-request set-header X-Forwarded-Proto https
    option forwardfor
    # One line per request: status, path and the SHA-256 of the certificate
    # shown (empty without one), read by certificate_log().
    log-format "{_PROXY_LOG_TAG} %ST %HP %[ssl_c_der,sha2(256),hex]"
    default_backend glewlwyd
backend glewlwyd
    server glewlwyd 127.0.0.1:{glewlwyd_port}
"""
    with open(n["conf"], "w") as f:
        f.write(conf)
    with open(n["log"], "wb") as out:
        proc = subprocess.Popen([HAPROXY_BIN, "-W", "-db", "-f", n["conf"]],
                                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                cwd=n["dir"], start_new_session=True, close_fds=True)
    with open(n["pid"], "w") as f:
        f.write(f"{proc.pid}\n")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if not _pid_alive(proc.pid):
            _reap(proc.pid)
            raise GlewlwydError("haproxy exited at start:\n" + _tail(n["log"]))
        if not _port_free(port) and os.path.exists(n["sock"]):
            return proc.pid
        time.sleep(0.05)
    raise GlewlwydError("haproxy did not listen within 10 s:\n" + _tail(n["log"]))


_PROXY_LOG_TAG = "mtls-request"


def certificate_log(dir_or_info) -> list:
    """The requests the TLS proxy passed to glewlwyd: [(status, path, x5t#S256
    of the client certificate shown, or None)], oldest first."""
    out = []
    try:
        with open(_proxy_paths(_dir_of(dir_or_info))["log"], errors="replace") as f:
            for line in f:
                parts = line.split()
                if len(parts) < 3 or parts[0] != _PROXY_LOG_TAG:
                    continue
                x5t = None
                if len(parts) > 3 and parts[3] not in ("", "-"):
                    x5t = base64.urlsafe_b64encode(bytes.fromhex(parts[3])).rstrip(b"=").decode()
                out.append((int(parts[1]) if parts[1].isdigit() else 0, parts[2], x5t))
    except (OSError, ValueError):
        pass
    return out


def _proxy_command(d: str, command: str) -> str:
    """One command on HAProxy's runtime API (its admin socket)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(_proxy_paths(d)["sock"])
        s.sendall(command.encode() + b"\n")
        out = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                return out.decode(errors="replace")
            out += chunk


def _update_proxy_trust(d: str, ca: str) -> None:
    """Replaces the proxy's trust list at run time (HAProxy's `set ssl
    ca-file` + `commit ssl ca-file`, as an operator would, without a reload):
    the next handshake uses it."""
    n = _proxy_paths(d)
    pems = _trust_pems(d, ca)
    with open(n["trust"] + ".new", "w") as f:
        f.write(pems)
    os.replace(n["trust"] + ".new", n["trust"])  # for a restart
    out = _proxy_command(d, f"set ssl ca-file {n['trust']} <<\n{pems.rstrip()}\n")
    if "transaction created" not in out.lower() and "transaction updated" not in out.lower():
        raise GlewlwydError(f"haproxy: set ssl ca-file: {out.strip()}")
    out = _proxy_command(d, f"commit ssl ca-file {n['trust']}")
    if "success" not in out.lower():
        raise GlewlwydError(f"haproxy: commit ssl ca-file: {out.strip()}")


def _stop_proxy(d: str, timeout: float = 5.0) -> None:
    n = _proxy_paths(d)
    try:
        with open(n["pid"]) as f:
            pid = int(f.read().strip())
        with open(f"/proc/{pid}/comm") as f:
            if f.read().strip() != "haproxy":
                pid = None
    except (OSError, ValueError):
        pid = None
    try:
        if pid is not None and _pid_alive(pid):
            os.kill(pid, signal.SIGTERM)  # the master stops its worker
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and _pid_alive(pid):
                _reap(pid)
                time.sleep(0.05)
            if _pid_alive(pid):
                os.killpg(pid, signal.SIGKILL)
                _reap(pid)
    except (ProcessLookupError, PermissionError):
        pass
    except Exception as e:  # stop must always succeed
        _log(f"stop haproxy: {e}")
    finally:
        try:
            os.unlink(n["pid"])
        except OSError:
            pass


def _port_free(port: int) -> bool:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


# --------------------------------------------------------------------------
# Setup


def _load_schema() -> str:
    for path in SCHEMA_CANDIDATES:
        if os.path.exists(path):
            if path.endswith(".gz"):
                with gzip.open(path, "rt", encoding="utf-8") as f:
                    return f.read()
            with open(path, encoding="utf-8") as f:
                return f.read()
    raise GlewlwydError(
        "glewlwyd sqlite schema not found (looked for "
        + ", ".join(SCHEMA_CANDIDATES)
        + "); is the Debian package `glewlwyd` installed?")


def _create_db(path: str) -> None:
    if os.path.exists(path):
        os.unlink(path)
    con = sqlite3.connect(path)
    try:
        # One transaction and no fsync per statement: ~3 s -> ~0.05 s.
        con.execute("PRAGMA synchronous=OFF")
        con.executescript("BEGIN;\n" + _load_schema() + "\nCOMMIT;")
        con.execute("PRAGMA synchronous=FULL")
        # WAL: the harness reads this database while glewlwyd runs (stats(),
        # latest_family()). In the default rollback-journal mode a reader's
        # shared lock makes glewlwyd's next write fail at once (it sets no
        # busy timeout): seen as HTTP 500 from /revoke ("revoke_refresh_token
        # - Error executing j_query"). In WAL mode readers never block the
        # writer. The mode is stored in the file, so glewlwyd opens it so too.
        mode = con.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise GlewlwydError(f"could not put the database in WAL mode ({mode})")
        n = con.execute("SELECT COUNT(*) FROM g_user WHERE gu_username=?",
                        (ADMIN_USER,)).fetchone()[0]
        if n != 1:
            raise GlewlwydError("schema did not create the default admin user")
    finally:
        con.close()


def _write_conf(p: dict, port: int) -> str:
    external = f"http://127.0.0.1:{port}"
    # NB: do NOT write `use_secure_connection=false`: glewlwyd 2.7.5 then
    # insists on secure_connection_*_file and exits. Omitted == plain HTTP.
    conf = f"""# generated by scripts/interop/glewlwyd_server.py -- loopback only
port={port}
bind_address="127.0.0.1"
external_url="{external}"
login_url="login.html"
api_prefix="api"
allow_origin="*"
log_mode="file"
log_level="INFO"
log_file="{p['log']}"
cookie_secure=0
cookie_same_site="empty"
session_expiration=86400
session_key="GLEWLWYD2_SESSION_ID"
admin_session_authentication="cookie"
profile_session_authentication="cookie"
allow_multiple_user_per_session=true
login_api_enabled=true
plugin_api_run_enabled=""
add_x_frame_option_header_deny=true
admin_scope="g_admin"
profile_scope="g_profile"
user_module_path="{LIB_DIR}/user"
client_module_path="{LIB_DIR}/client"
user_auth_scheme_module_path="{LIB_DIR}/scheme"
plugin_module_path="{LIB_DIR}/plugin"
hash_algorithm="SHA512"
database =
{{
  type = "sqlite3"
  path = "{p['db']}"
}};
"""
    with open(p["conf"], "w") as f:
        f.write(conf)
    return external


def _make_rsa_key(p: dict) -> tuple[str, str] | None:
    openssl = shutil.which("openssl")
    if not openssl:
        return None
    try:
        subprocess.run([openssl, "genpkey", "-algorithm", "RSA", "-pkeyopt",
                        "rsa_keygen_bits:2048", "-out", p["key"]],
                       check=True, capture_output=True, timeout=60)
        subprocess.run([openssl, "pkey", "-in", p["key"], "-pubout",
                        "-out", p["pub"]],
                       check=True, capture_output=True, timeout=60)
        with open(p["key"]) as f:
            key = f.read()
        with open(p["pub"]) as f:
            pub = f.read()
        return key, pub
    except (subprocess.SubprocessError, OSError) as e:
        _log(f"openssl key generation failed ({e}); falling back to HS256")
        return None


def _wait_ready(base: str, pid: int, p: dict, timeout: float) -> None:
    op = _opener()
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        if not _pid_alive(pid):
            _reap(pid)
            raise GlewlwydError(
                "glewlwyd exited during startup; stdout/stderr:\n"
                + _tail(p["stdout"]) + "\nlog:\n" + _tail(p["log"]))
        try:
            st, _, _ = _request(op, "GET", f"{base}/config/", timeout=2)
            if st == 200:
                return
            last = f"HTTP {st}"
        except (urllib.error.URLError, OSError) as e:
            last = str(e)
        time.sleep(0.05)
    raise GlewlwydError(
        f"glewlwyd did not answer on {base}/config/ within {timeout}s "
        f"(last: {last}); log:\n" + _tail(p["log"]))


def _tail(path: str, n: int = 30) -> str:
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return "(no file)"


def _admin_session(api: str):
    jar = http.cookiejar.CookieJar()
    op = _opener(jar)
    st, _, body = _request(op, "POST", f"{api}/auth/",
                           json_body={"username": ADMIN_USER,
                                      "password": ADMIN_PASSWORD})
    _expect(st, body, (200,), "admin login")
    return op


def _configure(api: str, issuer_port: int, access_ttl: int, refresh_ttl: int,
               p: dict) -> dict:
    op = _admin_session(api)
    client_secret = "authgate-" + secrets.token_hex(12)
    rs_secret = "rs-" + secrets.token_hex(12)
    issuer = f"http://127.0.0.1:{issuer_port}/api/{PLUGIN_NAME}"

    def call(method, path, body, what, ok=(200,)):
        st, _, resp = _request(op, method, f"{api}{path}", json_body=body)
        _expect(st, resp, ok, what)
        return resp

    for name, desc in ((SCOPE, "Interop API scope"),
                       (INTROSPECT_SCOPE, "Token introspection/revocation")):
        call("POST", "/scope/", {
            "name": name, "display_name": name, "description": desc,
            "password_required": True, "password_max_age": 0, "scheme": {},
        }, f"create scope {name}")

    key = _make_rsa_key(p)
    if key is not None:
        sign = {"jwt-type": "rsa", "jwt-key-size": "256",
                "key": key[0], "cert": key[1]}
        alg = "RS256"
    else:
        sign = {"jwt-type": "sha", "jwt-key-size": "256",
                "key": secrets.token_hex(32)}
        alg = "HS256"

    params = {
        "iss": issuer,
        **sign,
        "access-token-duration": access_ttl,
        "refresh-token-duration": refresh_ttl,
        "code-duration": 600,
        # Rotation: every refresh_token grant disables the presented refresh
        # token and returns a new one; reuse of a disabled one breaks the
        # chain (the newest refresh token of the chain is disabled too).
        "refresh-token-one-use": "always",
        "refresh-token-rolling": True,
        "allow-non-oidc": True,  # password / client_credentials / no openid
        "auth-type-code-enabled": True,
        "auth-type-code-revoke-replayed": True,
        "auth-type-token-enabled": False,
        "auth-type-password-enabled": True,
        "auth-type-client-enabled": True,
        "auth-type-refresh-enabled": True,
        "auth-type-device-enabled": True,  # RFC 8628
        "pkce-allowed": True,
        "pkce-method-plain-allowed": False,
        "introspection-revocation-allowed": True,
        # client_id/secret (HTTP Basic) may call /introspect and /revoke ...
        "introspection-revocation-allow-target-client": True,
        # ... and so may a Bearer access token carrying scope `introspect`.
        "introspection-revocation-auth-scope": [INTROSPECT_SCOPE],
        "jwks-show": True,
        # RFC 7523 client assertions: private_key_jwt verified with the
        # client's `pubkey` property (PEM), client_secret_jwt with its secret.
        # glewlwyd checks client assertions with its JWT-request code, which
        # this switch turns on; it refuses an assertion living longer than
        # request-maximum-exp.
        "client-pubkey-parameter": "pubkey",
        "request-parameter-allow": True,
        "request-maximum-exp": 300,
        # RFC 8705: the client certificate comes from the TLS proxy's header,
        # read on the /mtls/ endpoint aliases only (elsewhere the header is
        # ignored); self-signed certificates are checked against the client's
        # `jwks` (x5c).
        "client-cert-source": "header",
        "client-cert-header-name": CERT_HEADER,
        "client-cert-use-endpoint-aliases": True,
        "client-cert-self-signed-allowed": True,
        # DPoP (RFC 9449): a token request with a proof gets tokens bound to
        # its key (the JWT access token's cnf.jkt, the refresh token's
        # row); the proof's iat may be DPOP_IAT_SECONDS old and not in the
        # future. glewlwyd checks a proof sent at its token endpoint whatever
        # oauth-dpop-allowed says; the switch names the algorithms in its
        # discovery document and allows dpop_jkt at /auth. Nonces are one per
        # client: the first proof without the current one is answered
        # use_dpop_nonce; a nonce serves DPOP_NONCE_USES + 1 accepted proofs,
        # and the token response to the last one brings the next nonce in its
        # DPoP-Nonce header (the old one is refused from then on).
        "oauth-dpop-allowed": True,
        "oauth-dpop-iat-duration": DPOP_IAT_SECONDS,
        "oauth-dpop-iat-gap-duration": 0,
        "oauth-dpop-nonce-mandatory": True,
        "oauth-dpop-nonce-counter": DPOP_NONCE_USES,
        "subject-type": "public",
        "scope": [],
        "claims": [],
        "name-claim": "on-demand",
        "email-claim": "no",
        "address-claim": {"type": "no"},
    }
    call("POST", "/mod/plugin/", {
        "module": "oidc", "name": PLUGIN_NAME, "display_name": "Interop OIDC",
        "enabled": True, "parameters": params,
    }, "create oidc plugin instance")

    call("POST", "/user/", {
        "username": USERNAME, "name": "Alice", "email": "",
        "password": PASSWORD, "scope": [SCOPE, "openid"], "enabled": True,
    }, f"create user {USERNAME}")

    call("POST", "/client/", {
        "client_id": CLIENT_ID, "name": "AuthGate", "description": "interop",
        "client_secret": client_secret, "confidential": True, "enabled": True,
        "redirect_uri": [REDIRECT_URI],
        "authorization_type": ["code", "password", "client_credentials",
                               "refresh_token", "delete_token", "device_authorization"],
        "token_endpoint_auth_method": ["client_secret_basic",
                                       "client_secret_post"],
        "scope": [SCOPE],
    }, f"create client {CLIENT_ID}")

    # The database client backend stores only the properties its data-format
    # names; tls_client_auth_subject_dn is not among the defaults (the SAN
    # ones are). Added as an operator would, through the admin API.
    st, _, body = _request(op, "GET", f"{api}/mod/client/database")
    _expect(st, body, (200,), "read the client backend")
    backend = json.loads(body)
    backend["parameters"].setdefault("data-format", {})["tls_client_auth_subject_dn"] = {
        "multiple": False, "read": True, "write": True}
    call("PUT", "/mod/client/database",
         {k: v for k, v in backend.items() if k not in ("readonly",)},
         "add tls_client_auth_subject_dn to the client backend")
    call("PUT", "/mod/client/database/reset", None, "reload the client backend")

    for cid, method, extra in (
            (JWT_CLIENT_ID, "private_key_jwt", {}),
            (HS_CLIENT_ID, "client_secret_jwt", {"client_secret": client_secret}),
            (MTLS_CLIENT_ID, "tls_client_auth",
             {"tls_client_auth_subject_dn": "CN=" + MTLS_CLIENT_ID}),
            (SELF_SIGNED_CLIENT_ID, "self_signed_tls_client_auth", {})):
        call("POST", "/client/", {
            "client_id": cid, "name": cid, "description": "interop: " + method,
            "confidential": True, "enabled": True, "redirect_uri": [],
            "authorization_type": ["password", "refresh_token", "delete_token"],
            "token_endpoint_auth_method": [method], "scope": [SCOPE], **extra,
        }, f"create client {cid}")

    call("POST", "/client/", {
        "client_id": RS_CLIENT_ID, "name": "Resource server",
        "description": "introspection", "client_secret": rs_secret,
        "confidential": True, "enabled": True, "redirect_uri": [],
        "authorization_type": ["client_credentials"],
        "token_endpoint_auth_method": ["client_secret_basic"],
        "scope": [INTROSPECT_SCOPE],
    }, f"create client {RS_CLIENT_ID}")

    return {"issuer": issuer, "client_secret": client_secret,
            "rs_secret": rs_secret, "alg": alg}


def _check_discovery(url: str) -> dict:
    st, _, body = _request(_opener(), "GET", url)
    _expect(st, body, (200,), "discovery")
    doc = json.loads(body)
    for k in ("token_endpoint", "authorization_endpoint",
              "revocation_endpoint", "introspection_endpoint", "jwks_uri"):
        if k not in doc:
            raise GlewlwydError(f"discovery document lacks {k}: {doc}")
    return doc


def start(dir: str, port: int, access_ttl: int = 4,  # noqa: A002
          refresh_ttl: int = 1209600) -> dict:
    """Create config + db in `dir`, start glewlwyd on 127.0.0.1:`port`,
    configure it and return the info dict (also written to dir/info.json)."""
    if access_ttl < 1:
        raise GlewlwydError("access_ttl must be >= 1 (glewlwyd minimum)")
    if refresh_ttl < 1:
        raise GlewlwydError("refresh_ttl must be >= 1")
    if not os.access(GLEWLWYD_BIN, os.X_OK):
        raise GlewlwydError(
            f"{GLEWLWYD_BIN} not found: install the Debian package `glewlwyd`")
    t0 = time.monotonic()
    os.makedirs(dir, exist_ok=True)
    p = _paths(dir)
    old = _read_pid(dir)
    if old is not None and _pid_alive(old):
        raise GlewlwydError(f"a glewlwyd (pid {old}) already runs for {dir}; "
                            "stop it first")
    if not _port_free(port):
        raise GlewlwydError(f"127.0.0.1:{port} is already in use")
    for k in ("log", "stdout", "info"):
        try:
            os.unlink(p[k])
        except OSError:
            pass

    _create_db(p["db"])
    base = _write_conf(p, port)
    api = f"{base}/api"

    with open(p["stdout"], "wb") as out:
        proc = subprocess.Popen(
            [GLEWLWYD_BIN, "-c", p["conf"]],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            cwd=p["dir"], start_new_session=True, close_fds=True)
    with open(p["pid"], "w") as f:
        f.write(f"{proc.pid}\n")
    try:
        _wait_ready(base, proc.pid, p, START_TIMEOUT)
        cfg = _configure(api, port, access_ttl, refresh_ttl, p)
        oidc = f"{api}/{PLUGIN_NAME}"
        discovery = f"{oidc}/.well-known/openid-configuration"
        doc = _check_discovery(discovery)
        mtls_info = None
        if os.access(HAPROXY_BIN, os.X_OK) and shutil.which("openssl"):
            sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
            import mtls
            pki = mtls.make_pki(os.path.join(p["dir"], "mtls"))
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                tls_port = s.getsockname()[1]
            _start_proxy(p["dir"], tls_port, port, pki)
            # glewlwyd builds its discovery document, mtls_endpoint_aliases
            # included, from its one external_url: here its plain loopback
            # URL. The aliases as the TLS proxy serves them:
            tls_oidc = f"https://127.0.0.1:{tls_port}/api/{PLUGIN_NAME}"
            mtls_info = {**pki, "client_id": MTLS_CLIENT_ID,
                         "self_signed_client_id": SELF_SIGNED_CLIENT_ID,
                         "proxy": "haproxy", "proxy_url": f"https://127.0.0.1:{tls_port}",
                         "discovered_aliases": doc.get("mtls_endpoint_aliases"),
                         "token_endpoint": tls_oidc + "/mtls/token",
                         "revocation_endpoint": tls_oidc + "/mtls/revoke",
                         "introspection_endpoint": tls_oidc + "/mtls/introspect"}
    except BaseException:
        stop(dir)
        raise

    info = {
        "server": "glewlwyd",
        "version": _version(),
        "base_url": base,
        "issuer": doc.get("issuer", cfg["issuer"]),
        "discovery": discovery,
        "token_endpoint": doc["token_endpoint"],
        "authorization_endpoint": doc["authorization_endpoint"],
        "revocation_endpoint": doc["revocation_endpoint"],
        "introspection_endpoint": doc["introspection_endpoint"],
        "userinfo_endpoint": doc.get("userinfo_endpoint"),
        "jwks_uri": doc["jwks_uri"],
        "signing_alg": cfg["alg"],
        # HTTP Basic with the resource-server client can introspect any
        # token of this instance: because a Bearer scope is configured too,
        # glewlwyd 2.7.5 does not restrict Basic callers to their own tokens
        # (get_client_id_for_introspection returns NULL when an
        # Authorization header is present and an auth scope is set).
        "introspection_auth": {"type": "basic", "client_id": RS_CLIENT_ID,
                               "client_secret": cfg["rs_secret"]},
        "introspection_auth_alternatives": [
            {"type": "basic", "client_id": CLIENT_ID,
             "client_secret": cfg["client_secret"],
             "note": "works too (any token of this instance)"},
            {"type": "bearer_client_credentials", "client_id": RS_CLIENT_ID,
             "client_secret": cfg["rs_secret"], "scope": INTROSPECT_SCOPE,
             "note": "Authorization: Bearer <client_credentials token with "
                     "scope introspect>; token lives access_ttl seconds"},
        ],
        "revocation_auth": {"type": "basic", "client_id": CLIENT_ID,
                            "client_secret": cfg["client_secret"]},
        "client_id": CLIENT_ID,
        "client_secret": cfg["client_secret"],
        "token_endpoint_auth_method": "client_secret_basic",
        "jwt_client_id": JWT_CLIENT_ID,
        "hs_client_id": HS_CLIENT_ID,
        # glewlwyd refuses an assertion whose aud is its issuer: the token
        # endpoint only.
        "assertion_audiences": ["tokenEndpoint"],
        "mtls": mtls_info,
        "mtls_unavailable": (None if mtls_info else
                             f"{HAPROXY_BIN} (the TLS proxy glewlwyd's mutual TLS needs here) is not installed"),
        "dpop": {"iat_seconds": DPOP_IAT_SECONDS, "nonce_uses": DPOP_NONCE_USES,
                 "algorithms": doc.get("dpop_signing_alg_values_supported")},
        "api": api,
        "username": USERNAME,
        "password": PASSWORD,
        "scope": SCOPE,
        "redirect_uri": REDIRECT_URI,
        "access_ttl": access_ttl,
        "refresh_ttl": refresh_ttl,
        "rotation": True,
        "reuse_detection": True,
        "revokes_previous_access_token": False,
        "pkce_methods": doc.get("code_challenge_methods_supported", ["S256"]),
        "pid": proc.pid,
        "dir": p["dir"],
        "log": p["log"],
        "startup_seconds": round(time.monotonic() - t0, 3),
    }
    with open(p["info"], "w") as f:
        json.dump(info, f, indent=2)
    return info


def register_client_keys(info: dict, client_id: str, public_pems: list) -> None:
    """Sets the client's `pubkey`, the key glewlwyd verifies its
    private_key_jwt assertions with (one PEM key per client: the newest of
    `public_pems`). Through the admin API, as an operator rotating the key
    would; glewlwyd reads the client at every token request."""
    _update_client(info, client_id, {"pubkey": public_pems[-1]})


def register_client_certificate(info: dict, client_id: str, cert_pem: str) -> None:
    """Registers the self-signed certificate of a self_signed_tls_client_auth
    client: glewlwyd's client `jwks` (the key with the certificate as x5c,
    which glewlwyd compares with the certificate shown) through the admin
    API, and the TLS proxy's trust list (at run time), replacing the
    client's previous one in both."""
    der = ssl.PEM_cert_to_DER_cert(cert_pem)
    pub = subprocess.run(["openssl", "x509", "-noout", "-pubkey"], input=cert_pem.encode(),
                         check=True, capture_output=True).stdout
    spki = subprocess.run(["openssl", "pkey", "-pubin", "-outform", "DER"], input=pub,
                          check=True, capture_output=True).stdout
    point = spki[-65:]  # a P-256 SubjectPublicKeyInfo ends with 04 || x || y
    if point[0] != 4 or b"\x2a\x86\x48\xce\x3d\x03\x01\x07" not in spki:
        raise GlewlwydError("register_client_certificate: not a P-256 certificate")

    def b64u(b):
        return base64.urlsafe_b64encode(b).rstrip(b"=").decode()
    jwk = {"kty": "EC", "crv": "P-256", "x": b64u(point[1:33]), "y": b64u(point[33:]),
           "use": "sig", "kid": b64u(hashlib.sha256(der).digest())[:16],
           "x5c": [base64.b64encode(der).decode()]}
    _update_client(info, client_id, {"jwks": {"keys": [jwk]}})
    d = _dir_of(info)
    n = _proxy_paths(d)
    try:
        with open(n["registered"]) as f:
            registered = json.load(f)
    except (OSError, ValueError):
        registered = {}
    registered[client_id] = cert_pem
    with open(n["registered"] + ".new", "w") as f:
        json.dump(registered, f)
    os.replace(n["registered"] + ".new", n["registered"])
    _update_proxy_trust(d, info["mtls"]["ca"])


def _update_client(info: dict, client_id: str, changes: dict) -> None:
    api = info["api"]
    op = _admin_session(api)
    st, _, body = _request(op, "GET", f"{api}/client/{client_id}")
    _expect(st, body, (200,), f"read client {client_id}")
    client = {k: v for k, v in json.loads(body).items() if k != "source"}
    client.update(changes)
    st, _, body = _request(op, "PUT", f"{api}/client/{client_id}", json_body=client)
    _expect(st, body, (200,), f"update client {client_id} ({', '.join(changes)})")


def _version() -> str | None:
    try:
        r = subprocess.run([GLEWLWYD_BIN, "--version"], capture_output=True,
                           text=True, timeout=10)
        return (r.stdout.strip().splitlines() or [None])[-1]
    except (OSError, subprocess.SubprocessError):
        return None


# --------------------------------------------------------------------------
# Authorization code + PKCE, non-interactively


def pkce_challenge(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def code(info: dict, verifier: str, scope: str | None = None,
         state: str | None = None) -> str:
    """Log `alice` in through glewlwyd's auth API, grant consent, and return
    an authorization code bound to the S256 challenge of `verifier`."""
    scope = scope or info["scope"]
    state = state or secrets.token_urlsafe(8)
    api = info["base_url"].rstrip("/") + "/api"
    jar = http.cookiejar.CookieJar()
    op = _opener(jar)
    st, _, body = _request(op, "POST", f"{api}/auth/", json_body={
        "username": info["username"], "password": info["password"]})
    _expect(st, body, (200,), "user login")
    st, _, body = _request(op, "PUT", f"{api}/auth/grant/{info['client_id']}",
                           json_body={"scope": " ".join(scope.split())})
    _expect(st, body, (200,), "grant consent")
    q = urllib.parse.urlencode({
        "response_type": "code",
        "client_id": info["client_id"],
        "redirect_uri": info["redirect_uri"],
        "scope": scope,
        "state": state,
        # glewlwyd requires a nonce whenever `openid` is requested.
        "nonce": secrets.token_urlsafe(12),
        "code_challenge": pkce_challenge(verifier),
        "code_challenge_method": "S256",
        # glewlwyd's login page appends g_continue once login+consent are
        # done; without it /auth always redirects to login.html.
        "g_continue": "",
    })
    st, hdrs, body = _request(op, "GET", f"{info['authorization_endpoint']}?{q}")
    loc = hdrs.get("Location") if hdrs is not None else None
    if st not in (301, 302, 303, 307) or not loc:
        raise GlewlwydError(f"authorization endpoint: HTTP {st}, Location="
                            f"{loc!r}: {body[:300]!r}")
    parsed = urllib.parse.urlparse(loc)
    params = urllib.parse.parse_qs(parsed.query)
    if "error" in params:
        raise GlewlwydError(f"authorization endpoint returned error: {loc}")
    if not loc.startswith(info["redirect_uri"]):
        raise GlewlwydError(f"authorization endpoint redirected elsewhere "
                            f"(login/consent needed?): {loc}")
    if params.get("state", [None])[0] != state:
        raise GlewlwydError(f"state mismatch in {loc}")
    codes = params.get("code")
    if not codes:
        raise GlewlwydError(f"no code in redirect: {loc}")
    return codes[0]


def approve_device(info: dict, user_code: str, scope: str | None = None) -> None:
    """Approve the device login waiting with `user_code` as `alice` would at glewlwyd's
    verification page: log in through its auth API, grant the client the scope, then open
    the device page with the code (glewlwyd answers 302 with `prompt=deviceComplete`)."""
    scope = scope or info["scope"]
    api = info["base_url"].rstrip("/") + "/api"
    jar = http.cookiejar.CookieJar()
    op = _opener(jar)
    st, _, body = _request(op, "POST", f"{api}/auth/", json_body={
        "username": info["username"], "password": info["password"]})
    _expect(st, body, (200,), "user login")
    st, _, body = _request(op, "PUT", f"{api}/auth/grant/{info['client_id']}",
                           json_body={"scope": " ".join(scope.split())})
    _expect(st, body, (200,), "grant consent")
    q = urllib.parse.urlencode({"code": user_code, "g_continue": ""})
    st, hdrs, body = _request(op, "GET", f"{api}/{PLUGIN_NAME}/device?{q}")
    loc = hdrs.get("Location") if hdrs is not None else None
    if st not in (301, 302, 303, 307) or not loc or "deviceComplete" not in loc:
        raise GlewlwydError(f"device verification: HTTP {st}, Location={loc!r}: {body[:300]!r}")


# --------------------------------------------------------------------------
# Counters from glewlwyd's own records (its sqlite database and its log)
#
# glewlwyd has no /stats. What it did is in its database: every access token
# it issues is a row of gpo_access_token whose gpoa_authorization_type says
# which grant issued it (refresh_token = 6), and every refresh token a row of
# gpo_refresh_token. A refresh with `refresh-token-one-use: always` disables
# the presented row (gpor_enabled=0, gpor_last_seen=now) and inserts its
# successor with the SAME gpor_jti, so a jti is a token family (one login).
# Reuse detection (a disabled refresh token presented again) disables every
# enabled row of that jti (disable_refresh_token_by_jti): the family's newest
# row goes dead although nobody revoked it. An RFC 7009 revocation of the
# newest row also kills the family; glewlwyd logs each one ("Refresh token
# generated for client '...' revoked") and each refused refresh token
# ("Security - Token invalid at IP Address"), so the log tells the two apart.
# Timestamps are whole seconds.

# gpoa_authorization_type / gpor_authorization_type (protocol_oidc.c, 2.7.5).
_GRANT_NAMES = {0: "authorization_code", 1: "implicit", 2: "id_token",
                4: "password", 5: "client_credentials", 6: "refresh_token",
                8: "device_code", 9: "ciba"}
_REFRESH_TYPE = 6
_HARNESS_DISABLED = "harness-disabled.json"


def _dir_of(dir_or_info) -> str:
    if isinstance(dir_or_info, dict):
        return dir_or_info["dir"]
    return os.path.abspath(dir_or_info)


def _ro(d: str) -> sqlite3.Connection:
    """A read-only connection to glewlwyd's live database (it keeps
    writing: sqlite's locking makes the read consistent; wait for its
    write lock rather than fail)."""
    path = _paths(d)["db"]
    if not os.path.exists(path):
        raise GlewlwydError(f"no glewlwyd database at {path}")
    uri = "file:" + urllib.parse.quote(path) + "?mode=ro"
    con = sqlite3.connect(uri, uri=True, timeout=10)
    con.row_factory = sqlite3.Row
    return con


def _families(con: sqlite3.Connection) -> dict:
    """jti -> {rows: [(id, issued_at, last_seen, enabled, username)],
    newest: row}, oldest first."""
    fams: dict = {}
    for r in con.execute(
            "SELECT gpor_id, gpor_jti, gpor_username, gpor_client_id, "
            "gpor_issued_at, gpor_last_seen, gpor_enabled "
            "FROM gpo_refresh_token WHERE gpor_plugin_name=? "
            "ORDER BY gpor_id", (PLUGIN_NAME,)):
        f = fams.setdefault(r["gpor_jti"], {"rows": []})
        f["rows"].append(dict(r))
    for f in fams.values():
        f["newest"] = f["rows"][-1]
        f["first"] = f["rows"][0]
    return fams


_INVALID_CLIENT = b"Security - Authorization invalid for client_id "


def _log_counts(d: str) -> dict:
    out = {"refresh_revoked": 0, "access_revoked": 0, "invalid_refresh": 0,
           "invalid_client": {}, "dpop_invalid": 0, "dpop_jti_reused": 0}
    try:
        with open(_paths(d)["log"], "rb") as f:
            for line in f:
                if _INVALID_CLIENT in line:
                    cid = line.split(_INVALID_CLIENT, 1)[1].split(b" ", 1)[0].decode(errors="replace")
                    out["invalid_client"][cid] = out["invalid_client"].get(cid, 0) + 1
                elif b"Security - Token invalid at IP Address" in line:
                    out["invalid_refresh"] += 1
                elif b"Security - DPoP invalid at IP Address" in line:
                    out["dpop_invalid"] += 1
                elif b"jti already used for client" in line:  # DPoP (CIBA is off)
                    out["dpop_jti_reused"] += 1
                elif b"Event oidc" in line and b" revoked, origin" in line:
                    if b"Refresh token generated" in line:
                        out["refresh_revoked"] += 1
                    elif b"Access token jti" in line:
                        out["access_revoked"] += 1
    except OSError:
        pass
    return out


def _harness_disabled(d: str) -> list:
    try:
        with open(os.path.join(d, _HARNESS_DISABLED)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return []


def stats(dir_or_info) -> dict:
    """What an authorization server's GET /stats would say, read from
    glewlwyd's database (read-only) and log. The keys the interop driver
    and the storm client compare before/after:

    - tokens_issued {grant: n}: access tokens issued, by grant (glewlwyd
      issues one access token per successful token request);
    - refreshes: access tokens issued by the refresh_token grant;
      refresh_times_wall: their issue times (whole seconds);
    - rotations: refresh tokens that replaced one of their family (equals
      `refreshes` under one-use rotation: a cross-check);
    - families / active_families / families_disabled: refresh-token
      families (one per login), those whose newest token still works, and
      those whose newest token was disabled (revoked, reuse, admin);
    - revocations, revocations_by_hint: RFC 7009 revocations glewlwyd
      logged (refresh_token / access_token);
    - refused_refresh_tokens: refresh grants glewlwyd refused for an
      invalid (disabled, unknown) refresh token;
    - token_requests: tokens issued + refused refresh tokens (other refused
      token requests, e.g. bad client credentials, leave no record);
    - harness_disabled_families: families this module disabled through the
      admin API (revoke_user_refresh_tokens);
    - reuse_detections: families disabled by glewlwyd's reuse detection =
      families_disabled - families revoked (RFC 7009) - harness-disabled;
    - client_assertions / client_certificates {method: n}: token requests
      authenticated by private_key_jwt, client_secret_jwt, tls_client_auth,
      self_signed_tls_client_auth: the tokens issued to the client registered
      with that method as its only token_endpoint_auth_method (glewlwyd
      records the client of every token, not the method);
    - client_assertions_refused / client_certificates_refused {reason: n}:
      the requests of those clients glewlwyd refused, from its log ("Security
      - Authorization invalid for client_id ..."; glewlwyd answers them with
      an empty 403 and logs no finer reason at INFO);
    - bound_thumbprints {x5t#S256: n}: tokens bound to a client certificate
      (see _bound);
    - dpop_proofs / dpop_proof_keys {jkt: n}: DPoP proofs the token endpoint
      accepted (dpop_userinfo_proofs: its /userinfo, with `ath`);
      dpop_bound / dpop_bound_keys {jkt: n}: refresh tokens bound
      to a DPoP key (one per login and refresh); dpop_refused: proofs refused
      as invalid, dpop_jti_reused: proofs refused for a jti seen before
      (both from its log; see _dpop).
    """
    d = _dir_of(dir_or_info)
    con = _ro(d)
    try:
        issued: dict = {}
        for t, n in con.execute(
                "SELECT gpoa_authorization_type, COUNT(*) FROM gpo_access_token "
                "WHERE gpoa_plugin_name=? GROUP BY gpoa_authorization_type",
                (PLUGIN_NAME,)):
            issued[_GRANT_NAMES.get(t, str(t))] = n
        refresh_times = [r[0] for r in con.execute(
            "SELECT gpoa_issued_at FROM gpo_access_token WHERE gpoa_plugin_name=? "
            "AND gpoa_authorization_type=? ORDER BY gpoa_id",
            (PLUGIN_NAME, _REFRESH_TYPE))]
        by_client = dict(con.execute(
            "SELECT gpoa_client_id, COUNT(*) FROM gpo_access_token WHERE gpoa_plugin_name=? "
            "GROUP BY gpoa_client_id", (PLUGIN_NAME,)).fetchall())
        access_disabled = con.execute(
            "SELECT COUNT(*) FROM gpo_access_token WHERE gpoa_plugin_name=? "
            "AND gpoa_enabled=0", (PLUGIN_NAME,)).fetchone()[0]
        fams = _families(con)
        dpop = _dpop(con)
    finally:
        con.close()
    logc = _log_counts(d)
    harness = set(_harness_disabled(d))
    disabled = [j for j, f in fams.items() if not f["newest"]["gpor_enabled"]]
    harness_n = sum(1 for j in disabled if j in harness)
    # A revocation of the family's newest token disables the family; one of
    # an already-disabled token is refused (no "revoked" line), so each
    # logged refresh-token revocation accounts for one disabled family.
    reuse = max(0, len(disabled) - harness_n - logc["refresh_revoked"])
    refreshes = issued.get("refresh_token", 0)
    return {
        "server": "glewlwyd",
        "source": "glewlwyd sqlite database (read-only) + glewlwyd log",
        "tokens_issued": issued,
        "token_requests": sum(issued.values()) + logc["invalid_refresh"],
        "refreshes": refreshes,
        "refresh_times_wall": refresh_times,
        "rotations": sum(len(f["rows"]) - 1 for f in fams.values()),
        "refresh_tokens_issued": sum(len(f["rows"]) for f in fams.values()),
        "families": len(fams),
        "active_families": len(fams) - len(disabled),
        "families_disabled": len(disabled),
        "harness_disabled_families": harness_n,
        "revocations": logc["refresh_revoked"] + logc["access_revoked"],
        "revocations_by_hint": {"refresh_token": logc["refresh_revoked"],
                                "access_token": logc["access_revoked"]},
        "access_tokens_disabled": access_disabled,
        "refused_refresh_tokens": logc["invalid_refresh"],
        "reuse_detections": reuse,
        "token_errors": ({"refused_refresh_token": logc["invalid_refresh"]}
                         if logc["invalid_refresh"] else {}),
        "tokens_by_client": by_client,
        "client_assertions": {m: by_client.get(c, 0) for m, c in _METHOD_CLIENTS["assertion"]},
        "client_certificates": {m: by_client.get(c, 0) for m, c in _METHOD_CLIENTS["certificate"]},
        "bound_thumbprints": _bound(d),
        "client_assertions_refused": _refused(logc, "assertion"),
        "client_certificates_refused": _refused(logc, "certificate"),
        **dpop,
        "dpop_refused": ({"invalid_dpop_proof (glewlwyd log)": logc["dpop_invalid"]}
                         if logc["dpop_invalid"] else {}),
        "dpop_jti_reused": logc["dpop_jti_reused"],
    }


def _dpop(con: sqlite3.Connection) -> dict:
    """DPoP at the token endpoint: glewlwyd stores the jti of every proof it
    accepted (gpo_dpop, with its key's thumbprint) and the key a refresh
    token is bound to (gpor_dpop_jkt; one row per login and per refresh
    under rotation). A refused proof leaves no row; one refused for its
    signature, claims or key is logged ("Security - DPoP invalid"), one
    without the current nonce is not (DEBUG only)."""
    proofs = dict(con.execute(
        "SELECT gpod_jkt, COUNT(*) FROM gpo_dpop WHERE gpod_plugin_name=? "
        "AND gpod_htu LIKE '%/token' GROUP BY gpod_jkt", (PLUGIN_NAME,)).fetchall())
    bound = dict(con.execute(
        "SELECT gpor_dpop_jkt, COUNT(*) FROM gpo_refresh_token WHERE gpor_plugin_name=? "
        "AND gpor_dpop_jkt IS NOT NULL GROUP BY gpor_dpop_jkt", (PLUGIN_NAME,)).fetchall())
    userinfo = con.execute(
        "SELECT COUNT(*) FROM gpo_dpop WHERE gpod_plugin_name=? AND gpod_htu LIKE '%/userinfo'",
        (PLUGIN_NAME,)).fetchone()[0]
    return {"dpop_proofs": sum(proofs.values()), "dpop_proof_keys": proofs, "dpop_userinfo_proofs": userinfo,
            "dpop_bound": sum(bound.values()), "dpop_bound_keys": bound}


def dpop_nonce(dir_or_info, client_id: str = CLIENT_ID) -> dict | None:
    """The client's current DPoP nonce at glewlwyd and how many more
    accepted proofs it lasts: {nonce, uses_left}; None before its first
    proof."""
    con = _ro(_dir_of(dir_or_info))
    try:
        row = con.execute("SELECT gpodcn_nonce, gpodcn_counter FROM gpo_dpop_client_nonce "
                          "WHERE gpodcn_client_id=?", (client_id,)).fetchone()
    finally:
        con.close()
    return None if row is None else {"nonce": row[0], "uses_left": row[1]}


# method -> the client allowed that method only.
_METHOD_CLIENTS = {
    "assertion": (("private_key_jwt", JWT_CLIENT_ID), ("client_secret_jwt", HS_CLIENT_ID)),
    "certificate": (("tls_client_auth", MTLS_CLIENT_ID),
                    ("self_signed_tls_client_auth", SELF_SIGNED_CLIENT_ID)),
}


def _bound(d: str) -> dict:
    """x5t#S256 -> tokens glewlwyd issued at its mutual-TLS token endpoint to
    a request showing that certificate: glewlwyd binds each of them to it
    (its JWT access token's cnf.x5t#S256), so they are counted from the TLS
    proxy's log of token responses (200) and the certificate shown."""
    out: dict = {}
    for status, path, x5t in certificate_log(d):
        if status == 200 and x5t and path.rstrip("/").endswith(f"/{PLUGIN_NAME}/mtls/token"):
            out[x5t] = out.get(x5t, 0) + 1
    return out


def _refused(logc: dict, kind: str) -> dict:
    out = {}
    for method, cid in _METHOD_CLIENTS[kind]:
        n = logc["invalid_client"].get(cid, 0)
        if n:
            out[f"{method}: client {cid} refused (glewlwyd log)"] = n
    return out


def latest_family(dir_or_info, username: str = USERNAME,
                  client_id: str = CLIENT_ID) -> dict | None:
    """The newest refresh-token family of `username` at `client_id` (the
    session AuthGate holds right after a login): {jti, tokens, newest_id,
    enabled, revoked_at_or_after_use, issued_at}. None if there is none."""
    con = _ro(_dir_of(dir_or_info))
    try:
        row = con.execute(
            "SELECT gpor_jti FROM gpo_refresh_token WHERE gpor_plugin_name=? "
            "AND gpor_username=? AND gpor_client_id=? ORDER BY gpor_id DESC "
            "LIMIT 1", (PLUGIN_NAME, username, client_id)).fetchone()
        if row is None:
            return None
        return family(con, row[0])
    finally:
        con.close()


def family(con_or_dir, jti: str) -> dict | None:
    """The state of the family `jti` (see latest_family)."""
    con = con_or_dir if isinstance(con_or_dir, sqlite3.Connection) else _ro(_dir_of(con_or_dir))
    try:
        rows = [dict(r) for r in con.execute(
            "SELECT gpor_id, gpor_issued_at, gpor_last_seen, gpor_enabled "
            "FROM gpo_refresh_token WHERE gpor_plugin_name=? AND gpor_jti=? "
            "ORDER BY gpor_id", (PLUGIN_NAME, jti))]
    finally:
        if con is not con_or_dir:
            con.close()
    if not rows:
        return None
    newest = rows[-1]
    return {"jti": jti, "tokens": len(rows), "newest_id": newest["gpor_id"],
            "enabled": bool(newest["gpor_enabled"]),
            "issued_at": rows[0]["gpor_issued_at"]}


def revoke_user_refresh_tokens(info: dict, username: str | None = None) -> int:
    """Disables every refresh token (and, glewlwyd does this too, every
    access token) of `username` through glewlwyd's admin API, as an
    administrator revoking a user's grants: DELETE
    /api/oidc/token/?impersonate=USER with an admin session. Records the
    families it disabled (DIR/harness-disabled.json) so stats() does not
    count them as reuse detections. Returns how many families it disabled."""
    username = username or info["username"]
    d = _dir_of(info)
    con = _ro(d)
    try:
        before = {j for j, f in _families(con).items()
                  if f["newest"]["gpor_enabled"] and f["newest"]["gpor_username"] == username}
    finally:
        con.close()
    api = info["base_url"].rstrip("/") + "/api"
    op = _admin_session(api)
    st, _, body = _request(op, "DELETE", f"{api}/{PLUGIN_NAME}/token/?"
                           + urllib.parse.urlencode({"impersonate": username}))
    _expect(st, body, (200,), f"admin: disable {username}'s refresh tokens")
    con = _ro(d)
    try:
        after = _families(con)
    finally:
        con.close()
    gone = sorted(j for j in before if not after[j]["newest"]["gpor_enabled"])
    recorded = sorted(set(_harness_disabled(d)) | set(gone))
    tmp = os.path.join(d, _HARNESS_DISABLED + ".tmp")
    with open(tmp, "w") as f:
        json.dump(recorded, f)
    os.replace(tmp, os.path.join(d, _HARNESS_DISABLED))
    return len(gone)


def _load_info(d: str) -> dict:
    try:
        with open(_paths(d)["info"]) as f:
            return json.load(f)
    except OSError as e:
        raise GlewlwydError(f"no info.json in {d}: was `start` run? ({e})")


# --------------------------------------------------------------------------
# CLI


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("start")
    s.add_argument("--dir", required=True)
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--access-ttl", type=int, default=4)
    s.add_argument("--refresh-ttl", type=int, default=1209600)
    c = sub.add_parser("code")
    c.add_argument("--dir", required=True)
    c.add_argument("--verifier", required=True)
    c.add_argument("--scope")
    t = sub.add_parser("stop")
    t.add_argument("--dir", required=True)
    st = sub.add_parser("stats")
    st.add_argument("--dir", required=True)
    args = ap.parse_args(argv)

    if args.cmd == "stop":
        stop(args.dir)
        return 0
    try:
        if args.cmd == "stats":
            print(json.dumps(stats(args.dir)), flush=True)
            return 0
        if args.cmd == "start":
            info = start(args.dir, args.port, args.access_ttl, args.refresh_ttl)
            print(json.dumps(info), flush=True)
        else:
            print(code(_load_info(args.dir), args.verifier, args.scope),
                  flush=True)
        return 0
    except (GlewlwydError, OSError, ValueError, urllib.error.URLError,
            sqlite3.Error) as e:
        _log(f"error: {e}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
