"""What a question asks for, read by rules: its kind, and the filters it states in words.

"Which oral papers are about mixture-of-experts?" is a *list* question restricted to status Oral;
"how many accepted RL papers study offline RL?" a *count* over Oral/Spotlight/Poster papers of the
reinforcement-learning area; "compare RxnFlow and SynFlowNet" a *compare* of two named papers;
anything else a *lookup*. Filter words are removed from the text retrieval ranks on, so "oral"
does not pull in papers about oral health, and the filters go to `Filters`. Deterministic and
fast; every rule is a pattern here or in filter_words.py (the words that state a filter), tested on the
dev split of tests/eval/list_questions.jsonl.

A filter word counts only where it qualifies the papers asked about ("oral papers", "accepted RL
papers", "papers by Yoshua Bengio", "papers with code"), not where it is part of the topic
("papers about reinforcement learning" keeps RL as the topic).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

import numpy as np

from rag.core.filters import Filters
from rag.core.types import Kind
from rag.question.filter_words import (
    AREA_FULL,
    AREA_IN,
    AREA_NAMED,
    AREA_NAMES,
    AUTHOR,
    BEFORE_PAPERS,
    PAPERS,
    PLURAL_STATUS,
    RATE,
    SAID_STATUS,
    SHARE_WORDS,
    STATUS_AFTER,
    STATUS_AT,
    STATUS_OF_PAPERS,
    WITH_CODE,
    areas_in,
    decision,
    modified_area,
    names_nothing,
    said_statuses,
    statuses_in,
    stored_author,
)
from rag.question.learned import Reader, shipped
from rag.question.overview_words import asks_about_evaluation, asks_for_overview, overview_topic
from rag.question.related import but_for, pasted_abstract, related_question
from rag.question.spans import trims
from rag.question.tally import COUNT, SEVERAL, Tally, tally_of, told_tally

LEAD_IN = re.compile(r"^(?:(?:in|on|about|of|for|the|regarding|around|into|within|to)\s+)+", re.IGNORECASE)
RATE_WORD = re.compile(rf"\s+(?:{SHARE_WORDS})\b", re.IGNORECASE)  # after a decision: "acceptance rate"
TOPICAL = (Kind.LIST, Kind.COUNT, Kind.OVERVIEW, Kind.READING_LIST)  # the kinds about a topic's papers
LIST = re.compile(
    rf"^\W*(?:(?:which|what)\s+{SEVERAL}|{SEVERAL}\s+(?=about|on|that|which|with|by)"
    rf"|(?:please\s+)?(?:show|list|find|give|name)\s+(?:me\s+)?(?:all\s+)?(?:the\s+)?{SEVERAL}"
    rf"|are\s+there\s+(?:any\s+)?{SEVERAL})",
    re.IGNORECASE,
)
# A request's verb before the topic, papers named or not: "list hypergraph papers …", "show me all …".
REQUEST = re.compile(
    r"^\W*(?:(?:please|pls|can\s+you|could\s+you)\s+)?(?:show|list|find|give|get|name|enumerate|pull\s+up)"
    r"\s+(?:me\s+|us\s+)?(?:all\s+|every\s+)?(?:the\s+)?",
    re.IGNORECASE,
)
ASPECT = re.compile(r"\s+(?:for|in|on|regarding|with\s+respect\s+to|in\s+terms\s+of)\s+", re.IGNORECASE)
SHORT = r"[\w.+-]+(?:\s+[\w.+-]+){0,3}"  # a method's or paper's name, not a clause
COMPARE = re.compile(
    r"^\W*(?:compare|contrast)\s+(?P<a>.+?)\s+(?:and|with|to|vs\.?|versus)\s+(?P<b>.+?)[\s.?!]*$"
    rf"|^\W*(?:how\s+(?:does|do)\s+)?(?P<a2>{SHORT})\s+(?:vs\.?|versus|compare\s+(?:to|with))\s+(?P<b2>{SHORT})[\s.?!]*$"
    rf"|^\W*what(?:'s|\s+is)\s+the\s+difference\s+between\s+(?P<a3>{SHORT})\s+and\s+(?P<b3>{SHORT})[\s.?!]*$",
    re.IGNORECASE,
)
# "…, excluding LLMs" / "but not vision" / "other than RL": what a list leaves out. Not "without", which
# often belongs to a topic ("fine-tuning without backpropagation").
LEFT_OUT = re.compile(
    r"[,;]?\s+(?:but\s+not|excluding|except(?:\s+for)?|other\s+than|not\s+(?:about|on|using))\s+(?P<left>[^,;?!.]+)",
    re.IGNORECASE,
)
# One of the alternatives "A or B" joins: a name of up to four words with no preposition in it.
ALTERNATIVE = re.compile(r"^(?!.*\b(?:in|for|of|as|to|with|from|on|by|via|using|under)\b)\S+(?:\s+\S+){0,3}$", re.I)


@dataclass(frozen=True)
class Topic:
    """What a question about many papers is about: the words a list ranks on, and what it leaves out."""

    text: str
    left_out: str = ""  # what "… excluding LLMs" leaves out (papers whose title names it)
    alternatives: tuple[str, ...] = ()  # "flow matching or rectified flow": each ranked on its own
    about_evaluation: bool = False  # an overview of how a field evaluates (themes group how papers evaluate)


@dataclass(frozen=True)
class Understood:
    """A question as retrieval takes it: the text to rank on, the filters stated, the kind."""

    question: str  # as asked
    text: str  # what retrieval ranks on: the question without its filter words
    kind: Kind = Kind.LOOKUP
    filters: Filters = field(default_factory=Filters)  # stated in words; explicit filters win over these
    compared: tuple[str, ...] = ()  # for compare: the two things named
    topic: Topic | None = None  # for list, count, overview, and a tally of a topic's papers: what they are about
    subject: str = ""  # for related: the paper named (its name, title or id), or the abstract pasted in
    pasted: str | None = None  # for related: the abstract pasted in ("related to my abstract: …"), if any
    tally: Tally | None = None  # for tally: the field grouped by, how many groups, the topic
    restrict: str = ""  # for related: the topic the papers like the subject are among ("… but for web navigation")

    @classmethod
    def literal(cls, question: str) -> Understood:
        """A question taken literally (`questions.understand` off): a look-up of its own words, no filters."""
        return cls(question, question)

    def applied(self, explicit: Filters, dropped: frozenset[str] = frozenset()) -> Filters:
        """The filters a search uses: each field given explicitly, else the one understood (unless dropped)."""
        understood = {spec.name: value for spec, value in self.filters.active() if spec.name not in dropped}
        return Filters(**(understood | {spec.name: value for spec, value in explicit.active()}))

    def in_use(self, explicit: Filters, dropped: frozenset[str] = frozenset()) -> Filters:
        """The understood filters a search applies: those not overridden by `explicit`, nor dropped."""
        return self.applied(Filters(), dropped | {spec.name for spec, _ in explicit.active()})

    def labels(self) -> list[str]:
        """The understood filters in words, e.g. ['status: Oral', 'has_code: yes']."""
        return self.filters.labels()


def understand(
    question: str,
    known_author: Callable[[str], bool] = lambda name: True,
    embedding: np.ndarray | None = None,
    authors: Mapping[str, str] = MappingProxyType({}),
) -> Understood:
    """The kind of `question` and the filters it states, with those words cut from the ranking text.

    "by <Name>" counts only when `known_author(name)`: a title asked as a question ("… Guided by
    Progressive Self-Reasoning") names no author. Without "by", a run of words that is a stored author's whole
    name (`authors`: casefolded -> as stored) is one, in any case ("sergey levine offline rl papers"). Given the
    question's `embedding` (the bundled MiniLM's), the learned reader has the last word on the kind and reads the
    spans it needs (`relearned`)."""
    statuses: list[str] = []
    areas: list[str] = []
    cuts: list[tuple[int, int]] = []

    def take(span: tuple[int, int], found_status: list[str], found_area: list[str]) -> None:
        if (found_status or found_area) and not any(start <= span[0] < end for start, end in cuts):
            statuses.extend(s for s in found_status if s not in statuses)
            areas.extend(a for a in found_area if a not in areas)
            cuts.append(span)

    for match in AREA_FULL.finditer(question):  # an area's name in full: "… in learning on time series and …"
        take(match.span("cut"), [], [AREA_NAMES[match["words"].casefold()]])
    for match in BEFORE_PAPERS.finditer(question):
        area_at = modified_area(question, match)  # "offline RL papers": RL is the topic's
        start, end = match.start("words"), match.end("words") if area_at is None else area_at
        take((start, end), statuses_in(question[start:end]), areas_in(question[start:end]))
    for pattern in (STATUS_AFTER, STATUS_OF_PAPERS, STATUS_AT, AREA_NAMED, AREA_IN, PLURAL_STATUS):
        for match in pattern.finditer(question):
            words = next(match[name] for name in ("words", "bare") if name in match.re.groupindex and match[name])
            span = match.span("cut" if "cut" in match.re.groupindex else "words")
            take(span, statuses_in(words), areas_in(words))
    author = ""
    by = AUTHOR.search(question)
    named = next((name for name in by.groups() if name), "") if by else ""
    # Said "by X", X is a name if a stored author is that person; said otherwise ("X's", "did X write"), only a
    # name a question may say without "by" (`authors`): "… in Diffusion Models'?" names no author.
    as_name = by is not None and (by["author"] or not authors or named.casefold() in authors)
    if by and as_name and known_author(named):
        author = named
        cuts.append(by.span())
    elif whole := stored_author(question, authors):
        author, span = whole
        cuts.append(span)
    has_code = None
    if code := WITH_CODE.search(question):
        has_code = True
        cuts.append(code.span())
    filters = Filters.of(status=statuses, primary_area=areas, author=author, has_code=has_code)
    text = _cut(question, cuts)
    kind, compared = _kind(question, text)
    understood = _narrower(Understood(question, text or question, kind, filters, compared))
    read = _rated(understood if embedding is None else relearned(understood, embedding))
    return _restricted(_decided(_by_filters(read, text)))


def _by_filters(understood: Understood, left: str) -> Understood:
    """A question that states filters (a decision, an area, an author) and names nothing else is a list of the
    papers they admit ("Percy Liang papers", "list the orals in the RL area"): no topic, answered from the stored
    metadata (rag/answering/filtered.py); a look-up or list of request words alone found no paper. `left`: the
    question without its filters' words (empty for "spotlights in the time series area")."""
    stated = understood.filters.status or understood.filters.primary_area or understood.filters.author
    if not stated or understood.kind not in (Kind.LOOKUP, Kind.LIST):
        return understood
    if not names_nothing(SAID_STATUS.sub(" ", left)):
        return understood  # a decision's words are the next step's (`_decided`)
    return replace(understood, kind=Kind.LIST, topic=None)


