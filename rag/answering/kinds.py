"""The answers a question gets without a lookup, by its kind: the related papers of a paper it names, counts
over the stored metadata, or a list, count, overview or compare of many papers.

Each kind's answerer is called the same way, `answerer(asked, applied, parts, **stamp)`: the understood
question, the filters applied to it, the service's parts, and the fields every Answer gets; it returns its
Answer, or None when the question is not of its kind. The first in `ANSWERERS` that answers does; a question
none answers is a lookup, the answer pipeline's (rag/answering/pipeline.py).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

from rag.answering.lists import many_papers_answer
from rag.answering.related import related_answer
from rag.answering.tally import tally_answer
from rag.core.filters import Filters
from rag.core.types import Answer
from rag.retrieval.understand import Understood

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

    from rag.answering.pipeline import AnswerPipeline
    from rag.core.config import Settings
    from rag.core.types import Source
    from rag.index.lexical import LexicalStore, Revision
    from rag.index.store import PaperIndex
    from rag.retrieval.search import Retriever

    # Defined for the type checker only: a Protocol class costs a question's cold start its creation.
    class Parts(Protocol):
        """What the answerers need of a service (rag.service.RagService has them all)."""

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
        def sentence_embeddings(self) -> Embeddings: ...
        @property
        def chunker(self) -> Any: ...
        @property
        def pipeline(self) -> AnswerPipeline: ...
        def ensure_index(self) -> None: ...
        def reading(self) -> AbstractContextManager[Revision | None]: ...
        def retrieve(self, question: str, k: int | None = None, filters: Filters | None = None) -> list[Source]: ...
        def search(self, question: str, k: int | None = None, filters: Filters | None = None) -> list[Source]: ...
        def metadata(self, filters: Filters) -> dict[str, list[Any]]: ...

    class Answerer(Protocol):
        """One kind's answerer: its Answer, or None when the question is not of its kind."""

        def __call__(self, asked: Understood, applied: Filters, parts: Parts, **stamp: Any) -> Answer | None: ...


# The narrower kinds first: "Which papers are most similar to X?" also reads as a list, and "how many papers
# were withdrawn?" as a count of a topic's papers.
ANSWERERS: tuple[Answerer, ...] = (related_answer, tally_answer, many_papers_answer)


def kind_answer(asked: Understood, applied: Filters, parts: Parts, **stamp: Any) -> Answer | None:
    """The answer of the first kind the question is of; None for a lookup."""
    for answerer in ANSWERERS:
        answer = answerer(asked, applied, parts, **stamp)
        if answer is not None:
            return answer
    return None
