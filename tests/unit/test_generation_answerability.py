"""Answerability decision, calibration helpers and follow-up rewriting."""

from __future__ import annotations

import numpy as np
import pytest

from app.generation import answerability
from app.generation.backends.base import complete
from app.generation.compose import intent
from app.generation.rewrite import bounded_history, heuristic_rewrite, looks_like_follow_up, rewrite_query
from app.generation.text import expected_answer
from core.types import ChunkRecord, RankedChunk
from evaluation.calibrate import best_threshold, fit_logistic, refusal_metrics
from tests.fakes import FakeRewriter

pytestmark = pytest.mark.unit


def rc(text: str, **scores: float) -> RankedChunk:
    return RankedChunk(
        chunk=ChunkRecord(id="c", tenant_id="t", document_id="d", document_version=1, title="T", text=text),
        score=1.0,
        scores=dict(scores),
        ranks={k: 1 for k in scores},
    )


Q = "Who designed the Kestrel K2 battery?"


def test_features() -> None:
    f = answerability.features(Q, [rc("The Kestrel K2 battery was designed by Ada.", keyword=9.0, vector=0.7)])
    assert f == {"coverage": 1.0, "agreement": 1.0, "vector": 0.7}


def test_dense_path_answers_on_strong_evidence_and_refuses_on_weak() -> None:
    strong = answerability.decide(Q, [rc("Ada designed the Kestrel K2 battery.", keyword=9.0, vector=0.75)])
    weak = answerability.decide(Q, [rc("Cats sleep most of the day.", vector=0.08)])
    assert strong.answerable and strong.model == "full"
    assert not weak.answerable and weak.probability < strong.probability


def test_lexical_path_when_vector_degraded() -> None:
    d = answerability.decide(Q, [rc("Ada designed the Kestrel K2 battery.", keyword=9.0)])
    assert d.model == "lexical" and d.answerable
    assert not answerability.decide(Q, [rc("Cats sleep.", keyword=1.0)]).answerable


def test_no_chunks_refuses() -> None:
    assert not answerability.decide(Q, []).answerable


def test_fit_logistic_separates_and_threshold_metrics() -> None:
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(0.7, 0.05, (50, 1)), rng.normal(0.2, 0.05, (50, 1))])
    y = np.array([1.0] * 50 + [0.0] * 50)
    w = fit_logistic(x, y)
    assert w[1] > 0
    p = 1 / (1 + np.exp(-(w[0] + w[1] * x[:, 0])))
    t = best_threshold(p, y)
    m = refusal_metrics(p, y, t)
    assert m["refusal_precision"] == 1.0 and m["refusal_recall"] == 1.0


HISTORY = [
    {"role": "user", "content": "When did the 1973 oil crisis begin?"},
    {"role": "assistant", "content": "In October 1973 [1]."},
]


def test_heuristic_rewrite() -> None:
    assert looks_like_follow_up("When did it end?")
    assert not looks_like_follow_up("Who founded the Kestrel company in Oslo?")
    assert looks_like_follow_up("do I have to pair all my sensors again afterwards?")
    assert looks_like_follow_up("I pay through the App Store though")
    # two content words say too little to stand alone: "the fix" is the one the conversation is about
    assert looks_like_follow_up("when is the fix coming?")
    assert not looks_like_follow_up("when is the Hub firmware fix coming?")
    out = heuristic_rewrite("When did it end?", HISTORY)
    assert out.startswith("When did it end?") and "oil" in out and "crisis" in out
    assert heuristic_rewrite("Who founded the Kestrel company in Oslo?", HISTORY) == (
        "Who founded the Kestrel company in Oslo?"
    )
    # an elliptical follow-up asks what the previous question asked: its opening words come along
    shipping = [{"role": "user", "content": "How much is shipping to Canada?"}]
    out = heuristic_rewrite("and to the UK?", shipping)
    assert out == "and to the UK? (How much is shipping Canada)"
    assert intent(out) == "fact" and expected_answer(out) is not None
    assert intent("and to the UK?") == "howto"  # alone it asks nothing: the default
    # a follow-up with a question word of its own keeps only the previous question's content words
    assert heuristic_rewrite("and how long does it take?", shipping) == "and how long does it take? (shipping Canada)"
    # the heading the previous answer quoted comes along too: it says what "that temperature" is
    eco = [{"role": "user", "content": "The thermostat keeps dropping to 16 degrees. Why?"},
           {"role": "assistant", "content": "From *Thermo User Manual › Eco mode and Away detection*:\nWhen ..."}]
    assert heuristic_rewrite("can I change that temperature?", eco) == \
        "can I change that temperature? (thermostat keeps dropping 16 degrees Eco mode Away detection)"


