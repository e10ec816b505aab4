"""deploy/compose.yaml: references resolve, each profile is a consistent stack, the app env builds Settings.

``docker compose config`` cannot run here (no Compose plugin), so these checks parse the file with PyYAML.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy._support import DEPLOY, build_settings, interpolate, interpolation_names

pytestmark = pytest.mark.unit

PROFILES = ("cpu-only", "gpu")
API_SERVICES = {"cpu-only": "api", "gpu": "api-gpu"}
KBQA_IMAGE_SERVICES = ("migrate", "api", "api-gpu", "worker")


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())


def active_services(compose: dict[str, Any], profile: str) -> dict[str, Any]:
    return {
        name: svc for name, svc in compose["services"].items() if not svc.get("profiles") or profile in svc["profiles"]
    }


def named_volume(entry: str | dict[str, Any]) -> str | None:
    source = entry.get("source", "") if isinstance(entry, dict) else entry.split(":", 1)[0]
    if not source or source.startswith((".", "/", "$", "~")):
        return None
    return source


def test_references_resolve(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name, svc in services.items():
        for dep in svc.get("depends_on", {}):
            assert dep in services, f"{name} depends on undefined service {dep}"
        for entry in svc.get("volumes", []):
            volume = named_volume(entry)
            assert volume is None or volume in compose["volumes"], f"{name} uses undefined volume {volume}"
        networks = svc.get("networks", [])
        for network in networks if isinstance(networks, list) else networks.keys():
            assert network in compose["networks"], f"{name} uses undefined network {network}"
        assert set(svc.get("profiles", [])) <= set(PROFILES), f"{name} has an unknown profile"


def test_bind_mounts_exist(compose: dict[str, Any]) -> None:
    proxy_conf = compose["services"]["proxy"]["volumes"][0].split(":")[0]
    assert (DEPLOY / proxy_conf).is_file()


@pytest.mark.parametrize("profile", PROFILES)
def test_each_profile_is_a_complete_stack(compose: dict[str, Any], profile: str) -> None:
    active = active_services(compose, profile)
    for name, svc in active.items():
        for dep, spec in svc.get("depends_on", {}).items():
            assert dep in active or spec.get("required") is False, f"[{profile}] {name} needs inactive {dep}"
    api = API_SERVICES[profile]
    assert api in active
    assert [other for other in API_SERVICES.values() if other in active] == [api]
    # nginx's upstream host `api` must resolve to the active API service.
    assert "api" in active[api]["networks"]["backend"]["aliases"]
    assert {"proxy", "postgres", "redis", "weaviate", "migrate", "worker"} <= set(active)
    assert ("vllm" in active) == (profile == "gpu")


def test_dependency_conditions_are_satisfiable(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name, svc in services.items():
        for dep, spec in svc.get("depends_on", {}).items():
            target = services[dep]
            if spec["condition"] == "service_healthy":
                check = target.get("healthcheck", {})
                assert check.get("test") and not check.get("disable"), f"{name} waits on {dep}, which has no check"
            elif spec["condition"] == "service_completed_successfully":
                assert target.get("restart") == "no", f"{dep} is a one-shot and must not restart"
            else:
                pytest.fail(f"{name} -> {dep}: unexpected condition {spec['condition']}")
    assert services["migrate"]["command"] == ["migrate"]
    for name in ("api", "api-gpu", "worker"):
        assert services[name]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"


def test_api_replicas_and_readiness(compose: dict[str, Any]) -> None:
    for name in API_SERVICES.values():
        svc = compose["services"][name]
        assert svc["deploy"]["replicas"] == 2
        assert "/readyz" in " ".join(svc["healthcheck"]["test"])
        assert svc["command"] == ["serve", "--host", "0.0.0.0", "--port", "8000"]
    assert compose["services"]["worker"]["command"][0] == "worker"


def test_vllm_serving_flags(compose: dict[str, Any]) -> None:
    vllm = compose["services"]["vllm"]
    assert vllm["image"].startswith("vllm/vllm-openai:")
    args = [str(a) for a in vllm["command"]]
    assert "--enable-prefix-caching" in args
    assert args[args.index("--gpu-memory-utilization") + 1] == "0.85"
    assert "--max-num-seqs" in args
    max_model_len = int(args[args.index("--max-model-len") + 1])
    api_env = compose["services"]["api-gpu"]["environment"]
    assert int(api_env["KBQA_GENERATION__CONTEXT_WINDOW"]) <= max_model_len
    assert api_env["KBQA_GENERATION__VLLM_URL"] == "http://vllm:8000/v1"
    served = args[args.index("--served-model-name") + 1]
    assert interpolate(served, {}) == interpolate(api_env["KBQA_GENERATION__MODEL"], {})
    gpu = vllm["deploy"]["resources"]["reservations"]["devices"][0]
    assert gpu["capabilities"] == ["gpu"]


def test_weaviate_persists_and_backs_up(compose: dict[str, Any]) -> None:
    weaviate = compose["services"]["weaviate"]
    env = weaviate["environment"]
    mounts = {entry.split(":")[1] for entry in weaviate["volumes"]}
    assert env["PERSISTENCE_DATA_PATH"] in mounts
    assert "backup-filesystem" in env["ENABLE_MODULES"]
    assert env["BACKUP_FILESYSTEM_PATH"] in mounts


def test_env_example_documents_every_variable(compose: dict[str, Any]) -> None:
    text = (DEPLOY / "compose.yaml").read_text()
    example = (DEPLOY / ".env.example").read_text()
    documented = {line.split("=", 1)[0] for line in example.splitlines() if "=" in line and not line.startswith("#")}
    assert interpolation_names(text) <= documented


@pytest.mark.parametrize("service", KBQA_IMAGE_SERVICES)
def test_service_env_builds_production_settings(
    compose: dict[str, Any], service: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake_env = {
        "KBQA_SECRET_KEY": "x" * 40,
        "POSTGRES_PASSWORD": "pw",
        "WEAVIATE_API_KEY": "wk",
        "VLLM_API_KEY": "vk",
        "MINIO_ROOT_PASSWORD": "mk",
    }
    raw = compose["services"][service]["environment"]
    env = {key: interpolate(str(value), fake_env) for key, value in raw.items()}
    settings = build_settings(env, monkeypatch, tmp_path)
    assert settings.environment == "production"
    assert settings.database.url.startswith("postgresql+psycopg://kbqa:pw@postgres:5432/")
    assert settings.ingestion.executor == "celery"
    assert settings.index.backend == "weaviate"
    assert settings.index.weaviate_api_key == "wk"
    # No shared volume: the graph is in PostgreSQL, the uploaded originals in MinIO.
    assert settings.index.graph_backend == "postgres"
    assert settings.file_store.backend == "s3" and settings.file_store.s3_endpoint == "http://minio:9000"
    assert settings.file_store.s3_secret_key == "mk"
    expected_backend = "vllm" if service == "api-gpu" else "extractive"
    assert settings.generation.backend == expected_backend
    with pytest.raises(KeyError, match="KBQA_SECRET_KEY"):
        interpolate(str(raw["KBQA_SECRET_KEY"]), {})
