"""The answering unit and the extractive composer: one section answers, lists and tables stay whole, three outcomes,
document-written citation markers never cite."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from app.generation import answerability
from app.generation.backends import ExtractiveBackend, complete
from app.generation.compose import Composed, Passage, blocks, compose, intent, named_row
from app.generation.prompt import build_prompt
from app.generation.text import value_kinds
from app.generation.units import AnswerUnit, Context, conversation_context, rank_units, unit_first
from core.types import ChunkRecord, RankedChunk

pytestmark = pytest.mark.unit

OFFLINE = (
    "Troubleshooting Guide > A device shows as offline\n\n"
    "A device is marked Offline when it has not contacted the cloud for 5 minutes.\n\n"
    "1. Check that the device has power.\n2. Check that other devices in your home have internet access.\n"
    "3. Restart the device.\n4. Restart your router and wait 3 minutes.\n5. Reconnect it to Wi-Fi."
)
SPECS = "Camera > Technical specifications\n\nNight vision: up to 8 m at night, eight infrared LEDs."
TABLE = (
    "Policy > Warranty periods\n\n| Product | Warranty period |\n|---|---|\n| Hub | 24 months |\n"
    "| Cam 2 | 12 months |\n| Thermo | 36 months |"
)


def rc(cid: str, text: str, section: tuple[str, ...], *, doc: str = "d1", order: int = 0, score: float = 1.0,
       title: str = "Guide") -> RankedChunk:
    chunk = ChunkRecord(id=cid, tenant_id="t", document_id=doc, document_version=1, title=title, text=text,
                        section_path=section, order=order)
    return RankedChunk(chunk=chunk, score=score, scores={"vector": 0.6, "keyword": 1.0})


def test_intent_reads_what_kind_of_answer_is_wanted() -> None:
    assert intent("My camera keeps going offline at night. What should I check?") == "howto"
    assert intent("thermostat shows offline in the app but the screen is on??") == "howto"
    assert intent("How do I reset the hub?") == "howto"
    assert intent("How long is the warranty on the Hub?") == "fact"
    assert intent("Why does the thermostat heat early?") == "explain"
    # a situation told first and "why" asked last is an explanation, not steps
    assert intent("The thermostat keeps dropping to 16 degrees while we're actually home. Why?") == "explain"
    assert intent("I was charged twice for Protect this month, why??") == "explain"
    assert intent("The light is red, any idea why?") == "explain"
    assert intent("How do I set that up and why isn't it triggering?") == "howto"  # asks for steps first


def test_a_why_question_whose_section_opens_with_a_list_gets_the_list() -> None:
    """"Why was I charged twice?" and the section opens "... one of these causes:": the causes are the answer, as
    a how-to question's list is (the lead-sentence answer quoted one cause)."""
    section = "Billing FAQ > I was charged twice"
    text = (f"{section}\n\nTwo charges in the same month usually have one of these causes:\n\n"
            "- A card check: your bank may show a temporary authorisation of 1 US dollar.\n"
            "- Two homes: an account that owns two homes with a plan each pays two subscriptions.\n"
            "- Two cameras on Protect Plus: each camera has its own plan and its own charge.")
    out = compose("I was charged twice for Protect this month, why??", [Passage(1, text, section)], [],
                  "Billing FAQ › I was charged twice")
    assert out is not None
    lines = out.text.splitlines()
    assert lines[1] == "Two charges in the same month usually have one of these causes [1]:"
    assert [ln[:3] for ln in lines[2:]] == ["1. ", "2. ", "3. "]


def test_units_group_one_section_in_document_order_and_rank_the_answering_one_first() -> None:
    second = rc("c2", "Troubleshooting Guide > A device shows as offline\n\nStill offline? Contact support.",
                ("Troubleshooting Guide", "A device shows as offline"), order=2, score=0.5)
    chunks = [rc("c9", SPECS, ("Camera", "Technical specifications"), doc="d2", score=0.9),
              second, rc("c1", OFFLINE, ("Troubleshooting Guide", "A device shows as offline"), order=1, score=0.8)]
    units = rank_units("device keeps going offline, what should I check?", chunks)
    assert [rc.chunk.id for rc in units[0].chunks] == ["c1", "c2"]  # document order, not rank order
    assert units[0].label == "Guide › Troubleshooting Guide › A device shows as offline"
    assert [c.chunk.id for c in unit_first(units[0], chunks)] == ["c1", "c2", "c9"]


def test_a_section_holding_the_questions_phrase_beats_one_that_only_shares_its_words() -> None:
    twice = rc("b1", "Billing > I was charged twice\n\nCompare the charges in Payment history with the "
               "statement from your bank. A Kestrel plan bought twice is charged twice; Protect Plus is charged "
               "per camera.",
               ("Billing", "I was charged twice"), score=1.0)
    called = rc("b2", "Billing > What the charge is called\n\nA renewal shows on your statement as a KESTREL "
                "PROTECT charge and the plan name.", ("Billing", "What the charge is called"), order=1, score=0.9)
    question = "What is this KESTREL PROTECT charge on my bank statement?"
    units = rank_units(question, [called, twice], weights={"phrase": 0.0, "heading_phrase": 0.0, "quotes": 0.0})
    assert units[0].chunks[0].chunk.id == "b1"  # every word of the question is in the first section: it wins
    units = rank_units(question, [called, twice])
    assert units[0].chunks[0].chunk.id == "b2"  # "Kestrel Protect" stands together only in the second
    assert units[0].features["phrase"] > units[1].features["phrase"]
    assert units[0].features["heading_phrase"] == 0.0  # its heading names none of the question's phrases


