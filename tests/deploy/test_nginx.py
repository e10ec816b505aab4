"""deploy/nginx/nginx.conf: SSE-safe proxying (no buffering, long reads), upstream = the Compose API service."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from core.settings import IngestionSettings
from tests.deploy._support import DEPLOY, find_tool

pytestmark = pytest.mark.unit

CONF = DEPLOY / "nginx" / "nginx.conf"
UNITS = {"": 1, "s": 1, "m": 60, "h": 3600}
SIZES = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


def seconds(value: str) -> int:
    number, unit = re.fullmatch(r"(\d+)([smh]?)", value).groups()  # type: ignore[union-attr]
    return int(number) * UNITS[unit]


def size_bytes(value: str) -> int:
    number, unit = re.fullmatch(r"(\d+)([kmgKMG]?)", value).groups()  # type: ignore[union-attr]
    return int(number) * SIZES[unit.lower()]


@pytest.fixture(scope="module")
def http_block() -> list[dict[str, Any]]:
    crossplane = pytest.importorskip("crossplane", reason="crossplane (nginx config parser) is not installed")
    parsed = crossplane.parse(str(CONF), single=True, check_ctx=True, check_args=True)
    assert parsed["status"] == "ok", parsed["errors"]
    top = parsed["config"][0]["parsed"]
    return next(d for d in top if d["directive"] == "http")["block"]


def children(block: list[dict[str, Any]], directive: str) -> list[dict[str, Any]]:
    return [d for d in block if d["directive"] == directive]


def arg(block: list[dict[str, Any]], directive: str) -> str:
    found = children(block, directive)
    assert found, f"{directive} missing"
    return found[-1]["args"][0]


def location(server: list[dict[str, Any]], path: str) -> list[dict[str, Any]]:
    return next(d for d in children(server, "location") if d["args"][-1] == path)["block"]


def test_stream_location_is_unbuffered_with_long_timeouts(http_block: list[dict[str, Any]]) -> None:
    server = children(http_block, "server")[0]["block"]
    ask = location(server, "/api/v1/ask")
    assert arg(ask, "proxy_buffering") == "off"
    assert arg(ask, "proxy_cache") == "off"
    assert arg(ask, "gzip") == "off"
    assert seconds(arg(ask, "proxy_read_timeout")) >= 300
    assert arg(server, "proxy_http_version") == "1.1"
    assert arg(ask, "proxy_pass") == "http://kbqa_api"


def test_upload_limit_covers_settings_default(http_block: list[dict[str, Any]]) -> None:
    server = children(http_block, "server")[0]["block"]
    assert size_bytes(arg(server, "client_max_body_size")) >= IngestionSettings().max_upload_bytes


def test_upstream_is_the_api_service(http_block: list[dict[str, Any]]) -> None:
    upstream = next(d for d in children(http_block, "upstream") if d["args"] == ["kbqa_api"])["block"]
    assert [d["args"][0] for d in children(upstream, "server")] == ["api:8000"]
    server = children(http_block, "server")[0]["block"]
    assert arg(server, "listen") == "8080"


def test_nginx_accepts_the_config(tmp_path: Path) -> None:
    nginx = find_tool("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if nginx is None:
        pytest.skip("nginx binary is not installed (Debian: apt-get install nginx-light)")
    # `api` only resolves inside the Compose network; nginx -t resolves upstream hosts, so point it at loopback.
    conf = tmp_path / "nginx.conf"
    conf.write_text(CONF.read_text().replace("server api:8000", "server 127.0.0.1:8000"))
    (tmp_path / "mime.types").write_text("types { text/html html; }\n")
    conf.write_text(conf.read_text().replace("/etc/nginx/mime.types", str(tmp_path / "mime.types")))
    result = subprocess.run(
        [nginx, "-t", "-q", "-p", str(tmp_path), "-c", str(conf), "-g", f"error_log {tmp_path}/error.log;"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 0, result.stderr
