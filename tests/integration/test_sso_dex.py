"""Single sign-on end to end against a real OpenID Connect provider: Dex (built from source by
``scripts/build-go-servers.sh``) on a free loopback port, and kbqa (its real container, embedded mode) served by
uvicorn on another. A client that keeps
cookies plays the browser: it starts at kbqa's ``/api/v1/auth/oidc/login``, fills Dex's login form with the static
user's password, lands on kbqa's callback, gets the session cookie and calls ``/api/v1/auth/me``. The negative cases
(state, replayed code, nonce, audience, another tenant's user, a disabled account) run the same flow. A second Dex
with its ``mockCallback`` connector (a fixed user in group ``authors``) shows the group mapping: role and ACL groups
that hide a document of another group."""

from __future__ import annotations

import datetime as dt
import html
import re
import secrets
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import httpx
import pytest
import uvicorn
from sqlalchemy import delete, update

from app.api.auth import SESSION_COOKIE
from app.cli import migrate_database
from app.main import create_app
from app.services import sso
from core.db import repositories as repo
from core.db.models import OidcLogin, User, utcnow
from core.errors import AppError
from core.types import Role
from tests.servers import (
    AUTHORS_MAPPING,
    DEX_CLIENT_SECRET,
    DEX_MOCK_CONNECTOR,
    DEX_MOCK_EMAIL,
    DEX_PASSWORD,
    DexServer,
    free_port,
    kbqa_dex_client,
    oidc_settings,
    require_dex_binary,
    run_dex,
)

pytestmark = pytest.mark.integration

KBQA_SECRET = DEX_CLIENT_SECRET
OTHER_SECRET = "other-client-secret-for-tests-only"
USERS = [
    {"email": "ana@acme.example", "username": "ana", "userID": "0f1f0001-0000-4000-8000-000000000001"},
    {"email": "bo@globex.example", "username": "bo", "userID": "0f1f0002-0000-4000-8000-000000000002"},
    # Known to Dex only: no account in any tenant (the failure tests sign cy in with provisioning off).
    {"email": "cy@initech.example", "username": "cy", "userID": "0f1f0003-0000-4000-8000-000000000003"},
]


@dataclass
class Site:
    url: str
    container: object
    dex: DexServer
    other_redirect: str

    @property
    def oidc(self):  # noqa: ANN201
        return self.container.settings.oidc  # type: ignore[attr-defined]


class _Served:
    def __init__(self, app, port: int) -> None:  # noqa: ANN001
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> _Served:
        self.thread.start()
        deadline = time.monotonic() + 180  # start-up loads the embedding model
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("kbqa did not start")
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Iterator[Site]:  # noqa: ANN001
    from core.settings import Settings

    binary = require_dex_binary()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    other_redirect = f"http://127.0.0.1:{free_port()}/elsewhere/callback"
    clients = [kbqa_dex_client(url), {"id": "other", "secret": OTHER_SECRET, "redirectURIs": [other_redirect]}]
    with run_dex(binary, clients=clients, users=USERS) as dex:
        settings = Settings(
            _env_file=None,  # type: ignore[call-arg]
            data_dir=tmp_path_factory.mktemp("sso") / "data",
            api={"requests_per_minute": 0, "tokens_per_minute": 0, "login_attempts_per_minute": 0},
            oidc=oidc_settings(dex, url),
        )
        migrate_database(settings)  # as `kbqa serve` does
        app = create_app(settings, sweeper=False)  # the real container, built at start-up
        with _Served(app, port):
            container = app.state.container
            with container.db.session() as s:
                repo.create_user(
                    session=s,
                    tenant_id="acme",
                    email="ana@acme.example",
                    name="Ana",
                    role=Role.EDITOR,
                    password="a long local password",
                )
                repo.create_user(
                    session=s,
                    tenant_id="globex",
                    email="bo@globex.example",
                    name="Bo",
                    role=Role.ADMIN,
                    password="another long local password",
                )
            yield Site(url, container, dex, other_redirect)