def test_a_follow_up_prefers_the_section_and_document_the_previous_answer_came_from() -> None:
    fix = rc("k1", "Known issues > Locks show 0 percent battery\n\nSince 2026-03-02 Z-Wave locks show 0 percent. "
             "Hub firmware 3.4.2 fixes it from 2026-03-23.", ("Known issues", "Locks show 0 percent battery"),
             doc="ki", title="Known Issues")
    other = rc("k2", "Known issues > Widgets show No data\n\nSign out of the app and in again.",
               ("Known issues", "Widgets show No data"), doc="ki", title="Known Issues", order=3)
    release = rc("r1", "Firmware > Hub 3.4.1\n\nThis release fixes the Zigbee range of the Hub.",
                 ("Firmware", "Hub 3.4.1"), doc="fw", title="Release Notes")
    chunks = [release, other, fix]
    question = "when is the fix coming?"
    # alone, the words point at the release notes (and the dates "when" asks for at the known issue)
    assert rank_units(question, chunks, weights={"form": 0.0})[0].document_id == "fw"
    stored = [{"role": "user", "content": "My lock says battery 0%"},
              {"role": "assistant", "content": "From *Known Issues › Locks show 0 percent battery*: ...",
               "unit": {"document_id": "ki", "label": "Known Issues › Locks show 0 percent battery"}}]
    context = conversation_context(stored)
    assert context == Context((("ki", "Known Issues › Locks show 0 percent battery"),))
    units = rank_units(question, chunks, context=context)
    assert units[0].chunks[0].chunk.id == "k1"
    assert {u.chunks[0].chunk.id: u.features["context"] for u in units} == {"k1": 1.0, "k2": 0.5, "r1": 0.0}
    # the OpenAI-compatible route has only the answer's text: its "From *label*:" names the section
    texts_only = conversation_context([{"role": "assistant", "content": stored[1]["content"]}])
    assert texts_only.sections == ((None, "Known Issues › Locks show 0 percent battery"),)
    assert rank_units(question, chunks, context=texts_only)[0].chunks[0].chunk.id == "k1"
    # a close runner-up's "Also, from" line is not where the answer came from (a stored unit never names it either)
    also = stored[1]["content"] + "\n\nAlso, from *Release Notes › Hub 3.4.1*: This release fixes the Zigbee range."
    assert conversation_context([{"role": "assistant", "content": also}]) == texts_only
    # a refusal names no section it came from, and a conversation without answers has no context
    refused = "I could not find this in the knowledge base. The nearest sections are: *Known Issues*."
    assert conversation_context([{"role": "assistant", "content": refused}]) == Context()
    assert conversation_context([{"role": "user", "content": "hi"}]) == Context()


def test_list_is_parsed_whole_with_its_intro() -> None:
    parsed = blocks(OFFLINE, "Troubleshooting Guide > A device shows as offline")
    lst = next(b for b in parsed if b.kind == "list")
    assert len(lst.lines) == 5 and lst.lines[0] == "Check that the device has power."
    assert lst.intro.startswith("A device is marked Offline")


def test_howto_answer_is_the_section_with_its_steps_in_order_and_no_stitched_spec_line() -> None:
    unit = [Passage(1, OFFLINE, "Troubleshooting Guide > A device shows as offline")]
    out = compose("My camera keeps going offline at night. What should I check?", unit,
                  [Passage(2, SPECS, "Camera > Technical specifications")], "Guide › A device shows as offline")
    assert out is not None
    lines = out.text.splitlines()
    assert lines[0] == "From *Guide › A device shows as offline*:"
    assert [ln[:2] for ln in lines[2:]] == ["1.", "2.", "3.", "4.", "5."]
    assert lines[2] == "1. Check that the device has power [1]."
    assert "Night vision" not in out.text


def test_steps_cut_by_the_chunker_are_numbered_on_in_the_next_passage() -> None:
    """A six-step list split over two chunks reads 1-6, each step citing its own passage (it read 1-5, then 1)."""
    section = "Policy > Returns > How to return a product"
    first = f"{section}\n\n" + "\n".join(f"{i}. Step number {i} of the return." for i in range(1, 6))
    second = f"{section}\n\n6. Drop the parcel off at any carrier location within 14 days."
    unit = [Passage(1, first, section), Passage(2, second, section)]
    out = compose("How do I return a product?", unit, [], "Policy › Returns › How to return a product")
    assert out is not None
    lines = out.text.splitlines()[1:]
    assert [ln.split(". ")[0] for ln in lines] == ["1", "2", "3", "4", "5", "6"]
    assert lines[-1] == "6. Drop the parcel off at any carrier location within 14 days [2]."
    # a section too long to quote whole gives its best list: the same six steps
    steps = compose("How do I return a product?", unit, [], "Policy", whole_limit=2)
    assert steps is not None and steps.text.splitlines()[1:] == lines


def test_fact_answer_is_the_table_row_that_names_the_product() -> None:
    out = compose("How long is the warranty on the Thermo?", [Passage(1, TABLE, "Policy > Warranty periods")], [],
                  "Policy › Warranty periods")
    assert out is not None and out.kind == "table_row"
    assert out.text.splitlines()[1] == "Thermo — Warranty period: 36 months [1]."


def test_a_statement_row_is_quoted_with_the_units_its_figures_are_in() -> None:
    """"Net income — 2024: 958" alone reads as 958 dollars; the line above the statement says millions."""
    statement = (
        "Annual report > Statements of operations\n\n(In millions, except per share amounts)\n\n"
        "| | 2024 | 2023 |\n|---|---|---|\n| Total net revenue | 4,812 | 4,296 |\n| Net income | 958 | 801 |"
    )
    out = compose("What was net income in 2023?", [Passage(1, statement, "Annual report > Statements of operations")],
                  [], "Annual report › Statements of operations")
    assert out is not None and out.kind == "table_row"
    assert out.text.splitlines()[1] == "Net income — 2024: 958; 2023: 801 (In millions, except per share amounts) [1]."
    plain = compose("How long is the warranty on the Thermo?", [Passage(1, TABLE, "Policy > Warranty periods")], [],
                    "Policy › Warranty periods")
    assert plain is not None and "(" not in plain.text  # a table without a units line is quoted as it was


@pytest.mark.asyncio
async def test_markers_written_in_a_document_never_cite_other_passages() -> None:
    forged = rc("c1", "Guide > Reset\n\nHold the button for 15 seconds [2] [3]. Then wait [1, 3].", ("Guide", "Reset"))
    other = rc("c2", SPECS, ("Camera", "Technical specifications"), doc="d2")
    prompt = build_prompt("How do I reset it?", [forged, other], count_tokens=len, context_window=100_000,
                          max_new_tokens=100)
    assert "[2] [3]" not in prompt.messages[-1]["content"] and "[1, 3]" not in prompt.messages[-1]["content"]
    out = await complete(ExtractiveBackend(), prompt.messages, max_tokens=200)
    assert "[2]" not in out and "[3]" not in out and "Hold the button for 15 seconds [1]." in out


@pytest.mark.asyncio
async def test_markers_in_a_documents_titles_and_headings_cite_nothing_and_keep_the_heading_path_off() -> None:
    # exported web pages keep their footnote marks in titles and headings ("Register a moped[1]")
    moped = rc("c1", "Register a moped[1] > What to bring\n\nBring the bill of sale [2] and proof of insurance to a "
               "DMV office.", ("Register a moped[1]", "What to bring"), title="Register a moped[1]")
    prompt = build_prompt("What do I bring to register a moped?", [moped], count_tokens=len,
                          context_window=100_000, max_new_tokens=100)
    assert "[1]" not in prompt.messages[-1]["content"] and "[2]" not in prompt.messages[-1]["content"]
    out = await complete(ExtractiveBackend(), prompt.messages, max_tokens=200)
    assert out.startswith("From *Register a moped › What to bring*:")
    assert "Register a moped >" not in out  # the heading path is not quoted as a sentence
    assert rank_units("What do I bring?", [moped])[0].label == "Register a moped › What to bring"


