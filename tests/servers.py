"""Helpers for tests that start real server processes: a free local port, waiting for a readiness URL, a scratch
PostgreSQL database, and real Weaviate and MinIO servers (the binaries ``scripts/build-go-servers.sh`` builds) on
free loopback ports."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    """A local TCP port nothing listens on (free now; a closed port for tests of refused connections)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def free_port_pair() -> int:
    """A local port ``p`` with ``p + 1`` also free (Weaviate's gossip and data ports must be consecutive)."""
    for _ in range(100):
        p = free_port()
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", p + 1))
            except OSError:
                continue
        return p
    raise RuntimeError("no two consecutive free local ports")


def wait_ready(url: str, proc: subprocess.Popen, log: Path, timeout_s: float, path: str = "/readyz") -> None:
    """Poll ``url`` + ``path`` until it answers 200. Raises RuntimeError with the tail of ``log`` if the process
    exits or ``timeout_s`` passes first (the caller stops the process)."""
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{url}{path}", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"server not ready after {timeout_s:.0f} s: {log.read_text()[-3000:]}")
        time.sleep(0.3)


@contextmanager
def scratch_pg_database(admin_url: str, prefix: str = "kbqa_t_") -> Iterator[str]:
    """Create an empty database on the PostgreSQL server of ``admin_url``, yield its URL, drop it afterwards."""
    import uuid

    import sqlalchemy as sa

    name = f"{prefix}{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(admin_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
        try:
            yield admin_url.rsplit("/", 1)[0] + f"/{name}"
        finally:
            with admin.connect() as conn:
                conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


# -- Weaviate ---------------------------------------------------------------------------------------------------------
def weaviate_binary() -> Path:
    """Where ``scripts/build-go-servers.sh`` keeps the Weaviate server of the version deploy/compose.yaml pins
    (``KBQA_TEST_WEAVIATE_BIN`` overrides). The file may not exist: ``make services`` builds it."""
    if os.environ.get("KBQA_TEST_WEAVIATE_BIN"):
        return Path(os.environ["KBQA_TEST_WEAVIATE_BIN"])
    out = subprocess.run(
        ["bash", str(REPO / "scripts" / "build-go-servers.sh"), "--path"], capture_output=True, text=True, check=True
    )
    return Path(out.stdout.strip())


@dataclass(frozen=True, slots=True)
class WeaviateServer:
    url: str
    grpc_port: int
    proc: subprocess.Popen | None = None  # None: a server someone else runs (KBQA_TEST_WEAVIATE_URL)


@dataclass(frozen=True, slots=True)
class WeaviatePorts:
    http: int
    grpc: int
    gossip: int  # the data port is gossip + 1
    raft: int
    raft_rpc: int

    @classmethod
    def free(cls) -> WeaviatePorts:
        return cls(free_port(), free_port(), free_port_pair(), free_port(), free_port())


def start_weaviate(binary: Path, data: Path, ports: WeaviatePorts, timeout_s: float = 60.0) -> WeaviateServer:
    """Start a single-node Weaviate on ``ports`` with its data under ``data`` and wait until it is ready (stopped and
    RuntimeError if it is not). Starting again with the same ``data`` and ``ports`` restarts the same node."""
    node = "kbqa-test-0"
    env = {
        **os.environ,
        "PERSISTENCE_DATA_PATH": str(data / "data"),
        "AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED": "true",
        "DEFAULT_VECTORIZER_MODULE": "none",
        "ENABLE_MODULES": "",
        "DISABLE_TELEMETRY": "true",
        "GO_PROFILING_DISABLE": "true",
        "PROMETHEUS_MONITORING_ENABLED": "false",
        "LOG_LEVEL": "warning",
        "GRPC_PORT": str(ports.grpc),
        "CLUSTER_HOSTNAME": node,
        "CLUSTER_ADVERTISE_ADDR": "127.0.0.1",
        "CLUSTER_GOSSIP_BIND_PORT": str(ports.gossip),
        "CLUSTER_DATA_BIND_PORT": str(ports.gossip + 1),
        "RAFT_PORT": str(ports.raft),
        "RAFT_INTERNAL_RPC_PORT": str(ports.raft_rpc),
        "RAFT_JOIN": f"{node}:{ports.raft}",
        "RAFT_BOOTSTRAP_EXPECT": "1",
    }
    data.mkdir(parents=True, exist_ok=True)
    log = data / "weaviate.log"
    url = f"http://127.0.0.1:{ports.http}"
    cmd = [str(binary), "--scheme", "http", "--host", "127.0.0.1", "--port", str(ports.http)]
    with log.open("ab") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_ready(url, proc, log, timeout_s, path="/v1/.well-known/ready")
    except BaseException:
        stop_process(proc)
        raise
    return WeaviateServer(url, ports.grpc, proc)


