"""A real kbqa server (uvicorn subprocess, embedded mode, fresh data dir) for end-to-end tests, and one that signs
in through a real Dex (single sign-on)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.servers import (
    AUTHORS_MAPPING,
    DEX_MOCK_CONNECTOR,
    DexServer,
    Server,
    free_port,
    kbqa_dex_client,
    oidc_settings,
    require_dex_binary,
    run_dex,
    run_kbqa,
    settings_env,
)

REPO = Path(__file__).resolve().parents[2]


CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="session")
def chromium() -> str:
    """The Chromium the browser scripts drive (``CHROMIUM``), once node, the built web app and the scripts' packages
    (playwright-core, axe-core; ``npm ci`` here when missing) are there; skips otherwise."""
    if not shutil.which("node"):
        pytest.skip("node is not installed: the browser test needs Node.js 20")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Chromium not found at {CHROMIUM} (apt-get install chromium)")
    if not (REPO / "frontend" / "dist" / "index.html").exists():
        pytest.skip("the web app is not built (make frontend)")
    if not all((HERE / "node_modules" / m / "package.json").exists() for m in ("playwright-core", "axe-core")):
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=HERE, check=True, timeout=300)
    return CHROMIUM


@pytest.fixture(scope="session")
def server(tmp_path_factory) -> Iterator[Server]:
    with run_kbqa(tmp_path_factory.mktemp("kbqa-e2e") / "data") as s:
        yield s


@dataclass
class SsoSite:
    """kbqa with single sign-on through a real Dex: the static password users ``users`` and the mockCallback
    connector (group ``authors`` -> editor and ACL group ``hr``), SSO users in tenant ``acme``."""

    server: Server
    dex: DexServer
    users: list[dict]


#: The Dex password user the SSO browser test signs in as (no account before its first login).
SSO_USERS = [{"email": "dana@acme.example", "username": "dana", "userID": "0f1f0004-0000-4000-8000-000000000004"}]


@pytest.fixture(scope="module")
def sso_site(tmp_path_factory) -> Iterator[SsoSite]:
    binary = require_dex_binary()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with run_dex(binary, clients=[kbqa_dex_client(url)], users=SSO_USERS, connectors=[DEX_MOCK_CONNECTOR]) as dex:
        env = settings_env("oidc", oidc_settings(dex, url, **AUTHORS_MAPPING))
        with run_kbqa(tmp_path_factory.mktemp("kbqa-sso-e2e") / "data", port=port, env=env) as kbqa:
            yield SsoSite(server=kbqa, dex=dex, users=SSO_USERS)
