"""Fakes shared by unit tests (one place, so every test stands in for a part the same way; integration tests use
the real parts)."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import jwt
from cryptography.hazmat.primitives.asymmetric import rsa


class FakeDispatcher:
    """Stands in for the broker: remembers the job ids it was handed; ``down`` makes it raise like a broker outage."""

    def __init__(self) -> None:
        self.sent: list[str] = []
        self.down = False

    def dispatch(self, job_id: str) -> None:
        if self.down:
            raise ConnectionError("broker unreachable")
        self.sent.append(job_id)


class FakeIndexes:
    """Stands in for the search indexes when deleting: remembers which documents were removed."""

    def __init__(self) -> None:
        self.deleted: list[str] = []

    def delete(self, document_id: str) -> None:
        self.deleted.append(document_id)


class FakeOidcIssuer:
    """An OpenID Connect provider as an ``httpx.MockTransport``: discovery, a JWKS with one RSA key, and a token
    endpoint that answers every code with the ID token set in ``next_claims`` (signed by ``sign``). Unit tests of
    ``app.services.sso``; the end-to-end tests use Dex."""

    def __init__(self, issuer: str = "https://idp.example", client_id: str = "kbqa") -> None:
        self.issuer, self.client_id = issuer, client_id
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.kid = "key-1"
        self.next_claims: dict[str, Any] = {}
        self.token_requests: list[dict[str, str]] = []
        self.jwks_reads = 0
        self.transport = httpx.MockTransport(self._handle)

    def claims(self, **overrides: Any) -> dict[str, Any]:
        now = int(time.time())
        base = {
            "iss": self.issuer,
            "aud": self.client_id,
            "sub": "user-1",
            "iat": now,
            "exp": now + 300,
            "email": "ana@acme.example",
            "email_verified": True,
            "name": "Ana",
        }
        base.update(overrides)
        return {k: v for k, v in base.items() if v is not None}

    def sign(self, claims: dict[str, Any], *, kid: str | None = None, alg: str = "RS256", key: Any = None) -> str:
        return jwt.encode(claims, key or self.key, algorithm=alg, headers={"kid": kid or self.kid})

    def _jwks(self) -> dict[str, Any]:
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        jwk.update(kid=self.kid, use="sig", alg="RS256")
        return {"keys": [jwk]}

    def _handle(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/.well-known/openid-configuration":
            return httpx.Response(
                200,
                json={
                    "issuer": self.issuer,
                    "authorization_endpoint": f"{self.issuer}/auth",
                    "token_endpoint": f"{self.issuer}/token",
                    "jwks_uri": f"{self.issuer}/keys",
                    "id_token_signing_alg_values_supported": ["RS256"],
                    "token_endpoint_auth_methods_supported": ["client_secret_basic"],
                },
            )
        if path == "/keys":
            self.jwks_reads += 1
            return httpx.Response(200, json=self._jwks())
        if path == "/token":
            form = dict(httpx.QueryParams(request.content.decode()))
            self.token_requests.append(form)
            if form.get("code") != "good-code":
                return httpx.Response(400, json={"error": "invalid_grant"})
            return httpx.Response(200, json={"id_token": self.sign(self.next_claims), "token_type": "bearer"})
        return httpx.Response(404)