def test_three_outcomes_from_the_evidence() -> None:
    hub = rc("c1", "Hub > Backup battery\n\nThe built-in battery keeps the Hub running for about 4 hours.",
             ("Hub", "Backup battery"), title="Hub manual")
    hub.scores = {"vector": 0.75, "keyword": 3.0}
    hub.ranks = {"vector": 1, "keyword": 1}
    chunks = [hub]
    unit = rank_units("How long does the Hub run on its battery?", chunks)[0]
    assert answerability.assess("How long does the Hub run on its battery?", chunks, unit).outcome == "answered"
    partial = answerability.assess("What is the battery capacity of the Hub?", chunks, unit)
    assert partial.outcome == "partial" and partial.missing == ("capacity",)
    assert answerability.assess("How much does the Hub cost?", chunks, unit).missing == ("price",)
    # a price question that names a power adapter is still a price question
    assert "price" in answerability.focus_terms("How much does the Power Adapter Kit cost on its own?")
    assert answerability.focus_terms("How much power does the Hub use?") == ["power"]
    assert answerability.assess("anything", [], None).outcome == "not_found"
    assert "“capacity”" in answerability.missing_text(partial.missing)


def test_a_citation_stays_inside_its_sentence_before_a_closing_colon() -> None:
    from app.generation.compose import cite

    assert cite("Check these in order:", 2) == "Check these in order [2]:"
    assert cite("It retries.", 1) == "It retries [1]."
    assert cite("No end mark", 3) == "No end mark [3]."


def test_unit_choice_reads_the_sections_sentences_and_label_with_an_embedder() -> None:
    from tests.fakes import FakeBagOfWordsEmbedder

    returns = rc("r1", "Returns > How to return a product\n\n1. Open your orders.\n2. Select Return items.\n"
                 "3. Print the prepaid return label.", ("Returns", "How to return a product"), doc="d3", score=0.5)
    chunks = [rc("c9", SPECS, ("Camera", "Technical specifications"), doc="d2", score=0.9), returns]
    q = "how do I send the camera back, I need a return label"
    embedder = FakeBagOfWordsEmbedder()
    units = rank_units(q, chunks, embedder=embedder, weights={"sentence": 1.0, "label": 1.0})
    by_doc = {u.document_id: u for u in units}
    assert by_doc["d3"].features["sentence"] > by_doc["d2"].features["sentence"]  # "return label" is in its steps
    assert by_doc["d3"].features["label"] > by_doc["d2"].features["label"]  # "return" is in its heading
    assert by_doc["d3"].features["shape"] == 1.0 and by_doc["d2"].features["shape"] == 0.0  # how-to meets steps
    assert units[0].document_id == "d3"
    assert embedder.batches == [1 + 2 + 4]  # one batch: question, two labels, at most EMBED_SENTENCES per unit
    # without an embedder (or with the embedded weights at 0) nothing is embedded and the features stay 0
    plain = rank_units(q, chunks)
    assert all(u.features["sentence"] == u.features["label"] == 0.0 for u in plain)


WIFI = (
    "Network FAQ > I changed my router\n\n"
    "After a router change the devices do not learn the new network: open Settings, Wi-Fi network, Change network "
    "on each device that shows offline."
)


def _unit(score: float, cid: str, text: str, section: tuple[str, ...], doc: str) -> object:
    from app.generation.units import AnswerUnit

    return AnswerUnit((rc(cid, text, section, doc=doc),), score, {})


def test_a_close_runner_up_section_is_offered_too_a_distant_one_is_not() -> None:
    from app.generation.units import alternative, prompt_parts

    best = _unit(1.0, "c1", OFFLINE, ("Troubleshooting Guide", "A device shows as offline"), "d1")
    close = _unit(0.93, "c2", WIFI, ("Network FAQ", "I changed my router"), "d2")
    far = _unit(0.6, "c2", WIFI, ("Network FAQ", "I changed my router"), "d2")
    assert alternative([best, close]) is close
    assert alternative([best, far]) is None and alternative([best]) is None
    assert prompt_parts(best, close) == {"c1": "answer", "c2": "alternative"}


def test_a_how_to_answer_with_steps_takes_a_runner_up_without_steps_only_for_a_closer_sentence() -> None:
    from app.generation.units import AnswerUnit, alternative

    def unit(score: float, cid: str, shape: float, sentence: float) -> AnswerUnit:
        return AnswerUnit((rc(cid, OFFLINE, ("Guide", cid), doc=cid),), score, {"shape": shape, "sentence": sentence})

    steps = unit(2.87, "offline", 1.0, 0.575)
    overview = unit(2.83, "manual", 0.0, 0.566)  # "an indoor camera with 2K video, night vision ..."
    instruction = unit(2.83, "reset", 0.0, 0.74)  # "press the button next to the microSD slot for 10 seconds"
    other_steps = unit(2.83, "wifi", 1.0, 0.5)
    assert alternative([steps, overview]) is None
    assert alternative([steps, instruction]) is instruction
    assert alternative([steps, other_steps]) is other_steps
    assert alternative([unit(2.87, "fact", 0.0, 0.5), overview]) is overview  # no steps: a close call as before


def test_how_to_shape_counts_numbered_steps_and_bulleted_sentences_not_a_bulleted_inventory() -> None:
    q = "My camera keeps going offline. What should I check?"
    box = rc("b1", "Camera Manual\n\nThe camera goes offline rarely.\n\nWhat is in the box\n\n- Camera with stand\n"
             "- USB-C power adapter\n- Quick start card", ("Camera Manual",), doc="d1")
    bulleted = rc("b2", "Billing > Changing plans\n\n- Upgrading takes effect immediately.\n"
                  "- Downgrading takes effect at the start of the next period.", ("Billing", "Changing plans"),
                  doc="d2")
    numbered = rc("b3", OFFLINE, ("Troubleshooting Guide", "A device shows as offline"), doc="d3")
    shape = {u.document_id: u.features["shape"] for u in rank_units(q, [box, bulleted, numbered])}
    assert shape == {"d1": 0.0, "d2": 1.0, "d3": 1.0}