@contextmanager
def run_weaviate(binary: Path, data_dir: Path | None = None, timeout_s: float = 60.0) -> Iterator[WeaviateServer]:
    """A throw-away single-node Weaviate on free ports (HTTP, gRPC, gossip + data, Raft + its RPC): HTTP, Raft and
    RPC on 127.0.0.1; gRPC and gossip listen on all interfaces (Weaviate 1.30 has no setting for their address). A temp
    data dir (or ``data_dir``, kept), anonymous access, no modules (kbqa sends the vectors). Stopped (SIGTERM, then
    SIGKILL) on exit."""
    own_dir = data_dir is None
    data = Path(tempfile.mkdtemp(prefix="kbqa-weaviate-")) if data_dir is None else data_dir
    try:
        server = start_weaviate(binary, data, WeaviatePorts.free(), timeout_s)
        try:
            yield server
        finally:
            assert server.proc is not None
            stop_process(server.proc)
    finally:
        if own_dir:
            shutil.rmtree(data, ignore_errors=True)


# -- MinIO ------------------------------------------------------------------------------------------------------------
def minio_binary() -> Path:
    """Where ``scripts/build-go-servers.sh`` keeps the MinIO server (``KBQA_TEST_MINIO_BIN`` overrides). The file may
    not exist: ``make services`` builds it."""
    if os.environ.get("KBQA_TEST_MINIO_BIN"):
        return Path(os.environ["KBQA_TEST_MINIO_BIN"])
    out = subprocess.run(
        ["bash", str(REPO / "scripts" / "build-go-servers.sh"), "--path", "minio"],
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(out.stdout.strip())


@dataclass(frozen=True, slots=True)
class MinioServer:
    url: str
    access_key: str
    secret_key: str
    proc: subprocess.Popen | None = None  # None: a server someone else runs (KBQA_TEST_S3_URL)


@contextmanager
def run_minio(binary: Path, data_dir: Path | None = None, timeout_s: float = 60.0) -> Iterator[MinioServer]:
    """A throw-away single-drive MinIO on a free loopback port (S3 API; the web console on another free loopback
    port), with a temp data dir (or ``data_dir``, kept) and random root credentials. Stopped (SIGTERM, then SIGKILL)
    on exit."""
    import secrets

    own_dir = data_dir is None
    data = Path(tempfile.mkdtemp(prefix="kbqa-minio-")) if data_dir is None else data_dir
    port, console = free_port(), free_port()
    user, password = "kbqa" + secrets.token_hex(4), secrets.token_urlsafe(24)
    env = {
        **os.environ,
        "MINIO_ROOT_USER": user,
        "MINIO_ROOT_PASSWORD": password,
        "MINIO_BROWSER": "off",
        "MINIO_UPDATE": "off",
        "MINIO_CI_CD": "1",
    }
    (data / "data").mkdir(parents=True, exist_ok=True)
    log = data / "minio.log"
    url = f"http://127.0.0.1:{port}"
    cmd = [
        str(binary),
        "server",
        str(data / "data"),
        "--address",
        f"127.0.0.1:{port}",
        "--console-address",
        f"127.0.0.1:{console}",
        "--quiet",
    ]
    with log.open("ab") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_ready(url, proc, log, timeout_s, path="/minio/health/ready")
        yield MinioServer(url, user, password, proc)
    finally:
        stop_process(proc)
        if own_dir:
            shutil.rmtree(data, ignore_errors=True)


def stop_process(proc: subprocess.Popen, timeout_s: float = 20.0) -> None:
    """SIGTERM, wait, then SIGKILL a server started by a test."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# -- Dex (OpenID Connect provider) ------------------------------------------------------------------------------------
#: bcrypt of "password": the hash of Dex's own example configuration (no bcrypt library needed to make one).
DEX_PASSWORD = "password"
DEX_PASSWORD_HASH = "$2a$10$2b2cU8CPhOTaGrs1HRQuAueS7JTT5ZHsHSzYiFPm1leZck7Mc8T4W"


def dex_binary() -> Path:
    """Where ``scripts/build-go-servers.sh`` keeps the Dex server (``KBQA_TEST_DEX_BIN`` overrides). The file may not
    exist: ``make services`` builds it."""
    if os.environ.get("KBQA_TEST_DEX_BIN"):
        return Path(os.environ["KBQA_TEST_DEX_BIN"])
    out = subprocess.run(
        ["bash", str(REPO / "scripts" / "build-go-servers.sh"), "--path", "dex"],
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(out.stdout.strip())


def dex_web_dir(binary: Path) -> Path:
    return binary.with_name(binary.name + "-web")


@dataclass(frozen=True, slots=True)
class DexServer:
    issuer: str
    proc: subprocess.Popen


def require_dex_binary() -> Path:
    """The Dex binary, or skip (fail under ``KBQA_TEST_REQUIRE_SERVICES=1``) when it has not been built."""
    from tests.conftest import service_missing

    binary = dex_binary()
    if not binary.is_file():
        service_missing(f"no Dex server: {binary} not built (run `bash scripts/build-go-servers.sh`)")
    return binary


#: kbqa's client at the test Dex (``oidc_settings`` configures kbqa with it).
DEX_CLIENT_ID = "kbqa"
DEX_CLIENT_SECRET = "kbqa-client-secret-for-tests-only"


def kbqa_dex_client(kbqa_url: str) -> dict:
    """The static Dex client for a kbqa served at ``kbqa_url`` (its callback is the only redirect URI)."""
    return {"id": DEX_CLIENT_ID, "secret": DEX_CLIENT_SECRET, "redirectURIs": [f"{kbqa_url}/api/v1/auth/oidc/callback"]}


def oidc_settings(dex: DexServer, kbqa_url: str, **extra: object) -> dict:
    """kbqa's ``oidc`` settings for signing in through ``dex`` (users in tenant ``acme``); ``extra`` adds more."""
    return {
        "issuer": dex.issuer,
        "client_id": DEX_CLIENT_ID,
        "client_secret": DEX_CLIENT_SECRET,
        "redirect_url": f"{kbqa_url}/api/v1/auth/oidc/callback",
        "tenant": "acme",
        **extra,
    }


#: Dex's ``mockCallback`` connector: signs in a fixed user at once (no form), "Kilgore Trout",
#: ``kilgore@kilgore.trout`` (verified), in group ``authors``.
DEX_MOCK_CONNECTOR = {"type": "mockCallback", "id": "mock", "name": "Mock"}
DEX_MOCK_EMAIL = "kilgore@kilgore.trout"
#: The group mapping the SSO tests configure: Dex group ``authors`` -> role ``editor`` and ACL group ``hr``.
AUTHORS_MAPPING = {"role_mapping": {"authors": "editor"}, "acl_mapping": {"authors": ["hr"]}}


def settings_env(section: str, values: dict) -> dict[str, str]:
    """``values`` of one settings section as ``KBQA_<SECTION>__<NAME>`` variables (lists and maps as JSON)."""
    import json

    return {
        f"KBQA_{section.upper()}__{name.upper()}": v if isinstance(v, str) else json.dumps(v)
        for name, v in values.items()
    }


@contextmanager
def run_dex(
    binary: Path,
    *,
    clients: list[dict],
    users: list[dict] | None = None,
    connectors: list[dict] | None = None,
    timeout_s: float = 30.0,
) -> Iterator[DexServer]:
    """A throw-away Dex on a free loopback port: in-memory storage, the static password connector with ``users``
    (``email``, ``username``, ``userID``; password :data:`DEX_PASSWORD`), the static ``clients`` (``id``, ``secret``,
    ``redirectURIs``, optional ``trustedPeers``), no approval screen, the login page from the templates kept beside the
    binary. ``connectors`` adds Dex connectors (e.g. ``mockCallback``, which signs in a fixed user with a group); with
    no ``users`` the password connector is off. Stopped (SIGTERM, then SIGKILL) on exit."""
    import json

    work = Path(tempfile.mkdtemp(prefix="kbqa-dex-"))
    port = free_port()
    issuer = f"http://127.0.0.1:{port}/dex"
    config = {
        "issuer": issuer,
        "storage": {"type": "memory"},
        "web": {"http": f"127.0.0.1:{port}"},
        "logger": {"level": "debug"},
        "oauth2": {"skipApprovalScreen": True},
        # Dex reads its login page templates at run time: the build script keeps them beside the binary.
        "frontend": {"dir": str(dex_web_dir(binary))},
        "staticClients": [{"name": c["id"], **c} for c in clients],
        "enablePasswordDB": bool(users),
        "staticPasswords": [{"hash": DEX_PASSWORD_HASH, **u} for u in users or []],
        "connectors": connectors or [],
    }
    # JSON is YAML: Dex reads it as its config file.
    (work / "config.yaml").write_text(json.dumps(config, indent=2))
    log = work / "dex.log"
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [str(binary), "serve", str(work / "config.yaml")],
            cwd=work,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_ready(issuer, proc, log, timeout_s, path="/.well-known/openid-configuration")
        yield DexServer(issuer, proc)
    finally:
        stop_process(proc)
        shutil.rmtree(work, ignore_errors=True)


# -- llama.cpp's OpenAI-compatible server -----------------------------------------------------------------------------

#: The model name the test server serves its GGUF under.
LLAMA_ALIAS = "test-llm"


def packaged_gguf() -> str:
    """The small chat GGUF the tests run (``KBQA_TEST_GGUF``, else the packaged SmolLM2), or "" when there is none."""
    from app.generation.backends.llamacpp import find_packaged_gguf

    return os.environ.get("KBQA_TEST_GGUF") or str(find_packaged_gguf() or "")


def start_llama_server(gguf: str, *, n_ctx: int = 2048, timeout_s: float = 180.0) -> tuple[subprocess.Popen, str]:
    """Start ``python -m llama_cpp.server`` with ``gguf`` (served as :data:`LLAMA_ALIAS`) on a free loopback port;
    returns the process and its ``/v1`` base URL once ``/v1/models`` answers. Raises RuntimeError (after killing the
    process) if it exits or is not ready in ``timeout_s``."""
    import sys

    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", gguf, "--model_alias", LLAMA_ALIAS,
         "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", "1",
         "--n_threads_batch", "1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"llama_cpp.server exited with {proc.returncode}")
        try:
            if httpx.get(f"{url}/models", timeout=1.0).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    proc.kill()
    proc.wait(10)
    raise RuntimeError(f"llama_cpp.server did not become ready in {timeout_s:.0f} s")


# -- kbqa itself ------------------------------------------------------------------------------------------------------
@dataclass
class Server:
    """A ``kbqa serve`` process started by :func:`start_kbqa` (``proc`` is None for one started elsewhere)."""

    url: str
    env: dict[str, str]
    proc: subprocess.Popen | None = None

    def cli(self, *args: str, stdin: str | None = None) -> str:
        """Run ``kbqa <args>`` (``python -m app.cli``) against this server's settings and data; its stdout."""
        import sys

        out = subprocess.run(
            [sys.executable, "-m", "app.cli", *args],
            cwd=REPO,
            env=self.env,
            input=stdin,
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        return out.stdout

    def create_key(self, *, tenant: str, role: str, name: str = "e2e") -> str:
        out = self.cli("keys", "create", "--quiet", "--tenant", tenant, "--role", role, "--name", name)
        return out.strip().splitlines()[-1]

    def create_user(self, *, tenant: str, role: str, email: str, password: str) -> None:
        """A web user, made the way an operator would: ``kbqa users create --password-stdin``."""
        self.cli(
            "users", "create", "--quiet", "--password-stdin", "--tenant", tenant, "--role", role,
            "--email", email, "--name", email.split("@")[0], stdin=password + "\n",
        )  # fmt: skip

    def kill(self) -> None:
        """SIGKILL the server and every process it started (a crash: no shutdown code runs)."""
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError):  # its own session (start_new_session): parser children too
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        """SIGTERM, wait, then SIGKILL."""
        if self.proc is not None:
            stop_process(self.proc)


def kbqa_env(data: Path, port: int, env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a test ``kbqa serve``: embedded mode with its data in ``data``, offline, no rate limits,
    ``env`` added."""
    return {
        **os.environ,
        "KBQA_DATA_DIR": str(data),
        "KBQA_API__PORT": str(port),
        "HF_HUB_OFFLINE": "1",
        "DO_NOT_TRACK": "1",
        "KBQA_API__REQUESTS_PER_MINUTE": "0",
        "KBQA_API__TOKENS_PER_MINUTE": "0",
        **(env or {}),
    }


def start_kbqa(
    data: Path, *, port: int | None = None, env: dict[str, str] | None = None, timeout_s: float = 180.0
) -> Server:
    """Start ``kbqa serve`` (a subprocess in its own session, as an operator starts it) on ``port`` (a free one by
    default) with its data in ``data`` and ``env`` added to the environment, and wait until ``/readyz`` answers.
    Its log is appended to ``data.parent / "server.log"``. Starting again with the same ``data`` restarts the same
    installation. Stopped (and RuntimeError) if it does not become ready."""
    import sys

    port = port or free_port()
    data.parent.mkdir(parents=True, exist_ok=True)
    full_env = kbqa_env(data, port, env)
    log = data.parent / "server.log"
    with log.open("ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "serve", "--port", str(port)],
            cwd=REPO,
            env=full_env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, proc, log, timeout_s=timeout_s)
    except BaseException:
        stop_process(proc)
        raise
    return Server(url=url, env=full_env, proc=proc)


@contextmanager
def run_kbqa(data: Path, *, port: int | None = None, env: dict[str, str] | None = None) -> Iterator[Server]:
    """:func:`start_kbqa`, stopped (SIGTERM, then SIGKILL) on exit."""
    server = start_kbqa(data, port=port, env=env)
    try:
        yield server
    finally:
        server.stop()