def _follow(browser: httpx.Client, response: httpx.Response, stop_prefix: str) -> tuple[httpx.Response, str | None]:
    """Follow redirects until one points at ``stop_prefix`` (returned, not followed) or a page answers."""
    for _ in range(10):
        if response.status_code not in (301, 302, 303, 307):
            return response, None
        location = urljoin(str(response.request.url), response.headers["location"])
        if location.startswith(stop_prefix):
            return response, location
        response = browser.get(location)
    raise AssertionError("redirect loop")


def dex_login(browser: httpx.Client, authorize_url: str, email: str, stop_prefix: str) -> str:
    """Sign in at Dex's password form as ``email``; the redirect back (with ``code`` and ``state``), not followed."""
    page, _ = _follow(browser, browser.get(authorize_url), stop_prefix)
    assert page.status_code == 200 and 'name="password"' in page.text, page.text[:500]
    action = re.search(r'<form[^>]*action="([^"]*)"', page.text)
    post_to = urljoin(str(page.request.url), html.unescape(action.group(1)) if action and action.group(1) else "")
    answer = browser.post(post_to, data={"login": email, "password": DEX_PASSWORD})
    final, back = _follow(browser, answer, stop_prefix)
    assert back is not None, f"Dex did not redirect back: {final.status_code} {final.text[:500]}"
    return back


def start(site: Site, browser: httpx.Client) -> str:
    r = browser.get(f"{site.url}/api/v1/auth/oidc/login")
    assert r.status_code == 303, r.text
    assert r.headers["location"].startswith(site.dex.issuer + "/auth?")
    return r.headers["location"]


def sign_in(site: Site, browser: httpx.Client, email: str = "ana@acme.example") -> str:
    """The whole flow up to (not including) kbqa's callback; returns the callback URL Dex redirected to."""
    return dex_login(browser, start(site, browser), email, f"{site.url}/api/v1/auth/oidc/callback")


def browser() -> httpx.Client:
    return httpx.Client(timeout=20, follow_redirects=False)


def test_sso_login_through_dex_opens_a_session(site):
    with browser() as b:
        authorize = start(site, b)
        query = parse_qs(urlsplit(authorize).query)
        assert query["code_challenge_method"] == ["S256"] and len(query["code_challenge"][0]) == 43
        assert query["client_id"] == ["kbqa"] and query["nonce"][0] and query["state"][0]
        callback = dex_login(b, authorize, "ana@acme.example", f"{site.url}/api/v1/auth/oidc/callback")
        r = b.get(callback)
        assert r.status_code == 303, r.text
        assert r.headers["location"] == "/"
        assert SESSION_COOKIE in r.cookies
        me = b.get(f"{site.url}/api/v1/auth/me")
        assert me.status_code == 200, me.text
        body = me.json()
        # The account that exists in the configured tenant, linked by the verified e-mail; its role now follows the
        # provider's groups: none are mapped, so the lowest role.
        assert body["tenant"] == "acme" and body["kind"] == "user" and body["role"] == "agent"
        assert body["csrf_token"]
        # The session is the same server-side session a password login opens: logout ends it.
        out = b.delete(f"{site.url}/api/v1/auth/session", headers={"X-CSRF-Token": body["csrf_token"]})
        assert out.status_code == 204
        b.cookies.set(SESSION_COOKIE, r.cookies[SESSION_COOKIE])
        assert b.get(f"{site.url}/api/v1/auth/me").status_code == 401
    with site.container.db.session() as s:  # type: ignore[attr-defined]
        ana = repo.get_user_by_email(session=s, email="ana@acme.example", tenant_id="acme")
        assert ana is not None and ana.oidc_subject is not None
        assert ana.oidc_subject.startswith(site.dex.issuer + " ")
        assert s.query(OidcLogin).count() == 0  # the login in progress was used up


def test_callback_with_another_state_is_refused(site):
    with browser() as b:
        callback = sign_in(site, b)
        parts = urlsplit(callback)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        forged = f"{site.url}{parts.path}?{urlencode({**query, 'state': secrets.token_urlsafe(32)})}"
        r = b.get(forged)
        assert r.status_code == 401 and r.json()["error"]["code"] == "unauthenticated"
        assert "state" in r.json()["error"]["message"]
        assert b.get(f"{site.url}/api/v1/auth/me").status_code == 401


