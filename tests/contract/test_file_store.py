"""The FileStore contract against both stores: the local directory (embedded mode) and S3-compatible object storage
(a real MinIO server: the session's ``minio_server``, the binary ``scripts/build-go-servers.sh`` builds, or
KBQA_TEST_S3_URL). Each S3 test uses its own bucket."""

from __future__ import annotations

import hashlib
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from core.errors import AppError, ErrorCode
from core.filestore import FileStore, LocalFileStore, S3FileStore, upload_key
from tests.servers import free_port

BAD_KEYS = ["", ".", "..", "a/../b", "../a", "a//b", "a/", "a b", "a/\x00", "x" * 600, "a\\b"]


class FileStoreContract:
    def make_store(self, tmp_path: Path) -> FileStore:
        raise NotImplementedError

    @pytest.fixture
    def store(self, tmp_path: Path) -> FileStore:
        return self.make_store(tmp_path)

    def test_is_a_file_store(self, store: FileStore) -> None:
        assert isinstance(store, FileStore)

    def test_put_get_round_trip_of_any_bytes(self, store: FileStore) -> None:
        blobs = {"t1/aa/all-bytes": bytes(range(256)) * 3, "t1/bb/empty": b"", "t2/cc/large": b"\x00\xff" * 3_000_000}
        for key, data in blobs.items():
            store.put(key, data)
        for key, data in blobs.items():
            assert store.exists(key)
            assert store.get(key) == data

    def test_put_replaces(self, store: FileStore) -> None:
        store.put("t1/aa/k", b"one")
        store.put("t1/aa/k", b"two")
        assert store.get("t1/aa/k") == b"two"

    def test_missing_key(self, store: FileStore) -> None:
        assert not store.exists("t1/zz/missing")
        with pytest.raises(AppError) as err:
            store.get("t1/zz/missing")
        assert err.value.code is ErrorCode.NOT_FOUND
        with pytest.raises(AppError) as err, store.local_path("t1/zz/missing"):
            pass
        assert err.value.code is ErrorCode.NOT_FOUND

    def test_delete(self, store: FileStore) -> None:
        store.put("t1/aa/gone", b"x")
        store.put("t1/aa/kept", b"y")
        store.delete("t1/aa/gone")
        store.delete("t1/aa/gone")  # a no-op the second time
        store.delete("t1/zz/never-written")
        assert not store.exists("t1/aa/gone") and store.get("t1/aa/kept") == b"y"

    def test_delete_prefix_removes_that_folder_only(self, store: FileStore) -> None:
        for i in range(3):
            store.put(f".parse-parts/d1/v1-ab-10-p50-f1/part-{i:05d}.json.gz", b"part")
        store.put(".parse-parts/d1/v2-cd-11-p50-f1/part-00000.json.gz", b"part")
        store.put(".parse-parts/d10/v1-ab-10-p50-f1/part-00000.json.gz", b"other document")
        store.put("t1/aa/d1", b"an upload")
        store.delete_prefix(".parse-parts/d1")
        store.delete_prefix(".parse-parts/d1")  # a no-op the second time
        store.delete_prefix(".parse-parts/never-written")
        assert not store.exists(".parse-parts/d1/v1-ab-10-p50-f1/part-00001.json.gz")
        assert not store.exists(".parse-parts/d1/v2-cd-11-p50-f1/part-00000.json.gz")
        assert store.get(".parse-parts/d10/v1-ab-10-p50-f1/part-00000.json.gz") == b"other document"
        assert store.get("t1/aa/d1") == b"an upload"

    def test_local_path_holds_the_bytes(self, store: FileStore) -> None:
        data = b"%PDF-1.4 pretend" * 100
        store.put("t1/pd/f.pdf", data)
        with store.local_path("t1/pd/f.pdf") as path:
            assert path.is_file() and path.read_bytes() == data

    @pytest.mark.parametrize("key", BAD_KEYS, ids=range(len(BAD_KEYS)))
    def test_unsafe_keys_are_refused(self, store: FileStore, key: str) -> None:
        for call in (lambda: store.put(key, b"x"), lambda: store.get(key)):
            with pytest.raises(AppError) as err:
                call()
            assert err.value.code is ErrorCode.VALIDATION

    def test_upload_keys_are_safe_and_per_tenant(self, store: FileStore) -> None:
        digest = hashlib.sha256(b"doc").hexdigest()
        keys = {upload_key(t, digest) for t in ("acme", "../../etc", "a/b", "..", "t" * 300)}
        assert len(keys) == 5
        for key in keys:
            store.put(key, key.encode())
        for key in keys:
            assert store.get(key) == key.encode()

    def test_concurrent_writers_and_readers(self, store: FileStore) -> None:
        errors: list[BaseException] = []

        def work(i: int) -> None:
            try:
                for j in range(5):
                    key = f"t{i}/cc/{j}"
                    store.put(key, f"{i}-{j}".encode() * 1000)
                    assert store.get(key) == f"{i}-{j}".encode() * 1000
            except BaseException as exc:  # surfaced below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors

    def test_ping(self, store: FileStore) -> None:
        assert store.ping()


