"""Follow-up rewriting: turn "and when did it end?" into a standalone query using the conversation history.

With an LLM the model rewrites it (history bounded by tokens); without one, or when the model fails, a heuristic
adds the key terms of the previous user question to a question that looks like a follow-up.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence

from app.generation.backends.base import LLMBackend, complete
from app.generation.compose import SOURCE_LABEL, asks_nothing_of_its_own
from app.generation.text import content_terms, words
from core.errors import AppError

_FOLLOW_UP = frozenset(
    "it its they them their this that these those he she him her his there then such same one ones "  # noqa: SIM905
    "afterwards instead though too either else otherwise".split()
)
_LEADS = ("and ", "what about", "how about", "also", "but ", "why", "so ")

REWRITE_SYSTEM = (
    "Rewrite the user's last question as one standalone search question, using the conversation only to resolve "
    "references (it, they, that...). Output the question only, nothing else."
)


def bounded_history(
    history: Sequence[dict[str, str]], count_tokens: Callable[[str], int], max_tokens: int
) -> list[dict[str, str]]:
    """Newest turns that fit ``max_tokens`` (whole turns), in chronological order."""
    kept: list[dict[str, str]] = []
    used = 0
    for turn in reversed(history):
        t = count_tokens(turn.get("content", ""))
        if used + t > max_tokens:
            break
        kept.insert(0, turn)
        used += t
    return kept


def looks_like_follow_up(question: str) -> bool:
    """A question that leans on the conversation: a pronoun or other back-reference ("it", "that", "then"), a lead
    ("and ...", "what about ..."), or fewer than three content words ("when is the fix coming?", "what do I need to
    bring?": too little to stand alone)."""
    ws = words(question)
    q = question.strip().lower()
    return bool(ws) and (any(w in _FOLLOW_UP for w in ws) or q.startswith(_LEADS) or len(content_terms(question)) < 3)


def heuristic_rewrite(question: str, history: Sequence[dict[str, str]]) -> str:
    if not looks_like_follow_up(question):
        return question
    prev = next((t["content"] for t in reversed(history) if t.get("role") == "user"), "")
    if not prev:
        return question
    have = set(content_terms(question))
    prev_words = re.findall(r"[A-Za-z0-9][\w'-]*", prev)
    # the heading the previous answer quoted says what "that" is ("can I change that temperature?" after an answer
    # from *... › Eco mode and Away detection*)
    answer = next((t.get("content", "") for t in reversed(history) if t.get("role") == "assistant"), "")
    source = SOURCE_LABEL.search(answer or "")
    heading = re.findall(r"[A-Za-z0-9][\w'-]*", source.group(1).split(" › ")[-1]) if source else []
    extra = [w for w in [*prev_words, *heading] if content_terms(w) and content_terms(w)[0] not in have]
    if asks_nothing_of_its_own(question):
        # "and to the UK?" after "How much is shipping to Canada?" asks how much: the previous question's opening
        # words ("How much is") come along, so the query says what kind of answer it wants
        lead = list(itertools.takewhile(lambda w: not content_terms(w), prev_words))
        extra = [*lead, *extra]
    seen: list[str] = []
    for w in extra:
        if w.lower() not in (s.lower() for s in seen):
            seen.append(w)
    return f"{question.strip()} ({' '.join(seen)})" if seen else question


def asked_words(query: str, question: str) -> str:
    """What the user asked, out of the searched ``query``: the question itself when ``query`` is the heuristic
    rewrite (the question plus the previous question's words in parentheses, which are context), else ``query`` (a
    model's standalone rewrite, whose resolved names are part of the question)."""
    own = question.strip()
    return own if query != question and query.startswith(own + " (") else query


async def rewrite_query(
    question: str,
    history: Sequence[dict[str, str]],
    *,
    llm: LLMBackend | None = None,
    count_tokens: Callable[[str], int],
    max_history_tokens: int = 512,
) -> str:
    """Standalone version of ``question``; the question itself when there is no history."""
    if not history:
        return question
    turns = bounded_history(history, count_tokens, max_history_tokens)
    if llm is None or not looks_like_follow_up(question):
        return heuristic_rewrite(question, turns)
    convo = "\n".join(f"{t['role']}: {t.get('content', '')}" for t in turns)
    messages = [
        {"role": "system", "content": REWRITE_SYSTEM},
        {"role": "user", "content": f"Conversation:\n{convo}\n\nLast question: {question}\nStandalone question:"},
    ]
    try:
        out = (await complete(llm, messages, max_tokens=64, stop=["\n"], temperature=0.0)).strip()
    except AppError:
        out = ""
    return out if 3 <= len(out) <= 4 * len(question) + 200 else heuristic_rewrite(question, turns)