def test_bounded_history_keeps_newest() -> None:
    assert bounded_history(HISTORY, lambda s: len(s.split()), 5) == HISTORY[1:]


async def test_llm_rewrite_and_its_guard() -> None:
    llm = FakeRewriter("When did the 1973 oil crisis end?")
    out = await rewrite_query("When did it end?", HISTORY, llm=llm, count_tokens=llm.count_tokens)
    assert out == "When did the 1973 oil crisis end?" and "October 1973" in llm.prompts[0]
    empty = FakeRewriter("")
    out = await rewrite_query("When did it end?", HISTORY, llm=empty, count_tokens=empty.count_tokens)
    assert "crisis" in out  # heuristic when the model gives nothing usable
    assert await complete(llm, [{"role": "user", "content": "x"}], max_tokens=5) == llm.reply


def _chunk(text: str, title: str = "Warranty") -> RankedChunk:
    from core.types import ChunkRecord

    rec = ChunkRecord(id="c", tenant_id="t", document_id="d", document_version=1, title=title, text=text)
    return RankedChunk(chunk=rec, score=1.0, scores={"keyword": 9.0, "vector": 0.9})


def test_a_product_name_missing_from_the_evidence_is_refused() -> None:
    chunks = [_chunk("Kestrel Hub | 24 months. Kestrel Cam 2 | 12 months. Video history is kept 30 days.")]
    refused = answerability.decide("What is the warranty period of the Kestrel Video Doorbell?", chunks)
    assert not refused.answerable and refused.model.endswith("+names")
    assert answerability.missing_name_words("What is the warranty of the Kestrel Video Doorbell?", chunks) == [
        "doorbell"
    ]
    # names that are in the evidence, single capitalised words and numbers do not veto
    assert answerability.missing_name_words("How long is the Kestrel Cam 2 warranty?", chunks) == []
    assert answerability.missing_name_words("With Kestrel Hub, what happens?", chunks) == []
    assert answerability.missing_name_words("Does Zephyr work offline?", chunks) == []


def test_greetings_the_pronoun_i_and_possessives_are_not_names() -> None:
    chunks = [_chunk("How can I get new plates? Bring your New York State driver license and the plates to a DMV "
                     "office.", title="Plates")]
    for question in ("Hello I need information about How can I get new plates?",
                     "Yes I would like to know how I get new plates",
                     "Hi How are you today? Dp I need new plates?",
                     "Can I bring my New York State Driver's License to get new plates?"):
        assert answerability.missing_name_words(question, chunks) == [], question
    # a real name missing from the evidence still vetoes, greeting or not
    assert answerability.missing_name_words("Hello I need the New Jersey Motor Vehicle fee", chunks) == [
        "jersey", "motor", "vehicle"]


def test_a_question_written_like_a_heading_has_no_names_in_its_capitals() -> None:
    chunks = [_chunk("Exchange a NY State driver license for a non-driver ID card. You can exchange a New York State "
                     "driver license for a non-driver ID card.", title="Exchange a NY State driver license")]
    title = "How to Exchange a New York State Driver's License for a Non-Driver Identification Card"
    assert answerability.title_cased(title)
    assert answerability.missing_name_words(title, chunks) == []
    assert "identification" not in answerability.constraint_terms(title)
    # the same words asked as a sentence: "Non-Driver Identification Card" is a name the evidence does not have
    asked = "Can I exchange my license for a Non-Driver Identification Card?"
    assert not answerability.title_cased(asked)
    assert answerability.missing_name_words(asked, chunks) == ["identification"]
    # a question about a name capitalises the name, not the rest: still read for names
    for question in ("Can you explain the Veterans Educational Assistance Program?",
                     "What is the warranty of the Kestrel Video Doorbell?"):
        assert not answerability.title_cased(question), question


