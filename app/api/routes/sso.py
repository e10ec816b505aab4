"""Single sign-on (OpenID Connect): which login methods are on, the redirect to the provider and its callback.

The logic is in ``app.services.sso``; these routes only carry the state cookie and open the session. A callback that
fails answers a browser (``Accept`` prefers ``text/html``) with a redirect to the web app's login page carrying
``?sso_error=<reason>`` (see ``sso.Failure``), and any other client with the usual JSON error."""

from __future__ import annotations

import logging
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from fastapi import APIRouter, Query, Request
from fastapi.responses import RedirectResponse
from pydantic import BaseModel

from app.api.auth import Principal, open_session
from app.api.deps import get_container
from app.api.routes.session import put_session_cookie
from app.services import sso
from core.errors import AppError, ErrorCode

log = logging.getLogger(__name__)

router = APIRouter(prefix="/api/v1/auth", tags=["session"])

#: Holds the ``state`` of a sign-in in progress, so only the browser that started it can finish it. SameSite=Lax: the
#: provider's redirect back is a cross-site top-level GET, which a Strict cookie would miss.
STATE_COOKIE = "kbqa_oidc_state"
STATE_COOKIE_PATH = "/api/v1/auth/oidc"


class LoginMethods(BaseModel):
    password: bool
    sso: bool
    #: Where the browser goes to sign in with SSO (absent when SSO is off).
    sso_login_url: str | None = None


@router.get("/methods", response_model=LoginMethods, summary="Which login methods this server offers (public)")
def login_methods(request: Request) -> LoginMethods:
    oidc = get_container(request).settings.oidc
    return LoginMethods(
        password=oidc.password_login,
        sso=oidc.enabled,
        sso_login_url=f"{STATE_COOKIE_PATH}/login" if oidc.enabled else None,
    )


def _quality(accept: str, media_types: tuple[str, ...]) -> float:
    """The highest ``q`` the ``Accept`` header gives any of ``media_types`` (exact ranges only; 0 when absent)."""
    best = 0.0
    for part in accept.split(","):
        media, *params = (p.strip() for p in part.split(";"))
        if media.lower() not in media_types:
            continue
        q = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        best = max(best, q)
    return best


def wants_html(accept: str) -> bool:
    """A browser navigating (``text/html`` asked for by name, above JSON); ``*/*`` and ``application/json`` get JSON."""
    html = _quality(accept, ("text/html", "application/xhtml+xml"))
    return html > 0 and html > _quality(accept, ("application/json",))


def login_page_url(app_url: str, reason: sso.Failure) -> str:
    """``app_url`` (the web app) with ``sso_error=<reason>`` added to its query."""
    parts = urlsplit(app_url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "sso_error"]
    query.append(("sso_error", reason.value))
    return urlunsplit(parts._replace(query=urlencode(query)))


def _provider(request: Request) -> sso.OidcProvider:
    settings = get_container(request).settings.oidc
    if not settings.enabled:
        raise AppError(ErrorCode.NOT_FOUND, "single sign-on is not configured on this server")
    provider = getattr(request.app.state, "oidc_provider", None)
    if provider is None or provider.settings is not settings:
        provider = sso.OidcProvider(settings)
        request.app.state.oidc_provider = provider
    return provider


@router.get(
    "/oidc/login",
    status_code=303,
    response_class=RedirectResponse,
    summary="Start a single-sign-on login: redirects to the OpenID Connect provider",
)
def oidc_login(request: Request) -> RedirectResponse:
    provider = _provider(request)
    container = get_container(request)
    started = sso.start_login(settings=provider.settings, db=container.db, provider=provider)
    resp = RedirectResponse(started.url, status_code=303, headers={"Cache-Control": "no-store"})
    resp.set_cookie(
        STATE_COOKIE,
        started.state,
        max_age=provider.settings.login_ttl_s,
        httponly=True,
        samesite="lax",
        secure=container.settings.environment != "local",
        path=STATE_COOKIE_PATH,
    )
    return resp


@router.get(
    "/oidc/callback",
    status_code=303,
    response_class=RedirectResponse,
    summary="The provider's redirect back: checks state, code and ID token, opens a session, redirects to the app",
    description=(
        "On success: 303 to the web app with the session cookie. On failure, a client whose `Accept` prefers "
        "`text/html` (a browser) gets 303 to the web app's login page with `?sso_error=<reason>` (`state`, `expired`, "
        "`denied`, `provider`, `no_account`, `disabled`); any other client gets the JSON error, whose "
        "`details.reason` is the same reason."
    ),
)
def oidc_callback(
    request: Request,
    code: str | None = Query(default=None, max_length=4096),
    state: str | None = Query(default=None, max_length=512),
    error: str | None = Query(default=None, max_length=512),
) -> RedirectResponse:
    provider = _provider(request)
    container = get_container(request)
    try:
        user = sso.finish_login(
            settings=provider.settings,
            db=container.db,
            provider=provider,
            tenant_id=provider.settings.tenant or container.settings.default_tenant,
            code=code,
            state=state,
            browser_state=request.cookies.get(STATE_COOKIE),
            error=error,
        )
    except AppError as exc:
        reason = sso.failure_reason(exc)
        log.info("single sign-on refused (%s): %s %s", reason.value, exc.message, exc.details or "")
        if not wants_html(request.headers.get("accept", "")):
            raise
        page = RedirectResponse(
            login_page_url(provider.settings.post_login_redirect, reason),
            status_code=303,
            headers={"Cache-Control": "no-store"},
        )
        if reason is not sso.Failure.STATE:  # this login is used up; a state mismatch may be another tab's login
            page.delete_cookie(STATE_COOKIE, path=STATE_COOKIE_PATH)
        return page
    cookie = open_session(container.db, Principal.from_user(user))
    resp = RedirectResponse(
        provider.settings.post_login_redirect, status_code=303, headers={"Cache-Control": "no-store"}
    )
    put_session_cookie(resp, container.settings, cookie)
    resp.delete_cookie(STATE_COOKIE, path=STATE_COOKIE_PATH)
    return resp
