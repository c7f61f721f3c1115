"""The device authorization grant (RFC 8628) for the Authlib interop server, on Authlib's own
rfc8628 classes:

- DeviceAuthorizationEndpoint (POST /device_authorization): the client authenticates with any
  method the token endpoint takes; the answer names a device code, a user code, the
  verification URI (/device) with and without the code, expires_in and interval.
- DeviceCodeGrant at the token endpoint: authorization_pending until a person decides;
  slow_down (and the code's interval grows by 5 s, §3.5) when polled sooner than its interval
  after the previous poll; expired_token after the expiry; access_denied once declined;
  tokens (with a refresh token) once approved, after which the code is spent.
- POST /test/device: the person's decision, as a verification page would take it:
  {"user_code": …, "username": …, "password": …, "approve": true|false}.
- POST /test/device/settings: {"expires_in": N, "interval": M} for the codes issued next.

/stats gains `device_authorizations`, `device_polls` (by answer), `device_poll_gaps` (the
seconds between consecutive polls of one code), `device_fields` (the field names of the last
device token request) and `device_codes` (every device code issued, as /debug/families shows
refresh tokens: for the harness to check that AuthGate never logs one).
"""

from __future__ import annotations

import time

DEVICE_CODE = "urn:ietf:params:oauth:grant-type:device_code"


def register(app, server, *, clients, users, stats, log, lock, issuer, ttl, auth_methods):
    """Registers the endpoint, the grant and the test routes. `issuer` is a function (the
    port is known late)."""
    from flask import jsonify, request
    from authlib.oauth2 import OAuth2Error
    from authlib.oauth2.rfc8628 import DeviceAuthorizationEndpoint, DeviceCodeGrant, DeviceCredentialDict

    stats.device_authorizations = 0
    stats.device_polls = {}
    stats.device_poll_gaps = []
    stats.device_fields = []
    stats.device_codes = []
    settings = {"expires_in": 600, "interval": 2}
    credentials = {}  # device_code -> DeviceCredentialDict (with last_poll and interval)
    decisions = {}  # user_code -> (user, approved)
    for c in clients.values():
        if c.client_id in ("authgate", "authgate-jwt", "authgate-mtls", "authgate-self-signed"):
            c.grant_types |= {DEVICE_CODE}

    class Endpoint(DeviceAuthorizationEndpoint):
        CLIENT_AUTH_METHODS = auth_methods

        def get_verification_uri(self):
            return issuer() + "/device"

        def save_device_credential(self, client_id, scope, data):
            record = DeviceCredentialDict(client_id=client_id, scope=scope, **data)
            record["expires_at"] = time.time() + data["expires_in"]
            record["poll_interval"] = data["interval"]
            record["last_poll"] = None
            credentials[data["device_code"]] = record
            stats.device_authorizations += 1
            stats.device_codes.append(data["device_code"])
            log("device_authorization", client_id=client_id, user_code=data["user_code"])

        def create_endpoint_response(self, request):
            self.EXPIRES_IN = settings["expires_in"]
            self.INTERVAL = settings["interval"]
            return super().create_endpoint_response(request)

    class Grant(DeviceCodeGrant):
        TOKEN_ENDPOINT_AUTH_METHODS = auth_methods

        def query_device_credential(self, device_code):
            return credentials.get(device_code)

        def query_user_grant(self, user_code):
            return decisions.get(user_code)

        def should_slow_down(self, credential):
            now = time.monotonic()
            last, credential["last_poll"] = credential["last_poll"], now
            if last is not None and now - last < credential["poll_interval"]:
                credential["poll_interval"] += 5
                return True
            return False

        def validate_token_request(self):
            stats.device_fields = sorted(request.form.keys())
            credential = credentials.get(request.form.get("device_code") or "")
            if credential is not None and credential.get("last_seen") is not None:
                stats.device_poll_gaps.append(round(time.monotonic() - credential["last_seen"], 3))
            if credential is not None:
                credential["last_seen"] = time.monotonic()
            try:
                super().validate_token_request()
            except OAuth2Error as e:
                stats.device_polls[e.error] = stats.device_polls.get(e.error, 0) + 1
                raise
            stats.device_polls["issued"] = stats.device_polls.get("issued", 0) + 1

        def create_token_response(self):
            token = self.generate_token(user=self.request.user, scope=self.request.credential.get_scope(),
                                        expires_in=ttl, include_refresh_token=True)
            self.save_token(token)
            # The code is spent: a second poll with it is refused.
            credentials.pop(request.form.get("device_code"), None)
            return 200, token, self.TOKEN_RESPONSE_HEADER

    server.register_endpoint(Endpoint)
    server.register_grant(Grant)

    @app.post("/device_authorization")
    def device_authorization():
        with lock:
            return server.create_endpoint_response(Endpoint.ENDPOINT_NAME)

    @app.post("/test/device")
    def decide():
        body = request.get_json(force=True) or {}
        entry = users.get(body.get("username") or "")
        if not entry or entry[0] != body.get("password"):
            return jsonify({"error": "the user could not be authenticated"}), 401
        with lock:
            code = (body.get("user_code") or "").upper()
            waiting = [c for c in credentials.values() if c["user_code"] == code and not c.is_expired()]
            if not waiting or code in decisions:
                return jsonify({"error": "no device login waits for this code"}), 404
            decisions[code] = (entry[1], bool(body.get("approve", True)))
            log("device_decision", user_code=code, approved=bool(body.get("approve", True)))
        return jsonify({"user_code": code, "approved": bool(body.get("approve", True))})

    @app.post("/test/device/settings")
    def device_settings():
        body = request.get_json(force=True) or {}
        with lock:
            for name in ("expires_in", "interval"):
                if isinstance(body.get(name), int):
                    settings[name] = body[name]
        return jsonify(settings)
