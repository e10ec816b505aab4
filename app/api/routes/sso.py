"""Single sign-on (OpenID Connect): which login methods are on, the redirect to the provider and its callback.

The logic is in ``app.services.sso``; these routes only carry the state cookie and open the session."""

from __future__ import annotations

from fastapi import APIRouter, Query, Request
from fastapi.responses import RedirectResponse
from pydantic import BaseModel

from app.api.auth import Principal, open_session
from app.api.deps import get_container
from app.api.routes.session import put_session_cookie
from app.services import sso
from core.errors import AppError, ErrorCode

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
)
def oidc_callback(
    request: Request,
    code: str | None = Query(default=None, max_length=4096),
    state: str | None = Query(default=None, max_length=512),
    error: str | None = Query(default=None, max_length=512),
) -> RedirectResponse:
    provider = _provider(request)
    container = get_container(request)
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
    cookie = open_session(container.db, Principal.from_user(user))
    resp = RedirectResponse(
        provider.settings.post_login_redirect, status_code=303, headers={"Cache-Control": "no-store"}
    )
    put_session_cookie(resp, container.settings, cookie)
    resp.delete_cookie(STATE_COOKIE, path=STATE_COOKIE_PATH)
    return resp
