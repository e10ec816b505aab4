"""Password hashing with the standard library's scrypt (RFC 7914); no extra dependency.

Stored form: ``scrypt$<n>$<r>$<p>$<salt, base64>$<hash, base64>``, so the cost can be raised later and old hashes
still verify (``needs_rehash`` says when to re-store one at login).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

N, R, P = 2**14, 8, 1  # ~16 MiB and ~50 ms per hash on one core
_DKLEN = 32
MIN_LENGTH = 10
MAX_LENGTH = 256


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def hash_password(password: str, *, n: int = N, r: int = R, p: int = P) -> str:
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode("utf-8"), salt=salt, n=n, r=r, p=p, dklen=_DKLEN, maxmem=64 * 2**20)
    return f"scrypt${n}${r}${p}${_b64(salt)}${_b64(digest)}"


def verify_password(password: str, stored: str) -> bool:
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt":
            return False
        expected = base64.b64decode(digest)
        got = hashlib.scrypt(
            password.encode("utf-8"),
            salt=base64.b64decode(salt),
            n=int(n),
            r=int(r),
            p=int(p),
            dklen=len(expected),
            maxmem=64 * 2**20,
        )
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(got, expected)


def needs_rehash(stored: str) -> bool:
    parts = stored.split("$")
    return len(parts) != 6 or parts[0] != "scrypt" or (parts[1], parts[2], parts[3]) != (str(N), str(R), str(P))


# Verifying against this when the e-mail is unknown makes a failed login take as long either way.
DUMMY_HASH = hash_password(secrets.token_urlsafe(16))


def password_problem(password: str) -> str | None:
    """Why a new password is not acceptable, or None."""
    if len(password) < MIN_LENGTH:
        return f"password must be at least {MIN_LENGTH} characters"
    if len(password) > MAX_LENGTH:
        return f"password must be at most {MAX_LENGTH} characters"
    if password.strip() != password or not password.strip():
        return "password must not start or end with spaces"
    return None
