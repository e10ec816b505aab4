"""Upload hygiene beyond the size cap: refuse decompression bombs before anything parses them.

Office documents, EPUB and ODF files are ZIP archives; a small upload can expand to gigabytes. Before a file is stored
its ZIP directory (if it is one) is read and the upload refused when the declared uncompressed size, the compression
ratio or the member count is beyond sane bounds. Parsing also runs under a memory limit, so a bomb that lies in its
directory still cannot take the worker down.
"""

from __future__ import annotations

import io
import zipfile

from core.errors import AppError, ErrorCode

MAX_UNCOMPRESSED_BYTES = 1024 * 1024 * 1024
MAX_RATIO = 200
MAX_MEMBERS = 20_000


def is_zip(data: bytes) -> bool:
    """Whether ``zipfile`` would open ``data`` as an archive (an end-of-central-directory record near its end),
    wherever the archive starts."""
    return data.startswith(b"PK\x03\x04") or zipfile.is_zipfile(io.BytesIO(data))


def check_archive(data: bytes) -> None:
    """Raise ``AppError(VALIDATION)`` for a ZIP that would expand beyond the limits; other files pass.

    A ZIP is recognised by its end-of-central-directory record, the way ``zipfile`` (and so every parser) opens it,
    not by its first bytes: a ZIP with anything prepended (a self-extractor stub, junk, another file's header) is
    still read by the parsers, so it is checked too."""
    if not is_zip(data):
        return
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            infos = zf.infolist()
    except (zipfile.BadZipFile, OSError, ValueError):
        return  # not a readable archive: the parser reports the corruption with its own reason
    total = sum(i.file_size for i in infos)
    if len(infos) > MAX_MEMBERS:
        raise AppError(ErrorCode.VALIDATION, f"archive has too many entries ({len(infos)} > {MAX_MEMBERS})")
    if total > MAX_UNCOMPRESSED_BYTES:
        raise AppError(
            ErrorCode.VALIDATION,
            f"archive expands to {total // (1024 * 1024)} MB (limit {MAX_UNCOMPRESSED_BYTES // 2**20} MB)",
        )
    if len(data) and total / len(data) > MAX_RATIO and total > 50 * 1024 * 1024:
        raise AppError(
            ErrorCode.VALIDATION, f"archive compression ratio {total // len(data)}:1 looks like a decompression bomb"
        )
