"""The grants that need no person, for the Authlib interop server.

- The JWT bearer grant (RFC 7523 §2.1) through Authlib's own rfc7523.JWTBearerGrant: the
  assertion must be signed by the workload issuer (its public key read from a file at
  every verification, so a test rotates it by rewriting it), name this server in `aud`,
  carry `iss`, `sub` and an unexpired `exp`. When the request also authenticates a client
  (RFC 7523 §3.1 makes that optional), that authentication must succeed and the tokens
  are that client's.
- Token exchange (RFC 8693), which Authlib does not have, written from §2.1 and §2.2:
  client authentication as for every grant; `subject_token` and `subject_token_type`
  REQUIRED; `grant_type`, `subject_token`, `subject_token_type`, `requested_token_type`
  and `scope` at most once (RFC 6749 §3.2); `actor_token` and `actor_token_type` together
  or not at all; every `audience` and `resource` a target this server knows
  (`invalid_target`), a `resource` an absolute URI without a fragment; a subject token that
  is not valid is `invalid_request` (§2.2.2). A `jwt` or `id_token` subject must be signed
  by the workload issuer for this server; an `access_token` subject must be one of this
  server's live access tokens. The answer carries `issued_token_type` (§2.2.1) and no
  refresh token.

/stats gains `grant_refusals` (description -> count) and `exchange_fields` (the field
names of the last exchange, sorted, a repeated field once per value; values never kept).
"""

from __future__ import annotations

import time
from urllib.parse import urlsplit

WORKLOAD_ISSUER = "https://workload.interop.test"
WORKLOAD_CLIENT_ID = "workload"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
JWT_TYPE = "urn:ietf:params:oauth:token-type:jwt"
ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token"
EXCHANGE_AUDIENCES = ["interop-api", "interop-reports"]
EXCHANGE_RESOURCES = ["https://api.interop.test/", "https://reports.interop.test/"]


def load_key(pem: bytes):
    from joserfc.jwk import ECKey, RSAKey
    try:
        return ECKey.import_key(pem)
    except Exception:  # noqa: BLE001
        return RSAKey.import_key(pem)


def sign(private_pem: bytes, claims: dict) -> str:
    """A compact JWS of `claims` with the PEM key (ES256 for EC, RS256 for RSA)."""
    from joserfc import jwt
    key = load_key(private_pem)
    alg = "ES256" if key.key_type == "EC" else "RS256"
    return jwt.encode({"alg": alg, "typ": "JWT"}, claims, key)


def workload_claims(audience: str, lifetime: int = 300, subject: str = "spiffe://interop.test/ns/app/sa/legacy") -> dict:
    now = int(time.time())
    return {"iss": WORKLOAD_ISSUER, "sub": subject, "aud": audience, "iat": now, "exp": now + lifetime}


