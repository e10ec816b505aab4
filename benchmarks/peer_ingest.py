"""Peer ingestion pipeline for ``bench_ingest.py``: Haystack converters + DocumentSplitter +
SentenceTransformersDocumentEmbedder + an in-memory document store, over the same files and the same embedding model.

Run as a child process by ``bench_ingest.py`` (so its memory is measured on its own). It reads the file list from
``--files-from`` (one path a line), starts at ``--start`` and writes one JSON object a line to stdout:
``{"event": "versions"}``, ``{"event": "ready"}`` (model loaded), then per file ``{"event": "start", "index"}`` and
``{"event": "done", "index", "status", "reason", "pages", "chunks", "stages"}``, and ``{"event": "end"}``. A file
that crashes this process or hangs past the hard limit is recorded by the parent, which restarts from the next file.

Haystack's converters log a warning and return nothing for a file they cannot read; that warning is the reason.
"""

from __future__ import annotations

import argparse
import json
import logging
import mimetypes
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

#: Roughly kbqa's chunk size (160 model tokens, 24 overlap) in words, the unit Haystack splits by without NLTK data.
SPLIT_WORDS = 120
SPLIT_OVERLAP_WORDS = 18
PACKAGES = ("haystack-ai", "sentence-transformers-haystack", "sentence-transformers", "transformers", "torch",
            "pypdf", "python-docx", "python-pptx", "openpyxl", "pandas", "trafilatura", "python-oxmsg",
            "mdit-plain", "markdown-it-py")


def emit(event: str, **fields: Any) -> None:
    sys.stdout.write(json.dumps({"event": event, **fields}) + "\n")
    sys.stdout.flush()


def versions() -> dict[str, str]:
    found: dict[str, str] = {}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