def _decided(understood: Understood) -> Understood:
    """A question about many papers filtered to the decision it says anywhere (`said_statuses`: "withdrawn
    gaussian splatting papers", "… accepted only", "… that got in"), its words out of the topic, where no pattern
    read one or it says fewer or more ("accepted as posters", "desk rejected or withdrawn"). Not a look-up or a
    compare, which ask of named papers ("was X accepted?"), nor a count grouped by decision ("how many orals,
    posters, rejects each?")."""
    if understood.kind in (Kind.LOOKUP, Kind.COMPARE) or (understood.tally and understood.tally.field == "status"):
        return understood
    said, held = said_statuses(understood.question), set(understood.filters.status)
    if not said or (held and not (set(said) < held or set(said) > held)):
        return understood
    topic = understood.topic and replace(understood.topic, text=_undecided(understood.topic.text))
    if topic is not None and not topic.text:
        return understood
    if topic is not None:
        topic = replace(topic, alternatives=tuple(alternatives(topic.text)))
    tally = understood.tally and replace(understood.tally, topic=_undecided(understood.tally.topic))
    filters = replace(understood.filters, status=tuple(said))
    return replace(understood, text=_undecided(understood.text), filters=filters, topic=topic, tally=tally)


def _undecided(text: str) -> str:
    return re.sub(r"\s+", " ", SAID_STATUS.sub(" ", text)).strip(" ,;:—–-")