@pytest.mark.asyncio
async def test_the_runner_up_adds_its_best_point_under_its_own_section() -> None:
    from app.generation.units import prompt_parts, unit_first

    first = rc("c1", OFFLINE, ("Troubleshooting Guide", "A device shows as offline"))
    runner = rc("c2", WIFI, ("Network FAQ", "I changed my router"), doc="d2", title="Network FAQ")
    spec = rc("c3", SPECS, ("Camera", "Technical specifications"), doc="d3", title="Camera")
    best = type(_unit(1.0, "x", "x", (), "x"))((first,), 1.0, {})
    close = type(best)((runner,), 0.95, {})
    question = "The hub went offline after I changed my router, what should I check?"
    prompt = build_prompt(question, unit_first(best, [spec, runner, first], close), count_tokens=len,
                          context_window=100_000, max_new_tokens=100, parts=prompt_parts(best, close))
    user = prompt.messages[-1]["content"]
    assert 'id="1"' in user and 'part="answer"' in user and 'id="2" title="Network FAQ"' in user
    assert user.count('part="alternative"') == 1 and 'id="3" title="Camera" section="Camera &gt; Technical ' \
        'specifications">' in user
    out = await complete(ExtractiveBackend(), prompt.messages, max_tokens=400)
    main, _, also = out.partition("\n\nAlso, from ")
    assert main.startswith("From *Guide › Troubleshooting Guide › A device shows as offline*:")
    assert also.startswith("*Network FAQ › I changed my router*: After a router change") and also.endswith("[2].")
    assert "Night vision" not in out

    # a runner-up that shares nothing with the question is not quoted
    other = rc("c2", "Billing > Invoices\n\nInvoices are e-mailed on the first day of each month.",
               ("Billing", "Invoices"), doc="d2", title="Billing")
    close = type(best)((other,), 0.95, {})
    prompt = build_prompt(question, unit_first(best, [other, first], close), count_tokens=len,
                          context_window=100_000, max_new_tokens=100, parts=prompt_parts(best, close))
    out = await complete(ExtractiveBackend(), prompt.messages, max_tokens=400)
    assert "Also" not in out and "Invoices" not in out


def test_a_unit_sentence_close_in_meaning_rescues_a_low_scoring_question() -> None:
    from app.generation.units import AnswerUnit

    codes = rc("c1", "Error codes\n\n| Code | Meaning |\n|---|---|\n| E31 | Supply voltage below 18 VAC |",
               ("Thermo", "Error codes"), title="Thermo manual")
    codes.scores = {"vector": 0.3, "keyword": 1.0}
    chunks = [codes]
    assert not answerability.decide("app says E31", chunks).answerable  # the score model alone refuses
    close = AnswerUnit((codes,), 1.0, {"sentence": 0.62})
    far = AnswerUnit((codes,), 1.0, {"sentence": 0.31})
    verdict = answerability.assess("app says E31", chunks, close)
    assert verdict.outcome == "answered" and verdict.decision.model == "full+sentence"
    assert answerability.assess("app says E31", chunks, far).outcome == "not_found"
    # a product name the evidence lacks is never rescued
    assert answerability.assess("Kestrel Video Doorbell says E31", chunks, close).outcome == "not_found"


def test_a_what_does_it_mean_question_gets_the_lead_and_the_table_row_it_names() -> None:
    leds = (
        "Hub > Status light\n\nThe ring light on top of the Hub shows its state. A quick press of the top button dims "
        "the ring.\n\n| LED pattern | Meaning | What to do |\n|---|---|---|\n| Solid white | Starting up | Wait |\n"
        "| Solid amber | Running on backup battery | Reconnect the power adapter |\n| Solid red | Hardware fault | "
        "Contact support |"
    )
    out = compose("What does a solid amber light on the hub mean?", [Passage(1, leds, "Hub > Status light")], [],
                  "Hub manual › Status light")
    assert out is not None and out.intent == "explain"
    assert "The ring light on top of the Hub shows its state [1]." in out.text
    assert "Solid amber — Meaning: Running on backup battery" in out.text and "Solid red" not in out.text


def test_the_subsection_that_answers_by_meaning_wins_over_one_that_shares_words() -> None:
    """A chunk that merges small sections answers from one of them: with a scorer (the backend's embedder), the
    subsection read by meaning wins over the one that merely shares a word with the question."""
    merged = ("Several people, one home\n\nDo not share your password with family members. Invite them to your home "
              "instead, so that each person has their own account.\n\nWhen the Owner is no longer available\n\n"
              "Send a death certificate to support. The other members have 14 days to object.")
    question = "My husband passed away and the account was his. How do I take over the home?"
    unit = [Passage(1, merged, "Account help")]

    def by_meaning(texts: Sequence[str]) -> list[float]:  # stands in for the embedder: "passed away" ~ "death"
        return [2.0 if "death" in t else 0.0 for t in texts]

    lexical = compose(question, unit, [], "Account help")
    assert lexical is not None and "Several people, one home" in lexical.text.splitlines()[0]
    read = compose(question, unit, [], "Account help", scorer=by_meaning)
    assert read is not None and "When the Owner is no longer available" in read.text.splitlines()[0]
    assert "death certificate" in read.text and "14 days to object" in read.text


def test_a_follow_ups_context_words_are_not_what_it_asks_for() -> None:
    """The keyword rewrite appends the previous question's words; a name among them ("Protect Plus Premium") is
    context, so the evidence lacking one of its words does not veto the follow-up, while the user's own names do."""
    from app.generation.rewrite import asked_words, heuristic_rewrite

    trial = rc("c1", "Plans > Free trial\n\nEvery new camera comes with a 14-day free trial of Protect Plus.",
               ("Plans", "Free trial"), title="Protect plans")
    trial.scores = {"vector": 0.75, "keyword": 3.0}
    trial.ranks = {"vector": 1, "keyword": 1}
    chunks = [trial]
    history = [{"role": "user", "content": "What's the difference between Protect Plus and Protect Premium?"},
               {"role": "assistant", "content": "..."}]
    question = "is there a free trial?"
    query = heuristic_rewrite(question, history)
    assert query.startswith(question + " (") and "Premium" in query
    assert asked_words(query, question) == question
    assert asked_words("Is there a free trial of Protect?", question) == "Is there a free trial of Protect?"
    unit = rank_units(query, chunks)[0]
    assert answerability.assess(query, chunks, unit).outcome == "not_found"  # read as the user's words: vetoed
    assert answerability.assess(query, chunks, unit, asked_words(query, question)).outcome == "answered"
    own = "is there a free trial of Protect Premium?"
    assert answerability.assess(heuristic_rewrite(own, history), chunks, unit, own).outcome == "not_found"