def register(server, *, clients, client_class, user_class, stats, log, by_access, issuer, ttl, auth_methods,
             key_file):
    """Registers both grants on `server`. `issuer` is a function (the port is known late)."""
    from flask import request
    from joserfc import jwt as jose_jwt
    from joserfc.errors import JoseError
    from authlib.oauth2 import OAuth2Error
    from authlib.oauth2.rfc6749 import grants
    from authlib.oauth2.rfc6749.errors import InvalidRequestError, UnauthorizedClientError
    from authlib.oauth2.rfc7523 import JWTBearerGrant as AuthlibJWTBearerGrant

    stats.grant_refusals = {}
    stats.exchange_fields = []
    clients[WORKLOAD_CLIENT_ID] = client_class(WORKLOAD_CLIENT_ID, "unused-" + str(time.time()), [JWT_BEARER])
    for c in clients.values():
        if c.client_id in ("authgate", "authgate-jwt", "authgate-mtls"):
            c.grant_types |= {JWT_BEARER, TOKEN_EXCHANGE}

    def audiences():
        return [issuer(), issuer() + "/token"]

    def workload_key():
        with open(key_file, "rb") as f:
            return load_key(f.read())

    def refused(e):
        d = getattr(e, "description", None) or getattr(e, "error", "?")
        stats.grant_refusals[d] = stats.grant_refusals.get(d, 0) + 1
        log("grant_refused", error=getattr(e, "error", "?"), description=d)

    def client_authenticated():
        h = request.headers.get("Authorization", "")
        return h.lower().startswith("basic ") or "client_id" in request.form or "client_assertion" in request.form

    class InvalidTargetError(OAuth2Error):
        error = "invalid_target"
        status_code = 400

    class JWTBearerGrant(AuthlibJWTBearerGrant):
        TOKEN_ENDPOINT_AUTH_METHODS = auth_methods

        def resolve_issuer_client(self, iss):
            return clients[WORKLOAD_CLIENT_ID] if iss == WORKLOAD_ISSUER else None

        def resolve_client_public_key(self, client):
            return workload_key()

        def authenticate_user(self, subject):
            return user_class(subject)

        def has_granted_permission(self, client, user):
            return True

        def get_audiences(self):
            return audiences()

        def validate_token_request(self):
            try:
                authenticated = self.authenticate_token_endpoint_client() if client_authenticated() else None
                super().validate_token_request()
                if authenticated is not None:
                    if not authenticated.check_grant_type(self.GRANT_TYPE):
                        raise UnauthorizedClientError(f"the client may not use grant_type={self.GRANT_TYPE}")
                    self.request.client = authenticated
            except OAuth2Error as e:
                refused(e)
                raise

        def create_token_response(self):
            token = self.generate_token(scope=self.request.payload.scope, user=self.request.user,
                                        expires_in=ttl, include_refresh_token=False)
            self.save_token(token)
            return 200, token, self.TOKEN_RESPONSE_HEADER

    class TokenExchangeGrant(grants.BaseGrant, grants.TokenEndpointMixin):
        GRANT_TYPE = TOKEN_EXCHANGE
        TOKEN_ENDPOINT_AUTH_METHODS = auth_methods

        def validate_token_request(self):
            try:
                self._validate()
            except OAuth2Error as e:
                refused(e)
                raise

        def _validate(self):
            client = self.authenticate_token_endpoint_client()
            if not client.check_grant_type(self.GRANT_TYPE):
                raise UnauthorizedClientError(f"the client may not use grant_type={self.GRANT_TYPE}")
            self.request.client = client
            form = request.form
            stats.exchange_fields = sorted(name for name, _ in form.items(multi=True))
            for name in ("grant_type", "subject_token", "subject_token_type", "requested_token_type", "scope",
                         "actor_token", "actor_token_type"):
                if len(form.getlist(name)) > 1:
                    raise InvalidRequestError(f"'{name}' given more than once")
            subject_token, subject_type = form.get("subject_token"), form.get("subject_token_type")
            if not subject_token:
                raise InvalidRequestError("Missing 'subject_token'")
            if not subject_type:
                raise InvalidRequestError("Missing 'subject_token_type'")
            if bool(form.get("actor_token")) != bool(form.get("actor_token_type")):
                raise InvalidRequestError("'actor_token' and 'actor_token_type' go together")
            requested = form.get("requested_token_type")
            if requested is not None and requested != ACCESS_TOKEN_TYPE:
                raise InvalidRequestError(f"requested_token_type {requested} is not issued here")
            for resource in form.getlist("resource"):
                parts = urlsplit(resource)
                if not parts.scheme or "#" in resource:
                    raise InvalidRequestError("'resource' must be an absolute URI without a fragment")
                if resource not in EXCHANGE_RESOURCES:
                    raise InvalidTargetError(description=f"resource {resource} is not a service of this server")
            for audience in form.getlist("audience"):
                if audience not in EXCHANGE_AUDIENCES:
                    raise InvalidTargetError(description=f"audience {audience} is not a service of this server")
            if subject_type in (JWT_TYPE, ID_TOKEN_TYPE):
                try:
                    token = jose_jwt.decode(subject_token, workload_key())
                    jose_jwt.JWTClaimsRegistry(
                        leeway=5, iss={"essential": True, "value": WORKLOAD_ISSUER},
                        aud={"essential": True, "values": audiences()}, exp={"essential": True},
                        sub={"essential": True}).validate(token.claims)
                except (JoseError, ValueError) as e:
                    raise InvalidRequestError(
                        f"subject_token: {getattr(e, 'description', None) or type(e).__name__}") from None
                user = user_class(token.claims["sub"])
            elif subject_type == ACCESS_TOKEN_TYPE:
                rec = by_access.get(subject_token)
                if rec is None or rec.access_revoked or rec.family.revoked or \
                        time.time() >= rec.issued_at + rec.expires_in:
                    raise InvalidRequestError("subject_token is not an active access token of this server")
                user = rec.user or user_class(rec.client_id)
            else:
                raise InvalidRequestError(f"subject_token_type {subject_type} is not supported")
            self.request.user = user
            self.validate_requested_scope()

        def create_token_response(self):
            token = self.generate_token(scope=self.request.payload.scope, user=self.request.user,
                                        expires_in=ttl, include_refresh_token=False)
            token["issued_token_type"] = ACCESS_TOKEN_TYPE
            self.save_token(token)
            return 200, token, self.TOKEN_RESPONSE_HEADER

    server.register_grant(JWTBearerGrant)
    server.register_grant(TokenExchangeGrant)
