"""Papers like this one: the related papers of a paper (by id or title) or of a user's abstract, each with
the pair of sentences, one from each abstract, that ties them.

The ranking is retrieval's (rag/retrieval/related.py). The tie is the pair with the highest cosine
between the bundled model's embeddings of the two abstracts' sentences, among the sentences that say
what a paper does (an abstract's opening and the background sentences after it are left out, as
`is_background` reads them, unless an abstract has no other). `rag related`, `rag.related()`,
`/v1/related`, MCP's `related_papers`, the chat ("Which papers are most similar to RxnFlow?") and the
page's "More like this" all come here.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from rag.answering.background import is_background
from rag.answering.lists import on_topic
from rag.answering.refusal import refusal_reason
from rag.core.config import checked_k
from rag.core.errors import InputError
from rag.core.filters import Filters
from rag.core.markup import plain_text
from rag.core.text import clean_question
from rag.core.types import Answer, Kind, Source
from rag.retrieval.related import Method, RelatedRanker, Subject, checked_text
from rag.text.words import source_sentences

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from langchain_core.embeddings import Embeddings

    from rag.answering.tools import Tools
    from rag.core.config import Settings
    from rag.index.lexical import Bm25Index, LexicalStore, Revision
    from rag.index.store import PaperIndex
    from rag.question.question import Question
    from rag.retrieval.search import Retriever

    # Defined for the type checker only: a Protocol class costs a question's cold start its creation.
    class Parts(Protocol):
        """What related papers need of a service (rag.service.RagService has them all)."""

        @property
        def config(self) -> Settings: ...
        @property
        def index(self) -> PaperIndex: ...
        @property
        def lexical(self) -> LexicalStore: ...
        @property
        def retriever(self) -> Retriever: ...
        @property
        def embeddings(self) -> Embeddings: ...
        @property
        def chunker(self) -> Any: ...
        def ensure_index(self) -> None: ...
        def reading(self) -> AbstractContextManager[Revision | None]: ...


@dataclass(frozen=True)
class Tie:
    """The two sentences, one from each abstract, that tie a related paper to the given one."""

    subject_sentence: str
    sentence: str
    similarity: float


@dataclass(frozen=True)
class RelatedPaper:
    source: Source
    tie: Tie

    def to_payload(self) -> dict[str, Any]:
        return {**self.source.to_payload(), "ranks": dict(self.source.match.ranks), "tie": vars(self.tie)}


@dataclass(frozen=True)
class Related:
    """The papers related to `subject`, best first; `method` ranked them."""

    subject: Source  # paper_id "your-abstract" for a user's own abstract
    papers: list[RelatedPaper] = field(default_factory=list)
    method: str = "fused"
    among: str = ""  # the papers they were ranked among, when not all ("the 12 papers on “web navigation”")

    @property
    def text(self) -> str:
        """Each related paper on a line, with the two sentences that tie it, cited: [1] is the given paper."""
        among = f" among {self.among}" if self.among else ""
        head = (
            f"Papers related to “{plain_text(self.subject.title)}” [1]{among}, each with the sentences that tie them:"
        )
        lines = [head]
        for number, paper in enumerate(self.papers, start=2):
            source, tie = paper.source, paper.tie
            facts = "; ".join(fact for fact in (source.status, source.primary_area.replace("&amp;", "&")) if fact)
            lines.append(
                f"{number - 1}. {plain_text(source.title)} [{number}]"
                + (f" ({facts})" if facts else "")
                + f": “{plain_text(tie.sentence)}” [{number}] ~ “{plain_text(tie.subject_sentence)}” [1]"
            )
        return "\n".join(lines)

    @property
    def sources(self) -> list[Source]:
        """The given paper, then the related ones: [n] in `text` is sources[n - 1]."""
        return [self.subject, *(paper.source for paper in self.papers)]

    def to_payload(self) -> dict[str, Any]:
        """What the APIs return (/v1/related, MCP's related_papers, `rag related --json`)."""
        subject = {key: value for key, value in self.subject.to_payload().items() if key not in ("score", "relevance")}
        return {"subject": subject, "method": self.method, "papers": [paper.to_payload() for paper in self.papers]}

    def answer(self, question: str) -> Answer:
        """The related papers as a chat answer (kind "related") to `question`."""
        return Answer(
            question=question,
            text=self.text,
            sources=self.sources,
            answered_by="related",
            kind=Kind.RELATED,
            count=len(self.papers),
        )


def find_related(
    parts: Parts,
    paper: str = "",
    abstract: str | None = None,
    k: int | None = None,
    filters: Filters | None = None,
    method: Method = "fused",
) -> Related:
    """The k papers most related to a stored `paper` (its OpenReview id or title as stored) or to a user's
    `abstract`, best first, each with the sentences that tie it. An unknown paper is an InputError."""
    k = parts.config.retrieval.k if k is None else checked_k(k)
    parts.ensure_index()
    with parts.reading() as state:
        lexical = parts.lexical.current(state)
        ranker = ranker_of(parts)
        if abstract is not None:
            subject = Subject.own(abstract)
        else:
            found = ranker.stored(checked_text(paper, "the paper"), lexical)
            if found is None:
                raise not_stored(paper, parts.index, lexical)
            subject = found
        ranked = ranker.rank(subject, k, filters or Filters(), lexical, method)
    # Not the service's cache of sentence vectors: the int8 model's vectors shift a little with the batch a
    # sentence is embedded in, and the same request gets the same figures embedded in one batch of its own.
    return tied(subject, ranked, parts.embeddings, method)


def not_stored(paper: str, index: PaperIndex, lexical: Bm25Index) -> InputError:
    """The error for a paper the index doesn't hold, naming the stored title closest to what was given."""
    closest = index.stored_metadata([paper_id for paper_id, _ in lexical.search(paper, 1)])
    hint = "".join(f"; the closest title: “{meta.get('title', '')}” ({key})" for key, meta in closest.items())
    return InputError(f"no paper with the id or title {paper.strip()[:200]!r} in the index{hint}")


def tied(subject: Subject, ranked: list[Source], embeddings: Embeddings, method: str = "fused") -> Related:
    """Each ranked paper with the pair of sentences that ties it to the subject."""
    own = subject.source()
    mine = what_it_does(source_sentences(own))
    theirs = [what_it_does(source_sentences(source)) for source in ranked]
    texts = list(dict.fromkeys([*mine, *(sentence for sentences in theirs for sentence in sentences)]))
    vectors = dict(zip(texts, unit(np.asarray(embeddings.embed_documents(texts), dtype=np.float32)))) if texts else {}
    papers = []
    for source, sentences in zip(ranked, theirs):
        if not mine or not sentences:
            papers.append(RelatedPaper(source, Tie("", "", 0.0)))
            continue
        cosines = np.stack([vectors[s] for s in mine]) @ np.stack([vectors[s] for s in sentences]).T
        row, column = np.unravel_index(int(np.argmax(cosines)), cosines.shape)
        papers.append(RelatedPaper(source, Tie(mine[row], sentences[column], round(float(cosines[row, column]), 4))))
    return Related(own, papers, method)


def what_it_does(sentences: list[str]) -> list[str]:
    """An abstract's sentences without its background (all of them when it has nothing else)."""
    kept = [sentence for position, sentence in enumerate(sentences) if not is_background(position, sentence)]
    return kept or sentences


def unit(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-9)


def related_answer(question: Question, tools: Tools) -> Answer:
    """The answer to "Which papers are most similar to X?" (X a paper's name, title or id, or an abstract
    pasted in). A name no stored paper answers to is refused in one line."""
    named, pasted, applied = question.understood.subject, question.understood.pasted, question.filters
    if pasted is not None:
        return tools.related(abstract=pasted, filters=applied).answer(question.asked)
    paper_id = tools.stored_paper(named)
    if not paper_id:  # a name ("RxnFlow") or a description: the best paper for it, if one passes refusal
        found = tools.search(clean_question(named, tools.settings.answer.max_question_chars), 3, Filters())
        passing = [source for source in found if refusal_reason([source], tools.settings.retrieval) is None]
        if not passing:
            text = f"No indexed paper is “{named}”, so none can be related to it."
            return Answer(question.asked, text, found, refused=True, kind=Kind.RELATED, refusal_reason=text)
        paper_id = passing[0].paper_id
    return related_among(paper_id, question, tools)


def related_among(paper_id: str, question: Question, tools: Tools) -> Answer:
    """The papers like a stored one, among those on the topic the question restricts to, if it does ("… but
    for web navigation": the papers a list of that topic holds)."""
    applied, restrict = question.filters, question.understood.restrict
    if not restrict:
        return tools.related(paper_id, filters=applied).answer(question.asked)
    on_it = on_topic(tools.search(restrict, tools.settings.questions.list_cap, applied), restrict, tools.settings)
    if not on_it:
        text = f"No indexed paper is about “{restrict}”, so none like it can be found among them."
        return Answer(question.asked, text, [], refused=True, kind=Kind.RELATED, refusal_reason=text)
    related = tools.related(paper_id, filters=replace(applied, papers=tuple(source.paper_id for source in on_it)))
    return replace(related, among=f"the {len(on_it)} papers on “{restrict}”").answer(question.asked)


def stored_paper(parts: Parts, name: str) -> str | None:
    """The stored paper a name, title or id names exactly, if one (`Tools.stored_paper`)."""
    parts.ensure_index()
    with parts.reading() as state:
        exact = ranker_of(parts).stored(name, parts.lexical.current(state))
    return exact.paper_id if exact else None


def ranker_of(parts: Parts) -> RelatedRanker:
    return RelatedRanker(parts.index, parts.retriever, parts.index.embeddings, parts.chunker.chunk)