def test_a_currency_the_question_names_must_be_in_the_section() -> None:
    prices = rc("c1", "Plans > Prices\n\n| Plan | Monthly price |\n|---|---|\n| Protect Plus | 3.99 US dollars |",
                ("Plans", "Prices"), title="Protect plans")
    prices.scores = {"vector": 0.75, "keyword": 3.0}
    prices.ranks = {"vector": 1, "keyword": 1}
    chunks = [prices]
    unit = rank_units("How much is Protect Plus per month?", chunks)[0]
    assert answerability.assess("How much is Protect Plus per month?", chunks, unit).outcome == "answered"
    in_pounds = answerability.assess("How much is Protect Plus per month in pounds?", chunks, unit)
    assert in_pounds.outcome == "partial" and in_pounds.missing == ("pounds",)
    assert answerability.assess("Is Protect Plus billed in dollars?", chunks, unit).outcome == "answered"
    assert answerability.missing_currencies("How many pounds does the Hub weigh?", "It weighs 0.3 kg") == []


def test_a_fact_in_a_short_paragraph_is_told_with_the_sentences_on_its_point() -> None:
    """The best sentence of a short paragraph comes with the paragraph's other sentences on the same point (the one
    before it too); a sentence on another point stays out."""
    sharing = ("Plans > Sharing\n\nA subscription belongs to a home, not to a person. Every member of the home can "
               "view the cloud history and receives the smart alerts of the plan. Prices are listed in the shop.")
    out = compose("do my wife and I both get the smart alerts with one plan",
                  [Passage(1, sharing, "Plans > Sharing")], [], "Plans › Sharing")
    assert out is not None and out.kind == "sentences"
    assert "belongs to a home, not to a person" in out.text and "receives the smart alerts" in out.text
    assert "Prices are listed" not in out.text
    oil = "History\n\nPrices rose sharply. The oil embargo began in October 1973. It ended in March 1974."
    only = compose("When did the oil embargo begin?", [Passage(1, oil, "History")], [], "History")
    assert only is not None and "Prices rose" not in only.text and "March 1974" not in only.text


def test_a_row_named_by_the_answer_heading_or_the_questions_code_is_added() -> None:
    """The prose answers but leaves the number out; the spec row its heading names, or the error-code row the question
    pins, carries it. A row named by nothing, or one already quoted, is not added."""
    prose = "From *Hub Manual › Backup battery*:\nWhen mains power fails, the battery keeps the Hub running [1]."
    spec = ("Hub Manual > Specifications\n\n| Feature | Value |\n|---|---|\n"
            "| Weight | 300 g |\n| Backup battery | 2,000 mAh, about 4 hours of operation |")
    codes = ("Guide > Error codes\n\n| Code | Meaning | First step |\n|---|---|---|\n"
             "| E12 | No network | Check the router |\n| E45 | Download interrupted | It retries every 10 minutes |")
    passages = [Passage(1, "Hub Manual > Backup battery\n\nWhen mains power fails ...", "Hub Manual > Backup battery"),
                Passage(2, spec, "Hub Manual > Specifications"), Passage(3, codes, "Guide > Error codes")]
    main = Composed(prose, "fact", "sentences", [1])
    assert named_row(main, passages) == (2, "Backup battery — Value: 2,000 mAh, about 4 hours of operation",
                                         "Specifications")
    fw = Composed("From *Guide › A firmware update failed*:\nLeave it powered: it retries automatically [1].",
                  "fact", "sentences", [1])
    assert named_row(fw, passages, ["e45"]) == (
        3, "E45 — Meaning: Download interrupted; First step: It retries every 10 minutes", "Error codes")
    assert named_row(fw, passages) is None and named_row(fw, passages, ["e99"]) is None
    quoted = Composed(prose + " Backup battery — Value: 2,000 mAh, about 4 hours of operation [2].", "fact",
                      "sentences", [1, 2])
    assert named_row(quoted, passages) is None


def test_answer_terms_are_stemmed_like_the_keyword_index() -> None:
    """"charged" in a question meets "charges" in a section, as tantivy's English analyzer would match them."""
    from app.generation.text import content_terms

    assert set(content_terms("Why was I charged twice?")) & set(content_terms("Two charges in the same month"))
    assert content_terms("The batteries are replaced") == content_terms("battery replacing")
    assert not set(content_terms("charged")) & set(content_terms("chart"))
    # a possessive is the word itself ("how far from the hub" meets "The Hub's radios reach about 30 m")
    assert content_terms("The Hub's radios") == content_terms("hub radio") == content_terms("the hub’s radio")


@pytest.mark.asyncio
async def test_a_follow_up_is_answered_by_its_own_words_not_the_previous_questions() -> None:
    """'when will there be a proper fix?' after a question about late alerts: the keyword rewrite carries the previous
    question's words (they find the section), but the sentence that answers is the fix, not the symptom."""
    from app.generation.rewrite import heuristic_rewrite

    issue = rc("c1", "Known issues > Motion alerts arrive late on Android\n\n"
               "Since 2026-02-10, some Android phones deliver Kestrel Cam 2 motion alerts up to 2 minutes late, or "
               "only when the app is opened. It happens on phones whose battery saver puts the app to sleep.\n\n"
               "The fix is part of Kestrel Home app version 6.13 for Android, planned for late March 2026.",
               ("Known issues", "Motion alerts arrive late on Android"), title="Known issues")
    history = [{"role": "user", "content": "motion alerts on my Android phone show up minutes after the fact"},
               {"role": "assistant", "content": "From *Known issues*: ..."}]
    query = heuristic_rewrite("when will there be a proper fix?", history)
    assert query.startswith("when will there be a proper fix? (") and "Android" in query
    prompt = build_prompt(query, [issue], count_tokens=len, context_window=100_000, max_new_tokens=100)
    out = await complete(ExtractiveBackend(max_sentences=1), prompt.messages, max_tokens=200)
    assert "version 6.13" in out and "late March 2026" in out
    assert "2 minutes late" not in out


def test_a_subsection_named_again_in_its_next_chunk_is_quoted_once() -> None:
    """The chunker repeats a subsection's heading (and the overlap) at the start of the chunk it goes on in; read
    together, the two chunks are one subsection, each sentence and step once."""
    from app.generation.backends.extractive import dedupe_overlaps

    section = "Guide > Restarting and resetting"
    first = (f"{section}\n\nA restart keeps all settings.\n\nFactory reset of the Hub\n\n1. Keep the Hub plugged in.\n"
             "2. Hold the reset button for 15 seconds.\n3. The Hub restarts in about 2 minutes.")
    second = (f"{section}\n\nFactory reset of the Hub\n\n3. The Hub restarts in about 2 minutes.\n\n"
              "All accessories must be paired again after a factory reset.")
    texts = dedupe_overlaps([first, second], [section, section])
    assert texts == [first, f"{section}\n\nAll accessories must be paired again after a factory reset."]
    # alone, the second chunk keeps its heading: the answer can name the subsection
    assert dedupe_overlaps([second], [section]) == [second]
    unit = [Passage(i, t, section) for i, t in enumerate(texts, start=1)]
    out = compose("Do I have to pair my sensors again after a factory reset?", unit, [],
                  "Guide › Restarting and resetting")
    assert out is not None and out.text.startswith("From *Guide › Restarting and resetting › Factory reset of the Hub*")
    assert out.text.count("restarts in about 2 minutes") <= 1