def _restricted(understood: Understood) -> Understood:
    """A related question's "but for Y" read apart from the paper it is like."""
    if understood.kind != Kind.RELATED or understood.pasted is not None:
        return understood
    subject, restrict = but_for(understood.question, understood.subject)
    return replace(understood, subject=subject, restrict=restrict)


def _rated(understood: Understood) -> Understood:
    """A count over the metadata with a decision said as a rate or as events ("the acceptance rate per area",
    "the share of withdrawals"), filtered to it, and a rate is a share ("order the areas by acceptance rate");
    in any other question the words are a topic's ("the acceptance rate of draft tokens" in speculative
    decoding)."""
    said = list(RATE.finditer(understood.question))
    if understood.kind != Kind.TALLY or understood.filters.status or not said:
        return understood
    statuses = [status for match in said for status in statuses_in(decision(match["words"]))]
    as_rate = any(RATE_WORD.match(understood.question, match.end()) for match in said)
    tally = replace(understood.tally, share=True) if as_rate and understood.tally else understood.tally
    filters = replace(understood.filters, status=tuple(dict.fromkeys(statuses)))
    return replace(understood, filters=filters, tally=tally)


def relearned(understood: Understood, embedding: np.ndarray) -> Understood:
    """`understood` as the learned reader reads it (learned.py): its kind and the spans that kind needs where
    they differ from the rules' (`_learned_kind`), and a count asked as a share ("what fraction of …", "the
    acceptance rate per area") a tally of shares."""
    reader = shipped()
    features = reader.features(understood.question, understood.kind, embedding)
    read = _learned_kind(understood, reader, features)
    if read.kind in (Kind.TALLY, Kind.COUNT) and reader.measures.best(features) == "share":
        tally = read.tally or Tally(None, "", None, False, read.topic.text if read.topic else "")
        return replace(read, kind=Kind.TALLY, tally=replace(tally, share=True))
    return read


