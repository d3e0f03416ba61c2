"""Question answering over research-paper abstracts, with cited sources.

>>> import rag
>>> a = rag.answer("How many reaction templates does RxnFlow use?", config="extractive")
>>> a.refused, len(a.sources)
(False, 5)
>>> set(a.cited) <= {source.paper_id for source in a.sources}
True
>>> b = rag.answer("What is the bright ending anomaly?", config="extractive")  # a second call works too
>>> b.refused
False
>>> len(rag.retrieve("discrete diffusion sampling schedules", k=2, config="extractive"))
2

Importing this package loads nothing heavy; the first call builds a `RagService` for its config
and keeps a few of them, so repeated calls don't reload the models. The functions may be called
from several threads at once.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from rag.core import plugins as _plugins

if TYPE_CHECKING:
    from pydantic import BaseModel

    from rag.answering.paper_map import PaperMap
    from rag.answering.related import Related
    from rag.core.config import Settings, StageConfig
    from rag.core.filters import Filters, FilterSpec
    from rag.core.types import Answer, Source
    from rag.langchain import AnswerChain, PaperRetriever
    from rag.question.focus import History
    from rag.service import RagService

# No public name here may equal a submodule's: importing `rag.service` binds `rag.service` to the module.
__all__ = [
    "answer",
    "answer_chain",
    "as_retriever",
    "get_service",
    "paper_map",
    "related",
    "retrieve",
    "stream_answer",
]


def _stage_options(config: StageConfig) -> BaseModel:
    # Imported on first use, so `import rag` stays light.
    from rag.retrieval.stages import options_of

    return options_of(config)


# Configs check their retrieval stages through core's hook: core sits below retrieval and can't import it.
_plugins.stage_options = _stage_options


def get_service(config: str | Settings | None = None) -> RagService:
    """The shared service for a config name, path or Settings (None: $RAG_CONFIG, else default).

    The same settings get the same service; the few most recently used are kept.
    """
    from rag.services import get_service as shared  # on first call: it imports the pipeline's libraries

    return shared(config)


def answer(
    question: str,
    config: str | Settings | None = None,
    history: History | None = None,
    k: int | None = None,
    filters: Filters | dict | None = None,
) -> Answer:
    """A cited answer: `text` with `[n]` markers that refer to `sources[n - 1]`.

    `history`: the conversation so far, oldest first, as (question, answer text) pairs or `Turn`s
    (rag.question.focus); a follow-up that refers back is answered from the papers the last answer cited.
    `filters`: a `Filters`, or a dict as the JSON APIs take it ({"status": ["Oral"]}). Input that can't be
    used (a question that is not text, a malformed history or filter) is an `InputError` saying why.
    """
    return get_service(config).answer(question, history=history, k=k, filters=filters)


def stream_answer(
    question: str,
    config: str | Settings | None = None,
    history: History | None = None,
    k: int | None = None,
    filters: Filters | dict | None = None,
) -> Iterator[str | Answer]:
    """Text pieces as the model writes them, then the final `Answer`."""
    return get_service(config).stream_answer(question, history=history, k=k, filters=filters)


def retrieve(
    question: str, k: int | None = None, config: str | Settings | None = None, filters: Filters | dict | None = None
) -> list[Source]:
    """The best-matching papers (k of them, default `retrieval.k`), one `Source` each, best first."""
    return get_service(config).retrieve(question, k=k, filters=filters)


def related(
    paper: str = "",
    abstract: str | None = None,
    k: int | None = None,
    config: str | Settings | None = None,
    filters: Filters | dict | None = None,
) -> Related:
    """The k papers most related to a stored `paper` (its OpenReview id, or its title as stored) or to your
    own `abstract`, never the paper itself, best first; each of `.papers` has its `source` and its `tie`, the
    pair of sentences (one from each abstract) that ties them. `.text` lists them, cited ([1]: the paper)."""
    from rag.answering.related import find_related
    from rag.core.filters import given_filters

    return find_related(get_service(config), paper, abstract=abstract, k=k, filters=given_filters(filters))


def paper_map(
    config: str | Settings | None = None, filters: Filters | dict | None = None, rebuild: bool = False
) -> PaperMap:
    """The map of the conference stored with the index: `.points` (paper_id, title, x, y, theme, status,
    primary_area) of the papers `filters` admit, `.themes` the themes' names, `.placed` how many papers are
    placed in all; `rebuild` lays every paper out afresh first (as `rag map --rebuild`)."""
    from rag.answering.paper_map import read_map, rebuild_map
    from rag.core.filters import given_filters

    service = get_service(config)
    if rebuild:
        rebuild_map(service)
    return read_map(service, given_filters(filters))


def as_retriever(
    config: str | Settings | None = None, k: int | None = None, filters: Filters | FilterSpec | dict | None = None
) -> PaperRetriever:
    """A LangChain `BaseRetriever`: one `Document` per paper (its passages; id, title, status, area, url, score)."""
    from rag.langchain import as_retriever as make_retriever

    return make_retriever(config, k=k, filters=filters)


def answer_chain(config: str | Settings | None = None) -> AnswerChain:
    """The cited-answer chain as a LangChain `Runnable`: a question in, an `Answer` out."""
    from rag.langchain import answer_chain as make_chain

    return make_chain(config)
