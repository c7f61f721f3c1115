"""A throwaway PKI for the mutual-TLS interop scenarios (RFC 8705), made with openssl.

Stdlib only (the driver, the authorization server and the resource server all import it):

- make_pki(dir): a CA, a server certificate for 127.0.0.1 signed by it, and `trusted/`, the
  directory of self-signed client certificates a TLS listener accepts (hashed with
  `openssl rehash`, looked up at each handshake, so a certificate added later is accepted
  without a restart);
- issue(dir, name, cn): a client certificate from that CA; self_signed(dir, name, cn): one
  signed by its own key; both with P-256 keys (mode 0600);
- thumbprint(pem): RFC 8705 §3.1's x5t#S256, the base64url SHA-256 of the DER certificate;
- install(cert, key, to_cert, to_key): copies a pair over another atomically, as a
  secret volume or a certificate manager renews files.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import ssl
import subprocess


def _openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def _key(path):
    _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", path)
    os.chmod(path, 0o600)


def make_pki(dir: str) -> dict:
    """The CA, the server's certificate and the trusted directory, under `dir`."""
    os.makedirs(os.path.join(dir, "trusted"), exist_ok=True)
    ca_key, ca = os.path.join(dir, "ca.key"), os.path.join(dir, "ca.pem")
    _key(ca_key)
    _openssl("req", "-x509", "-key", ca_key, "-out", ca, "-days", "2", "-subj", "/CN=AuthGate interop CA")
    server_key, server = os.path.join(dir, "server.key"), os.path.join(dir, "server.pem")
    _key(server_key)
    csr = os.path.join(dir, "server.csr")
    _openssl("req", "-new", "-key", server_key, "-out", csr, "-subj", "/CN=127.0.0.1")
    ext = os.path.join(dir, "server.ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    _openssl("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", server,
             "-days", "2", "-extfile", ext)
    return {"dir": dir, "ca": ca, "ca_key": ca_key, "server_cert": server, "server_key": server_key,
            "trusted": os.path.join(dir, "trusted")}


def issue(dir: str, name: str, cn: str, ca: str, ca_key: str) -> tuple[str, str]:
    """A client certificate for CN=`cn` signed by the CA: (certificate path, key path)."""
    key, cert, csr = (os.path.join(dir, name + s) for s in (".key", ".pem", ".csr"))
    _key(key)
    _openssl("req", "-new", "-key", key, "-out", csr, "-subj", f"/CN={cn}")
    _openssl("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", cert, "-days", "1")
    return cert, key


def self_signed(dir: str, name: str, cn: str) -> tuple[str, str]:
    """A certificate for CN=`cn` signed by its own key: (certificate path, key path)."""
    key, cert = os.path.join(dir, name + ".key"), os.path.join(dir, name + ".pem")
    _key(key)
    _openssl("req", "-x509", "-key", key, "-out", cert, "-days", "1", "-subj", f"/CN={cn}")
    return cert, key


def trust(pki: dict, cert: str) -> None:
    """Adds a self-signed certificate to the listener's trusted directory."""
    shutil.copy(cert, os.path.join(pki["trusted"], hashlib.sha256(open(cert, "rb").read()).hexdigest()[:16] + ".pem"))
    _openssl("rehash", pki["trusted"])


def thumbprint(pem: str) -> str:
    """x5t#S256 of a PEM certificate (text)."""
    der = ssl.PEM_cert_to_DER_cert(pem)
    return base64.urlsafe_b64encode(hashlib.sha256(der).digest()).rstrip(b"=").decode()


def thumbprint_der(der: bytes) -> str:
    """x5t#S256 of a DER certificate."""
    return base64.urlsafe_b64encode(hashlib.sha256(der).digest()).rstrip(b"=").decode()


def install(cert: str, key: str, to_cert: str, to_key: str) -> None:
    """Copies `cert` and `key` over `to_cert` and `to_key`, each by an atomic rename."""
    for src, dst, mode in ((cert, to_cert, 0o644), (key, to_key, 0o600)):
        shutil.copy(src, dst + ".new")
        os.chmod(dst + ".new", mode)
        os.replace(dst + ".new", dst)


def server_context(pki: dict) -> ssl.SSLContext:
    """A TLS server context that asks for a client certificate and accepts one issued by the
    CA or found in the trusted directory, and lets a client without one in (the
    authentication method decides)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(pki["server_cert"], pki["server_key"])
    ctx.verify_mode = ssl.CERT_OPTIONAL
    ctx.load_verify_locations(cafile=pki["ca"], capath=pki["trusted"])
    return ctx