def _learned_kind(understood: Understood, reader: Reader, features: np.ndarray) -> Understood:
    """The kind the learned reader reads, where it differs from the rules', and the spans that kind needs (a
    topic, the paper related papers are like, the two compared, the field a tally groups by). Where the
    reader finds no span the kind needs, or an abstract is pasted in ("similar to my abstract: …"), the rules'
    reading stands."""
    if understood.pasted is not None:  # an abstract pasted in: its words are no question's
        return understood
    kind = reader.kind(features)
    if kind == understood.kind:  # the rules' reading, with the learned topic ("how many X papers are there": X)
        span = reader.spans(understood.text, kind).topic if kind in TOPICAL else ""
        return (
            replace(understood, topic=_topic(understood, span))
            if span and not (understood.topic and trims(understood.topic.text, span))
            else understood
        )
    spans = reader.spans(understood.question, kind)
    plain = replace(understood, kind=kind, topic=None, subject="", pasted=None, tally=None, compared=())
    if kind == Kind.TALLY:
        field = reader.groups.best(features) or None
        if field is None and spans.topic:  # "how many papers on X": a count of the topic's papers
            kind, plain = Kind.COUNT, replace(plain, kind=Kind.COUNT)
        else:
            tally = told_tally(understood.text, field, spans.topic)
            return replace(plain, tally=tally, topic=topic_of(plain, tally.topic) if tally.topic else None)
    if kind in TOPICAL and (topic := reader.spans(understood.text, kind).topic):  # without the filters' words
        return replace(plain, topic=_topic(plain, topic))
    if kind == Kind.RELATED and spans.anchor:
        return replace(plain, subject=spans.anchor, pasted=pasted_abstract(spans.anchor))
    if kind == Kind.COMPARE and spans.anchor and spans.other:
        return replace(plain, compared=(spans.anchor, spans.other))
    if kind == Kind.READING_LIST:  # "which of these should I read first?": of the papers in focus, if any
        return plain
    return plain if kind == Kind.LOOKUP else understood


def _topic(understood: Understood, span: str) -> Topic:
    """The topic of a learned span (without the words that lead into it: "in graph neural networks"), with what
    the question leaves out ("…, excluding X" after the span)."""
    topic = topic_of(understood, LEAD_IN.sub("", span) or span)
    if not topic.left_out and (left := LEFT_OUT.search(understood.text)):
        topic = replace(topic, left_out=left["left"].strip())
    return topic


