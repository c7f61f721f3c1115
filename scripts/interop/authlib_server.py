#!/usr/bin/env python3
"""An OAuth 2 authorization server for AuthGate's interop suite, built on Authlib.

Run it:  python3 authlib_server.py --port 0 --access-ttl 4 [--latency-ms N]
                                   [--reuse-grace-seconds S]

It binds 127.0.0.1 only, keeps everything in memory and prints ONE JSON line on
stdout once it listens (the issuer, its endpoints and the credentials to use).
Needs `pip install authlib` (Flask and Werkzeug are already there).

What it does, all through Authlib's own server classes
(authlib.integrations.flask_oauth2.AuthorizationServer, the RFC 6749 grants,
rfc7636.CodeChallenge, rfc7009.RevocationEndpoint, rfc7662.IntrospectionEndpoint,
rfc8414.AuthorizationServerMetadata):

- grants: password, client_credentials (no refresh token, as RFC 6749 4.4.3 says),
  authorization_code with PKCE S256 REQUIRED (plain and missing challenges refused),
  refresh_token WITH ROTATION: each refresh issues a new refresh token and spends the
  old one; the access token issued with the spent refresh token is revoked at once.
- reuse detection: presenting a spent refresh token (after --reuse-grace-seconds,
  default 0) answers invalid_grant AND revokes the whole token family (every access
  and refresh token descended from the same login); counted in /stats.
- RFC 7009 revocation (/revoke, client auth): revoking a refresh token revokes its
  family; revoking an access token revokes that access token only.
- RFC 7662 introspection (/introspect), only for the `resource-server` client.
- client authentication: client_secret_basic and client_secret_post everywhere; and JWT
  client assertions (RFC 7523 §2.2, Authlib's JWTBearerClientAssertion): `client_secret_jwt`
  (HS256 with the secret) for the main client, and `private_key_jwt` for the client
  `authgate-jwt`, whose public key (PEM) is read from the file --jwt-client-key-file at
  every verification, so a test rotates the registered key by rewriting it. An assertion
  is accepted only with iss = sub = client id, aud the token endpoint or the issuer, exp at
  most 60 s after iat and a jti never seen; /stats counts them by method and refusal.
- the JWT bearer grant (RFC 7523 §2.1, Authlib's JWTBearerGrant) and token exchange
  (RFC 8693, written from the RFC): see authlib_grants.py. The workload issuer's public
  key is read from --workload-key-file at every verification.
- mutual TLS (RFC 8705): a second listener over TLS (its URL is `mtls_issuer`) asks for
  a client certificate (issued by the test CA of `mtls.ca`, or self-signed and found in
  `mtls.trusted`); discovery names its endpoints as `mtls_endpoint_aliases`. The client
  `authgate-mtls` authenticates with `tls_client_auth` (a CA-issued certificate whose
  subject DN is CN=authgate-mtls), `authgate-self-signed` with
  `self_signed_tls_client_auth` (the certificate in the file `mtls.registered`, read at
  every verification). Every token issued over that listener with a certificate is bound
  to it: introspection answers `cnf` with its `x5t#S256` (§3); /stats counts the methods,
  the refusals and the thumbprints bound.
- DPoP (RFC 9449): a token request with a `DPoP` proof (checked by dpop.py with joserfc:
  signature with its own jwk, typ, htm/htu, iat, a jti never seen) gets tokens of type
  `DPoP` bound to the proof's key: introspection answers `cnf.jkt`, and a refresh of that
  family must prove the same key. POST /test/dpop-nonce {"nonce": …} (TEST ONLY) makes
  proofs carry that nonce (`use_dpop_nonce` with `DPoP-Nonce` otherwise). /stats counts
  proofs, refusals by reason and bound tokens.
- discovery at /.well-known/openid-configuration (and
  /.well-known/oauth-authorization-server), checked with Authlib's RFC 8414 model.
- GET /authorize, non-interactive: the resource owner authenticates with HTTP Basic
  (alice:wonderland) or with the query parameters `login_hint=alice&password=wonderland`;
  the answer is the 302 to redirect_uri with `code` (and `state`). Without
  credentials: 401 with `WWW-Authenticate: Basic`.
- GET /stats (no auth): counters, see Stats.snapshot(); refresh times are given both
  as wall clock (time.time(), `refresh_times_wall`) and as CLOCK_MONOTONIC
  (time.monotonic(), `refresh_times_monotonic`; comparable across processes on Linux).
- GET /debug/families (no auth, TEST ONLY): each token family with its current access
  and refresh token, so a test can introspect a token AuthGate holds encrypted.
- --latency-ms N: every token endpoint answer is held N ms AFTER its effect (the new
  tokens are stored, the old refresh token spent) — a slow network on the way back.

As a module (stdlib only at import time) it offers what the driver run.py needs:
start(dir, port, access_ttl, **opts) -> info dict, code(info, verifier) -> str, stop(dir).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))

CLIENT_ID = "authgate"
RS_CLIENT_ID = "resource-server"
JWT_CLIENT_ID = "authgate-jwt"  # authenticates with private_key_jwt only
MTLS_CLIENT_ID = "authgate-mtls"  # tls_client_auth only, subject CN=authgate-mtls
SELF_SIGNED_CLIENT_ID = "authgate-self-signed"  # self_signed_tls_client_auth only
USERNAME = "alice"
PASSWORD = "wonderland"
SCOPE = "api"
REDIRECT_URI = "http://127.0.0.1/callback"


# --------------------------------------------------------------------------------------
# The driver-facing functions (stdlib only).
# --------------------------------------------------------------------------------------

def start(dir: str, port: int, access_ttl: int, latency_ms: int = 0, reuse_grace_seconds: float = 0,
          timeout: float = 20.0) -> dict:
    # The registered public key of the private_key_jwt client: dir/jwt-client-key.pem.
    """Starts the server as a child process (its own process group), waits for its JSON
    line and returns it. The pid goes to dir/authlib-as.pid; stdout/stderr to dir."""
    os.makedirs(dir, exist_ok=True)
    sys.path.insert(0, HERE)
    import mtls
    mtls.make_pki(os.path.join(dir, "mtls"))
    err = open(os.path.join(dir, "authlib-as.stderr"), "wb")
    cmd = [sys.executable, "-u", os.path.join(HERE, "authlib_server.py"), "--port", str(port),
           "--access-ttl", str(access_ttl), "--latency-ms", str(latency_ms),
           "--reuse-grace-seconds", str(reuse_grace_seconds),
           "--jwt-client-key-file", os.path.join(dir, "jwt-client-key.pem"),
           "--workload-key-file", os.path.join(dir, "workload-key.pem"),
           "--mtls-dir", os.path.join(dir, "mtls")]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL,
                            start_new_session=True)
    err.close()
    with open(os.path.join(dir, "authlib-as.pid"), "w") as f:
        f.write(str(proc.pid))
    line = _read_line(proc, timeout)
    if not line:
        stop(dir)
        tail = _tail(os.path.join(dir, "authlib-as.stderr"))
        raise RuntimeError(f"authlib server printed nothing within {timeout}s (exit {proc.poll()}): {tail}")
    # Keep draining stdout so the child can never block on a full pipe.
    threading.Thread(target=lambda: [None for _ in proc.stdout], daemon=True).start()
    return json.loads(line)


def _read_line(proc, timeout):
    box = []
    t = threading.Thread(target=lambda: box.append(proc.stdout.readline()), daemon=True)
    t.start()
    t.join(timeout)
    return box[0].decode().strip() if box else ""


def _tail(path, n=600):
    try:
        with open(path, "rb") as f:
            return f.read()[-n:].decode(errors="replace")
    except OSError:
        return ""


def stop(dir: str, timeout: float = 5.0) -> None:
    """Stops the server started by start(dir, …): SIGTERM to its process group, SIGKILL
    after `timeout`."""
    path = os.path.join(dir, "authlib-as.pid")
    try:
        with open(path) as f:
            pid = int(f.read().strip())
    except (OSError, ValueError):
        return
    _kill_group(pid, timeout)
    try:
        os.unlink(path)
    except OSError:
        pass


def _kill_group(pid, timeout):
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                break
        except ChildProcessError:
            # Not our child: poll for existence.
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
        time.sleep(0.05)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *a, **k):
        return None


def pkce_challenge(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


def code(info: dict, verifier: str, timeout: float = 10.0) -> str:
    """Runs the authorization request as alice (HTTP Basic) with the S256 challenge of
    `verifier` and returns the code from the 302's Location."""
    state = secrets.token_urlsafe(8)
    q = urllib.parse.urlencode({
        "response_type": "code", "client_id": info["client_id"], "redirect_uri": info["redirect_uri"],
        "scope": info["scope"], "state": state, "code_challenge": pkce_challenge(verifier),
        "code_challenge_method": "S256"})
    req = urllib.request.Request(info["authorization_endpoint"] + "?" + q)
    basic = base64.b64encode(f"{info['username']}:{info['password']}".encode()).decode()
    req.add_header("Authorization", "Basic " + basic)
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        resp = opener.open(req, timeout=timeout)
        status, location = resp.status, resp.headers.get("Location")
    except urllib.error.HTTPError as e:
        status, location = e.code, e.headers.get("Location")
    if status != 302 or not location:
        raise RuntimeError(f"authorization endpoint answered {status}, not a redirect")
    params = urllib.parse.parse_qs(urllib.parse.urlsplit(location).query)
    if params.get("state") != [state] or "code" not in params:
        raise RuntimeError(f"bad redirect: {location}")
    return params["code"][0]