def test_a_when_question_prefers_the_sentence_that_says_when() -> None:
    """'When do I get the credit?' is answered by 'within 10 business days', not by the table row with the credit's
    amount, though both share its words; a question with no form of answer expected is scored as before."""
    from app.generation.text import expected_answer

    assert expected_answer("When do I get the credit for the thermostat I traded in?") is not None
    assert expected_answer("If I order at 3pm when will it ship?") is not None
    assert expected_answer("What happens when the battery dies?") is None
    assert expected_answer("Who founded the company?") is None
    texts = ["Any brand smart thermostat: the trade-in credit is 40 US dollars.",
             "You receive the trade-in credit within 10 business days after the device arrives."]
    question = "When do I get the trade-in credit for my thermostat?"
    typed, plain = ExtractiveBackend(), ExtractiveBackend(answer_type_weight=0.0)
    with_type, without = typed.score(question, texts), plain.score(question, texts)
    assert with_type[1] > with_type[0] and without[0] > without[1]
    assert list(typed.score("Who pays the trade-in credit for my thermostat?", texts)) == list(
        plain.score("Who pays the trade-in credit for my thermostat?", texts))


def test_a_question_that_asks_how_much_is_answered_by_the_section_that_gives_an_amount() -> None:
    where = rc("w1", "Shipping Policy > Where we ship\n\nWe ship to addresses in the United States, Canada and the "
               "United Kingdom. We do not ship to other countries.", ("Shipping Policy", "Where we ship"), score=1.0)
    costs = rc("w2", "Shipping Policy > Shipping options and costs\n\n| Option | Cost |\n|---|---|\n"
               "| Canada Standard | 9.95 Canadian dollars |\n| United Kingdom Standard | 6.95 pounds |",
               ("Shipping Policy", "Shipping options and costs"), order=1, score=0.9)
    question = "How much is shipping to Canada?"
    units = rank_units(question, [where, costs], weights={"form": 0.0})
    assert units[0].chunks[0].chunk.id == "w1"  # the words alone: "We ship to ... Canada" ranks first
    units = rank_units(question, [where, costs])
    assert units[0].chunks[0].chunk.id == "w2"
    assert (units[0].features["form"], units[1].features["form"]) == (1.0, 0.0)
    # a question whose answer has no particular form reads nothing from it
    assert all(u.features["form"] == 0.0 for u in rank_units("Do you ship to Canada?", [where, costs]))


@pytest.mark.parametrize(("question", "answers", "other"), [
    ("How big is the hub? Will it fit on a shelf", "Dimensions: 110 x 110 x 32 mm", "A home can have up to 3 Hubs."),
    ("how far from the hub can the sensor be?", "The Hub's radios reach about 30 m indoors.", "Pair up to 3 sensors."),
    ("How heavy is the camera?", "Kestrel Cam 2 weighs 180 g.", "The box holds 2 cameras."),
    ("how fast does my upload need to be?", "Live view needs at least 2 Mbps.", "Up to 4 people can watch."),
    ("How cold can the garage get for the camera?", "Operating temperature: 0 to 40 °C.", "Mount it 2 metres up."),
    ("How big an SD card can I use?", "Cards from 16 GB up to 256 GB work.", "Insert 1 card."),
])
def test_a_question_that_asks_for_a_measure_expects_a_figure_in_its_units(question: str, answers: str,
                                                                         other: str) -> None:
    """'How big / far / heavy / fast / cold' is answered by a figure in units of that measure, not by any number."""
    from app.generation.text import expected_answer

    form = expected_answer(question)
    assert form is not None and form.search(answers) and not form.search(other)


def test_how_high_and_how_long_keep_their_general_forms() -> None:
    from app.generation.text import expected_answer

    high, long = expected_answer("How high can I set the target temperature?"), expected_answer("How long is it?")
    assert high is not None and high.search("up to 32 degrees")
    assert long is not None and long.search("24 months") and not long.search("a 3 m cable")


def test_a_degree_sign_reads_as_degrees() -> None:
    from app.generation.text import content_terms

    assert content_terms("drops to 16 °C for heating")[:3] == content_terms("drops to 16 degrees")[:3]
    assert content_terms("set to 20°C or 68 °F") == ["set", "20", "degre", "68", "degre"]
    assert content_terms("no degree sign here") == ["degre", "sign"]


def test_a_phrasal_verb_reads_as_its_one_word_compound() -> None:
    from app.generation.text import content_terms

    assert content_terms("how do I set it up") == ["setup"]
    assert content_terms("Setting up Matter") == ["setup", "matter"]
    assert content_terms("First-time setup") == ["first", "time", "setup"]
    assert content_terms("Sign-In Help") == content_terms("signin help") == ["signin", "help"]
    assert content_terms("log me in") == ["login"]
    # the verb alone, or with a content word before the particle, stays the verb
    assert content_terms("set the temperature") == ["set", "temperatur"]
    assert content_terms("set the hub up") == ["set", "hub"]
    assert content_terms("turn it on") == ["turn"]


def test_a_phrasal_verb_that_means_a_plain_word_reads_as_that_word() -> None:
    """"send it back" is what a returns policy calls a return, "get my money back" a refund."""
    from app.generation.text import content_terms

    assert content_terms("how do I send it back?") == content_terms("Returns") == ["return"]
    assert content_terms("I sent them back last week")[0] == "return"
    assert content_terms("when do I get my money back") == ["get", "refund"] == content_terms("when do I get refund")
    # "back" on its own, or after another verb, keeps its words
    assert content_terms("go back to the home screen") == ["go", "back", "home", "screen"]
    assert content_terms("send the logs to support") == ["send", "log", "support"]


