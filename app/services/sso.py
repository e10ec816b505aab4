"""Single sign-on with an OpenID Connect provider: the authorization-code flow with PKCE.

``start_login`` stores a login in progress (state hash, nonce, PKCE verifier; table ``oidc_logins``) and returns the
provider's authorization URL; the browser keeps ``state`` in a cookie too, so only the browser that started a login can
finish it. ``finish_login`` takes the login back out (once: a second callback with the same state is refused), checks
the state against the browser's, trades the code (with the verifier) for tokens, verifies the ID token (signature
against the provider's JWKS, issuer, audience, expiry, nonce), then finds the account by verified e-mail in the
configured tenant (or creates it), maps the provider's groups to a role (the lowest, ``agent``, by default) and ACL
groups, and returns the user. The caller opens the same server-side session a password login opens.

Every refusal on the way is an ``AppError`` whose ``details["reason"]`` names the kind of failure (:class:`Failure`):
API clients read it in the JSON error, and the callback route sends a browser to the web app's login page with it, where
a fixed, readable message (never text from the request) explains what happened.
"""

from __future__ import annotations

import base64
import datetime as dt
import enum
import hashlib
import hmac
import secrets
import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import httpx
import jwt
from sqlalchemy import delete, select

from core.db import repositories as repo
from core.db.models import OidcLogin, User, as_utc, utcnow
from core.db.session import Database
from core.errors import AppError, ErrorCode
from core.settings import OidcSettings
from core.types import Actor, Role

#: Signature algorithms accepted for ID tokens (never ``none``, never a shared-secret HMAC).
ASYMMETRIC_ALGS = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"})
#: Discovery and JWKS are read again after this long (and the JWKS at once when a token names an unknown key).
CACHE_S = 3600.0


class Failure(str, enum.Enum):
    """Why a sign-in did not complete: ``details["reason"]`` of the callback's errors; ``sso_error`` on the login
    page."""

    #: The state is missing, unknown, used already, or not this browser's (a replayed or forged callback).
    STATE = "state"
    #: The login waited at the provider longer than ``login_ttl_s``.
    EXPIRED = "expired"
    #: The provider sent back an error instead of a code (the user cancelled or was refused there).
    DENIED = "denied"
    #: The provider could not be reached, refused the code, or sent an ID token that does not pass the checks.
    PROVIDER = "provider"
    #: The identity is fine but has no account here (provisioning off, no verified e-mail, linked to someone else).
    NO_ACCOUNT = "no_account"
    #: The account exists and is disabled.
    DISABLED = "disabled"


def failure_reason(err: AppError) -> Failure:
    """The kind of an error raised while finishing a sign-in (provider trouble when it names none)."""
    try:
        return Failure(err.details.get("reason", Failure.PROVIDER))
    except ValueError:
        return Failure.PROVIDER


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _state_id(state: str) -> str:
    return hashlib.sha256(state.encode("utf-8")).hexdigest()


def pkce_challenge(verifier: str) -> str:
    """RFC 7636 S256: base64url(sha256(verifier)) without padding."""
    return _b64url(hashlib.sha256(verifier.encode("ascii")).digest())


