"""DPoP proofs (RFC 9449) checked as an authorization or resource server does, with joserfc.

Used by the interop authorization server (token requests) and resource server (API calls):

    jkt = verify(proof, method, url, seen, access_token=None, nonce=None)

checks a compact JWS whose header has `typ` dpop+jwt, an asymmetric `alg` (ES256, PS256,
RS256) and a public `jwk` (no private members) that verifies the signature; `htm` the
method, `htu` the URL without query and fragment, `iat` within 60 s of now, a `jti` not in
`seen` (added), `ath` the access token's hash when one is given, `nonce` when the server
asks for one. Returns the key's RFC 7638 thumbprint (the `jkt` a bound token names), or
raises Refused(error, description) with `invalid_dpop_proof` or `use_dpop_nonce`.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time

from joserfc import jws
from joserfc.jwk import ECKey, RSAKey

ALGORITHMS = ["ES256", "PS256", "RS256"]
WINDOW_SECONDS = 60


class Refused(Exception):
    def __init__(self, error: str, description: str):
        super().__init__(description)
        self.error, self.description = error, description


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def htu(url: str) -> str:
    for mark in ("?", "#"):
        url = url.split(mark, 1)[0]
    return url


def ath(access_token: str) -> str:
    return _b64(hashlib.sha256(access_token.encode("ascii")).digest())


def verify(proof: str, method: str, url: str, seen: set, access_token: str | None = None,
           nonce: str | None = None) -> str:
    def refuse(why):
        raise Refused("invalid_dpop_proof", why)

    try:
        header = json.loads(base64.urlsafe_b64decode(proof.split(".")[0] + "=="))
    except (ValueError, IndexError):
        refuse("the proof is not a compact JWS")
    if header.get("typ") != "dpop+jwt":
        refuse("typ is not dpop+jwt")
    if header.get("alg") not in ALGORITHMS:
        refuse("alg is not ES256, PS256 or RS256")
    jwk = header.get("jwk")
    if not isinstance(jwk, dict) or any(m in jwk for m in ("d", "p", "q", "dp", "dq", "qi")):
        refuse("jwk is not a public key")
    try:
        key = (ECKey if jwk.get("kty") == "EC" else RSAKey).import_key(jwk)
        verified = jws.deserialize_compact(proof, key, algorithms=[header["alg"]])
        claims = json.loads(verified.payload)
    except Exception as e:  # noqa: BLE001 - joserfc raises several kinds
        refuse(f"the signature does not verify with its jwk ({type(e).__name__})")
    if claims.get("htm") != method:
        refuse("htm is not the request's method")
    if claims.get("htu") != htu(url):
        refuse(f"htu {claims.get('htu')!r} is not the request's URI {htu(url)!r}")
    iat = claims.get("iat")
    if not isinstance(iat, (int, float)) or abs(iat - time.time()) > WINDOW_SECONDS:
        refuse("iat is out of range")
    jti = claims.get("jti")
    if not isinstance(jti, str) or not jti:
        refuse("jti is missing")
    if access_token is not None and claims.get("ath") != ath(access_token):
        refuse("ath is not the hash of the access token")
    if nonce is not None and claims.get("nonce") != nonce:
        raise Refused("use_dpop_nonce", "the proof must carry the server's nonce")
    if jti in seen:
        refuse("jti was used before")
    seen.add(jti)
    return key.thumbprint()
