"""The web app in headless Chromium (Playwright core) against the real server: log in, upload, watch it reach
indexed, ask, open a citation, give feedback. Screenshots land in tests/e2e/artifacts/."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

HERE = Path(__file__).resolve().parent
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")


def test_browser_flow(server):
    if not shutil.which("node"):
        pytest.skip("node is not installed: the browser test needs Node.js 20")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Chromium not found at {CHROMIUM} (apt-get install chromium)")
    if not (HERE.parent.parent / "frontend" / "dist" / "index.html").exists():
        pytest.skip("the web app is not built (make frontend)")
    if not (HERE / "node_modules" / "playwright-core").exists():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=HERE, check=True, timeout=300)
    key = server.create_key(tenant="browser", role="admin")
    result = subprocess.run(
        ["node", str(HERE / "browser.mjs")],
        cwd=HERE,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "BASE_URL": server.url, "API_KEY": key, "CHROMIUM": CHROMIUM},
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert (HERE / "artifacts").is_dir() and any((HERE / "artifacts").glob("*.png"))