def test_callback_in_another_browser_is_refused(site):
    """Login CSRF: a callback URL made in one browser does not sign in another (the state cookie is missing)."""
    with browser() as b:
        callback = sign_in(site, b)
    with browser() as victim:
        r = victim.get(callback)
        assert r.status_code == 401 and "state" in r.json()["error"]["message"]
        assert SESSION_COOKIE not in r.cookies


def test_replayed_callback_and_code_are_refused(site):
    with browser() as b:
        callback = sign_in(site, b)
        state_cookie = b.cookies.get("kbqa_oidc_state")
        assert b.get(callback).status_code == 303
        # The same callback again, even with the state cookie put back: the login was used up.
        b.cookies.set("kbqa_oidc_state", state_cookie, path="/api/v1/auth/oidc")
        again = b.get(callback)
        assert again.status_code == 401 and "used" in again.json()["error"]["message"]
        # And the provider itself refuses the code a second time.
        code = parse_qs(urlsplit(callback).query)["code"][0]
        token_endpoint = httpx.get(f"{site.dex.issuer}/.well-known/openid-configuration").json()["token_endpoint"]
        r = httpx.post(
            token_endpoint,
            data={"grant_type": "authorization_code", "code": code, "redirect_uri": site.oidc.redirect_url},
            auth=("kbqa", KBQA_SECRET),
        )
        assert r.status_code >= 400 and "id_token" not in r.text


def test_wrong_nonce_is_refused(site):
    with browser() as b:
        callback = sign_in(site, b)
        with site.container.db.session() as s:  # type: ignore[attr-defined]
            s.execute(update(OidcLogin).values(nonce="not-the-nonce-sent-to-the-provider"))
        r = b.get(callback)
        assert r.status_code == 401 and "nonce" in r.json()["error"]["message"]
        assert b.get(f"{site.url}/api/v1/auth/me").status_code == 401


def test_id_token_for_another_client_is_refused(site):
    """A genuine Dex-signed ID token whose audience is another client does not pass kbqa's check."""
    nonce, state = secrets.token_urlsafe(16), secrets.token_urlsafe(16)
    config = httpx.get(f"{site.dex.issuer}/.well-known/openid-configuration").json()
    authorize = (
        config["authorization_endpoint"]
        + "?"
        + urlencode(
            {
                "response_type": "code",
                "client_id": "other",
                "redirect_uri": site.other_redirect,
                "scope": "openid email",
                "state": state,
                "nonce": nonce,
            }
        )
    )
    with browser() as b:
        back = dex_login(b, authorize, "ana@acme.example", site.other_redirect)
    code = parse_qs(urlsplit(back).query)["code"][0]
    tokens = httpx.post(
        config["token_endpoint"],
        data={"grant_type": "authorization_code", "code": code, "redirect_uri": site.other_redirect},
        auth=("other", OTHER_SECRET),
    ).json()
    provider = sso.OidcProvider(site.oidc)
    with pytest.raises(AppError) as err:
        sso.verify_id_token(provider, tokens["id_token"], nonce=nonce)
    assert err.value.http_status == 401 and "audience" in err.value.message.lower()
    # The same code cannot be traded by kbqa either (it was issued to the other client, and is used).
    with pytest.raises(AppError):
        sso._exchange_code(provider, code, "x" * 43)


def test_user_of_another_tenant_gets_no_session_there(site):
    """bo@ has an admin account in globex only. SSO is configured for acme: without provisioning bo is refused; with
    it bo gets a new acme account with the lowest role, never the globex one."""
    site.oidc.create_users = False
    try:
        with browser() as b:
            r = b.get(sign_in(site, b, "bo@globex.example"))
            assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"
            assert b.get(f"{site.url}/api/v1/auth/me").status_code == 401
    finally:
        site.oidc.create_users = True
    with browser() as b:
        assert b.get(sign_in(site, b, "bo@globex.example")).status_code == 303
        me = b.get(f"{site.url}/api/v1/auth/me").json()
        assert me["tenant"] == "acme" and me["role"] == "agent"
        assert b.get(f"{site.url}/api/v1/users").status_code == 403  # not an admin anywhere through this session
    with site.container.db.session() as s:  # type: ignore[attr-defined]
        globex_bo = repo.get_user_by_email(session=s, email="bo@globex.example", tenant_id="globex")
        assert globex_bo is not None and globex_bo.oidc_subject is None and globex_bo.role == "admin"


