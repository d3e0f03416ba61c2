"""The prompts sent to language models, and how sources and history are written into them.

The answer prompt is kept short on purpose: the default model has 135M parameters, and it answers
best from a few sentences with a plain instruction. It is given the evidence sentences
(rag/answering/evidence.py), not whole passages. Sources are trimmed
to a token budget (best passages first) so the prompt always fits the model's context window.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from rag.core.markers import MARKER, split_sentences
from rag.core.types import Source
from rag.text.words import content_stems

# ANSWER_PROMPT and REWRITE_PROMPT, LangChain chat prompts, are built from these on first use (see
# `__getattr__`): importing LangChain's prompt classes costs half a second that an extractive answer,
# which prompts no model, should not wait for.
ANSWER_MESSAGES = (
    (
        "system",
        "Answer the question from the numbered excerpts in one or two short sentences that state the fact "
        "asked for: the name, the number, the result, copied exactly. "
        "End each sentence with the number of the excerpt it uses, like [1].",
    ),
    # One worked example: the 135M model copies its shape (name the method, give the number, cite).
    # It is the same for every question, so llama.cpp reuses it from its cache instead of reading
    # it again. A model that copies the example's facts instead is caught by the citation checker:
    # 91% is in no real source.
    (
        "human",
        "[1] TinyFlow: Small Flows\nWe propose TinyFlow, a flow model that reaches 91% accuracy on 3 datasets.\n\n"
        "Question: How accurate is the small flow model?",
    ),
    ("ai", "TinyFlow reaches 91% accuracy [1]."),
    ("human", "{sources}\n\nQuestion: {question}"),
)

REWRITE_MESSAGES = (
    (
        "system",
        "Rewrite the user's last question so that it can be understood without the conversation, "
        "replacing words like 'it' or 'they' with what they refer to. Reply with the question only.",
    ),
    ("human", "Conversation:\n{history}\n\nLast question: {question}"),
)
_PROMPT_MESSAGES = {"ANSWER_PROMPT": ANSWER_MESSAGES, "REWRITE_PROMPT": REWRITE_MESSAGES}


def __getattr__(name: str):
    """`ANSWER_PROMPT` and `REWRITE_PROMPT`, built once, when first imported or read."""
    if name not in _PROMPT_MESSAGES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from langchain_core.prompts import ChatPromptTemplate

    prompt = globals()[name] = ChatPromptTemplate.from_messages(list(_PROMPT_MESSAGES[name]))
    return prompt


HISTORY_TURNS = 3  # a follow-up refers to the last few turns; older ones only cost prompt tokens
HISTORY_REPLY_CHARS = 300


def approximate_tokens(text: str) -> int:
    """A token count for models whose tokenizer we don't have: about four characters a token
    (abstracts measure about five with SmolLM2's tokenizer, so this errs on the safe side)."""
    return len(text) // 4 + 1


def fit_sources(sources: list[Source], budget: int, count_tokens: Callable[[str], int]) -> list[Source]:
    """The sources trimmed to about `budget` tokens of text, best passages first.

    Every source's best passage goes in before any source's second one; a passage that doesn't fit
    is cut to its leading whole sentences. The result is a prefix of `sources` (so `[n]` still means
    `sources[n - 1]`); a source whose best passage can't fit even one sentence ends the list.
    """
    passages = [_ranked_passages(source) for source in sources]
    kept: list[dict[int, str]] = [{} for _ in sources]
    used, included = 0, 0
    for round_ in range(max((len(p) for p in passages), default=0)):
        for n, ranked in enumerate(passages[: included if round_ else len(sources)]):
            if round_ >= len(ranked):
                continue
            position, text = ranked[round_]
            header = count_tokens(f"[{n + 1}] {sources[n].title}\n") if not kept[n] else 0
            room = budget - used - header
            text = _leading_sentences(text, room, count_tokens)
            if not text:
                if round_ == 0:
                    break  # keep the numbering contiguous: later sources would skip this one's number
                continue
            kept[n][position] = text
            used += header + count_tokens(text)
            included = max(included, n + 1) if round_ == 0 else included
    return [
        source.with_passages(replace(source.passages[i], text=kept[n][i]) for i in sorted(kept[n]))
        for n, source in enumerate(sources[:included])
    ]


def _ranked_passages(source: Source) -> list[tuple[int, str]]:
    """(position in the abstract, passage text), best-matching passage first."""
    parts = source.passages
    scores = [part.span.score if part.span else None for part in parts]
    if None in scores:
        return list(enumerate(part.text for part in parts))  # no per-passage scores: keep the stored order
    return sorted(enumerate(part.text for part in parts), key=lambda item: -(scores[item[0]] or 0.0))


def _leading_sentences(text: str, room: int, count_tokens: Callable[[str], int]) -> str:
    if room <= 0:
        return ""
    if count_tokens(text) <= room:
        return text
    taken = ""
    for sentence in split_sentences(text):
        longer = f"{taken} {sentence}".strip()
        if count_tokens(longer) > room:
            break
        taken = longer
    return taken


def format_sources(sources: list[Source]) -> str:
    """Numbered sources as the model sees them: `[n] title` then the passage text."""
    return "\n\n".join(f"[{n}] {source.title}\n{source.text}" for n, source in enumerate(sources, start=1))


def format_history(history: list[tuple[str, str]]) -> str:
    """The last few turns, long replies shortened: enough to resolve 'it' and 'they'."""
    lines = []
    for question, reply in history[-HISTORY_TURNS:]:
        reply = reply if len(reply) <= HISTORY_REPLY_CHARS else reply[:HISTORY_REPLY_CHARS].rsplit(" ", 1)[0] + " …"
        lines.append(f"User: {question}\nAssistant: {reply}")
    return "\n".join(lines)


REWRITE_LABEL = re.compile(r"^\s*(?:(?:rewritten|standalone|new|last)\s+)?question\s*:\s*", re.IGNORECASE)


def accept_rewrite(candidate: str, question: str, history: list[tuple[str, str]]) -> str | None:
    """The model's rewrite of a follow-up if it is a usable standalone question, else None.

    Small models often answer instead of rewriting, repeat the question unchanged, or echo the
    conversation. A rewrite is kept only if it is one line of sensible length, keeps at least half
    of the question's content words, brings in at least one word from the conversation, and cites nothing.
    """
    lines = [line.strip() for line in candidate.strip().splitlines() if line.strip()]
    if not lines:
        return None
    text = REWRITE_LABEL.sub("", lines[0]).strip().strip("\"'“”").strip()
    if (
        not 8 <= len(text) <= max(300, 3 * len(question))
        or MARKER.search(text)
        or re.search(r"^(user|assistant)\s*:", text, re.I)
    ):
        return None
    if question.strip().endswith("?") and not text.endswith("?"):
        return None
    words, asked = content_stems(text), content_stems(question)
    earlier = content_stems(" ".join(f"{q} {a}" for q, a in history[-HISTORY_TURNS:])) - asked
    if 2 * len(asked & words) < len(asked) or not words & earlier:
        return None
    return text
