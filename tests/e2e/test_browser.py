"""The web app in headless Chromium (Playwright core) against the real server: log in with e-mail and password,
upload, watch it reach indexed, ask, open a citation, give feedback, open a cited PDF page (drawn by pdf.js, the passage
highlighted), see the audit log, pass axe-core's WCAG 2.1 A/AA rules on every screen and work by keyboard alone; a
thumbs-down puts an answer in the review queue, where the reviewer marks its section, the regression run lists it and
the knowledge-gaps report shows its topic; then a user of a second tenant, who must not see the first tenant's
document. Screenshots land in tests/e2e/artifacts/."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
PASSWORD = "e2e browser passphrase"


def test_browser_flow(server, chromium):
    key = server.create_key(tenant="browser", role="admin")
    server.create_user(tenant="browser", role="admin", email="admin@browser.example", password=PASSWORD)
    server.create_user(tenant="other", role="agent", email="agent@other.example", password=PASSWORD)
    env = {
        **os.environ,
        "BASE_URL": server.url,
        "CHROMIUM": chromium,
        "API_KEY": key,
        "EMAIL": "admin@browser.example",
        "PASSWORD": PASSWORD,
        "OTHER_EMAIL": "agent@other.example",
        "OTHER_PASSWORD": PASSWORD,
    }
    result = subprocess.run(
        ["node", str(HERE / "browser.mjs")], cwd=HERE, capture_output=True, text=True, timeout=600, env=env
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert (HERE / "artifacts").is_dir() and any((HERE / "artifacts").glob("*.png"))
    assert (HERE / "artifacts" / "cited-pdf-page.png").stat().st_size > 0
