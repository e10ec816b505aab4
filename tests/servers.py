"""Helpers for tests that start real server processes: a free local port, and waiting for ``/readyz``."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import httpx


def free_port() -> int:
    """A local TCP port nothing listens on (free now; a closed port for tests of refused connections)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(url: str, proc: subprocess.Popen, log: Path, timeout_s: float) -> None:
    """Poll ``url``/readyz until it answers 200. Raises RuntimeError with the tail of ``log`` if the process exits
    or ``timeout_s`` passes first (the caller stops the process)."""
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"server not ready after {timeout_s:.0f} s: {log.read_text()[-3000:]}")
        time.sleep(0.3)