# --------------------------------------------------------------------------------------
# The server (Authlib + Flask), imported only when run.
# --------------------------------------------------------------------------------------

def serve(args) -> None:
    from flask import Flask, Response, g, jsonify, request

    import dpop
    import mtls
    from werkzeug.serving import WSGIRequestHandler, make_server

    from authlib.integrations.flask_oauth2 import AuthorizationServer
    from authlib.oauth2.rfc6749 import ClientMixin, TokenMixin, AuthorizationCodeMixin, grants
    from authlib.oauth2.rfc6749.errors import InvalidRequestError
    from authlib.oauth2 import OAuth2Error
    from authlib.oauth2.rfc7009 import RevocationEndpoint
    from authlib.oauth2.rfc7636 import CodeChallenge
    from authlib.oauth2.rfc7662 import IntrospectionEndpoint
    from authlib.oauth2.rfc8414 import AuthorizationServerMetadata

    ttl = args.access_ttl
    grace = args.reuse_grace_seconds
    latency = args.latency_ms / 1000.0
    client_secret = secrets.token_urlsafe(24)
    rs_secret = secrets.token_urlsafe(24)
    lock = threading.RLock()  # one lock over every piece of state (a token request is atomic)

    class User:
        def __init__(self, username):
            self.username = username

        def get_user_id(self):
            return self.username

    users = {USERNAME: (PASSWORD, User(USERNAME))}

    class Client(ClientMixin):
        def __init__(self, client_id, secret, grant_types, redirect_uris=(), scope=SCOPE):
            self.client_id, self.secret = client_id, secret
            self.grant_types, self.redirect_uris, self.scope = set(grant_types), list(redirect_uris), scope

        def get_client_id(self):
            return self.client_id

        def get_default_redirect_uri(self):
            return self.redirect_uris[0] if self.redirect_uris else None

        def get_allowed_scope(self, scope):
            if not scope:
                return self.scope
            allowed = set(self.scope.split())
            return " ".join(s for s in scope.split() if s in allowed)

        def check_redirect_uri(self, redirect_uri):
            return redirect_uri in self.redirect_uris

        def check_client_secret(self, client_secret):
            return secrets.compare_digest(self.secret.encode(), (client_secret or "").encode())

        def check_endpoint_auth_method(self, method, endpoint):
            if self.client_id == JWT_CLIENT_ID:
                return method == "client_assertion_jwt"
            if self.client_id == MTLS_CLIENT_ID:
                return method == "tls_client_auth"
            if self.client_id == SELF_SIGNED_CLIENT_ID:
                return method == "self_signed_tls_client_auth"
            return method in ("client_secret_basic", "client_secret_post", "client_assertion_jwt")

        def check_response_type(self, response_type):
            return response_type == "code" and "authorization_code" in self.grant_types

        def check_grant_type(self, grant_type):
            return grant_type in self.grant_types

    clients = {
        CLIENT_ID: Client(CLIENT_ID, client_secret,
                          ["password", "client_credentials", "authorization_code", "refresh_token"],
                          [REDIRECT_URI]),
        RS_CLIENT_ID: Client(RS_CLIENT_ID, rs_secret, []),
        JWT_CLIENT_ID: Client(JWT_CLIENT_ID, secrets.token_urlsafe(24),
                              ["password", "client_credentials", "refresh_token"]),
        MTLS_CLIENT_ID: Client(MTLS_CLIENT_ID, secrets.token_urlsafe(24),
                               ["password", "client_credentials", "refresh_token"]),
        SELF_SIGNED_CLIENT_ID: Client(SELF_SIGNED_CLIENT_ID, secrets.token_urlsafe(24),
                                      ["password", "client_credentials", "refresh_token"]),
    }

    class Family:
        """Every token descended from one login."""
        seq = 0

        def __init__(self, grant_type, client_id, user):
            Family.seq += 1
            self.id = Family.seq
            self.grant_type, self.client_id, self.user = grant_type, client_id, user
            self.revoked = False
            self.revoked_reason = None
            self.records = []
            self.jkt = None  # the DPoP key the family is bound to

        def current(self):
            return self.records[-1] if self.records else None

        def live(self):
            cur = self.current()
            return (not self.revoked and cur is not None and cur.refresh_token is not None
                    and not cur.refresh_revoked and cur.refresh_spent_at is None)

    class Record:
        """One token response: an access token and maybe a refresh token."""

        def __init__(self, token, client_id, user, grant_type, family):
            self.access_token = token["access_token"]
            self.refresh_token = token.get("refresh_token")
            self.scope = token.get("scope", "")
            self.expires_in = int(token.get("expires_in", ttl))
            self.issued_at = time.time()
            self.client_id, self.user, self.grant_type, self.family = client_id, user, grant_type, family
            self.access_revoked = False
            self.refresh_revoked = False
            self.refresh_spent_at = None  # time.monotonic() of the rotation that spent it
            self.cnf = None  # {"x5t#S256": …} when issued to a client that showed a certificate

    class TokenView(TokenMixin):
        """A token string's view of its record: `kind` is access_token or refresh_token."""

        def __init__(self, record, kind):
            self.record, self.kind = record, kind

        def check_client(self, client):
            return client.get_client_id() == self.record.client_id

        def get_scope(self):
            return self.record.scope

        def get_expires_in(self):
            return self.record.expires_in if self.kind == "access_token" else 0

        def is_expired(self):
            if self.kind == "refresh_token":
                return False
            return time.time() >= self.record.issued_at + self.record.expires_in

        def is_revoked(self):
            r = self.record
            if r.family.revoked:
                return True
            if self.kind == "access_token":
                return r.access_revoked
            return r.refresh_revoked or r.refresh_spent_at is not None

        def get_user(self):
            return self.record.user

        def get_client(self):
            return clients.get(self.record.client_id)

    class AuthCode(AuthorizationCodeMixin):
        def __init__(self, code, client_id, redirect_uri, scope, user, challenge, method):
            self.code, self.client_id, self.redirect_uri, self.scope, self.user = code, client_id, redirect_uri, scope, user
            self.code_challenge, self.code_challenge_method = challenge, method
            self.expires = time.time() + 300

        def get_redirect_uri(self):
            return self.redirect_uri

        def get_scope(self):
            return self.scope

    by_access, by_refresh, codes, families = {}, {}, {}, []

    class Stats:
        def __init__(self):
            self.tokens_issued = {}
            self.token_requests = 0
            self.token_errors = {}
            self.refreshes = 0
            self.refresh_times_wall = []
            self.refresh_times_monotonic = []
            self.reuse_detections = 0
            self.reuse_within_grace = 0
            self.families_revoked = 0
            self.access_revoked_at_rotation = 0
            self.revocations = 0
            self.revocations_by_hint = {}
            self.introspections = 0
            self.introspections_active = 0
            self.authorizations = 0
            self.client_assertions = {}  # method -> accepted
            self.client_assertions_refused = {}  # reason -> count
            self.client_certificates = {}  # method -> accepted
            self.client_certificates_refused = {}  # reason -> count
            self.bound_thumbprints = {}  # x5t#S256 -> tokens bound to it
            self.dpop_proofs = 0
            self.dpop_refused = {}  # reason -> count
            self.dpop_bound = 0

        def snapshot(self):
            d = dict(self.__dict__)
            d["tokens_issued"] = dict(self.tokens_issued)
            d["token_errors"] = dict(self.token_errors)
            d["revocations_by_hint"] = dict(self.revocations_by_hint)
            d["client_assertions"] = dict(self.client_assertions)
            d["client_assertions_refused"] = dict(self.client_assertions_refused)
            d["client_certificates"] = dict(self.client_certificates)
            d["client_certificates_refused"] = dict(self.client_certificates_refused)
            d["bound_thumbprints"] = dict(self.bound_thumbprints)
            d["dpop_refused"] = dict(self.dpop_refused)
            d["refresh_times_wall"] = list(self.refresh_times_wall)
            d["refresh_times_monotonic"] = list(self.refresh_times_monotonic)
            d["active_families"] = sum(1 for f in families if f.live())
            d["families"] = len(families)
            d["access_ttl"] = ttl
            d["clock"] = {"refresh_times_wall": "time.time() seconds since the epoch",
                          "refresh_times_monotonic": "time.monotonic() seconds (CLOCK_MONOTONIC)"}
            return d

    stats = Stats()

    def log(event, **kw):
        print(json.dumps({"t": round(time.time(), 3), "event": event, **kw}), file=sys.stderr, flush=True)

    def revoke_family(family, reason):
        if family.revoked:
            return
        family.revoked, family.revoked_reason = True, reason
        for r in family.records:
            r.access_revoked = True
            r.refresh_revoked = True
        stats.families_revoked += 1
        log("family_revoked", family=family.id, reason=reason)

    def query_client(client_id):
        return clients.get(client_id)

    def save_token(token, req):
        client_id = req.client.get_client_id()
        user = req.user
        grant_type = req.payload.grant_type if req.payload else None
        if grant_type == "refresh_token":
            family = req.refresh_token.record.family
        else:
            family = Family(grant_type, client_id, user)
            families.append(family)
        rec = Record(token, client_id, user, grant_type, family)
        shown = request.environ.get("SSL_CLIENT_CERT")
        jkt = getattr(g, "dpop_jkt", None)
        if jkt:
            if family.jkt is None:
                family.jkt = jkt
            rec.cnf = {"jkt": jkt}
            token["token_type"] = "DPoP"
            stats.dpop_bound += 1
        if shown:
            rec.cnf = {**(rec.cnf or {}), "x5t#S256": mtls.thumbprint(shown)}
            stats.bound_thumbprints[rec.cnf["x5t#S256"]] = stats.bound_thumbprints.get(rec.cnf["x5t#S256"], 0) + 1
        family.records.append(rec)
        by_access[rec.access_token] = rec
        if rec.refresh_token:
            by_refresh[rec.refresh_token] = rec
        stats.tokens_issued[grant_type] = stats.tokens_issued.get(grant_type, 0) + 1
        if grant_type == "refresh_token":
            stats.refreshes += 1
            stats.refresh_times_wall.append(round(time.time(), 4))
            stats.refresh_times_monotonic.append(round(time.monotonic(), 4))
        log("token_issued", grant_type=grant_type, family=family.id, generation=len(family.records))

    # Every grant accepts client_secret_basic, client_secret_post, JWT assertions and
    # client certificates.
    AUTH_METHODS = ["client_secret_basic", "client_secret_post", "client_assertion_jwt", "tls_client_auth",
                    "self_signed_tls_client_auth"]
    # What discovery names (Authlib calls both JWT methods client_assertion_jwt).
    ADVERTISED_METHODS = ["client_secret_basic", "client_secret_post", "client_secret_jwt", "private_key_jwt",
                          "tls_client_auth", "self_signed_tls_client_auth"]

    def certificate_refused(reason):
        stats.client_certificates_refused[reason] = stats.client_certificates_refused.get(reason, 0) + 1
        log("client_certificate_refused", reason=reason)
        raise _InvalidClient(description=reason)

    def certificate_client(query_client, req, method):
        """RFC 8705 §2: the client names itself with client_id and proves itself with the
        certificate of the TLS handshake (checked by the listener against the CA or the
        trusted directory)."""
        client_id = req.form.get("client_id")
        client = query_client(client_id) if client_id else None
        if client is None or not client.check_endpoint_auth_method(method, "token"):
            return None
        if req.form.get("client_secret") or req.headers.get("Authorization"):
            certificate_refused("a certificate client sent a secret too")
        shown = request.environ.get("SSL_CLIENT_CERT")
        if not shown:
            certificate_refused("no client certificate was shown (use the mtls_endpoint_aliases)")
        return client, shown

    def tls_client_auth(query_client, req):
        found = certificate_client(query_client, req, "tls_client_auth")
        if found is None:
            return None
        client, shown = found
        from cryptography import x509
        subject = x509.load_pem_x509_certificate(shown.encode()).subject.rfc4514_string()
        if subject != "CN=" + MTLS_CLIENT_ID:
            certificate_refused(f"the certificate's subject {subject} is not the one registered")
        stats.client_certificates["tls_client_auth"] = stats.client_certificates.get("tls_client_auth", 0) + 1
        return client

    def self_signed_tls_client_auth(query_client, req):
        found = certificate_client(query_client, req, "self_signed_tls_client_auth")
        if found is None:
            return None
        client, shown = found
        try:
            with open(os.path.join(args.mtls_dir, "registered.pem")) as f:
                registered = mtls.thumbprint(f.read())
        except (OSError, ValueError, TypeError):
            certificate_refused("no certificate is registered for the self-signed client")
        if mtls.thumbprint(shown) != registered:
            certificate_refused("the certificate is not the one registered")
        method = "self_signed_tls_client_auth"
        stats.client_certificates[method] = stats.client_certificates.get(method, 0) + 1
        return client

    from authlib.oauth2.rfc7523 import JWTBearerClientAssertion
    from authlib.oauth2.rfc6749.errors import InvalidClientError as _InvalidClient

    seen_jti = set()

    def refuse(reason):
        stats.client_assertions_refused[reason] = stats.client_assertions_refused.get(reason, 0) + 1
        log("client_assertion_refused", reason=reason)
        raise _InvalidClient(description=reason)

    class JWTClientAuth(JWTBearerClientAssertion):
        def get_audiences(self):
            return [issuer + "/token", issuer]

        def validate_jti(self, claims, jti):
            with lock:
                if jti in seen_jti:
                    return False
                seen_jti.add(jti)
                return True

        def resolve_client_public_key(self, client):
            if client.get_client_id() == JWT_CLIENT_ID:
                try:
                    with open(args.jwt_client_key_file) as f:
                        return f.read()
                except (OSError, TypeError):
                    refuse("no key is registered for the private_key_jwt client")
            return {"kty": "oct", "k": base64.urlsafe_b64encode(client.secret.encode()).rstrip(b"=").decode()}

        def process_assertion_claims(self, assertion, resolve_key):
            try:
                claims = super().process_assertion_claims(assertion, resolve_key)
            except _InvalidClient as e:
                stats.client_assertions_refused[e.description] = stats.client_assertions_refused.get(e.description, 0) + 1
                log("client_assertion_refused", reason=e.description)
                raise
            exp, iat = claims.get("exp"), claims.get("iat")
            if not isinstance(iat, int) or not isinstance(exp, int) or exp - iat > 60:
                refuse("exp must be at most 60 s after iat")
            return claims

        def authenticate_client(self, client):
            method = "private_key_jwt" if client.get_client_id() == JWT_CLIENT_ID else "client_secret_jwt"
            stats.client_assertions[method] = stats.client_assertions.get(method, 0) + 1
            return client

    class PasswordGrant(grants.ResourceOwnerPasswordCredentialsGrant):
        TOKEN_ENDPOINT_AUTH_METHODS = AUTH_METHODS

        def authenticate_user(self, username, password):
            entry = users.get(username)
            if entry and secrets.compare_digest(entry[0].encode(), (password or "").encode()):
                return entry[1]
            return None

    class ClientCredentialsGrant(grants.ClientCredentialsGrant):
        TOKEN_ENDPOINT_AUTH_METHODS = AUTH_METHODS

    class AuthorizationCodeGrant(grants.AuthorizationCodeGrant):
        TOKEN_ENDPOINT_AUTH_METHODS = AUTH_METHODS

        def save_authorization_code(self, code, req):
            data = req.payload.data
            codes[code] = AuthCode(code, req.client.get_client_id(), req.payload.redirect_uri, req.scope,
                                   req.user, data.get("code_challenge"), data.get("code_challenge_method"))

        def query_authorization_code(self, code, client):
            item = codes.get(code)
            if item and item.client_id == client.get_client_id() and time.time() < item.expires:
                return item
            return None

        def delete_authorization_code(self, authorization_code):
            codes.pop(authorization_code.code, None)

        def authenticate_user(self, authorization_code):
            return authorization_code.user

    class RefreshTokenGrant(grants.RefreshTokenGrant):
        TOKEN_ENDPOINT_AUTH_METHODS = AUTH_METHODS
        INCLUDE_NEW_REFRESH_TOKEN = True  # rotation

        def authenticate_refresh_token(self, refresh_token):
            rec = by_refresh.get(refresh_token)
            if rec is None:
                return None
            if rec.family.jkt is not None and rec.family.jkt != getattr(g, "dpop_jkt", None):
                log("refresh_refused", family=rec.family.id, why="not proven with the family's DPoP key")
                return None
            if rec.family.revoked or rec.refresh_revoked:
                log("refresh_refused", family=rec.family.id, why="revoked")
                return None
            if rec.refresh_spent_at is not None:
                if time.monotonic() - rec.refresh_spent_at <= grace:
                    stats.reuse_within_grace += 1
                    return TokenView(rec, "refresh_token")
                stats.reuse_detections += 1
                log("reuse_detected", family=rec.family.id,
                    generation=rec.family.records.index(rec) + 1, of=len(rec.family.records))
                revoke_family(rec.family, "refresh_token_reuse")
                return None  # → invalid_grant
            return TokenView(rec, "refresh_token")

        def authenticate_user(self, refresh_token):
            return refresh_token.record.user

        def revoke_old_credential(self, refresh_token):
            rec = refresh_token.record
            if rec.refresh_spent_at is None:
                rec.refresh_spent_at = time.monotonic()
            if not rec.access_revoked:
                rec.access_revoked = True  # the previous access token dies with its refresh token
                stats.access_revoked_at_rotation += 1

    class S256Required(CodeChallenge):
        """PKCE required for every client (not only public ones), S256 only."""
        SUPPORTED_CODE_CHALLENGE_METHOD = ["S256"]

        def validate_code_challenge(self, grant, redirect_uri):
            data = grant.request.payload.data
            if not data.get("code_challenge"):
                raise InvalidRequestError("PKCE is required: missing 'code_challenge'")
            if data.get("code_challenge_method") != "S256":
                raise InvalidRequestError("PKCE: 'code_challenge_method' must be S256")
            return super().validate_code_challenge(grant, redirect_uri)

        def validate_code_verifier(self, grant, result):
            if not grant.request.form.get("code_verifier"):
                raise InvalidRequestError("Missing 'code_verifier'")
            return super().validate_code_verifier(grant, result)

    def lookup(token_string, hint):
        order = ["access_token", "refresh_token"]
        if hint == "refresh_token":
            order.reverse()
        for kind in order:
            rec = (by_access if kind == "access_token" else by_refresh).get(token_string)
            if rec is not None:
                return TokenView(rec, kind)
        return None

    class Revocation(RevocationEndpoint):
        CLIENT_AUTH_METHODS = AUTH_METHODS

        def query_token(self, token_string, token_type_hint):
            return lookup(token_string, token_type_hint)

        def revoke_token(self, token, req):
            stats.revocations += 1
            stats.revocations_by_hint[token.kind] = stats.revocations_by_hint.get(token.kind, 0) + 1
            if token.kind == "refresh_token":
                # RFC 7009 2.1: revoking a refresh token invalidates the grant's access tokens too.
                revoke_family(token.record.family, "revoked_refresh_token")
            else:
                token.record.access_revoked = True
            log("revoked", kind=token.kind, family=token.record.family.id)

    class Introspection(IntrospectionEndpoint):
        CLIENT_AUTH_METHODS = AUTH_METHODS

        def query_token(self, token_string, token_type_hint):
            return lookup(token_string, token_type_hint)

        def check_permission(self, token, client, req):
            return client.get_client_id() == RS_CLIENT_ID

        def introspect_token(self, token):
            r = token.record
            sub = r.user.get_user_id() if r.user else r.client_id
            out = {"active": True, "client_id": r.client_id, "token_type": "Bearer", "scope": r.scope,
                   "sub": sub, "iss": issuer, "iat": int(r.issued_at), "token_kind": token.kind}
            if r.user:
                out["username"] = r.user.username
            if token.kind == "access_token":
                out["exp"] = int(r.issued_at + r.expires_in)
            return out

        def create_introspection_payload(self, token):
            payload = super().create_introspection_payload(token)
            stats.introspections += 1
            if payload.get("active"):
                stats.introspections_active += 1
                if token.record.cnf:
                    payload["cnf"] = dict(token.record.cnf)
            return payload

    app = Flask("authlib_interop_as")
    app.config.update(
        OAUTH2_REFRESH_TOKEN_GENERATOR=True,
        OAUTH2_TOKEN_EXPIRES_IN={g: ttl for g in
                                 ("password", "client_credentials", "authorization_code", "refresh_token")},
        OAUTH2_SCOPES_SUPPORTED=[SCOPE],
    )
    server = AuthorizationServer(app, query_client=query_client, save_token=save_token)
    server.register_client_auth_method(JWTClientAuth.CLIENT_AUTH_METHOD, JWTClientAuth())
    server.register_client_auth_method("tls_client_auth", tls_client_auth)
    server.register_client_auth_method("self_signed_tls_client_auth", self_signed_tls_client_auth)
    server.register_grant(PasswordGrant)
    server.register_grant(ClientCredentialsGrant)
    server.register_grant(AuthorizationCodeGrant, [S256Required(required=True)])
    server.register_grant(RefreshTokenGrant)
    server.register_endpoint(Revocation)
    import authlib_grants  # the JWT bearer grant and token exchange (RFC 7523 §2.1, RFC 8693)
    authlib_grants.register(server, clients=clients, client_class=Client, user_class=User, stats=stats, log=log,
                            by_access=by_access, issuer=lambda: issuer, ttl=ttl, auth_methods=AUTH_METHODS,
                            key_file=args.workload_key_file)
    server.register_endpoint(Introspection)
    import authlib_device  # the device authorization grant (RFC 8628)
    authlib_device.register(app, server, clients=clients, users=users, stats=stats, log=log, lock=lock,
                            issuer=lambda: issuer, ttl=ttl, auth_methods=AUTH_METHODS)

    dpop_state = {"nonce": None, "seen": set()}

    def check_dpop():
        """The token request's DPoP proof: None when it has none (g.dpop_jkt stays unset),
        else the answer refusing it, or None with g.dpop_jkt set."""
        proof = request.headers.get("DPoP")
        if not proof:
            return None
        try:
            g.dpop_jkt = dpop.verify(proof, "POST", request.base_url, dpop_state["seen"], nonce=dpop_state["nonce"])
        except dpop.Refused as e:
            stats.dpop_refused[e.description] = stats.dpop_refused.get(e.description, 0) + 1
            log("dpop_refused", reason=e.description)
            answer = jsonify({"error": e.error, "error_description": e.description})
            answer.status_code = 400
            if e.error == "use_dpop_nonce":
                answer.headers["DPoP-Nonce"] = dpop_state["nonce"]
            answer.headers["Cache-Control"] = "no-store"
            return answer
        stats.dpop_proofs += 1
        return None

    @app.post("/test/dpop-nonce")
    def set_dpop_nonce():
        with lock:
            dpop_state["nonce"] = (request.get_json(force=True) or {}).get("nonce")
        return jsonify({"nonce": dpop_state["nonce"]})

    @app.post("/token")
    def token_endpoint():
        with lock:
            stats.token_requests += 1
            refused = check_dpop()
            if refused is not None:
                stats.token_errors[refused.json["error"]] = stats.token_errors.get(refused.json["error"], 0) + 1
                return refused
            resp = server.create_token_response()
            if resp.status_code != 200:
                try:
                    err = json.loads(resp.get_data()).get("error", "?")
                except ValueError:
                    err = "?"
                stats.token_errors[err] = stats.token_errors.get(err, 0) + 1
                log("token_error", status=resp.status_code, error=err,
                    grant_type=request.form.get("grant_type"))
        if latency:
            time.sleep(latency)
        return resp

    @app.post("/revoke")
    def revocation_endpoint():
        with lock:
            return server.create_endpoint_response(Revocation.ENDPOINT_NAME)

    @app.post("/introspect")
    def introspection_endpoint():
        with lock:
            return server.create_endpoint_response(Introspection.ENDPOINT_NAME)

    @app.route("/authorize", methods=["GET", "POST"])
    def authorize():
        auth = request.authorization
        username = password = None
        if auth is not None and auth.type == "basic":
            username, password = auth.username, auth.password
        elif request.values.get("login_hint"):
            username, password = request.values.get("login_hint"), request.values.get("password")
        entry = users.get(username or "")
        if not entry or not secrets.compare_digest(entry[0].encode(), (password or "").encode()):
            return Response("resource owner authentication required\n", 401,
                            {"WWW-Authenticate": 'Basic realm="authorize"'})
        with lock:
            try:
                grant = server.get_consent_grant(end_user=entry[1])
            except OAuth2Error as error:
                return server.handle_error_response(None, error)
            stats.authorizations += 1
            return server.create_authorization_response(grant=grant, grant_user=entry[1])

    def metadata():
        m = AuthorizationServerMetadata({
            "issuer": issuer,
            "authorization_endpoint": issuer + "/authorize",
            "token_endpoint": issuer + "/token",
            "revocation_endpoint": issuer + "/revoke",
            "introspection_endpoint": issuer + "/introspect",
            "device_authorization_endpoint": issuer + "/device_authorization",
            "jwks_uri": issuer + "/jwks",
            "scopes_supported": [SCOPE],
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "password", "client_credentials", "refresh_token",
                                      authlib_grants.JWT_BEARER, authlib_grants.TOKEN_EXCHANGE,
                                      authlib_device.DEVICE_CODE],
            "token_endpoint_auth_methods_supported": ADVERTISED_METHODS,
            "token_endpoint_auth_signing_alg_values_supported": ["ES256", "PS256", "RS256", "HS256"],
            "revocation_endpoint_auth_signing_alg_values_supported": ["ES256", "PS256", "RS256", "HS256"],
            "revocation_endpoint_auth_methods_supported": ADVERTISED_METHODS,
            "introspection_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
            "code_challenge_methods_supported": ["S256"],
            "subject_types_supported": ["public"],
        })
        m.validate()
        document = dict(m)
        document["tls_client_certificate_bound_access_tokens"] = bool(mtls_issuer)
        document["dpop_signing_alg_values_supported"] = list(dpop.ALGORITHMS)
        if mtls_issuer:
            document["mtls_endpoint_aliases"] = {"token_endpoint": mtls_issuer + "/token",
                                                 "revocation_endpoint": mtls_issuer + "/revoke",
                                                 "introspection_endpoint": mtls_issuer + "/introspect"}
        return document

    @app.get("/.well-known/openid-configuration")
    @app.get("/.well-known/oauth-authorization-server")
    def discovery():
        return jsonify(metadata())

    @app.get("/jwks")
    def jwks():
        return jsonify({"keys": []})  # no signed tokens: access tokens are opaque

    @app.get("/stats")
    def stats_endpoint():
        with lock:
            return jsonify(stats.snapshot())

    @app.get("/debug/families")
    def debug_families():
        with lock:
            out = []
            for f in families:
                cur = f.current()
                out.append({"id": f.id, "grant_type": f.grant_type, "client_id": f.client_id,
                            "sub": f.user.get_user_id() if f.user else f.client_id,
                            "revoked": f.revoked, "revoked_reason": f.revoked_reason, "live": f.live(),
                            "generations": len(f.records),
                            "access_token": cur.access_token if cur else None,
                            "refresh_token": cur.refresh_token if cur else None})
            return jsonify({"families": out})

    @app.get("/healthz")
    def healthz():
        return jsonify({"status": "ok"})

    WSGIRequestHandler.protocol_version = "HTTP/1.1"  # keep-alive

    class QuietHandler(WSGIRequestHandler):
        def log_request(self, *a, **k):
            pass

    httpd = make_server("127.0.0.1", args.port, app, threaded=True, request_handler=QuietHandler)
    httpd.daemon_threads = True
    port = httpd.server_port
    issuer = f"http://127.0.0.1:{port}"
    mtls_issuer = None
    if args.mtls_dir:
        pki = {"ca": os.path.join(args.mtls_dir, "ca.pem"), "ca_key": os.path.join(args.mtls_dir, "ca.key"),
               "server_cert": os.path.join(args.mtls_dir, "server.pem"),
               "server_key": os.path.join(args.mtls_dir, "server.key"),
               "trusted": os.path.join(args.mtls_dir, "trusted")}
        tls_httpd = make_server("127.0.0.1", 0, app, threaded=True, request_handler=QuietHandler,
                                ssl_context=mtls.server_context(pki))
        tls_httpd.daemon_threads = True
        mtls_issuer = f"https://127.0.0.1:{tls_httpd.server_port}"
        threading.Thread(target=lambda: tls_httpd.serve_forever(poll_interval=0.2), daemon=True).start()
    info = {
        "kind": "authlib",
        "issuer": issuer,
        "discovery": issuer + "/.well-known/openid-configuration",
        "token_endpoint": issuer + "/token",
        "authorization_endpoint": issuer + "/authorize",
        "revocation_endpoint": issuer + "/revoke",
        "introspection_endpoint": issuer + "/introspect",
        "introspection_auth": {"type": "basic", "client_id": RS_CLIENT_ID, "client_secret": rs_secret},
        "client_id": CLIENT_ID,
        "client_secret": client_secret,
        "jwt_client_id": JWT_CLIENT_ID,
        "jwt_client_key_file": args.jwt_client_key_file,
        "workload_key_file": args.workload_key_file,
        "workload_issuer": authlib_grants.WORKLOAD_ISSUER,
        "exchange_audiences": authlib_grants.EXCHANGE_AUDIENCES,
        "exchange_resources": authlib_grants.EXCHANGE_RESOURCES,
        "mtls_issuer": mtls_issuer,
        "dpop_nonce": issuer + "/test/dpop-nonce",
        "device_authorization_endpoint": issuer + "/device_authorization",
        "device_decision": issuer + "/test/device",
        "device_settings": issuer + "/test/device/settings",
        "mtls": {**pki, "dir": args.mtls_dir, "registered": os.path.join(args.mtls_dir, "registered.pem"),
                 "client_id": MTLS_CLIENT_ID, "self_signed_client_id": SELF_SIGNED_CLIENT_ID} if mtls_issuer else None,
        "username": USERNAME,
        "password": PASSWORD,
        "scope": SCOPE,
        "redirect_uri": REDIRECT_URI,
        "access_ttl": ttl,
        "rotation": True,
        "revokes_previous_access_token": True,
        "reuse_grace_seconds": grace,
        "latency_ms": args.latency_ms,
        "stats": issuer + "/stats",
        "debug_families": issuer + "/debug/families",
        "pid": os.getpid(),
    }
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    print(json.dumps(info), flush=True)
    try:
        httpd.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--port", type=int, default=0, help="0 picks a free port (reported in the JSON line)")
    p.add_argument("--access-ttl", type=int, default=4, help="access token lifetime, seconds (default 4)")
    p.add_argument("--latency-ms", type=int, default=0, help="hold each token endpoint answer this long")
    p.add_argument("--jwt-client-key-file", default=None,
                   help="PEM public key of the private_key_jwt client, read at every verification")
    p.add_argument("--workload-key-file", default=None,
                   help="PEM public key of the workload issuer (JWT bearer, token exchange), read at every verification")
    p.add_argument("--mtls-dir", default=None,
                   help="the PKI of mtls.make_pki: the TLS listener's certificate, its CA, trusted/ "
                        "(without it, no mutual-TLS listener)")
    p.add_argument("--reuse-grace-seconds", type=float, default=0.0,
                   help="a spent refresh token presented again within this many seconds is accepted")
    serve(p.parse_args(argv))


if __name__ == "__main__":
    main()
