"""Single sign-on in headless Chromium against a real OpenID Connect provider: kbqa (``kbqa serve``) configured for a
Dex on loopback (both started by the ``sso_site`` fixture). ``sso.mjs`` opens the web app, clicks "Sign in with SSO",
logs in on Dex's own login page as a static password user, lands back signed in with the role and tenant kbqa mapped,
signs out; replays the used callback and must get the login page's explanation with "Try again" (not a raw error);
tries again through Dex's mockCallback connector, whose user's group maps to the editor role and ACL group ``hr``, and
must see the ``hr`` document and not the ``finance`` one. Screenshots sso-*.png land in tests/e2e/artifacts/."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.servers import DEX_MOCK_EMAIL, DEX_PASSWORD

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
DOCUMENTS = {"hr-handbook": "hr", "finance-plan": "finance", "public-faq": None}


def test_sso_sign_in_through_dex_in_the_browser(chromium, sso_site):
    server = sso_site.server
    user = sso_site.users[0]
    key = server.create_key(tenant="acme", role="admin")
    auth = {"Authorization": f"Bearer {key}"}
    for title, group in DOCUMENTS.items():
        r = httpx.post(
            f"{server.url}/api/v1/documents",
            headers=auth,
            files={"files": (f"{title}.md", f"# {title}\n\nThe {title} of the SSO browser test.\n".encode())},
            data={"acl_groups": group} if group else {},
            timeout=60,
        )
        assert r.status_code in (200, 201, 202), r.text
    env = {
        **os.environ,
        "BASE_URL": server.url,
        "CHROMIUM": chromium,
        "DEX_ISSUER": sso_site.dex.issuer,
        "SSO_EMAIL": user["email"],
        "SSO_PASSWORD": DEX_PASSWORD,
        # No account before: created on the first SSO login in the configured tenant, with the lowest role (Dex's
        # password users have no groups).
        "SSO_WHO": f"{user['username']} · agent · acme",
        # Dex's mockCallback user is in group "authors": editor, ACL group "hr".
        "GROUP_WHO": "Kilgore Trout · editor · acme",
        "VISIBLE_DOCS": "hr-handbook,public-faq",
        "HIDDEN_DOCS": "finance-plan",
    }
    result = subprocess.run(
        ["node", str(HERE / "sso.mjs")], cwd=HERE, capture_output=True, text=True, timeout=300, env=env
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    for name in ("sso-01-login", "sso-02-dex-login", "sso-03-signed-in", "sso-04-failed", "sso-05-group-documents"):
        assert (HERE / "artifacts" / f"{name}.png").stat().st_size > 0, name
    # What the server recorded: both accounts made by SSO in tenant acme, with the mapped roles and ACL groups.
    users = {u["email"]: u for u in httpx.get(f"{server.url}/api/v1/users", headers=auth, timeout=30).json()["users"]}
    assert users[user["email"]]["role"] == "agent"
    assert users[DEX_MOCK_EMAIL]["role"] == "editor" and users[DEX_MOCK_EMAIL]["acl_groups"] == ["hr"]
