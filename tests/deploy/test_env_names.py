"""Every KBQA_* variable named anywhere under deploy/ is one that Settings actually reads."""

from __future__ import annotations

import re

import pytest

from tests.deploy._support import DEPLOY, REPO, settings_env_names

pytestmark = pytest.mark.unit

NAME = re.compile(r"\bKBQA_[A-Z0-9_]*[A-Z0-9]")
SKIP_PARTS = {"node_modules"}


def deploy_texts() -> dict[str, str]:
    files = [p for p in DEPLOY.rglob("*") if p.is_file() and not SKIP_PARTS & set(p.parts)]
    files.append(REPO / ".dockerignore")
    return {str(p.relative_to(REPO)): p.read_text(errors="replace") for p in files if p.suffix != ".json"}


def test_settings_names_walk_nested_models() -> None:
    names = settings_env_names()
    assert {"KBQA_SECRET_KEY", "KBQA_DATABASE__URL", "KBQA_GENERATION__VLLM_URL"} <= names
    assert "KBQA_GENERATION__NO_SUCH_FIELD" not in names


def test_deploy_files_use_only_real_settings() -> None:
    known = settings_env_names()
    unknown = {
        (path, name) for path, text in deploy_texts().items() for name in NAME.findall(text) if name not in known
    }
    assert not unknown, sorted(unknown)


def test_the_scan_sees_the_deploy_files() -> None:
    texts = deploy_texts()
    assert "deploy/compose.yaml" in texts and "deploy/k8s/base/kustomization.yaml" in texts
    assert len(NAME.findall(texts["deploy/compose.yaml"])) > 10
