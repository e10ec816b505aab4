"""Where uploaded originals live: the :class:`FileStore` protocol, a local directory (embedded mode) and S3-compatible
object storage (distributed mode: MinIO, AWS S3 or any S3 API), chosen by ``Settings.file_store``.

Keys are relative, ``/``-separated and content-addressed (``<tenant>/<sha256[:2]>/<sha256>``), so a write of the same
key always carries the same bytes and ``put`` is idempotent. The document row keeps the key in ``storage_path``;
rows written before the file store existed hold an absolute path, which the local store still reads.

Errors: a missing key is ``AppError(NOT_FOUND)``; a store that cannot be reached is
``AppError(DEPENDENCY_UNAVAILABLE)`` (transient: an ingest job retries it).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlparse

from core.errors import AppError, ErrorCode
from core.settings import FileStoreSettings, Settings

_KEY = re.compile(r"^[A-Za-z0-9_.\-]+(/[A-Za-z0-9_.\-]+)*$")


def check_key(key: str) -> str:
    """A relative key of safe segments (no ``..``, no empty or absolute parts); raises ``VALIDATION`` otherwise."""
    if not _KEY.match(key) or any(part in (".", "..") for part in key.split("/")) or len(key) > 512:
        raise AppError(ErrorCode.VALIDATION, "invalid file store key")
    return key


def upload_key(tenant_id: str, digest: str) -> str:
    """Key of an uploaded original: tenant segment, two-character fan-out, content hash."""
    tenant = re.sub(r"[^A-Za-z0-9_.-]", "_", tenant_id)[:64].strip(".") or "_"
    return check_key(f"{tenant}/{digest[:2]}/{digest}")


@runtime_checkable
class FileStore(Protocol):
    """Blob storage for uploaded originals, shared by the API processes and the ingestion workers."""

    name: str

    def put(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key`` (replacing what was there; content-addressed keys make this idempotent)."""
        ...

    def get(self, key: str) -> bytes:
        """The bytes under ``key``; ``AppError(NOT_FOUND)`` when there are none."""
        ...

    def exists(self, key: str) -> bool: ...

    def delete(self, key: str) -> None:
        """Remove ``key``; a no-op when it does not exist."""
        ...

    def delete_prefix(self, prefix: str) -> None:
        """Remove every key under the folder ``prefix`` (``prefix/...``); a no-op when there are none."""
        ...

    def local_path(self, key: str) -> contextlib.AbstractContextManager[Path]:
        """A local file holding the bytes of ``key`` for the duration of the ``with`` block (parsers need a path):
        the stored file itself for the local store, a temporary copy for object storage."""
        ...

    def ping(self) -> bool:
        """Whether the store answers (for readiness checks)."""
        ...


class LocalFileStore:
    """Files under ``root`` (``<data_dir>/uploads``), written through a temp file and ``os.replace``."""

    name = "local"

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def path(self, key: str) -> Path:
        if os.path.isabs(key):  # a row from before the file store: its absolute path under the upload dir
            path = Path(key).resolve()
            if not path.is_relative_to(self.root.resolve()):
                raise AppError(ErrorCode.VALIDATION, "invalid file store key")
            return path
        return self.root / check_key(key)

    def put(self, key: str, data: bytes) -> None:
        path = self.path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=path.parent, delete=False) as tmp:
                tmp.write(data)
            os.replace(tmp.name, path)
        except OSError as exc:
            raise AppError(ErrorCode.DEPENDENCY_UNAVAILABLE, f"cannot write to the file store: {exc.strerror}") from exc

    def get(self, key: str) -> bytes:
        try:
            return self.path(key).read_bytes()
        except FileNotFoundError:
            raise AppError(ErrorCode.NOT_FOUND, "the stored file does not exist") from None

    def exists(self, key: str) -> bool:
        return self.path(key).is_file()

    def delete(self, key: str) -> None:
        self.path(key).unlink(missing_ok=True)

    def delete_prefix(self, prefix: str) -> None:
        folder = self.root / check_key(prefix.strip("/"))
        if folder.is_dir():
            shutil.rmtree(folder, ignore_errors=True)

    @contextlib.contextmanager
    def local_path(self, key: str) -> Iterator[Path]:
        path = self.path(key)
        if not path.is_file():
            raise AppError(ErrorCode.NOT_FOUND, "the stored file does not exist")
        yield path

    def ping(self) -> bool:
        return self.root.is_dir() or not self.root.exists()


