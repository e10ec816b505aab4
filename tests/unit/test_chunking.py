"""Chunker rules, measured with a whitespace token counter."""

from __future__ import annotations

import pytest

from core.types import Element
from ingestion.chunking import CHUNKER_VERSION, chunk_elements

pytestmark = pytest.mark.unit


def words(text: str) -> int:
    return len(text.split())


def chunk(elements: list[Element], target: int = 40, overlap: int = 8, table_max: int = 60):
    return chunk_elements(
        elements, count_tokens=words, target_tokens=target, overlap_tokens=overlap, table_max_tokens=table_max
    )


def title(text: str, level: int, path: tuple[str, ...]) -> Element:
    return Element("title", text, level=level, section_path=path)


def para(text: str, path: tuple[str, ...], page: int | None = None) -> Element:
    return Element("text", text, page=page, section_path=path)


def sentences(prefix: str, n: int) -> str:
    return " ".join(f"{prefix.capitalize()} sentence number {i} has several words." for i in range(n))


def test_version_is_named() -> None:
    assert CHUNKER_VERSION.startswith("structure-")


def test_chunk_never_spans_two_sections() -> None:
    a, b = ("Returns", "Refunds"), ("Shipping",)
    els = [
        title("Returns", 1, ("Returns",)),
        title("Refunds", 2, a),
        para(sentences("alpha", 12), a),
        title("Shipping", 1, b),
        para(sentences("beta", 12), b),
    ]
    drafts = chunk(els)
    assert len(drafts) >= 4
    for d in drafts:
        assert not ("Alpha" in d.text and "Beta" in d.text)
        assert d.section_path in (a, b)
        assert d.text.startswith(" > ".join(d.section_path) + "\n\n")
    assert [d.order for d in drafts] == list(range(len(drafts)))


def test_small_sibling_sections_merge_under_parent() -> None:
    parent = ("Returns", "Refunds")
    els = [
        title("Refunds", 2, parent),
        title("Damaged items", 3, (*parent, "Damaged items")),
        para("Send a photo within 14 days.", (*parent, "Damaged items")),
        title("Late returns", 3, (*parent, "Late returns")),
        para("Late returns get store credit.", (*parent, "Late returns")),
    ]
    drafts = chunk(els, target=100)
    assert len(drafts) == 1
    assert drafts[0].section_path == parent
    text = drafts[0].text
    assert text.startswith("Returns > Refunds\n\n")
    assert text.index("Damaged items") < text.index("Send a photo") < text.index("Late returns") < text.index("store")


def test_long_section_splits_at_sentences_with_overlap_and_no_mid_word_cut() -> None:
    path = ("Policy",)
    body = sentences("gamma", 20)
    drafts = chunk([title("Policy", 1, path), para(body, path)], target=40, overlap=8)
    assert len(drafts) > 3
    vocabulary = set(body.split()) | {"Policy"}
    for d in drafts:
        assert d.token_count <= 40 + 8
        assert set(d.text.split()) <= vocabulary  # no word was cut in two
        assert d.text.removeprefix("Policy\n\n").split()[0] == "Gamma"  # pieces start at a sentence
    for prev, nxt in zip(drafts, drafts[1:], strict=False):
        first_sentence = nxt.text.removeprefix("Policy\n\n").split(".")[0]
        assert first_sentence in prev.text  # overlap: the next chunk repeats the previous one's tail


def test_overlong_sentence_splits_on_words() -> None:
    text = " ".join(f"word{i}" for i in range(100))
    drafts = chunk([para(text, ())], target=30, overlap=0)
    joined = " ".join(d.text for d in drafts).split()
    assert joined == text.split()
    assert all(d.token_count <= 30 for d in drafts)


def test_table_kept_whole_when_small() -> None:
    table = "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |"
    drafts = chunk([para("Intro.", ("T",)), Element("table", table, section_path=("T",))], target=200)
    assert len(drafts) == 1
    assert table in drafts[0].text
    assert drafts[0].element_types == ("text", "table")


def test_large_table_splits_by_rows_repeating_header() -> None:
    header = "| name | price | stock |\n|---|---|---|"
    rows = [f"| item{i} | {i}.00 | {i * 3} |" for i in range(60)]
    table = "\n".join([header, *rows])
    drafts = chunk([Element("table", table, page=4, section_path=("Prices",))], target=40, table_max=50)
    assert len(drafts) > 2
    seen: list[str] = []
    for d in drafts:
        body = d.text.removeprefix("Prices\n\n")
        assert body.startswith(header + "\n")
        seen += body.splitlines()[2:]
        assert d.page_start == d.page_end == 4
        assert d.element_types == ("table",)
    assert seen == rows  # every row exactly once, in order


