"""Answer text of the extractive backend on structured chunks: no heading breadcrumb, table rows as sentences,
no unrelated second sentence."""

from __future__ import annotations

import pytest

from app.generation.backends import ExtractiveBackend, complete
from app.generation.prompt import build_prompt
from app.generation.text import (
    answer_units,
    spell_out_initialisms,
    spelled_out,
    split_context,
    strip_breadcrumb,
    table_sentences,
)
from core.types import ChunkRecord, RankedChunk

pytestmark = pytest.mark.unit

WARRANTY = (
    "Return and Warranty Policy > Limited warranty > Warranty periods\n\n"
    "| Product | Warranty period |\n|---|---|\n| Kestrel Hub | 24 months |\n| Kestrel Cam 2 | 12 months |\n"
    "| Kestrel Thermo | 36 months |\n\n"
    "A product that replaces a defective product is covered for the rest of the original warranty period."
)
PRIVACY = "Privacy Policy > Scope\n\nThis policy explains what data Kestrel Devices collects and why."


def chunk(i: int, text: str, section: tuple[str, ...] = ()) -> RankedChunk:
    return RankedChunk(chunk=ChunkRecord(id=f"c{i}", tenant_id="t", document_id=f"d{i}", document_version=1,
                                         title=f"Doc {i}", text=text, section_path=section), score=1.0)


def messages(question: str, *chunks: RankedChunk) -> list[dict[str, str]]:
    return build_prompt(question, list(chunks), count_tokens=len, context_window=100_000,
                        max_new_tokens=100).messages


def test_breadcrumb_line_is_dropped_when_it_matches_the_section() -> None:
    assert strip_breadcrumb("A > B\n\nBody text.", "A > B") == "Body text."
    assert strip_breadcrumb("A > B\n\nBody text.") == "Body text."  # unknown section: a " > " heading line
    assert strip_breadcrumb("First line.\nSecond.", "Super Bowl") == "First line.\nSecond."
    assert strip_breadcrumb("Warranty\n\nBody.", "Warranty") == "Body."  # a one-level path has no " > "


def test_table_rows_become_sentences_with_their_header() -> None:
    rows = table_sentences(["| Product | Warranty period | Extended |", "|---|:---:|---|",
                            "| Kestrel Hub | 24 months | 36 months |", "| Kestrel Cam 2 | 12 months | |"])
    assert rows == ["Kestrel Hub — Warranty period: 24 months; Extended: 36 months",
                    "Kestrel Cam 2 — Warranty period: 12 months"]
    assert table_sentences(["| a | b |", "| c | d |"]) == ["a, b", "c, d"]  # no header row


def test_answer_units_never_contain_breadcrumb_table_markup_or_headings() -> None:
    units = answer_units("Policy > Returns\n\nReturns\n\nYou can return it within 30 days. Refunds take a week.\n\n"
                         "- Keep the receipt\n- Pack it well", "Policy > Returns")
    assert units == ["You can return it within 30 days.", "Refunds take a week.", "Keep the receipt", "Pack it well"]
    units = answer_units(WARRANTY, "Return and Warranty Policy > Limited warranty > Warranty periods")
    assert not any(" > " in u or "|" in u or "---" in u for u in units)
    assert units[0] == "Kestrel Hub — Warranty period: 24 months"


@pytest.mark.asyncio
async def test_table_question_is_answered_by_its_row_only() -> None:
    section = ("Return and Warranty Policy", "Limited warranty", "Warranty periods")
    msgs = messages("How long is the warranty on the Kestrel Hub?", chunk(1, WARRANTY, section),
                    chunk(2, PRIVACY, ("Privacy Policy", "Scope")))
    out = await complete(ExtractiveBackend(), msgs, max_tokens=200)
    head, body = out.split("\n", 1)
    assert head == "From *Doc 1 › Return and Warranty Policy › Limited warranty › Warranty periods*:"
    assert body.startswith("Kestrel Hub — Warranty period: 24 months [1].")
    assert "Return and Warranty Policy" not in body  # the breadcrumb line is never quoted
    assert "[2]" not in out and "Kestrel Cam 2" not in out


