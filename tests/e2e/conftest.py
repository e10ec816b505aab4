"""A real kbqa server (uvicorn subprocess, embedded mode, fresh data dir) for end-to-end tests."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.servers import free_port, wait_ready

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Server:
    url: str
    env: dict[str, str]

    def create_key(self, *, tenant: str, role: str, name: str = "e2e") -> str:
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "app.cli",
                "keys",
                "create",
                "--quiet",
                "--tenant",
                tenant,
                "--role",
                role,
                "--name",
                name,
            ],
            cwd=REPO,
            env=self.env,
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )
        return out.stdout.strip().splitlines()[-1]

    def create_user(self, *, tenant: str, role: str, email: str, password: str) -> None:
        """A web user, made the way an operator would: ``kbqa users create --password-stdin``."""
        subprocess.run(
            [
                sys.executable,
                "-m",
                "app.cli",
                "users",
                "create",
                "--quiet",
                "--password-stdin",
                "--tenant",
                tenant,
                "--role",
                role,
                "--email",
                email,
                "--name",
                email.split("@")[0],
            ],
            cwd=REPO,
            env=self.env,
            input=password + "\n",
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        )


@pytest.fixture(scope="session")
def server(tmp_path_factory) -> Iterator[Server]:
    port = free_port()
    data = tmp_path_factory.mktemp("kbqa-e2e") / "data"
    env = {
        **os.environ,
        "KBQA_DATA_DIR": str(data),
        "KBQA_API__PORT": str(port),
        "HF_HUB_OFFLINE": "1",
        "DO_NOT_TRACK": "1",
        "KBQA_API__REQUESTS_PER_MINUTE": "0",
        "KBQA_API__TOKENS_PER_MINUTE": "0",
    }
    log = open(data.parent / "server.log", "w")  # noqa: SIM115
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--port", str(port)],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, proc, data.parent / "server.log", timeout_s=180)
    except RuntimeError:
        proc.kill()
        raise
    yield Server(url=url, env=env)
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()
