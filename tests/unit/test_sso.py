"""Single sign-on logic (``app.services.sso``) against the shared fake provider: ID-token checks, role and ACL mapping,
provisioning and linking per tenant, the login state, and the settings and routes around them. The end-to-end flow
runs against Dex in ``tests/integration/test_sso_dex.py``."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from fastapi.testclient import TestClient
from pydantic import ValidationError

from app.main import create_app
from app.services import sso
from core.db import repositories as repo
from core.errors import AppError, ErrorCode
from core.settings import OidcSettings
from core.types import Role
from tests.fakes import FakeOidcIssuer
from tests.unit.test_api_auth_sse import fake_container

pytestmark = pytest.mark.unit

OIDC = {
    "issuer": "https://idp.example",
    "client_id": "kbqa",
    "client_secret": "s3cret",
    "redirect_url": "https://kb.example/api/v1/auth/oidc/callback",
    "tenant": "acme",
}


@pytest.fixture
def idp() -> FakeOidcIssuer:
    return FakeOidcIssuer()


@pytest.fixture
def setup(make_settings, idp):
    settings = make_settings(
        oidc={
            **OIDC,
            "role_mapping": {"kb-admins": "admin", "kb-editors": "editor"},
            "acl_mapping": {"hr-team": ["hr"], "kb-admins": ["hr", "finance"]},
        }
    )
    container = fake_container(settings)
    provider = sso.OidcProvider(settings.oidc, transport=idp.transport)
    yield settings, container.db, provider
    container.db.dispose()


def _verify(provider: sso.OidcProvider, token: str, nonce: str = "n-1") -> dict:
    return sso.verify_id_token(provider, token, nonce=nonce)


# --- ID token checks -------------------------------------------------------------------------------------------------


def test_a_valid_id_token_passes(setup, idp):
    _, _, provider = setup
    claims = _verify(provider, idp.sign(idp.claims(nonce="n-1")))
    assert claims["email"] == "ana@acme.example"


@pytest.mark.parametrize(
    ("overrides", "fragment"),
    [
        ({"aud": "someone-else"}, "audience"),
        ({"iss": "https://evil.example"}, "issuer"),
        ({"exp": 1_000_000}, "expired"),
        ({"nonce": "n-2"}, "nonce"),
        ({"nonce": None}, "nonce"),
        ({"sub": None}, "sub"),
        ({"aud": ["kbqa", "other"]}, "azp"),
    ],
)
def test_id_token_claims_are_checked(setup, idp, overrides, fragment):
    _, _, provider = setup
    token = idp.sign(idp.claims(**{"nonce": "n-1", **overrides}))
    with pytest.raises(AppError) as err:
        _verify(provider, token)
    assert err.value.http_status == 401 and fragment in err.value.message.lower()


def test_several_audiences_pass_when_this_client_is_the_authorized_party(setup, idp):
    _, _, provider = setup
    _verify(provider, idp.sign(idp.claims(nonce="n-1", aud=["kbqa", "other"], azp="kbqa")))


def test_signature_must_come_from_the_providers_keys(setup, idp):
    _, _, provider = setup
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    with pytest.raises(AppError) as err:
        _verify(provider, idp.sign(idp.claims(nonce="n-1"), key=stranger))
    assert err.value.http_status == 401 and "signature" in err.value.message.lower()


def test_unknown_key_id_rereads_the_jwks_once_then_fails(setup, idp):
    _, _, provider = setup
    _verify(provider, idp.sign(idp.claims(nonce="n-1")))
    reads = idp.jwks_reads
    with pytest.raises(AppError) as err:
        _verify(provider, idp.sign(idp.claims(nonce="n-1"), kid="rotated-away"))
    assert idp.jwks_reads == reads + 1 and err.value.http_status == 401


@pytest.mark.parametrize("alg", ["HS256", "none"])
def test_symmetric_and_unsigned_tokens_are_refused(setup, idp, alg):
    _, _, provider = setup
    import jwt

    token = jwt.encode(idp.claims(nonce="n-1"), "s3cret-" * 6 if alg == "HS256" else None, algorithm=alg)
    with pytest.raises(AppError) as err:
        _verify(provider, token)
    assert err.value.http_status == 401 and "algorithm" in err.value.message


# --- role and ACL mapping --------------------------------------------------------------------------------------------


def test_role_is_the_highest_mapped_one_and_defaults_to_the_lowest():
    settings = OidcSettings(**OIDC, role_mapping={"a": "admin", "e": "editor"})
    assert sso.map_role(settings, []) == Role.AGENT
    assert sso.map_role(settings, ["unknown"]) == Role.AGENT
    assert sso.map_role(settings, ["e"]) == Role.EDITOR
    assert sso.map_role(settings, ["e", "a", "x"]) == Role.ADMIN
    assert sso.map_role(OidcSettings(**OIDC, default_role="editor"), []) == Role.EDITOR


def test_settings_refuse_a_half_configured_provider(make_settings):
    with pytest.raises(ValidationError, match="client_id"):
        OidcSettings(issuer="https://idp.example")
    with pytest.raises(ValidationError, match="openid"):
        OidcSettings(**OIDC, scopes=["email"])
    with pytest.raises(ValidationError, match="https"):
        make_settings(
            environment="production",
            secret_key="x" * 40,
            database={"url": "postgresql://h/db"},
            oidc={**OIDC, "issuer": "http://idp.example"},
        )
    assert not OidcSettings().enabled


# --- provisioning ----------------------------------------------------------------------------------------------------


def _claims(idp: FakeOidcIssuer, **kw) -> dict:
    return idp.claims(nonce="n-1", **kw)


def test_first_login_creates_the_user_in_the_configured_tenant_with_mapped_role_and_groups(setup, idp):
    settings, db, _ = setup
    user = sso.provision_user(
        settings=settings.oidc, db=db, tenant_id="acme", claims=_claims(idp, groups=["kb-editors", "hr-team"])
    )
    assert (user.tenant_id, user.role, user.acl_groups) == ("acme", "editor", ["hr"])
    assert user.oidc_subject == "https://idp.example user-1"
    again = sso.provision_user(settings=settings.oidc, db=db, tenant_id="acme", claims=_claims(idp, groups=[]))
    assert again.id == user.id and again.role == "agent" and again.acl_groups == []  # follows the provider


def test_existing_account_is_linked_by_verified_email_only_in_its_tenant(setup, idp):
    settings, db, _ = setup
    with db.session() as s:
        other = repo.create_user(
            session=s,
            tenant_id="globex",
            email="ana@acme.example",
            name="A",
            role=Role.ADMIN,
            password="a long local password",
        )
        mine = repo.create_user(
            session=s,
            tenant_id="acme",
            email="Ana@Acme.example",
            name="A",
            role=Role.AGENT,
            password="a long local password",
        )
    user = sso.provision_user(settings=settings.oidc, db=db, tenant_id="acme", claims=_claims(idp))
    assert user.id == mine.id and user.id != other.id


def test_unverified_email_is_refused(setup, idp):
    settings, db, _ = setup
    for claims in (_claims(idp, email_verified=False), _claims(idp, email_verified=None), _claims(idp, email=None)):
        with pytest.raises(AppError) as err:
            sso.provision_user(settings=settings.oidc, db=db, tenant_id="acme", claims=claims)
        assert err.value.http_status == 403


def test_account_linked_to_one_identity_refuses_another_with_the_same_email(setup, idp):
    settings, db, _ = setup
    sso.provision_user(settings=settings.oidc, db=db, tenant_id="acme", claims=_claims(idp))
    with pytest.raises(AppError) as err:
        sso.provision_user(settings=settings.oidc, db=db, tenant_id="acme", claims=_claims(idp, sub="intruder"))
    assert err.value.http_status == 403 and "another" in err.value.message


def test_without_provisioning_unknown_users_are_refused(setup, idp):
    settings, db, _ = setup
    settings.oidc.create_users = False
    with pytest.raises(AppError) as err:
        sso.provision_user(settings=settings.oidc, db=db, tenant_id="acme", claims=_claims(idp))
    assert err.value.http_status == 403


# --- the login state -------------------------------------------------------------------------------------------------


def _started(setup) -> tuple[sso.LoginStart, dict[str, str]]:
    settings, db, provider = setup
    started = sso.start_login(settings=settings.oidc, db=db, provider=provider)
    query = {k: v[0] for k, v in parse_qs(urlsplit(started.url).query).items()}
    return started, query


def test_start_sends_pkce_nonce_and_state(setup):
    started, q = _started(setup)
    assert started.url.startswith("https://idp.example/auth?")
    assert q["state"] == started.state and q["code_challenge_method"] == "S256" and q["nonce"]
    assert q["redirect_uri"] == OIDC["redirect_url"] and q["response_type"] == "code"


def test_finish_trades_the_code_with_the_verifier_and_uses_the_state_once(setup, idp):
    settings, db, provider = setup
    started, q = _started(setup)
    idp.next_claims = idp.claims(nonce=q["nonce"])
    kw = dict(settings=settings.oidc, db=db, provider=provider, tenant_id="acme", code="good-code")
    user = sso.finish_login(**kw, state=started.state, browser_state=started.state)
    assert user.email == "ana@acme.example"
    sent = idp.token_requests[-1]
    assert sso.pkce_challenge(sent["code_verifier"]) == q["code_challenge"]
    with pytest.raises(AppError, match="used"):
        sso.finish_login(**kw, state=started.state, browser_state=started.state)


def test_finish_refuses_a_state_other_than_the_browsers(setup, idp):
    settings, db, provider = setup
    started, q = _started(setup)
    kw = dict(settings=settings.oidc, db=db, provider=provider, tenant_id="acme", code="good-code")
    for state, browser in [(started.state, None), (started.state, "x"), ("x", started.state), (None, None)]:
        with pytest.raises(AppError) as err:
            sso.finish_login(**kw, state=state, browser_state=browser)
        assert err.value.http_status == 401


def test_a_refused_code_is_401(setup, idp):
    settings, db, provider = setup
    started, _ = _started(setup)
    with pytest.raises(AppError) as err:
        sso.finish_login(
            settings=settings.oidc,
            db=db,
            provider=provider,
            tenant_id="acme",
            code="bad",
            state=started.state,
            browser_state=started.state,
        )
    assert err.value.http_status == 401 and err.value.details["provider_error"] == "invalid_grant"


# --- routes ----------------------------------------------------------------------------------------------------------


def test_methods_and_sso_routes_when_sso_is_off(make_settings):
    settings = make_settings()
    container = fake_container(settings)
    with TestClient(create_app(settings, container=container, sweeper=False)) as client:
        assert client.get("/api/v1/auth/methods").json() == {"password": True, "sso": False, "sso_login_url": None}
        r = client.get("/api/v1/auth/oidc/login", follow_redirects=False)
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
    container.db.dispose()


def test_password_login_can_be_turned_off(make_settings):
    settings = make_settings(oidc={**OIDC, "password_login": False}, api={"requests_per_minute": 0})
    container = fake_container(settings)
    with container.db.session() as s:
        repo.create_user(
            session=s,
            tenant_id="acme",
            email="ana@acme.example",
            name="A",
            role=Role.AGENT,
            password="a long local password",
        )
        _, key = repo.create_api_key(session=s, tenant_id="acme", name="k", role=Role.AGENT)
    with TestClient(create_app(settings, container=container, sweeper=False)) as client:
        methods = client.get("/api/v1/auth/methods").json()
        assert methods == {"password": False, "sso": True, "sso_login_url": "/api/v1/auth/oidc/login"}
        r = client.post("/api/v1/auth/session", json={"email": "ana@acme.example", "password": "a long local password"})
        assert r.status_code == 403 and "single sign-on" in r.json()["error"]["message"]
        assert client.post("/api/v1/auth/session", json={"api_key": key}).status_code == 200
    container.db.dispose()


def test_routes_redirect_to_the_provider_and_back_with_a_session(make_settings, idp):
    settings = make_settings(oidc=OIDC, api={"requests_per_minute": 0})
    container = fake_container(settings)
    app = create_app(settings, container=container, sweeper=False)
    app.state.oidc_provider = sso.OidcProvider(settings.oidc, transport=idp.transport)
    with TestClient(app, base_url="https://kb.example") as client:
        r = client.get("/api/v1/auth/oidc/login", follow_redirects=False)
        assert r.status_code == 303
        q = {k: v[0] for k, v in parse_qs(urlsplit(r.headers["location"]).query).items()}
        cookie = r.headers["set-cookie"]
        assert "kbqa_oidc_state=" in cookie and "HttpOnly" in cookie and "samesite=lax" in cookie.lower()
        idp.next_claims = idp.claims(nonce=q["nonce"])
        back = client.get(f"/api/v1/auth/oidc/callback?code=good-code&state={q['state']}", follow_redirects=False)
        assert back.status_code == 303 and back.headers["location"] == "/"
        me = client.get("/api/v1/auth/me")
        assert me.status_code == 200 and me.json()["tenant"] == "acme" and me.json()["role"] == "agent"
        huge = client.get("/api/v1/auth/oidc/callback", params={"code": "c", "state": "s" * 600})
        assert huge.status_code == 422 and huge.json()["error"]["code"] == "validation_error"
    container.db.dispose()


# --- a failed callback: browsers go to the login page, API clients get JSON ---------------------------------------


@pytest.mark.parametrize(
    ("accept", "html"),
    [
        ("text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8", True),  # Chromium
        ("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", True),  # Firefox
        ("application/json", False),
        ("application/json, text/html;q=0.5", False),
        ("text/html;q=0.9, application/json", False),
        ("text/html, application/json;q=0.1", True),
        ("text/html;q=0", False),
        ("*/*", False),
        ("", False),
    ],
)
def test_only_a_browser_asking_for_html_gets_the_page(accept, html):
    from app.api.routes.sso import wants_html

    assert wants_html(accept) is html


def test_login_page_url_carries_only_the_reason():
    from app.api.routes.sso import login_page_url

    assert login_page_url("/", sso.Failure.DENIED) == "/?sso_error=denied"
    assert login_page_url("https://kb.example/app?x=1&sso_error=old", sso.Failure.STATE) == (
        "https://kb.example/app?x=1&sso_error=state"
    )


def test_refusals_name_their_reason(setup, idp):
    settings, db, provider = setup
    kw = dict(settings=settings.oidc, db=db, provider=provider, tenant_id="acme")
    started, q = _started(setup)
    with pytest.raises(AppError) as err:
        sso.finish_login(**kw, code="c", state=started.state, browser_state="another")
    assert sso.failure_reason(err.value) is sso.Failure.STATE
    with pytest.raises(AppError) as err:
        sso.finish_login(**kw, code=None, state=started.state, browser_state=started.state, error="access_denied")
    assert sso.failure_reason(err.value) is sso.Failure.DENIED and err.value.details["error"] == "access_denied"
    started, _ = _started(setup)
    with pytest.raises(AppError) as err:
        sso.finish_login(**kw, code="bad", state=started.state, browser_state=started.state)
    assert sso.failure_reason(err.value) is sso.Failure.PROVIDER
    assert sso.failure_reason(AppError(ErrorCode.DEPENDENCY_UNAVAILABLE, "down")) is sso.Failure.PROVIDER


def test_failed_callback_redirects_a_browser_and_answers_json_otherwise(make_settings, idp):
    settings = make_settings(oidc=OIDC, api={"requests_per_minute": 0})
    container = fake_container(settings)
    app = create_app(settings, container=container, sweeper=False)
    app.state.oidc_provider = sso.OidcProvider(settings.oidc, transport=idp.transport)
    with TestClient(app, base_url="https://kb.example") as client:
        r = client.get("/api/v1/auth/oidc/login", follow_redirects=False)
        state = parse_qs(urlsplit(r.headers["location"]).query)["state"][0]
        url = f"/api/v1/auth/oidc/callback?error=access_denied&state={state}"
        page = client.get(url, headers={"Accept": "text/html"}, follow_redirects=False)
        assert page.status_code == 303 and page.headers["location"] == "/?sso_error=denied"
        assert "kbqa_oidc_state" in page.headers["set-cookie"]  # deleted: this login is used up
        again = client.get(url, headers={"Accept": "application/json"}, follow_redirects=False)
        assert again.status_code == 401 and again.json()["error"]["details"]["reason"] == "state"
    container.db.dispose()