class OidcProvider:
    """The provider's discovery document and signing keys, fetched on first use and cached; thread-safe."""

    def __init__(self, settings: OidcSettings, *, transport: httpx.BaseTransport | None = None) -> None:
        self.settings = settings
        self.issuer = settings.issuer.rstrip("/")
        self._transport = transport
        self._lock = threading.Lock()
        self._config: dict[str, Any] | None = None
        self._config_at = 0.0
        self._jwks: jwt.PyJWKSet | None = None
        self._jwks_at = 0.0

    def client(self) -> httpx.Client:
        return httpx.Client(timeout=self.settings.timeout_s, transport=self._transport, follow_redirects=False)

    def _get_json(self, url: str, what: str) -> dict[str, Any]:
        try:
            with self.client() as c:
                r = c.get(url, headers={"Accept": "application/json"})
            r.raise_for_status()
            body = r.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise AppError(
                ErrorCode.DEPENDENCY_UNAVAILABLE, f"the single-sign-on provider's {what} could not be read: {exc}"
            ) from exc
        if not isinstance(body, dict):
            raise AppError(ErrorCode.DEPENDENCY_UNAVAILABLE, f"the single-sign-on provider's {what} is not an object")
        return body

    def config(self) -> dict[str, Any]:
        with self._lock:
            if self._config is None or time.monotonic() - self._config_at > CACHE_S:
                config = self._get_json(f"{self.issuer}/.well-known/openid-configuration", "discovery document")
                if str(config.get("issuer", "")).rstrip("/") != self.issuer:
                    raise AppError(
                        ErrorCode.CONFIGURATION,
                        "the provider's discovery document names another issuer than KBQA_OIDC__ISSUER",
                        details={"configured": self.issuer, "discovered": config.get("issuer")},
                    )
                for field in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
                    if not isinstance(config.get(field), str):
                        raise AppError(ErrorCode.DEPENDENCY_UNAVAILABLE, f"the provider's discovery lacks {field}")
                self._config, self._config_at = config, time.monotonic()
            return self._config

    def signing_key(self, kid: str | None) -> jwt.PyJWK:
        """The JWKS key with this ``kid`` (the only key when the token names none); the JWKS is read again once when
        the key is unknown (the provider rotated its keys)."""
        for attempt in range(2):
            with self._lock:
                stale = self._jwks is None or time.monotonic() - self._jwks_at > CACHE_S
            if stale or attempt == 1:
                body = self._get_json(self.config()["jwks_uri"], "signing keys (JWKS)")
                try:
                    keys = jwt.PyJWKSet.from_dict(body)
                except jwt.PyJWTError as exc:
                    raise AppError(ErrorCode.DEPENDENCY_UNAVAILABLE, f"the provider's JWKS is unusable: {exc}") from exc
                with self._lock:
                    self._jwks, self._jwks_at = keys, time.monotonic()
            assert self._jwks is not None
            candidates = [k for k in self._jwks.keys if kid is None or k.key_id == kid]
            if kid is None and len(candidates) == 1 or kid is not None and candidates:
                return candidates[0]
        raise AppError(ErrorCode.UNAUTHENTICATED, "the ID token is signed with a key the provider does not publish")


@dataclass(frozen=True, slots=True)
class LoginStart:
    url: str
    state: str


def start_login(*, settings: OidcSettings, db: Database, provider: OidcProvider) -> LoginStart:
    """A new login in progress, stored server-side; the URL to send the browser to and the state it must keep."""
    state = secrets.token_urlsafe(32)
    nonce = secrets.token_urlsafe(32)
    verifier = secrets.token_urlsafe(64)  # 86 characters, within RFC 7636's 43..128
    endpoint = provider.config()["authorization_endpoint"]
    with db.session() as s:
        expired = utcnow() - dt.timedelta(seconds=settings.login_ttl_s)
        s.execute(delete(OidcLogin).where(OidcLogin.created_at < expired))
        s.add(OidcLogin(id=_state_id(state), nonce=nonce, code_verifier=verifier))
    query = urlencode(
        {
            "response_type": "code",
            "client_id": settings.client_id,
            "redirect_uri": settings.redirect_url,
            "scope": " ".join(settings.scopes),
            "state": state,
            "nonce": nonce,
            "code_challenge": pkce_challenge(verifier),
            "code_challenge_method": "S256",
        }
    )
    return LoginStart(url=f"{endpoint}{'&' if '?' in endpoint else '?'}{query}", state=state)


def _take_login(db: Database, state: str, ttl_s: int) -> OidcLogin:
    """The stored login for ``state``, deleted in the same transaction: each state is good for one callback."""
    with db.session() as s:
        row = s.scalar(select(OidcLogin).where(OidcLogin.id == _state_id(state)).with_for_update())
        if row is not None:
            s.delete(row)
    if row is None:
        raise AppError(
            ErrorCode.UNAUTHENTICATED,
            "unknown or already used sign-in state: start the sign-in again",
            details={"reason": Failure.STATE.value},
        )
    if as_utc(row.created_at) < utcnow() - dt.timedelta(seconds=ttl_s):
        raise AppError(
            ErrorCode.UNAUTHENTICATED,
            "the sign-in took too long: start it again",
            details={"reason": Failure.EXPIRED.value},
        )
    return row