def test_disabled_account_cannot_sign_in_through_sso(site):
    with site.container.db.session() as s:  # type: ignore[attr-defined]
        s.execute(update(User).where(User.email == "ana@acme.example").values(disabled_at=utcnow()))
    try:
        with browser() as b:
            r = b.get(sign_in(site, b))
            assert r.status_code == 403 and "disabled" in r.json()["error"]["message"]
    finally:
        with site.container.db.session() as s:  # type: ignore[attr-defined]
            s.execute(update(User).where(User.email == "ana@acme.example").values(disabled_at=None))


# --- groups: Dex's mockCallback connector signs in a fixed user who is in group "authors" ------------------------


@pytest.fixture(scope="module")
def group_site(tmp_path_factory) -> Iterator[tuple[str, object, dict[str, str]]]:  # noqa: ANN001
    from core.settings import Settings

    binary = require_dex_binary()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with run_dex(binary, clients=[kbqa_dex_client(url)], connectors=[DEX_MOCK_CONNECTOR]) as dex:
        settings = Settings(
            _env_file=None,  # type: ignore[call-arg]
            data_dir=tmp_path_factory.mktemp("sso-groups") / "data",
            api={"requests_per_minute": 0, "tokens_per_minute": 0, "login_attempts_per_minute": 0},
            oidc=oidc_settings(dex, url, **AUTHORS_MAPPING),
        )
        migrate_database(settings)  # as `kbqa serve` does
        app = create_app(settings, sweeper=False)  # the real container: ingestion runs in-process
        with _Served(app, port):
            container = app.state.container
            docs = {
                name: container.ingest.submit(
                    tenant_id="acme", filename=f"{name}.md", data=f"# {name}\n\ntext".encode(), acl_groups=groups
                ).document.id
                for name, groups in [("hr-handbook", ["hr"]), ("finance-plan", ["finance"]), ("public-faq", None)]
            }
            yield url, container, docs


def test_provider_groups_map_to_role_and_acl_groups_that_restrict_documents(group_site):
    url, container, docs = group_site
    with browser() as b:
        r = b.get(f"{url}/api/v1/auth/oidc/login")
        assert r.status_code == 303
        _, callback = _follow(b, b.get(r.headers["location"]), f"{url}/api/v1/auth/oidc/callback")
        assert callback is not None
        assert b.get(callback).status_code == 303
        me = b.get(f"{url}/api/v1/auth/me").json()
        assert me["tenant"] == "acme" and me["role"] == "editor"  # "authors" -> editor
        listed = {d["id"] for d in b.get(f"{url}/api/v1/documents").json()["documents"]}
        assert docs["hr-handbook"] in listed and docs["public-faq"] in listed
        assert docs["finance-plan"] not in listed
        assert b.get(f"{url}/api/v1/documents/{docs['hr-handbook']}").status_code == 200
        hidden = b.get(f"{url}/api/v1/documents/{docs['finance-plan']}")
        assert hidden.status_code == 404 and hidden.json()["error"]["code"] == "not_found"
    with container.db.session() as s:  # type: ignore[attr-defined]
        user = repo.get_user_by_email(session=s, email=DEX_MOCK_EMAIL, tenant_id="acme")
        assert user is not None and user.acl_groups == ["hr"] and user.role == "editor"


# --- a failed callback: a browser lands on the web app's login page, an API client gets the JSON error -------------

#: What Chromium sends when it follows a redirect to a page, and what an API client sends.
BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"
JSON_ACCEPT = "application/json"


def _tampered_state(site: Site, b: httpx.Client) -> str:
    parts = urlsplit(sign_in(site, b))
    query = {k: v[0] for k, v in parse_qs(parts.query).items()}
    return f"{site.url}{parts.path}?{urlencode({**query, 'state': secrets.token_urlsafe(32)})}"