@pytest.mark.unit
class TestLocalFileStore(FileStoreContract):
    def make_store(self, tmp_path: Path) -> LocalFileStore:
        return LocalFileStore(tmp_path / "uploads")

    def test_layout_is_the_upload_folder(self, tmp_path: Path) -> None:
        store = LocalFileStore(tmp_path / "uploads")
        digest = hashlib.sha256(b"x").hexdigest()
        store.put(upload_key("acme", digest), b"x")
        assert (tmp_path / "uploads" / "acme" / digest[:2] / digest).read_bytes() == b"x"

    def test_rows_from_before_the_store_hold_absolute_paths(self, tmp_path: Path) -> None:
        legacy = tmp_path / "uploads" / "acme" / "ab" / "abcdef"
        legacy.parent.mkdir(parents=True)
        legacy.write_bytes(b"old")
        store = LocalFileStore(tmp_path / "uploads")
        assert store.get(str(legacy)) == b"old"
        with store.local_path(str(legacy)) as path:
            assert path == legacy
        store.delete(str(legacy))
        assert not legacy.exists()


@pytest.mark.integration
class TestS3FileStore(FileStoreContract):
    server: Any = None

    @pytest.fixture(autouse=True)
    def _server(self, minio_server: Any) -> None:
        self.server = minio_server

    def make_store(self, tmp_path: Path, *, bucket: str = "", prefix: str = "") -> S3FileStore:
        return S3FileStore(
            self.server.url,
            bucket=bucket or f"kbqa-test-{uuid.uuid4().hex[:12]}",
            access_key=self.server.access_key,
            secret_key=self.server.secret_key,
            prefix=prefix,
        )

    def test_another_process_sees_the_same_objects(self, store: S3FileStore, tmp_path: Path) -> None:
        store.put("t1/aa/shared", b"from the API")
        other = self.make_store(tmp_path, bucket=store.bucket)  # a worker on another machine: its own client
        assert other.get("t1/aa/shared") == b"from the API"
        other.delete("t1/aa/shared")
        assert not store.exists("t1/aa/shared")

    def test_prefixes_keep_deployments_apart(self, store: S3FileStore, tmp_path: Path) -> None:
        a = self.make_store(tmp_path, bucket=store.bucket, prefix="one")
        b = self.make_store(tmp_path, bucket=store.bucket, prefix="two/")
        a.put("t1/aa/k", b"a")
        assert not b.exists("t1/aa/k") and not store.exists("t1/aa/k")
        assert store.exists("one/t1/aa/k")

    def test_missing_bucket_reads_as_missing_keys(self, tmp_path: Path) -> None:
        store = self.make_store(tmp_path)  # nothing written: the bucket does not exist yet
        assert not store.exists("t1/aa/k")
        store.delete("t1/aa/k")
        with pytest.raises(AppError):
            store.get("t1/aa/k")

    def test_wrong_credentials_are_dependency_unavailable(self, tmp_path: Path) -> None:
        store = S3FileStore(self.server.url, bucket="kbqa-test-creds", access_key="nobody", secret_key="wrong-secret")
        with pytest.raises(AppError) as err:
            store.put("t1/aa/k", b"x")
        assert err.value.code is ErrorCode.DEPENDENCY_UNAVAILABLE
        assert not store.ping()

    def test_unreachable_server_fails_fast_and_says_so(self) -> None:
        store = S3FileStore(
            f"http://127.0.0.1:{free_port()}", bucket="b", access_key="a", secret_key="s", timeout_s=1.0
        )
        started = time.monotonic()
        with pytest.raises(AppError) as err:
            store.put("t1/aa/k", b"x")
        assert err.value.code is ErrorCode.DEPENDENCY_UNAVAILABLE
        assert not store.ping()
        assert time.monotonic() - started < 15

    def test_endpoint_must_be_http(self) -> None:
        with pytest.raises(AppError) as err:
            S3FileStore("ftp://example.invalid", bucket="b", access_key="a", secret_key="s")
        assert err.value.code is ErrorCode.CONFIGURATION