def _narrower(understood: Understood) -> Understood:
    """The narrower kinds win: "Which papers are most similar to X?" also reads as a list, and "how many
    papers were withdrawn?" as a count of a topic's papers."""
    if (subject := related_question(understood.question)) is not None:
        return replace(understood, kind=Kind.RELATED, subject=subject, pasted=pasted_abstract(subject))
    if (tally := tally_of(understood)) is not None:
        topic = topic_of(understood, tally.topic) if tally.topic else None
        return replace(understood, kind=Kind.TALLY, tally=tally, topic=topic)
    if understood.kind in (Kind.LIST, Kind.COUNT, Kind.OVERVIEW):
        return replace(understood, topic=topic_of(understood))
    return understood


def _cut(question: str, spans: list[tuple[int, int]]) -> str:
    text, last = "", 0
    for start, end in sorted(spans):
        if start >= last:
            text += question[last:start] + " "
            last = end
    text += question[last:]
    return re.sub(r"\s+([?.!,])", r"\1", re.sub(r"\s+", " ", text)).strip(" ,")


def _kind(question: str, text: str) -> tuple[Kind, tuple[str, ...]]:
    if COUNT.search(question):
        return Kind.COUNT, ()
    if match := COMPARE.search(text):
        named = (match["a"] or match["a2"] or match["a3"], match["b"] or match["b2"] or match["b3"])
        # "Compare Palu and MatryoshkaKV for KV-cache compression": the names, not what they are for.
        return Kind.COMPARE, tuple(ASPECT.split(name, maxsplit=1)[0].strip(" '\"“”") for name in named)
    if asks_for_overview(text):  # "what are the main approaches to X": a field, before "what methods … papers"
        return Kind.OVERVIEW, ()
    if LIST.search(question):
        return Kind.LIST, ()
    return Kind.LOOKUP, ()


def alternatives(topic: str) -> list[str]:
    """The topics a "papers on A or B" question joins: ["A", "B"]; a one-word A shares B's object
    ("compressing or managing the KV cache" -> "compressing the KV cache", "managing the KV cache").
    Only names are alternatives (up to four words, no preposition): in "diffusion or flow models as
    priors for cryo-EM", the "or" joins words of one longer topic, which is ranked whole."""
    parts = [part.strip(" ,") for part in re.split(r",?\s+or\s+|,\s+", topic) if part.strip(" ,")]
    if len(parts) < 2:
        return [topic]
    tail = parts[-1].split()[1:]
    parts = [f"{part} {' '.join(tail)}" if len(part.split()) == 1 and tail else part for part in parts]
    return parts if all(ALTERNATIVE.match(part) for part in parts) else [topic]


GENERIC_VERBS = re.compile(
    r"^(?:(?:that|which)\s+)?(?:deals?\s+with|dealing\s+with|works?\s+on|focus(?:es)?\s+on|address(?:es)?|tackles?|"
    r"stud(?:y|ies|ying)|us(?:e|es|ing)|look\s+at|looks\s+at|investigates?|explores?|concern(?:s|ing)?|are\s+about|is\s+about)\s+",
    re.IGNORECASE,
)


def topic_of(understood: Understood, text: str = "") -> Topic:
    """The topic of a question about many papers: its text (or `text`, a tally's topic) without "how many
    papers" / "show me" lead-ins, which match every abstract, and without what it leaves out ("…, excluding
    LLMs" goes to `left_out`)."""
    text = text or understood.text
    whole, left_out = text, ""
    left = LEFT_OUT.search(text)
    if left:
        text, left_out = text[: left.start()] + text[left.end() :], left.group("left").strip()
    text = overview_topic(text) if understood.kind == Kind.OVERVIEW else COUNT.sub("", text)
    text = REQUEST.sub("", text)  # "show me …", "list …": what LIST leaves ("show me diffusion papers": nothing)
    text = re.sub(rf"(?<=\S)\s+{PAPERS}\W*$", "", LIST.sub("", text) or text)
    text = re.sub(rf"^\W*(?:{PAPERS}\s+)?(?:are\s+|were\s+|is\s+)?(?:about|on|that|which)?\s*", "", text)
    # Verbs that say only "is about": "deal with over-smoothing" ranks as "over-smoothing".
    text = re.sub(GENERIC_VERBS, "", text)
    topic = text.strip(" ?.!") or whole
    evaluation = understood.kind == Kind.OVERVIEW and asks_about_evaluation(understood.question)
    return Topic(topic, left_out, tuple(alternatives(topic)), evaluation)