def test_a_product_whose_words_occur_apart_in_the_evidence_is_refused() -> None:
    chunks = [_chunk("Kestrel Cam 2 is for indoor use only, not outdoor use. The smart thermostat has a lock screen.")]
    for question, tail in (
        ("How long does the battery of the Kestrel Outdoor Cam last?", "outdoor cam"),
        ("How much does the Kestrel Smart Lock cost?", "smart lock"),
    ):
        assert answerability.missing_name_words(question, chunks) == []  # every word occurs somewhere...
        assert answerability.missing_name_tails(question, chunks) == [tail]  # ...but not side by side
        decision = answerability.decide(question, chunks)
        assert not decision.answerable and decision.model.endswith("+names"), question
    # the same words side by side, two-word names, trailing numbers and plurals do not veto
    assert answerability.missing_name_tails("Is the Kestrel Cam 2 for indoor use?", chunks) == []
    assert answerability.missing_name_tails("Where can the Kestrel Cam go?", chunks) == []
    plural = answerability.missing_name_tails(
        "Do Kestrel Indoor Cameras' lenses fog?", [_chunk("an Indoor Camera lens")]
    )
    assert plural == []


def test_a_date_the_asker_gives_is_no_name_and_is_met_by_its_month() -> None:
    window = ("You can return any product within 30 days of delivery. The return window for orders delivered between "
              "November 15 and December 31 is extended until January 31 of the following year.")
    question = "Bought a camera on Dec 10 as a Christmas present. Can they still return it in January?"
    assert answerability.missing_name_words(question, [_chunk(window)]) == []  # "Dec 10" was a missing name
    assert answerability.missing_constraints(question, window) == ["christmas"]  # "dec 10" and "dec": December
    # a month the text does not name is still missing, and a real name beside a date still vetoes
    assert answerability.missing_constraints("What changed in the March 3 update?", "Version 3.4.1 (February 9)") == [
        "march 3", "march"]
    assert answerability.missing_name_words("Was the Kestrel Video Doorbell out on Sept 4?", [_chunk(window)]) == [
        "kestrel", "video", "doorbell"]


def test_a_time_of_day_the_asker_gives_is_met_by_a_text_that_gives_one() -> None:
    cutoff = "Orders placed before 1:00 p.m. Pacific Time on a business day leave the warehouse the same day."
    assert answerability.missing_constraints("If I order at 3pm when will it ship?", cutoff) == []
    assert answerability.missing_constraints("If I order at 3pm when will it ship?", "Orders ship within 2 days.") == [
        "3pm"]
    # a weekday is met by its plural ("on Tuesdays"), and still missing where the text names no day
    window = "Maintenance runs on Tuesdays between 1:00 and 3:00 a.m. Pacific Time."
    assert answerability.missing_constraints("The app was down on Tuesday night around 2am, was that you?",
                                             window) == []
    assert answerability.missing_constraints("Is support open on Sunday?", "Open Monday to Friday, 8 to 4.") == [
        "sunday"]


def test_a_negated_fact_question_is_partial_when_the_matching_sentence_states_the_plain_fact() -> None:
    """'What did the Normans never conquer?' asks for the exception; a passage that says what they conquered answers
    another question (SQuAD v2 makes unanswerable questions so)."""
    plain = ["Normans > Conquests\n\nThe Normans conquered England in 1066 and southern Italy by 1091."]
    assert answerability.missing_negation("What did the Normans never conquer?", plain) == ["never conquer"]
    assert answerability.missing_negation("Which countries didn't join the treaty?",
                                          ["Five countries joined the treaty in 1990."]) == ["didn't join"]
    # the matching sentence has its own negation or limit: it may answer; no negation asked: nothing missing
    assert answerability.missing_negation("What did the Normans never conquer?",
                                          ["The Normans never conquered Scotland."]) == []
    assert answerability.missing_negation("Which plans do not include cloud video?",
                                          ["Only the Premium plan includes cloud video history."]) == []
    assert answerability.missing_negation("What did the Normans conquer?", plain) == []
    assert answerability.missing_negation("Was it not only the Normans who conquered England?", plain) == []


def test_a_question_that_asks_for_the_opposite_of_what_the_text_says_is_partial() -> None:
    """'What is the smallest city in Normandy?' against 'Rouen is the largest city in Normandy': the text answers the
    opposite question (SQuAD v2 makes unanswerable questions so)."""
    text = ["Normandy > Cities\n\nRouen is the largest city in Normandy."]
    assert answerability.missing_opposite("What is the smallest city in Normandy?", text) == ["smallest"]
    assert answerability.missing_opposite("Who was the last Norman duke?", ["Rollo was the first Norman duke."]) == [
        "last"]
    # the asked word is there, or its opposite is not: nothing missing
    assert answerability.missing_opposite("What is the largest city in Normandy?", text) == []
    assert answerability.missing_opposite("What is the smallest city in Normandy?",
                                          ["The smallest city in Normandy is Y; the largest is Rouen."]) == []
    assert answerability.missing_opposite("Who was the first Norman duke?", ["Rollo was a Norman duke."]) == []


