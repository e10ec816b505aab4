"""Legacy and OpenDocument formats -> OOXML with LibreOffice headless (Debian ``libreoffice-*-nogui``).

``.doc``/``.rtf``/``.odt`` become ``.docx``, ``.xls``/``.ods`` ``.xlsx``, ``.ppt``/``.odp`` ``.pptx``; the existing
parsers read the result. Runs inside the isolated parser child, so LibreOffice shares its memory limit and dies with
it; each conversion gets a private, throwaway user profile (so conversions never share or lock one) and its own
timeout (``KBQA_CONVERT_TIMEOUT_S``, from ``Settings.ingestion.convert_timeout_s``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from ingestion.parsing import progress as parse_progress
from ingestion.parsing.model import parse_failed

CONVERT_TIMEOUT_ENV = "KBQA_CONVERT_TIMEOUT_S"
#: Source type -> the OOXML type it is converted to.
TARGET = {"doc": "docx", "rtf": "docx", "odt": "docx", "xls": "xlsx", "ods": "xlsx", "ppt": "pptx", "odp": "pptx"}
INSTALL_HINT = (
    "install Debian's libreoffice-writer-nogui, libreoffice-calc-nogui and libreoffice-impress-nogui "
    "(scripts/install-parsers.sh)"
)


def soffice() -> str | None:
    return shutil.which("soffice") or shutil.which("libreoffice")


def _timeout_s() -> float:
    try:
        value = float(os.environ.get(CONVERT_TIMEOUT_ENV, "120"))
    except ValueError:
        return 120.0
    return value if value > 0 else 120.0


def convert(data: bytes, doc_type: str) -> bytes:
    """Convert ``data`` (a ``doc_type`` file) with LibreOffice and return the converted file's bytes."""
    target = TARGET[doc_type]
    binary = soffice()
    if binary is None:
        raise parse_failed(f".{doc_type} files are converted by LibreOffice, which is not installed: {INSTALL_HINT}")
    timeout_s = _timeout_s()
    with tempfile.TemporaryDirectory(prefix="kbqa-soffice-") as tmp:
        src = Path(tmp) / f"input.{doc_type}"
        src.write_bytes(data)
        outdir = Path(tmp) / "out"
        profile = Path(tmp) / "profile"
        cmd = [
            binary,
            f"-env:UserInstallation={profile.as_uri()}",
            "--headless",
            "--invisible",
            "--norestore",
            "--nolockcheck",
            "--nodefault",
            "--nofirststartwizard",
            "--convert-to",
            target,
            "--outdir",
            str(outdir),
            str(src),
        ]
        env = dict(os.environ, HOME=tmp, SAL_USE_VCLPLUGIN="svp")
        try:
            returncode, out, _ = parse_progress.run(cmd, timeout_s, env=env, cwd=tmp, merge_stderr=True)
        except subprocess.TimeoutExpired:
            raise parse_failed(f"LibreOffice conversion of .{doc_type} timed out after {timeout_s:g} s") from None
        result = outdir / f"input.{target}"
        if returncode != 0 or not result.exists() or result.stat().st_size == 0:
            lines = [ln for ln in out.decode(errors="replace").splitlines() if ln.strip()]
            detail = next((ln for ln in lines if "Error" in ln or "error" in ln), lines[-1] if lines else "")
            if "source file could not be loaded" in detail or not detail:
                raise parse_failed(
                    f"LibreOffice could not open this .{doc_type} file (damaged, password-protected or not really "
                    f".{doc_type})"
                )
            raise parse_failed(f"LibreOffice could not convert this .{doc_type} file ({detail.strip()[:160]})")
        return result.read_bytes()