class S3FileStore:
    """Objects in one bucket of an S3-compatible server, through the ``minio`` client (the ``s3`` extra).

    The bucket is created on first use when missing. Requests time out after ``timeout_s`` and are retried twice on
    connection errors and 5xx answers; after that the call fails with ``DEPENDENCY_UNAVAILABLE``.
    """

    name = "s3"

    def __init__(
        self,
        endpoint: str,
        *,
        bucket: str,
        access_key: str,
        secret_key: str,
        region: str = "",
        prefix: str = "",
        timeout_s: float = 10.0,
    ) -> None:
        try:
            import urllib3
            from minio import Minio
        except ImportError as exc:
            raise AppError(
                ErrorCode.MISSING_EXTRA, "file_store.backend=s3 needs the 's3' extra: pip install 'kbqa[s3]'"
            ) from exc
        url = urlparse(endpoint if "://" in endpoint else f"https://{endpoint}")
        if url.scheme not in ("http", "https") or not url.netloc:
            raise AppError(ErrorCode.CONFIGURATION, f"file_store.s3_endpoint is not an http(s) URL: {endpoint!r}")
        http = urllib3.PoolManager(
            timeout=urllib3.Timeout(connect=min(3.0, timeout_s), read=timeout_s),
            retries=urllib3.Retry(total=2, backoff_factor=0.2, status_forcelist=(500, 502, 503, 504)),
            maxsize=16,
        )
        self.client = Minio(
            url.netloc,
            access_key=access_key,
            secret_key=secret_key,
            secure=url.scheme == "https",
            region=region or None,
            http_client=http,
        )
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self._bucket_ready = False

    def _name(self, key: str) -> str:
        check_key(key)
        return f"{self.prefix}/{key}" if self.prefix else key

    def _call(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        from minio.error import S3Error

        try:
            return fn(*args, **kwargs)
        except S3Error as exc:
            if exc.code in ("NoSuchKey", "NoSuchObject", "NoSuchBucket"):  # nothing was ever written: missing too
                raise AppError(ErrorCode.NOT_FOUND, "the stored file does not exist") from None
            raise AppError(ErrorCode.DEPENDENCY_UNAVAILABLE, f"object storage refused the request: {exc.code}") from exc
        except AppError:
            raise
        except Exception as exc:  # noqa: BLE001 - connection errors come as several urllib3/OS types
            raise AppError(
                ErrorCode.DEPENDENCY_UNAVAILABLE, f"object storage unreachable ({type(exc).__name__})"
            ) from exc

    def _ensure_bucket(self) -> None:
        if self._bucket_ready:
            return
        from minio.error import S3Error

        def ensure() -> None:
            if not self.client.bucket_exists(self.bucket):
                try:
                    self.client.make_bucket(self.bucket)
                except S3Error as exc:  # another process created it a moment ago
                    if exc.code not in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
                        raise

        self._call(ensure)
        self._bucket_ready = True

    def put(self, key: str, data: bytes) -> None:
        name = self._name(key)
        self._ensure_bucket()
        self._call(self.client.put_object, self.bucket, name, io.BytesIO(data), len(data))

    def get(self, key: str) -> bytes:
        name = self._name(key)

        def read() -> bytes:
            resp = self.client.get_object(self.bucket, name)
            try:
                return bytes(resp.read())
            finally:
                resp.close()
                resp.release_conn()

        return self._call(read)  # type: ignore[no-any-return]

    def exists(self, key: str) -> bool:
        try:
            self._call(self.client.stat_object, self.bucket, self._name(key))
        except AppError as exc:
            if exc.code is ErrorCode.NOT_FOUND:
                return False
            raise
        return True

    def delete(self, key: str) -> None:
        try:
            self._call(self.client.remove_object, self.bucket, self._name(key))
        except AppError as exc:
            if exc.code is not ErrorCode.NOT_FOUND:
                raise

    def delete_prefix(self, prefix: str) -> None:
        folder = self._name(prefix.strip("/")) + "/"

        def remove() -> None:
            from minio.deleteobjects import DeleteObject

            names = [o.object_name for o in self.client.list_objects(self.bucket, prefix=folder, recursive=True)]
            for i in range(0, len(names), 1000):
                errors = list(self.client.remove_objects(self.bucket, [DeleteObject(n) for n in names[i : i + 1000]]))
                if errors:
                    raise RuntimeError(f"{len(errors)} objects could not be removed")

        try:
            self._call(remove)
        except AppError as exc:
            if exc.code is not ErrorCode.NOT_FOUND:
                raise

    @contextlib.contextmanager
    def local_path(self, key: str) -> Iterator[Path]:
        data = self.get(key)
        with tempfile.TemporaryDirectory(prefix="kbqa-file-") as tmp:
            path = Path(tmp) / Path(key).name
            path.write_bytes(data)
            yield path

    def ping(self) -> bool:
        try:
            self._call(self.client.bucket_exists, self.bucket)
            return True
        except AppError:
            return False


def build_file_store(settings: Settings) -> FileStore:
    """The configured store: ``local`` under ``Settings.upload_dir`` (default) or ``s3``."""
    cfg: FileStoreSettings = settings.file_store
    if cfg.backend == "s3":
        return S3FileStore(
            cfg.s3_endpoint,
            bucket=cfg.s3_bucket,
            access_key=cfg.s3_access_key,
            secret_key=cfg.s3_secret_key,
            region=cfg.s3_region,
            prefix=cfg.s3_prefix,
            timeout_s=cfg.timeout_s,
        )
    return LocalFileStore(settings.upload_dir)