class _Timeout(Exception):
    pass


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Interrupts pure-Python work after ``seconds`` (the parent's watchdog covers code stuck in C)."""

    def on_alarm(signum: int, frame: object) -> None:
        raise _Timeout(f"conversion timed out after {seconds:.0f}s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class WarningCapture(logging.Handler):
    """Keeps the last warning a converter logged (Haystack converters log and skip instead of raising)."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.last: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.last = record.getMessage().splitlines()[0][:300]
        except Exception:  # noqa: BLE001 - a bad log record must not fail the file
            self.last = "converter warning (unformattable)"


def build_converters() -> dict[str, Any]:
    """The converters Haystack's MultiFileConverter routes to (same settings), plus MSGToDocument; by MIME type."""
    from haystack.components.converters import (
        CSVToDocument,
        DOCXToDocument,
        HTMLToDocument,
        JSONConverter,
        MSGToDocument,
        PPTXToDocument,
        PyPDFToDocument,
        TextFileToDocument,
        XLSXToDocument,
    )

    text = TextFileToDocument(encoding="utf-8-sig")
    return {
        "text/csv": CSVToDocument(encoding="utf-8-sig"),
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document": DOCXToDocument(
            link_format="markdown"),
        "text/html": HTMLToDocument(
            extraction_kwargs={"output_format": "markdown", "include_tables": True, "include_links": True}),
        "application/json": JSONConverter(content_key="content"),
        "text/markdown": text,
        "text/plain": text,
        "application/pdf": PyPDFToDocument(),
        "application/vnd.openxmlformats-officedocument.presentationml.presentation": PPTXToDocument(),
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": XLSXToDocument(),
        "application/vnd.ms-outlook": MSGToDocument(),
    }


def mime_of(path: Path) -> str | None:
    mimetypes.add_type("text/markdown", ".md")
    mimetypes.add_type("application/vnd.ms-outlook", ".msg")
    return mimetypes.guess_type(path.name)[0]


def count_pages(mime: str, contents: list[str]) -> int:
    """PyPDFToDocument and PPTXToDocument join pages/slides with form feeds; other formats have no pages."""
    if mime in ("application/pdf",
                "application/vnd.openxmlformats-officedocument.presentationml.presentation"):
        return sum(c.count("\f") + 1 for c in contents)
    return 0


class PeerPipeline:
    def __init__(self, model_path: str, batch_size: int) -> None:
        from haystack.components.preprocessors import DocumentSplitter
        from haystack.components.writers import DocumentWriter
        from haystack.document_stores.in_memory import InMemoryDocumentStore
        from haystack.document_stores.types import DuplicatePolicy
        from haystack.utils import ComponentDevice
        from haystack_integrations.components.embedders.sentence_transformers import (
            SentenceTransformersDocumentEmbedder,
        )

        self.converters = build_converters()
        self.splitter = DocumentSplitter(split_by="word", split_length=SPLIT_WORDS, split_overlap=SPLIT_OVERLAP_WORDS)
        self.embedder = SentenceTransformersDocumentEmbedder(
            model=model_path, device=ComponentDevice.from_str("cpu"), batch_size=batch_size, progress_bar=False,
            local_files_only=True,
        )
        self.store = InMemoryDocumentStore()
        self.writer = DocumentWriter(document_store=self.store, policy=DuplicatePolicy.OVERWRITE)
        self.capture = WarningCapture()
        logging.getLogger("haystack").addHandler(self.capture)
        logging.getLogger("haystack").setLevel(logging.WARNING)

    def warm_up(self) -> None:
        for component in (self.splitter, self.embedder):
            warm: Callable[[], None] | None = getattr(component, "warm_up", None)
            if warm:
                warm()
        self.embedder.run(documents=[_document("warm up")])

    def ingest(self, path: Path, timeout_s: float) -> dict[str, Any]:
        stages: dict[str, float] = {}
        mime = mime_of(path)
        converter = self.converters.get(mime or "")
        if converter is None:
            return {"status": "failed", "reason": f"unsupported file type ({mime or path.suffix or 'unknown'})",
                    "pages": 0, "chunks": 0, "stages": stages}
        self.capture.last = None
        started = time.perf_counter()
        try:
            with time_limit(timeout_s):
                docs = converter.run(sources=[path])["documents"]
        finally:
            stages["converting"] = time.perf_counter() - started
        contents = [d.content or "" for d in docs]
        if not any(c.strip() for c in contents):
            reason = self.capture.last or "no text could be extracted"
            return {"status": "failed", "reason": reason, "pages": 0, "chunks": 0, "stages": stages}
        started = time.perf_counter()
        chunks = self.splitter.run(documents=docs)["documents"]
        stages["splitting"] = time.perf_counter() - started
        if not chunks:
            return {"status": "failed", "reason": "splitter produced no chunks", "pages": 0, "chunks": 0,
                    "stages": stages}
        started = time.perf_counter()
        embedded = self.embedder.run(documents=chunks)["documents"]
        stages["embedding"] = time.perf_counter() - started
        started = time.perf_counter()
        self.writer.run(documents=embedded)
        stages["writing"] = time.perf_counter() - started
        return {"status": "indexed", "reason": None, "pages": count_pages(mime or "", contents),
                "chunks": len(embedded), "stages": stages}


def _clean(reason: str | None, path: Path) -> str | None:
    """One short line without the file's path, so reasons group across files."""
    if reason is None:
        return None
    reason = reason.replace(str(path), "<file>").replace(path.name, "<file>")
    return reason if len(reason) <= 160 else reason[:157] + "..."


def _document(text: str) -> Any:
    from haystack import Document

    return Document(content=text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files-from", type=Path, required=True, help="a file listing the paths, one a line")
    parser.add_argument("--start", type=int, default=0, help="index of the first file to ingest")
    parser.add_argument("--model", required=True, help="folder of the sentence-transformers model")
    parser.add_argument("--timeout", type=float, default=120.0, help="per-file conversion time limit (seconds)")
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args(argv)

    # Library chatter goes to stderr; stdout carries only the JSON event lines.
    logging.basicConfig(level=logging.ERROR, stream=sys.stderr)
    files = [Path(line) for line in args.files_from.read_text(encoding="utf-8").splitlines() if line.strip()]
    emit("versions", packages=versions(), split_words=SPLIT_WORDS, split_overlap_words=SPLIT_OVERLAP_WORDS)
    started = time.perf_counter()
    pipeline = PeerPipeline(args.model, args.batch_size)
    pipeline.warm_up()
    emit("ready", startup_s=time.perf_counter() - started)
    for index in range(args.start, len(files)):
        path = files[index]
        emit("start", index=index, path=str(path))
        t0 = time.perf_counter()
        try:
            result = pipeline.ingest(path, args.timeout)
        except _Timeout as exc:
            result = {"status": "failed", "reason": str(exc), "pages": 0, "chunks": 0, "stages": {}}
        except Exception as exc:  # noqa: BLE001 - one bad file fails that file only
            text = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
            result = {"status": "failed", "reason": f"{type(exc).__name__}: {text}".rstrip(": "), "pages": 0,
                      "chunks": 0, "stages": {}}
        result["reason"] = _clean(result["reason"], path)
        emit("done", index=index, path=str(path), seconds=time.perf_counter() - t0, **result)
    emit("end", stored=pipeline.store.count_documents())
    return 0


if __name__ == "__main__":
    sys.exit(main())