def _exchange_code(provider: OidcProvider, code: str, verifier: str) -> dict[str, Any]:
    settings = provider.settings
    config = provider.config()
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": settings.redirect_url,
        "code_verifier": verifier,
    }
    auth: httpx.Auth | None = None
    methods = config.get("token_endpoint_auth_methods_supported") or ["client_secret_basic"]
    if settings.client_secret and "client_secret_basic" in methods:
        auth = httpx.BasicAuth(settings.client_id, settings.client_secret)
    else:
        form["client_id"] = settings.client_id
        if settings.client_secret:
            form["client_secret"] = settings.client_secret
    try:
        with provider.client() as c:
            headers = {"Accept": "application/json"}
            if auth is not None:
                r = c.post(config["token_endpoint"], data=form, auth=auth, headers=headers)
            else:
                r = c.post(config["token_endpoint"], data=form, headers=headers)
    except httpx.HTTPError as exc:
        raise AppError(ErrorCode.DEPENDENCY_UNAVAILABLE, f"the single-sign-on provider is unreachable: {exc}") from exc
    try:
        body = r.json()
    except ValueError:
        body = {}
    if r.status_code != 200 or not isinstance(body, dict) or not isinstance(body.get("id_token"), str):
        error = body.get("error") if isinstance(body, dict) else None
        raise AppError(
            ErrorCode.UNAUTHENTICATED,
            "the provider refused the authorization code (expired, used already, or not issued to this client)",
            details={"provider_status": r.status_code, "provider_error": str(error or "")[:200]},
        )
    return body


def verify_id_token(provider: OidcProvider, token: str, *, nonce: str) -> dict[str, Any]:
    """The ID token's claims after checking its signature (the provider's JWKS, an asymmetric algorithm the provider
    announces), issuer, audience (and ``azp`` when there are several), expiry, issue time and nonce."""
    settings = provider.settings
    bad = "the ID token is not valid"
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError as exc:
        raise AppError(ErrorCode.UNAUTHENTICATED, f"{bad}: {exc}") from exc
    alg = header.get("alg")
    announced = provider.config().get("id_token_signing_alg_values_supported") or ["RS256"]
    if alg not in ASYMMETRIC_ALGS or alg not in announced:
        raise AppError(ErrorCode.UNAUTHENTICATED, f"{bad}: signature algorithm {alg!r} is not accepted")
    key = provider.signing_key(header.get("kid"))
    try:
        claims: dict[str, Any] = jwt.decode(
            token,
            key=key,
            algorithms=[alg],
            audience=settings.client_id,
            issuer=provider.config()["issuer"],
            leeway=settings.clock_skew_s,
            options={"require": ["iss", "aud", "exp", "iat", "sub"]},
        )
    except jwt.PyJWTError as exc:
        raise AppError(ErrorCode.UNAUTHENTICATED, f"{bad}: {exc}") from exc
    aud = claims.get("aud")
    if isinstance(aud, list) and len(aud) > 1 and claims.get("azp") != settings.client_id:
        raise AppError(ErrorCode.UNAUTHENTICATED, f"{bad}: several audiences and 'azp' is not this client")
    if not hmac.compare_digest(str(claims.get("nonce", "")), nonce):
        raise AppError(ErrorCode.UNAUTHENTICATED, f"{bad}: the nonce does not match this sign-in")
    return claims


def _groups(claims: dict[str, Any], claim: str) -> list[str]:
    value = claims.get(claim)
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [g for g in value if isinstance(g, str)]
    return []


def map_role(settings: OidcSettings, groups: list[str]) -> Role:
    """The highest role any of the groups maps to; ``default_role`` (the lowest, ``agent``, unless configured)."""
    roles = [Role(settings.role_mapping[g]) for g in groups if g in settings.role_mapping]
    best = Role(settings.default_role)
    for role in roles:
        if role.allows(best):
            best = role
    return best


def map_acl_groups(settings: OidcSettings, groups: list[str]) -> list[str]:
    return sorted({acl for g in groups for acl in settings.acl_mapping.get(g, [])})