def test_a_question_that_names_a_code_is_answered_by_the_section_that_defines_it() -> None:
    """'camera says E19': the error table's E19 row defines the code; a release note that mentions E19 in passing
    ranks higher by retrieval but does not. A unit that defines every code of the question rescues it from a low
    retrieval score; one that only mentions the code does not."""
    from app.generation.units import AnswerUnit, defines, named_codes

    notes = rc("n1", "Release Notes > Kestrel Cam 2\n\n- Fixed a problem where large microSD cards were reported with "
               "error E19 after a restart.\n- Faster live view.", ("Release Notes", "Kestrel Cam 2"), doc="d1",
               title="Release Notes", score=1.0)
    codes = rc("t1", "Troubleshooting > Error codes\n\n| Code | Device | Meaning |\n|---|---|---|\n"
               "| E12 | Kestrel Hub | The Hub cannot reach the cloud |\n"
               "| E19 | Kestrel Cam 2 | The microSD card cannot be read |", ("Troubleshooting", "Error codes"),
               doc="d2", title="Troubleshooting", score=0.5)
    question = "camera says E19"
    assert named_codes("E19 and KC-200, not 64GB at 3pm") == ["e19", "kc-200"]
    assert defines(codes.chunk.text, codes.chunk.section_path, "e19")
    assert not defines(notes.chunk.text, notes.chunk.section_path, "e19")
    assert defines("Steps", ("Guide", "What E45 means"), "e45")  # a heading that names it
    units = rank_units(question, [notes, codes], weights={"keyed": 0.0})
    assert units[0].chunks[0].chunk.id == "n1"  # without the feature the release note wins
    units = rank_units(question, [notes, codes])
    assert units[0].chunks[0].chunk.id == "t1" and units[0].features["keyed"] == 1.0
    assert units[1].features["keyed"] == 0.0

    codes.scores = notes.scores = {"vector": 0.3, "keyword": 1.0}
    chunks = [notes, codes]
    assert not answerability.decide(question, chunks).answerable  # the score model alone refuses
    verdict = answerability.assess(question, chunks, AnswerUnit((codes,), 1.0, {"keyed": 1.0, "sentence": 0.3}))
    assert verdict.outcome == "answered" and verdict.decision.model == "full+keyed"
    mentioned = AnswerUnit((notes,), 1.0, {"keyed": 0.0, "sentence": 0.3})
    assert answerability.assess(question, chunks, mentioned).outcome == "not_found"
    # a product name the evidence lacks is never rescued
    assert answerability.assess("Kestrel Video Doorbell says E19", chunks, AnswerUnit(
        (codes,), 1.0, {"keyed": 1.0})).outcome == "not_found"


PLANS = (
    "Plans > Plans at a glance\n\n| Feature | Free | Protect Plus | Protect Premium |\n|---|---|---|---|\n"
    "| Monthly price | 0 US dollars | 3.99 US dollars | 9.99 US dollars |\n"
    "| Cameras covered | All | 1 camera | Unlimited cameras |\n"
    "| Person detection | No | Yes | Yes |"
)


@pytest.mark.parametrize(("question", "sides"), [
    ("What's the difference between Protect Plus and Protect Premium?", ("Protect Plus", "Protect Premium")),
    ("Protect Plus vs Premium - which should I get?", ("Protect Plus", "Premium")),
    ("compare the Hub with the Cam 2", ("Hub", "Cam 2")),
    ("how does a junior learner permit differ from a junior driver license?",
     ("junior learner permit", "junior driver license")),
    ("What's the difference? Offline or Unreachable", None),  # no two sides named after "difference"
    ("is there a difference in price?", None),
])
def test_a_comparison_question_names_the_two_things_it_compares(question: str,
                                                               sides: tuple[str, str] | None) -> None:
    from app.generation.text import compared

    assert compared(question) == sides


def test_a_comparison_is_answered_with_the_table_rows_that_tell_the_two_apart() -> None:
    """The plan table answers "the difference between Protect Plus and Protect Premium" with the rows where the two
    columns differ, each naming both; a row where they agree ("Person detection: Yes, Yes") is left out. The
    section with the table is chosen over the page about one of them, which ranks higher by retrieval."""
    from app.generation.text import comparison_rows

    question = "What's the difference between Protect Plus and Protect Premium?"
    out = compose(question, [Passage(1, PLANS, "Plans > Plans at a glance")], [], "Plans › Plans at a glance")
    assert out is not None and out.kind == "comparison"
    assert out.text.splitlines() == [
        "From *Plans › Plans at a glance*:",
        "- Monthly price — Protect Plus: 3.99 US dollars; Protect Premium: 9.99 US dollars [1].",
        "- Cameras covered — Protect Plus: 1 camera; Protect Premium: Unlimited cameras [1].",
    ]
    # a table with a row per thing compared gives those two rows
    rows = ["| Device | Warranty |", "|---|---|", "| Kestrel Hub | 24 months |", "| Kestrel Cam 2 | 12 months |",
            "| Kestrel Thermo | 36 months |"]
    assert comparison_rows(rows, ("Hub", "Cam 2")) == ["Kestrel Hub — Warranty: 24 months",
                                                       "Kestrel Cam 2 — Warranty: 12 months"]
    assert comparison_rows(rows, ("Hub", "Doorbell")) is None  # a side the table does not name
    # a question that compares nothing is answered as before
    plain = compose("How much is Protect Premium per month?", [Passage(1, PLANS, "Plans > Plans at a glance")], [],
                    "Plans › Plans at a glance")
    assert plain is not None and plain.kind != "comparison"

    page = rc("p1", "Plans > Protect Plus\n\nProtect Plus keeps motion clips for 30 days. Protect Plus covers one "
              "camera; choose Protect Premium for more.", ("Plans", "Protect Plus"), score=1.0)
    table = rc("p2", PLANS, ("Plans", "Plans at a glance"), order=1, score=0.8)
    assert rank_units(question, [page, table], weights={"compares": 0.0})[0].chunks[0].chunk.id == "p1"
    units = rank_units(question, [page, table])
    assert units[0].chunks[0].chunk.id == "p2" and units[0].features["compares"] == 1.0


def test_text_a_question_quotes_is_matched_word_for_word() -> None:
    from app.generation.units import quoted_literals, quotes

    assert quoted_literals("What is this KESTREL PROTECT charge on my bank statement?") == ["KESTREL PROTECT"]
    assert quoted_literals('Alexa says "Thermostat is not responding"') == ["Thermostat is not responding"]
    # a question written in capitals, initialisms and short capital words are not quotes
    assert quoted_literals("HOW DO I RESET MY HUB") == []
    assert quoted_literals("I have a TV and AC in the UK") == []
    # capitals are matched as written; quoted text in any case
    assert quotes("Renewals appear as KESTREL PROTECT followed by the plan name", "KESTREL PROTECT")
    assert not quotes("Kestrel Protect plans", "KESTREL PROTECT")
    assert quotes('Alexa answers "thermostat is not\nresponding"', "Thermostat is not responding")


MICROSD = (
    "Cam 2 manual > Recording to a microSD card\n\n"
    "A microSD card slot is on the bottom of the camera. Kestrel Cam 2 accepts cards from 16 GB up to 256 GB, "
    "formatted as exFAT or FAT32. With a microSD card, the camera records each motion event locally as a clip of up to "
    "60 seconds. When the card is full, the oldest clips are overwritten first. A 64 GB card holds about 10 days of "
    "continuous 2K recording."
)


