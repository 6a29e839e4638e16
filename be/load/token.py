"""The short-lived token an FE signs when it redirects a load to a backend: the backend learns
who loads into which table without knowing any password.

The claims (JSON, zlib-compressed) and an HMAC-SHA256 of them keyed by the cluster token both
sides share, each base64url-encoded, joined by a dot. The claims carry their expiry."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import time
import zlib

from be.load.errors import TokenRefused

LOAD = "load"  # a Stream Load into one table
TWO_PHASE = "2pc"  # a _stream_load_2pc commit or abort in one database
WRITE = "write"  # a Spark write's load: its row ids, commit and abort (be/spark/write_protocol.py)
TOKEN_PARAMETER = "quire_token"  # the redirect's query parameter


def sign(claims: dict, key: str | bytes, ttl_seconds: float) -> str:
    assert claims.get("kind") in (LOAD, TWO_PHASE, WRITE), claims
    body = dict(claims, expires=time.time() + ttl_seconds)
    data = zlib.compress(json.dumps(body, separators=(",", ":")).encode())
    mac = hmac.new(_key(key), data, hashlib.sha256).digest()
    return f"{_b64(data)}.{_b64(mac)}"


def verify(token: str, key: str | bytes, max_bytes: int, kind: str) -> dict:
    """The claims, once the MAC and the expiry hold; TokenRefused otherwise."""
    if not token:
        raise TokenRefused("no load token: send the load to an FE, which redirects it here")
    if len(token) > max_bytes:
        raise TokenRefused("the load token is too long")
    data_text, _, mac_text = token.partition(".")
    try:
        data, mac = _unb64(data_text), _unb64(mac_text)
    except (ValueError, binascii.Error):
        raise TokenRefused("the load token is malformed") from None
    if not hmac.compare_digest(mac, hmac.new(_key(key), data, hashlib.sha256).digest()):
        raise TokenRefused("the load token is not signed by this cluster")
    try:
        claims = json.loads(zlib.decompress(data, bufsize=max_bytes))
    except (zlib.error, ValueError):
        raise TokenRefused("the load token is malformed") from None
    if not isinstance(claims, dict) or claims.get("kind") != kind:
        raise TokenRefused("the load token is for another kind of request")
    if not isinstance(claims.get("expires"), float) or claims["expires"] < time.time():
        raise TokenRefused("the load token has expired: send the load to an FE again")
    return claims


def _key(key: str | bytes) -> bytes:
    return key.encode() if isinstance(key, str) else key


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
