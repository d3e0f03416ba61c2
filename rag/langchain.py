"""The product as LangChain parts: a `BaseRetriever` of papers and the answer chain as a `Runnable`.

Both delegate to a `RagService` (the shared one for a config, or one passed in), so a LangChain or
LangGraph app gets the same ranking, filters, refusals and checked citations as `rag.answer`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnableConfig
from pydantic import ConfigDict, Field

from rag.core.config import K, Settings
from rag.core.errors import InputError
from rag.core.filters import Filters, FilterSpec, as_filters, given_filters
from rag.core.types import Answer, Source
from rag.service import RagService
from rag.services import get_service


class PaperRetriever(BaseRetriever):
    """Papers for a query, best first: one `Document` per paper, its best passages as `page_content`.

    `Document.id` is the paper id; `metadata` holds paper_id, title, status, primary_area, url,
    authors, github and score (the best passage's cosine similarity to the query).
    `invoke(query, k=3, filters={"status": ["Oral"]})` overrides the constructor's k and filters.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    config: str | Settings | None = Field(None, description="Config name, YAML path or Settings (None: default).")
    k: K | None = Field(None, description="Papers per query (None: the config's retrieval.k).")
    filters: Filters | FilterSpec | dict | None = Field(None, description="Restrict to papers matching these.")
    service: RagService | None = Field(None, description="Use this service instead of the shared one for `config`.")

    def _service(self) -> RagService:
        return self.service or get_service(self.config)

    def _get_relevant_documents(
        self,
        query: str,
        *,
        run_manager: CallbackManagerForRetrieverRun,
        k: int | None = None,
        filters: Filters | FilterSpec | dict | None = None,
    ) -> list[Document]:
        chosen = given_filters(filters if filters is not None else self.filters)
        sources = self._service().retrieve(query, k=k or self.k, filters=chosen)
        return [paper_document(source) for source in sources]


def paper_document(source: Source) -> Document:
    payload = source.to_payload()
    passage = payload.pop("passage")
    return Document(id=source.paper_id, page_content=passage, metadata=payload)


def as_retriever(
    config: str | Settings | None = None,
    k: int | None = None,
    filters: Filters | FilterSpec | dict | None = None,
) -> PaperRetriever:
    """A LangChain retriever over the index of `config`; see `PaperRetriever`. Filters that don't fit are an
    InputError naming the field, here rather than at the first search."""
    return PaperRetriever(config=config, k=k, filters=given_filters(filters))


class AnswerChain(Runnable[Any, Answer]):
    """The cited-answer chain as a Runnable: a question (str) or {question, history, k, filters} in,
    an `Answer` out. `invoke`, `batch` and their async forms work as for any Runnable; `stream`
    yields the answer's text pieces as the model writes them, then the final `Answer`, exactly as
    `rag.stream_answer`. Inside a larger chain the next step receives the `Answer`.
    """

    def __init__(self, config: str | Settings | None = None, service: RagService | None = None):
        self.config, self.service = config, service

    @property
    def InputType(self) -> Any:  # noqa: N802 - LangChain's name; a union is no `type`, so Any, as LangChain's own
        return str | dict

    @property
    def OutputType(self) -> type:  # noqa: N802 - LangChain's name
        return Answer

    def _stream_answer(self, value: Any) -> Iterator[str | Answer]:
        service = self.service or get_service(self.config)
        if isinstance(value, str):
            return service.stream_answer(value)
        if not isinstance(value, dict) or "question" not in value:
            raise InputError("the answer chain takes a question string or a dict with a 'question' key")
        history = [(str(q), str(a)) for q, a in value.get("history") or []]
        filters = as_filters(value.get("filters"))
        return service.stream_answer(value["question"], history=history, k=value.get("k"), filters=filters)

    def _answer(self, value: Any) -> Answer:
        *_, final = self._stream_answer(value)
        assert isinstance(final, Answer)  # the stream ends with the Answer
        return final

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Answer:  # noqa: A002
        return self._call_with_config(self._answer, input, config)

    # LangChain's `stream` yields chunks of the output; this one, text pieces and then the Answer (see the class).
    def stream(  # type: ignore[override]  # by design: the pieces are text, the last the Answer
        self,
        input: Any,  # noqa: A002
        config: RunnableConfig | None = None,
        **kwargs: Any,
    ) -> Iterator[str | Answer]:
        yield from self._stream_answer(input)

    def transform(self, input: Iterator[Any], config: RunnableConfig | None = None, **kwargs: Any) -> Iterator[Answer]:  # noqa: A002
        # Inside a streamed chain the next step adds up the chunks it gets, which text and an Answer
        # can't be: there the chain passes on the finished Answer alone.
        value = None
        for chunk in input:
            value = chunk if value is None else value + chunk
        yield self.invoke(value, config)


def answer_chain(config: str | Settings | None = None) -> AnswerChain:
    """The answer chain over `config` as a LangChain Runnable; see `AnswerChain`."""
    return AnswerChain(config)