def test_the_line_saying_what_a_tables_figures_count_heads_every_part_of_it() -> None:
    note = "(In millions, except per share amounts)"
    header = "| item | 2024 | 2023 |\n|---|---|---|"
    rows = [f"| line{i} | {i * 7} | {i * 5} |" for i in range(60)]
    elements = [para("Results for the year.", ("Statements",)), para(note, ("Statements",)),
                Element("table", "\n".join([header, *rows]), section_path=("Statements",))]
    drafts = chunk(elements, target=40, table_max=60)
    parts = [d.text for d in drafts if "| item |" in d.text]
    assert len(parts) > 2
    assert all(note + "\n\n" + header in p for p in parts)
    assert sum(d.text.count(note) for d in drafts) == len(parts)  # with the table, never on its own as well
    assert any("Results for the year." in d.text for d in drafts)
    plain = chunk([para("Prices as of May.", ("P",)), Element("table", header, section_path=("P",))], target=200)
    assert plain[0].text == "P\n\nPrices as of May.\n\n" + header  # any other line stays where it was


def test_code_block_kept_whole() -> None:
    code = "def f(x):\n    return x + 1\n\nprint(f(2))"
    drafts = chunk([para(sentences("delta", 3), ("C",)), Element("code", code, section_path=("C",))], target=30)
    assert any(f"```\n{code}\n```" in d.text for d in drafts)


def test_pages_span() -> None:
    path = ("P",)
    els = [para("First page text.", path, page=1), para("Second page text.", path, page=2)]
    (draft,) = chunk(els, target=100)
    assert (draft.page_start, draft.page_end) == (1, 2)


def test_overlap_must_be_smaller_than_target() -> None:
    with pytest.raises(ValueError):
        chunk([para("x", ())], target=10, overlap=10)


def test_a_merged_subsections_heading_starts_the_chunk_with_its_body() -> None:
    """Merged subsections that need two chunks split before a heading, never after it: the chunk with "Devices do not
    learn a new network" carries the "I changed my router" heading (it ended the previous chunk)."""
    parent = ("Wi-Fi problems",)
    weak, changed = (*parent, "The signal is weak"), (*parent, "I changed my router")
    els = [
        title("Wi-Fi problems", 1, parent),
        title("The signal is weak", 2, weak),
        para(sentences("weak", 4), weak),
        title("I changed my router", 2, changed),
        para(sentences("router", 3), changed),
    ]
    # the two subsections and their headings (57 words) fit the merge; with the breadcrumb they need two chunks
    drafts = chunk(els, target=57, overlap=8)
    assert len(drafts) == 2 and all(d.section_path == parent for d in drafts)
    assert not drafts[0].text.rstrip().endswith("I changed my router")
    assert drafts[1].text.startswith("Wi-Fi problems\n\nI changed my router\n\nRouter sentence number 0")


def test_a_merged_subsection_that_goes_on_is_named_in_the_next_chunk() -> None:
    """A subsection cut by the chunk size is named again at the start of the chunk it goes on in (before the
    overlap), so "must be paired again" is found and cited under "Factory reset of the Hub"."""
    parent = ("Guide", "Resetting")
    hub = (*parent, "Factory reset of the Hub")
    els = [
        title("Resetting", 2, parent),
        para("A restart keeps all settings.", parent),
        title("Factory reset of the Hub", 3, hub),
        para(sentences("reset", 3), hub),
        para("All accessories must be paired again after a factory reset.", hub),
    ]
    # the parent's text and the subsection (42 words with their headings) merge; with the breadcrumb, two chunks
    drafts = chunk(els, target=42, overlap=8)
    assert len(drafts) == 2 and all(d.section_path == parent for d in drafts)
    assert "Factory reset of the Hub" in drafts[0].text.split("\n\n")
    second = drafts[1].text.split("\n\n")
    assert second[:3] == ["Guide > Resetting", "Factory reset of the Hub", "Reset sentence number 2 has several words."]
    assert second[3] == "All accessories must be paired again after a factory reset."


def test_a_document_of_headings_only_is_chunked_from_its_headings() -> None:
    # an HTML page that is one <h3> (a filing's title): its text is the heading, not "no text could be extracted"
    only = "Jahresabschluss zum Geschäftsjahr vom 01.01.2020 bis zum 31.12.2020"
    (draft,) = chunk([title(only, 3, (only,))])
    assert draft.text == only and draft.section_path == ()
    drafts = chunk([title("Guide", 1, ("Guide",)), title("Setup", 2, ("Guide", "Setup"))])
    # an outline: each heading is text under its parent, which stays its breadcrumb
    assert [(d.section_path, d.text) for d in drafts] == [((), "Guide"), (("Guide",), "Guide\n\nSetup")]


def test_headings_without_body_are_not_chunks_when_the_document_has_body_text() -> None:
    drafts = chunk([title("Empty", 1, ("Empty",)), title("Full", 1, ("Full",)), para("Some words here.", ("Full",))])
    assert [d.text for d in drafts] == ["Full\n\nSome words here."]