def _expired(site: Site, b: httpx.Client) -> str:
    callback = sign_in(site, b)
    long_ago = utcnow() - dt.timedelta(seconds=site.oidc.login_ttl_s + 5)
    with site.container.db.session() as s:  # type: ignore[attr-defined]
        s.execute(update(OidcLogin).values(created_at=long_ago))
    return callback


def _denied(site: Site, b: httpx.Client) -> str:
    """The provider's redirect back when the user cancels or is refused there (RFC 6749 4.1.2.1)."""
    state = parse_qs(urlsplit(start(site, b)).query)["state"][0]
    query = {"error": "access_denied", "error_description": "the user cancelled", "state": state}
    return f"{site.oidc.redirect_url}?{urlencode(query)}"


def _unknown_user(site: Site, b: httpx.Client) -> str:
    site.oidc.create_users = False  # the test puts it back
    return sign_in(site, b, "cy@initech.example")


def _disabled(site: Site, b: httpx.Client) -> str:
    with site.container.db.session() as s:  # type: ignore[attr-defined]
        s.execute(update(User).where(User.email == "ana@acme.example").values(disabled_at=utcnow()))
    return sign_in(site, b)


def _code_used_elsewhere(site: Site, b: httpx.Client) -> str:
    """The token exchange fails: someone traded the code first, so Dex answers invalid_grant."""
    callback = sign_in(site, b)
    token_endpoint = httpx.get(f"{site.dex.issuer}/.well-known/openid-configuration").json()["token_endpoint"]
    code = parse_qs(urlsplit(callback).query)["code"][0]
    first = httpx.post(
        token_endpoint,
        data={"grant_type": "authorization_code", "code": code, "redirect_uri": site.oidc.redirect_url},
        auth=("kbqa", KBQA_SECRET),
    )
    assert first.status_code == 200 and "id_token" in first.json()
    return callback


FAILURES = {
    "state": (_tampered_state, 401, "unauthenticated"),
    "expired": (_expired, 401, "unauthenticated"),
    "denied": (_denied, 401, "unauthenticated"),
    "no_account": (_unknown_user, 403, "forbidden"),
    "disabled": (_disabled, 403, "forbidden"),
    "provider": (_code_used_elsewhere, 401, "unauthenticated"),
}


@pytest.fixture
def restored(site):  # noqa: ANN001, ANN201
    """Puts back what the failure set-ups change: provisioning on, ana enabled, no logins in progress."""
    yield site
    site.oidc.create_users = True
    with site.container.db.session() as s:  # type: ignore[attr-defined]
        s.execute(update(User).where(User.email == "ana@acme.example").values(disabled_at=None))
        s.execute(delete(OidcLogin))


@pytest.mark.parametrize("reason", list(FAILURES))
def test_failed_callback_sends_a_browser_to_the_login_page_with_the_reason(restored, reason):
    site = restored
    prepare, _, _ = FAILURES[reason]
    with browser() as b:
        b.headers["Accept"] = BROWSER_ACCEPT
        r = b.get(prepare(site, b))
        assert r.status_code == 303, r.text
        assert r.headers["location"] == f"/?sso_error={reason}"
        assert r.headers["cache-control"] == "no-store"
        assert SESSION_COOKIE not in r.cookies
        # The login page it points at is the web app's (served from the same origin), not an error body.
        assert "application/json" not in r.headers.get("content-type", "")
        me = b.get(f"{site.url}/api/v1/auth/me", headers={"Accept": JSON_ACCEPT})
        assert me.status_code == 401


@pytest.mark.parametrize("reason", list(FAILURES))
def test_failed_callback_answers_an_api_client_with_the_json_error(restored, reason):
    site = restored
    prepare, status, code = FAILURES[reason]
    with browser() as b:
        b.headers["Accept"] = JSON_ACCEPT
        r = b.get(prepare(site, b))
        assert r.status_code == status, r.text
        assert r.headers["content-type"].startswith("application/json")
        error = r.json()["error"]
        assert error["code"] == code and error["details"]["reason"] == reason and error["message"]
        assert SESSION_COOKIE not in r.cookies