def test_a_price_question_needs_the_price_of_what_it_names() -> None:
    """A section that names the Power Adapter Kit beside another product's price does not price the kit; a plan
    table's row is read with its column names; a name the section never mentions is reported on its own."""
    products = ("Our products\n\n- Kestrel Room Sensor and Power Adapter Kit: accessories for Kestrel Thermo.\n"
                "- Kestrel Protect Plus costs 3.99 US dollars a month.")
    kit = "How much does the Kestrel Power Adapter Kit cost if I buy it on its own?"
    assert answerability.missing_focus(kit, products, "About Kestrel > Our products") == ["price"]
    assert answerability.missing_focus(kit, products + "\n- The Power Adapter Kit costs 19 US dollars.") == []
    table = ("| | Protect Plus | Protect Premium |\n|---|---|---|\n"
             "| Monthly price | 3.99 US dollars | 9.99 US dollars |")
    assert answerability.missing_focus("How much is Protect Premium per month?", table, "Plans at a glance") == []
    assert answerability.missing_focus("How much is shipping to Canada?",
                                       "| Destination | Cost |\n|---|---|\n| Canada | 9.95 US dollars |") == []
    # "in Australia": the section never names it, so only the name is missing, and the price rule leaves it to that
    assert answerability.missing_constraints("How much is Protect Premium in Australia?", table) == ["australia"]
    assert answerability.missing_focus("How much is Protect Premium in Australia?", table, "Plans") == []


def test_an_elliptical_follow_up_must_be_answered_about_its_new_subject() -> None:
    """"and the thermostat, does that have a backup battery too?" after a question on the Hub: the Hub's battery
    section does not answer it (it was answered from there, as if about the Hub)."""
    follow_up = "and the thermostat, does that have a backup battery too?"
    assert intent(follow_up) == "fact"  # it asks "does that have ...", not for steps
    assert intent("and how do I reset it?") == "howto"
    assert answerability.focus_terms(follow_up) == ["thermostat"]
    assert answerability.focus_terms("what about the Thermo?") == ["thermo"]
    assert answerability.focus_terms("and can I set the humidity level it aims for?") == []
    hub = "Backup battery\n\nWhen mains power fails, the built-in battery keeps the Hub and its radios running."
    assert answerability.missing_focus(follow_up, hub, "Kestrel Hub User Manual > Backup battery") == ["thermostat"]
    thermo = "Power\n\nThe thermostat has no battery; it is powered by the C-wire."
    assert answerability.missing_focus(follow_up, thermo, "Kestrel Thermo User Manual > Power") == []


def test_a_number_within_a_bound_the_section_sets_is_not_missing() -> None:
    """"Ordering a 600 dollar bundle, do I need to be home to sign?" is answered by "Orders worth more than 500 US
    dollars require a signature" (it was partial: "nothing about 600"); a number below the bound, of another kind,
    or of no known kind still is missing."""
    rule = "Orders worth more than 500 US dollars require a signature on delivery."
    assert answerability.missing_constraints("Ordering a 600 dollar bundle, do I need to sign?", rule) == []
    assert answerability.missing_constraints("Ordering a 400 dollar bundle, do I need to sign?", rule) == ["400"]
    fixed = "Fixed a problem where microSD cards larger than 128 GB were reported with error E19."
    assert answerability.missing_constraints("My 256 GB card shows E19. Is that fixed?", fixed) == []
    assert answerability.missing_constraints("My 256 GB card shows E19. Is that fixed?",
                                             "Cards kept for more than 128 days show E19.") == ["256"]
    assert answerability.missing_constraints("I have 300 photos, can I keep them?", "Keep up to 500 photos.") == []
    assert answerability.missing_constraints("I have 300 photos, can I keep them?", "Keep up to 500 videos.") == \
        ["300"]