@pytest.mark.asyncio
async def test_second_sentence_needs_a_question_term_and_a_close_score() -> None:
    backend = ExtractiveBackend(max_sentences=2)
    question = "When did the oil embargo begin?"
    related = [(1, "The oil embargo began in October 1973. The oil embargo ended in March 1974. Cats sleep.")]
    picked = backend.select(question, related)
    assert [s for _, s, _ in picked] == [
        "The oil embargo began in October 1973.", "The oil embargo ended in March 1974."
    ]
    unrelated = [(1, "The oil embargo began in October 1973."), (2, "Cats sleep a lot during the day.")]
    assert [s for _, s, _ in backend.select(question, unrelated)] == ["The oil embargo began in October 1973."]
    weak = [(1, "The oil embargo began in October 1973 after the war."), (2, "Oil is a fuel.")]
    assert len(backend.select(question, weak)) == 1  # shares "oil" but scores far below the best


def test_abbreviations_do_not_end_a_sentence_or_lose_their_dot() -> None:
    units = answer_units("Call us from 6:00 a.m. to 8:00 p.m. Pacific Time. We close at 5:00 p.m.")
    assert units == ["Call us from 6:00 a.m. to 8:00 p.m. Pacific Time.", "We close at 5:00 p.m."]
    picked = ExtractiveBackend(max_sentences=1).select("When do you close?", [(1, units[1])])
    assert picked[0][1] == "We close at 5:00 p.m."


@pytest.mark.asyncio
async def test_abbreviation_keeps_its_dot_before_the_citation() -> None:
    msgs = messages("When do you close?", chunk(1, "We close at 5:00 p.m."))
    assert await complete(ExtractiveBackend(), msgs, max_tokens=50) == "From *Doc 1*:\nWe close at 5:00 p.m. [1]"


@pytest.mark.asyncio
async def test_faq_answer_is_scored_with_its_question() -> None:
    faq = ("FAQ > Cameras\n\nCan I use Kestrel Cam 2 outdoors?\n\nNo. It is made for indoor use only.\n\n"
           "Does the Hub need a subscription?\n\nThe Hub works without a plan.")
    msgs = messages("Can Kestrel Cam 2 be used outdoors?", chunk(1, faq, ("FAQ", "Cameras")))
    out = await complete(ExtractiveBackend(max_sentences=1), msgs, max_tokens=50)
    # the FAQ question line heads its answer and is never the answer itself
    head = "From *Doc 1 › FAQ › Cameras › Can I use Kestrel Cam 2 outdoors?*:"
    assert out == f"{head}\nNo. It is made for indoor use only [1]."


SHIPPING = ("Shipping Policy > Shipping options and costs\n\n| Option | Cost |\n|---|---|\n"
            "| Canada Standard | 9.95 Canadian dollars, free over 79 Canadian dollars |\n"
            "| United Kingdom Standard | 6.95 pounds, free over 59 pounds |")


def test_an_initialism_the_passages_spell_out_is_read_as_the_spelled_out_name() -> None:
    texts = [SHIPPING, "Marks: UKCA, FCC. We ship to the United Kingdom."]
    assert spelled_out("UK", texts) == ("United Kingdom", 2)
    assert spelled_out("DMV", ["Visit a Department of Motor Vehicles office."]) == ("Department of Motor Vehicles", 1)
    assert spelled_out("EU", texts) is None
    follow_up = "and to the UK? (How much is shipping Canada)"
    assert spell_out_initialisms(follow_up, texts) == "and to the UK [United Kingdom]? (How much is shipping Canada)"
    # the brackets leave the follow-up's context words where they were
    assert split_context(spell_out_initialisms(follow_up, texts))[1] == "How much is shipping Canada"
    # passages that mostly write the initialism use it as their word: left as it is
    va = ["Contact your VA regional office.", "VA health care covers it.", "The Department of Veterans Affairs (VA)."]
    assert spell_out_initialisms("Can the VA help?", va) == "Can the VA help?"
    assert spell_out_initialisms("Can the VA help?", va[2:]) == "Can the VA [Veterans Affairs] help?"
    assert spell_out_initialisms("is it OK to ship?", texts) == "is it OK to ship?"  # nothing spells it out


async def test_the_row_on_the_spelled_out_name_answers_the_initialism() -> None:
    part = chunk(1, SHIPPING, ("Shipping Policy", "Shipping options and costs"))
    question = spell_out_initialisms("How much is shipping to the UK?", [part.chunk.text])
    out = await complete(ExtractiveBackend(max_sentences=1), messages(question, part), max_tokens=80)
    assert "6.95 pounds" in out and "Canada" not in out