def _verified_email(claims: dict[str, Any]) -> str:
    email = claims.get("email")
    verified = claims.get("email_verified")
    if isinstance(verified, str):
        verified = verified.lower() == "true"
    if not isinstance(email, str) or "@" not in email or verified is not True:
        raise AppError(
            ErrorCode.FORBIDDEN,
            "the single-sign-on provider did not vouch for an e-mail address (claims 'email' and 'email_verified')",
            details={"reason": Failure.NO_ACCOUNT.value},
        )
    return repo.normalise_email(email)


def provision_user(*, settings: OidcSettings, db: Database, tenant_id: str, claims: dict[str, Any]) -> User:
    """The account of this identity in ``tenant_id``: found by verified e-mail (and linked on first SSO login), or
    created when ``create_users`` is on. Role and ACL groups follow the provider's groups at every login."""
    email = _verified_email(claims)
    subject = f"{claims['iss']} {claims['sub']}"
    groups = _groups(claims, settings.groups_claim)
    role, acl_groups = map_role(settings, groups), map_acl_groups(settings, groups)
    name = claims.get("name") if isinstance(claims.get("name"), str) else ""
    with db.session() as s:
        user = repo.get_user_by_email(session=s, email=email, tenant_id=tenant_id)
        action = "session.login"
        if user is None:
            if not settings.create_users:
                raise AppError(
                    ErrorCode.FORBIDDEN,
                    "no account for this e-mail address here: ask an administrator to create one",
                    details={"reason": Failure.NO_ACCOUNT.value},
                )
            # A random password nobody knows: the account signs in through SSO (an admin may set a password later).
            user = repo.create_user(
                session=s,
                tenant_id=tenant_id,
                email=email,
                name=str(name or email)[:200],
                role=role,
                password=secrets.token_urlsafe(32),
                acl_groups=acl_groups,
            )
            action = "session.login_sso_new_user"
        elif user.oidc_subject is not None and not hmac.compare_digest(user.oidc_subject, subject):
            raise AppError(
                ErrorCode.FORBIDDEN,
                "this account is linked to another single-sign-on identity",
                details={"reason": Failure.NO_ACCOUNT.value},
            )
        actor = Actor(kind="user", id=user.id, name=user.name or user.email)
        if user.disabled_at is not None:
            repo.audit(
                session=s,
                tenant_id=tenant_id,
                actor=actor,
                action="session.login_failed",
                detail={"reason": "disabled", "via": "sso"},
            )
            failure = AppError(
                ErrorCode.FORBIDDEN,
                "this account is disabled: ask an administrator",
                details={"reason": Failure.DISABLED.value},
            )
        else:
            failure = None
            user.oidc_subject = subject
            user.role, user.acl_groups = role.value, acl_groups
            user.last_login_at = utcnow()
            user.failed_logins, user.locked_until = 0, None
            repo.audit(
                session=s,
                tenant_id=tenant_id,
                actor=actor,
                action=action,
                detail={"via": "sso", "role": role.value, "acl_groups": acl_groups},
            )
    if failure is not None:
        raise failure
    return user


def finish_login(
    *,
    settings: OidcSettings,
    db: Database,
    provider: OidcProvider,
    tenant_id: str,
    code: str | None,
    state: str | None,
    browser_state: str | None,
    error: str | None = None,
) -> User:
    """Complete the sign-in the provider sent the browser back from; the user to open a session for."""
    if not state or not browser_state or not hmac.compare_digest(state, browser_state):
        raise AppError(
            ErrorCode.UNAUTHENTICATED,
            "the sign-in state does not match this browser's: start the sign-in again",
            details={"reason": Failure.STATE.value},
        )
    login = _take_login(db, state, settings.login_ttl_s)
    if error:
        raise AppError(
            ErrorCode.UNAUTHENTICATED,
            "the provider did not sign you in",
            details={"error": error[:200], "reason": Failure.DENIED.value},
        )
    if not code:
        raise AppError(
            ErrorCode.VALIDATION,
            "the callback has no authorization code",
            details={"field": "code", "reason": Failure.PROVIDER.value},
        )
    try:
        tokens = _exchange_code(provider, code, login.code_verifier)
        claims = verify_id_token(provider, tokens["id_token"], nonce=login.nonce)
    except AppError as exc:
        exc.details.setdefault("reason", Failure.PROVIDER.value)
        raise
    return provision_user(settings=settings, db=db, tenant_id=tenant_id, claims=claims)