def test_a_question_naming_another_member_of_a_closed_class_than_the_text_is_partial() -> None:
    """Ordinals, seasons, compass points and weekdays exclude each other: "the *winter* carnival" against a text on the
    summer carnival, "the *fourth* quarter" against the third, answer another question (SQuAD v2 makes unanswerable
    questions so; filings ask for quarters). "Final" means "last"; "second" of time is no ordinal."""
    summer = ["The university holds a summer carnival and concert called Summer Breeze."]
    assert answerability.missing_opposite("What is the university's winter carnival called?", summer) == ["winter"]
    assert answerability.missing_opposite("What is the university's summer carnival called?", summer) == []
    quarter = ["Revenue in the third quarter was 41 million US dollars."]
    assert answerability.missing_opposite("What was revenue in the fourth quarter?", quarter) == ["fourth"]
    assert answerability.missing_opposite("What was the last major evolution of the steam engine?",
                                          ["The final major evolution of the steam engine was the turbine."]) == []
    assert answerability.missing_opposite("Which way does the Rhine travel southwest?",
                                          ["The Rhine followed a course to the northwest."]) == ["southwest"]
    assert answerability.missing_opposite("Does maintenance run on Tuesday nights?",
                                          ["Maintenance runs on Tuesdays between 1:00 and 3:00 a.m."]) == []
    listed = ["The exchange had 374 companies listed as of 31 August 2009."]
    assert answerability.missing_opposite("How many companies were listed on the WSE in April 2009?", listed) \
        == ["april"]
    # "may" asks what someone may do, "march" is a verb: no month
    assert answerability.missing_opposite("What may operators do when the exchange closes in August?", listed) == []
    assert answerability.missing_opposite("Does maintenance run on Monday nights?",
                                          ["Maintenance runs on Tuesdays between 1:00 and 3:00 a.m."]) == ["monday"]
    assert answerability.missing_opposite("How many frames per second does the first camera record?",
                                          ["The first camera records 30 frames per second."]) == []


def test_a_number_put_on_a_thing_the_section_counts_otherwise_is_missing() -> None:
    """"Where does the 8 county megaregion extend from?" against "the 10-county definition": the section does not
    describe 8 counties. The asker's own numbers ("I have 3 cameras") are their situation, and a number the section
    also gives is met, spelled or in digits."""
    text = "The more extensive 10-county definition is also used; the 8-county region is the core."
    assert answerability.missing_count("Where does the 9 county megaregion extend from?", text) == ["9 county"]
    assert answerability.missing_count("Where does the eight county region extend from?", text) == []
    assert answerability.missing_count("Where does the 10-county definition come from?", text) == []
    assert answerability.missing_count("I have 3 cameras, does one plan cover them?", "Covers up to 10 cameras.") == []
    assert answerability.missing_count("What debate lasts for 55 minutes?", "Members speak for up to four minutes.") \
        == ["55 minutes"]
    assert answerability.missing_count("What happened in 1994?", "The 1857 earthquake was stronger.") == []


def test_a_figure_put_at_another_scale_than_the_sections_is_missing() -> None:
    """"What earthquake caused *$20 million* in damage?" against "estimated at over $20 billion": the same figure at
    another scale is another figure; the same scale, or another figure altogether, is not this check's business."""
    text = "It caused the most property damage of any earthquake in U.S. history, estimated at over $20 billion."
    assert answerability.missing_count("What earthquake caused $20 million in damage?", text) == ["20 million"]
    assert answerability.missing_count("What earthquake caused $20 billion in damage?", text) == []
    assert answerability.missing_count("What earthquake caused $5 million in damage?", text) == []


def test_the_focus_of_a_question_ending_on_its_noun_and_a_counted_phrase() -> None:
    """"What is the Victoria state *color*?" names its focus at the end; "How many full time *janitors* does Victoria
    have?" counts a phrase, not its first word. A word typed without its accent matches the text's ("wustite" and
    "wüstite")."""
    assert answerability.focus_terms("What is the Victoria state color?") == ["victoria", "state", "color"]
    assert answerability.focus_terms("How many full time janitors does Victoria have?") == ["full", "janitor"]
    assert answerability.focus_terms("How many cameras can one plan cover?") == ["camera"]
    teachers = "Victoria has about 63,519 full-time teachers."
    assert answerability.missing_focus("How many full time janitors does Victoria have?", teachers) == ["janitor"]
    assert answerability.missing_focus("What is the mineral wustite?", "Iron oxide occurs as the mineral wüstite.") \
        == []