def test_asks_splits_a_question_that_asks_two_things_and_nothing_else() -> None:
    from app.generation.compose import asks

    assert asks("What size SD card should I buy for the cam, and how many days fit on 64GB?") == [
        "What size SD card should I buy for the cam", "how many days fit on 64GB"]
    assert asks("How big is the hub? Will it fit on a bookshelf") == [
        "How big is the hub", "Will it fit on a bookshelf"]
    for one in ("If it arrived broken, can I return it?", "I bought it last week and can I still return it?",
                "How do I reset the hub?", "Hello, how do I reset it?"):
        assert len(asks(one)) == 1, one


def test_a_fact_question_that_asks_two_things_gets_the_sentence_for_each() -> None:
    unit = [Passage(1, MICROSD, "Cam 2 manual > Recording to a microSD card")]
    out = compose("Which SD cards does the Cam 2 accept, and how many days of recording fit on a 64 GB card?", unit, [],
                  "Cam 2 manual › Recording to a microSD card")
    assert out is not None
    assert "16 GB up to 256 GB" in out.text and "about 10 days" in out.text
    assert out.text.index("16 GB") < out.text.index("10 days")  # in the section's order
    one = compose("How many days of recording fit on a 64 GB card?", unit, [], "Cam 2 manual")
    assert one is not None and "16 GB" not in one.text and "about 10 days" in one.text


def test_a_subsection_stating_a_value_of_the_kind_the_question_names_is_chosen() -> None:
    """"If I order at 3pm when will it ship?": *Processing time* ("before 1:00 p.m.") answers, not *Tracking*, which
    shares as many words ("your order ships") and comes first."""
    section = "Shipping Policy"
    text = (f"{section}\n\nTracking\n\nYou receive an email with a tracking link when your order ships. The link is "
            "also in your account.\n\nProcessing time\n\nOrders placed before 1:00 p.m. Pacific Time on a business "
            "day leave our warehouse the same day. Orders placed later leave on the next business day. Pre-orders ship "
            "on the date shown on the product page.")
    out = compose("If I order at 3pm when will it ship?", [Passage(1, text, section)], [], "Shipping Policy")
    assert out is not None and out.text.startswith("From *Shipping Policy › Processing time*:")
    assert value_kinds("a 600 dollar bundle") == value_kinds("more than 500 US dollars") == {"money"}
    assert value_kinds("dropping to 16 degrees") == value_kinds("16 °C for heating") == {"temperature"}
    assert value_kinds("my 256 GB card") == {"data size"} and value_kinds("version 3.4.1") == set()


def test_a_follow_ups_missing_term_heading_a_close_section_moves_the_answer_there() -> None:
    """"is there a free trial?" after a question on the plans: the previous question's words rank *Plans at a glance*
    first, which says nothing of a trial; *Free trial*, close behind, answers it. A first question is left partial:
    there the missing term is what the documents lack."""
    plans = rc("p1", "Plans > Plans at a glance\n\nProtect Plus costs 3.99 US dollars a month. Protect Premium costs "
               "9.99 US dollars a month.", ("Plans", "Plans at a glance"))
    trial = rc("p2", "Plans > Free trial\n\nEvery new camera includes a 14-day free trial of Protect Premium. The "
               "trial starts when the camera is added.", ("Plans", "Free trial"), order=1)
    chunks = [plans, trial]
    units = [AnswerUnit((plans,), 2.0, {}), AnswerUnit((trial,), 1.8, {})]
    asked = "is there a free trial?"
    query = f"{asked} (difference Protect Plus Premium)"
    first, verdict = answerability.assess_units(query, chunks, units, asked, follow_up=True)
    assert first[0].label.endswith("Free trial") and verdict.outcome == "answered"
    same, verdict = answerability.assess_units(asked, chunks, units, asked)
    assert same[0].label.endswith("Plans at a glance") and verdict.outcome == "partial"
    far = [units[0], AnswerUnit((trial,), 1.0, {})]  # not close: below SWITCH_RATIO of the best
    assert answerability.assess_units(query, chunks, far, asked, follow_up=True)[1].outcome == "partial"


def test_a_yes_no_question_is_answered_by_a_section_giving_another_value() -> None:
    """"Does it work on 5 GHz Wi-Fi?" against "cannot connect to 5 GHz; 2.4 GHz networks only" is answered (no); "which
    camera works on 5 GHz?" against a section that gives only 2.4 GHz asks for a case it does not describe."""
    cam = rc("c1", "Cam > Requirements\n\nKestrel Cam 2 needs a 2.4 GHz Wi-Fi network with WPA2.",
             ("Cam", "Requirements"), title="Cam manual")
    cam.scores = {"vector": 0.75, "keyword": 3.0}
    cam.ranks = {"vector": 1, "keyword": 1}
    unit = rank_units("Does Kestrel Cam 2 work on a 5 GHz network?", [cam])[0]
    assert answerability.assess("Does Kestrel Cam 2 work on a 5 GHz network?", [cam], unit).outcome == "answered"
    which = answerability.assess("Which network does Kestrel Cam 2 need on a 5 GHz network?", [cam], unit)
    assert which.outcome == "partial" and which.missing == ("5 ghz",)


def test_a_statement_ending_on_its_question_word_asks_for_a_fact() -> None:
    """"The second item of business on Wednesdays is usually what?" and "..., which PIN?" ask for a fact; "..., what
    now?" and "what to do?" still ask for steps."""
    assert intent("The second item of business on Wednesdays is usually what?") == "fact"
    assert intent("My Z-Wave lock asks for a PIN while pairing, which PIN?") == "fact"
    assert intent("Before the bill has been passed, it becomes an Act of what?") == "fact"
    assert intent("Thermostat blinking red, what now?") == "howto"
    assert intent("the app is down, what to do?") == "howto"
    assert intent("camera keeps going offline") == "howto"


def test_a_question_word_after_a_preposition_asks_for_a_fact() -> None:
    """"In what year ...?", "During what time frame ...?", "For how long ...?" ask for a fact (they were read as how-to
    questions, so no check of what they ask ran); a situation told first and "how do I" stays a how-to."""
    assert intent("During what time frame were the core classes limited to only 15 students?") == "fact"
    assert intent("In what year was the University of Chicago incorporated?") == "fact"
    assert intent("For how long is the Matter setup code valid?") == "fact"
    assert intent("To which address do I send a return?") == "fact"
    assert intent("In the app, how do I add a device?") == "howto"
    assert intent("After I changed my router, what should I do?") == "howto"