def test_a_year_decade_or_century_focus_is_answered_by_its_form() -> None:
    """"In which *year* ...?" is answered by "in 1900", "which *decade*" by "the 1940s", "what *century*" by "the 19th
    century" or "the nineteenth": the word itself need not be there; a section without such a form still lacks it."""
    text = "In 1900 the Los Angeles Times defined southern California as the seven counties."
    assert answerability.missing_focus("In which year did the newspaper define southern California?", text) == []
    assert answerability.missing_focus("Which decade saw the change?", "After the 1940s, the style changed.") == []
    assert answerability.focus_terms("Which century was the abbey built in?") == ["century"]
    assert answerability.missing_focus("Which century was the abbey built in?", "It was built in the nineteenth.") == []
    assert answerability.missing_focus("In which year did the newspaper define it?", "The newspaper defined it.") \
        == ["year"]


def test_a_question_asking_with_an_antonym_or_a_negating_prefix_of_the_texts_word_is_partial() -> None:
    """"What debates are *closed* to the public?" against "debates are open to the public", "the *irrelevant*
    committees" against "the relevant committee": the text answers another question. A word the text also has, or a
    short stem ("income" is not "come"), is nothing missing."""
    open_ = ["Most debates in the chamber are open to the public."]
    assert answerability.missing_opposite("What debates are closed to the public?", open_) == ["closed"]
    assert answerability.missing_opposite("What debates are open to the public?", open_) == []
    stage = ["Stage 1 usually takes place in the relevant committee or committees."]
    assert answerability.missing_opposite("What stage usually takes place in the irrelevant committees?", stage) == [
        "irrelevant"]
    assert answerability.missing_opposite("What stage takes place in the relevant committee?", stage) == []
    assert answerability.missing_opposite("When was the service launched officially?",
                                          ["The service was unofficially launched in 1998."]) == ["officially"]
    assert answerability.missing_opposite("What income do members come with?",
                                          ["Members come with their own staff."]) == []
    # "how long", "how old" and "what right" ask no opposite
    assert answerability.missing_opposite("How long is the warranty?", ["A short warranty of one year applies."]) == []


def test_a_name_the_section_mentions_but_not_where_it_answers_is_unlinked() -> None:
    """"Who do preparatory schools in Scotland prepare to enter public schools?" meets a section whose answering
    sentence is about the UK and that names Scotland elsewhere: partial, and the note says the section names Scotland,
    not that the documents never do. A name in the sentence before, or in the heading, links it; the asker's own
    situation and how-to questions are left alone."""
    from app.generation.units import AnswerUnit

    def unit(text: str, section: tuple[str, ...] = ("Private school",)) -> AnswerUnit:
        record = ChunkRecord(id="c1", tenant_id="t", document_id="d1", document_version=1, title="Private school",
                             text=text, section_path=section)
        c = RankedChunk(record, 1.0)
        c.scores = {"vector": 0.8, "keyword": 5.0}
        c.ranks = {"vector": 1, "keyword": 1}
        return AnswerUnit((c,), 1.0, {})

    uk = unit("Preparatory schools in the UK prepare pupils aged up to 13 years old to enter public schools. "
              "In Scotland, about 4% of children are educated at independent schools.")
    question = "Who do preparatory schools in Scotland prepare to enter public schools?"
    assert answerability.unlinked_names(question, uk) == ["scotland"]
    verdict = answerability.assess(question, list(uk.chunks), uk)
    assert verdict.outcome == "partial" and verdict.missing == () and verdict.unlinked == ("scotland",)
    note = answerability.missing_text(["scotland"], ["scotland"])
    assert "mentions “scotland”, but not where it answers" in note and "do not say anything" not in note
    assert answerability.missing_text(["2025", "scotland"], ["scotland"]).startswith(
        "The documents found do not say anything about “2025”. The section found mentions “scotland”")
    before = unit("Scotland has its own school system. Its preparatory schools prepare pupils to enter public schools.")
    assert answerability.unlinked_names(question, before) == []
    headed = unit("Preparatory schools prepare pupils to enter public schools.", ("Private school", "Scotland"))
    assert answerability.unlinked_names(question, headed) == []
    mine = answerability.assess("Which school in Scotland should my son enter?", list(uk.chunks), uk)
    assert mine.unlinked == ()
