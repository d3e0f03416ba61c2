"""`RagService` wires config -> embeddings -> store -> retriever -> answer pipeline, once.

The CLI, the `answer()` functions and the UI all go through it. Each part is built on first use, so a command
that needs no model loads none; tests pass their own parts to the constructor. What an answer is made of lives
in `rag.answering.pipeline` (a lookup) and `rag.answering.kinds` (the other kinds); re-opening an index another
process wrote to, in `rag.index.access`.
"""

from __future__ import annotations

import logging
from collections.abc import Generator, Iterable, Iterator
from contextlib import contextmanager
from functools import cached_property, partial
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from rag.answering.citations import CitationChecker
from rag.answering.evidence import EvidencePicker
from rag.answering.kinds import kind_answer
from rag.answering.paper_map import title_model, with_map
from rag.answering.pipeline import AnswerPipeline
from rag.answering.providers import Provider, make_provider, provider_label
from rag.answering.related import find_related, stored_paper
from rag.answering.tools import Tools
from rag.core.config import BUNDLED_EMBEDDING, BUNDLED_SEEDS, Settings, checked_k, load_config, with_overrides
from rag.core.errors import StoreError
from rag.core.filters import PICKERS, Filters, given_filters
from rag.core.text import clean_question
from rag.core.types import Answer, Source
from rag.index.access import IndexAccess
from rag.index.embeddings import CachedEmbeddings, load_tokenizer, make_embeddings, make_index_embeddings
from rag.index.lexical import Bm25Index, LexicalStore, Revision
from rag.index.setup import (
    Choice,
    IndexSetup,
    check_index_folder,
    choose_index,
    index_files,
    is_read_only,
    readable_copy,
    stored_indexes,
)
from rag.index.store import PaperIndex, open_client
from rag.ingest.chunking import Chunker
from rag.ingest.pipeline import IngestReport, ingest_files
from rag.question.conversation import Conversation
from rag.question.focus import History
from rag.question.question import read as read_question
from rag.question.understand import Understood
from rag.question.understand import understand as understand_question
from rag.retrieval.search import Retriever

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings
    from langchain_core.runnables import Runnable

    from rag.index.setup import IndexFiles

log = logging.getLogger(__name__)


class RagService:
    """The product's one entry point: ingest papers, retrieve them, answer questions."""

    def __init__(
        self,
        config: str | Path | Settings | None = None,
        *,
        embeddings: Embeddings | None = None,
        client=None,
        provider: Provider | None = None,
    ):
        self.config = load_config(config)
        self.read_only: Path | None = None  # an index this user can't write to, read from a copy (readable_copy)
        store = self.config.vectorstore
        if client is None and store.mode == "persistent" and is_read_only(store.path):
            self.read_only = store.path
            self.config = with_overrides(self.config, vectorstore={"path": str(readable_copy(store.path))})
        self.configured = self.config  # as given: `choice` takes the setup of the index the store holds
        reopenable = client is None and self.config.vectorstore.mode == "persistent"
        folder = self.config.vectorstore.path if reopenable else None  # its writers take turns (rag/index/access.py)
        self.access = IndexAccess(reopenable, lambda: self.index.revision(), self._reopen, folder)
        self._has_papers = False  # seen a non-empty index (see ensure_index)
        self._embeddings_given = embeddings is not None  # the caller's: they must suit the index's setup
        if embeddings is not None:
            self.embeddings = embeddings
        if client is not None:
            self.client = client
        if provider is not None:
            self.provider = provider

    # -- parts, built on first use ----------------------------------------------------------

    @cached_property
    def embeddings(self) -> Embeddings:
        return make_embeddings(self.config.embedding)

    @cached_property
    def index_embeddings(self) -> Embeddings:
        """What the index's vectors are made with: the embeddings (or the caller's), or a static model's."""
        given = self._embeddings_given
        return self.embeddings if given else make_index_embeddings(self.choice.config.embedding, self.embeddings)

    @cached_property
    def client(self):
        return open_client(self.config.vectorstore)

    @cached_property
    def choice(self) -> Choice:
        """Which index of the store this service opens, and with which setup (rag/index/setup.py).

        When the store's index was built with another setup than the config's, the service takes that
        setup from here on (its embeddings and chunking), and says so in one line. Reads only: an on-disk
        folder that holds no index yet is not created here.
        """
        store = self.config.vectorstore
        opened = "client" in self.__dict__  # passed in, or opened already
        if store.mode == "persistent" and not opened and not check_index_folder(store.path):
            return Choice(self.config, exists=False)
        choice = choose_index(stored_indexes(self.client, self.configured), self.configured, self.where)
        if IndexSetup.of(choice.config) != IndexSetup.of(self.config):  # chosen again after a re-open: may differ
            self.config = choice.config
            theirs = [] if self._embeddings_given else ["embeddings"]  # the caller's embeddings stay
            for part in ["sentence_embeddings", "chunker", "index_embeddings", *theirs]:
                self.__dict__.pop(part, None)  # built again, for the index's setup, when next used
        if choice.note:
            log.warning(choice.note)
        return choice

    @property
    def index_exists(self) -> bool:
        """Whether the store holds this service's index: found when opened, or written since."""
        return self.choice.exists or "index" in self.__dict__

    @property
    def where(self) -> str:
        store = self.config.vectorstore
        if self.read_only:
            return f"at {self.read_only} (read-only to this user: read from a copy at {store.path})"
        return f"at {store.path}" if store.mode == "persistent" else f"on {store.host}:{store.port}"

    @cached_property
    def index(self) -> PaperIndex:
        setup = IndexSetup.of(self.choice.config)
        name = setup.collection_name()
        # Chroma's file, whose stat tells of writes (PaperIndex.revision); unknown for a client passed in.
        database = self._files(name).database if self.access.enabled else None
        index = PaperIndex(self.client, name, self.index_embeddings, self.where, database, setup)
        if self.access.enabled:
            self.access.opened(index.revision())
        return index

    @cached_property
    def lexical(self):
        """The BM25 index, beside the vector index (persistent) or in a local cache (Chroma server)."""
        return LexicalStore(self.index, self._files(self.index.name).bm25)

    def _files(self, collection: str) -> IndexFiles:
        """Where the collection's files are (rag/index/setup.py knows Chroma's layout)."""
        return index_files(self.config.vectorstore, collection, self.config.retrieval.lexical_cache)

    @cached_property
    def retriever(self) -> Retriever:
        scorer = self.sentence_embeddings if self.index_embeddings is not self.embeddings else None  # static vectors
        return Retriever(self.index, self.lexical, self.index_embeddings, self.config.retrieval, scorer)

    @cached_property
    def chunker(self):
        return Chunker(load_tokenizer(self.config.embedding), self.config.chunking)

    @cached_property
    def sentence_embeddings(self) -> Embeddings:
        """The embeddings, remembering sentences: an answer and its citation check embed the same ones."""
        return CachedEmbeddings(self.embeddings)

    @cached_property
    def provider(self) -> Provider:
        return make_provider(self.config, self.sentence_embeddings)

    @cached_property
    def picker(self) -> EvidencePicker:
        return EvidencePicker(self.sentence_embeddings, self.config.answer, self.config.retrieval)

    @cached_property
    def checker(self) -> CitationChecker:
        return CitationChecker(self.sentence_embeddings, self.config.answer.support_threshold)

    @cached_property
    def pipeline(self) -> AnswerPipeline:
        return AnswerPipeline(self.config, self.picker, self.checker, lambda: self.provider)

    @cached_property
    def retrieval_chain(self) -> Runnable:
        """`find_sources` as a LangChain Runnable, for LCEL chains built around the service."""
        # Not used to answer: LCEL's machinery costs a cold `rag ask` half a second and each question a thread.
        from langchain_core.runnables import RunnableLambda

        return RunnableLambda(self.find_sources)

    # -- ingest -----------------------------------------------------------------------------

    def ingest(
        self, paths: Iterable[str | Path] = (), prune: bool = False, strict: bool = False, progress: bool = False
    ) -> IngestReport:
        """Ingest paper files (default: the bundled seeds). Bad lines are reported, not fatal, unless strict."""
        if self.read_only:
            raise StoreError(
                f"the index at {self.read_only} is read-only to this user: ingest can't write to it (questions are "
                "answered from a copy); ingest into a folder you can write to (--index PATH)"
            )
        # Alone among the folder's writers; the map follows the papers (rag/answering/paper_map.py).
        with self.access.writing_here(opened="client" in self.__dict__):
            files = list(paths) or [BUNDLED_SEEDS]
            self.index.paper_count()  # reach the store first: if it is down, fail before any progress bar
            report = ingest_files(files, self.index, self.chunker, self.config.ingest, prune, strict, progress)
            return with_map(report, self.index, title_model(self))

    def ensure_index(self) -> None:
        """A fresh checkout answers at once: a store holding no index gets the bundled seeds first.

        Never a store that holds another index (`choice` opens that one instead), nor an index whose
        first ingest was stopped before any paper was complete (it has chunks).
        """
        if self._has_papers:
            return
        with self.access.lock.shared():
            empty = not self.index_exists or (self.index.paper_count() == 0 and self.index.chunk_count() == 0)
        if empty:
            self.ingest(progress=True)
        self._has_papers = True  # an index is not emptied under a running service: check once

    def stats(self) -> dict:
        """What the index holds and how it was built; reads only (a store with no index stays without one)."""
        setup, exists = IndexSetup.of(self.choice.config), self.index_exists
        papers = chunks = 0
        if exists:
            with self.reading():
                papers, chunks = self.index.paper_count(), self.index.chunk_count()
        described = setup.described(papers, chunks, exists, self.where)
        return described | {"provider": self.config.llm.provider, "config": self.config.name}

    def model_label(self) -> str:
        """Which model answers, or why none does (provider_label); loads it if not loaded yet."""
        return provider_label(lambda: self.provider, self.config.llm)

    def paper(self, paper_id: str) -> dict | None:
        """One stored paper, {paper_id, title, abstract, authors, status, primary_area, url, github}, or None."""
        self.ensure_index()
        with self.reading():
            return self.index.paper_fields(paper_id)

    def filter_choices(self) -> dict[str, list[str]]:
        """For each filter with a picker (status, primary area), the values stored papers have."""
        with self.reading():
            stored = self.index.distinct_values(spec.stored for spec in PICKERS)
        return {spec.name: stored[spec.stored] for spec in PICKERS}

    # -- an index other processes write to ------------------------------------------------

    @contextmanager
    def reading(self) -> Iterator[Revision | None]:
        """Hold the index open for one read, re-opened first if another process wrote to it."""
        with self.access.reading(opened="index" in self.__dict__) as state:
            yield state

    def _reopen(self) -> None:
        old = self.client
        for part in ("retriever", "lexical", "index", "client", "choice", "index_embeddings"):
            self.__dict__.pop(part, None)  # the index chosen again too: `rag ingest --complete` replaces a static one
        old.close()  # the last user of its on-disk index in this process: frees what it loaded
        log.info("the index at %s changed on disk; re-opened it", self.config.vectorstore.path)
        self.index  # noqa: B018 - opens the new client and records the state it sees

    # -- questions --------------------------------------------------------------------------

    def retrieve(self, question: str, k: int | None = None, filters: Filters | dict | None = None) -> list[Source]:
        """The top-k papers for a question, one Source each, best first."""
        return self.search(self.clean_question(question), k, filters)

    def search(self, question: str, k: int | None = None, filters: Filters | dict | None = None) -> list[Source]:
        """`retrieve` for a question cleaned already (each question is cleaned once, where it comes in)."""
        k = self.config.retrieval.k if k is None else checked_k(k)
        self.ensure_index()
        with self.reading() as state:
            return self.retriever.retrieve(question, k, given_filters(filters), state)

    def answer(self, question: str, **options) -> Answer:
        """A cited answer; see `stream_answer` for the options."""
        *_, final = self.stream_answer(question, **options)
        assert isinstance(final, Answer)  # the stream ends with the Answer
        return final

    def stream_answer(
        self,
        question: str,
        history: History | None = None,
        k: int | None = None,
        filters: Filters | dict | None = None,
        understand: bool | None = None,
        dropped: Iterable[str] = (),
    ) -> Generator[str | Answer, None, None]:
        """Yield answer text in pieces as the model writes it, then the final, checked `Answer`.

        `history`: the conversation so far, oldest first, as `Turn`s or (question, answer) pairs.
        The question's kind (lookup, list, count, compare) and the filters it states in words are read
        from it (`understand`, default `questions.understand`); `filters` given here win over those,
        and understood filters on a field named in `dropped` are not applied.
        """
        question = self.clean_question(question)
        standalone = self.conversation.standalone(question, history or [])
        read = self.config.questions.understand if understand is None else understand
        understood = self.understand(standalone.question) if read else None
        asked = read_question(standalone, understood, question, given_filters(filters), frozenset(dropped))
        answer = kind_answer(asked, self.tools()) if read else None  # None: a look-up (taken literally, or a fact)
        if answer is None:  # a lookup: the answer pipeline's, over what retrieval finds
            sources = self.search(asked.text, k, standalone.held(asked.filters))
            pieces = self.pipeline.stream(asked, sources)
        else:  # no model: the text a line at a time (a list's papers as they are shown), then the answer
            lines = answer.text.split("\n")
            pieces = iter([*(line + "\n" for line in lines[:-1]), lines[-1], answer])
        yield from self.conversation.remembering(pieces, question, history or [])  # the focus it leaves

    def tools(self) -> Tools:
        """What the answerers of many papers may use (rag/answering/tools.py), built for the index's setup (a
        fresh store gets the seeds first, and an index built with another setup than the config's sets it)."""
        self.ensure_index()
        return Tools(
            settings=self.config,
            search=self.search,
            candidates=self.candidates,
            metadata=self.metadata,
            sentence_embeddings=self.sentence_embeddings,
            pipeline=self.pipeline,
            related=partial(find_related, self),
            stored_paper=partial(stored_paper, self),
        )

    def candidates(self, question: str, n: int, filters: Filters) -> list[Source]:
        """`search` for a list's or count's candidates: n papers, any number, of every paper the filters admit."""
        with self.reading() as state:
            return self.retriever.retrieve(question, n, filters, state)

    def metadata(self, filters: Filters) -> dict[str, list]:
        """The stored metadata (status, primary_area, authors, ...) of the papers `filters` admit, a list per key."""
        self.ensure_index()
        with self.reading() as state:
            return self.lexical.current(state).stored_fields(filters)

    def understand(self, question: str) -> Understood:
        """The question's kind and the filters its words state (an author only if stored), read by the learned
        reader too when `questions.reader` is 'learned' and the index's model is its (rag/question/learned.py)."""
        self.ensure_index()  # the index's setup: its embedding model
        learned = self.config.questions.reader == "learned" and self.config.embedding.model == BUNDLED_EMBEDDING
        embedding = np.asarray(self.embeddings.embed_query(question)) if learned else None
        loaded = self._loaded_lexical()
        return understand_question(question, loaded.names_person, embedding, loaded.author_names)

    def _loaded_lexical(self) -> Bm25Index:
        """The BM25 index as last read (a search reads afresh): its stored authors' names."""
        if (loaded := self.lexical.loaded) is None:
            with self.reading() as state:
                loaded = self.lexical.current(state)
        return loaded

    def find_sources(self, inputs: dict) -> dict:
        """{question, history, k, filters} -> the same plus `standalone` (the question made
        self-contained, a `Standalone`) and `sources` (what retrieval found for it, held to the papers in
        focus for a follow-up that refers back to them)."""
        standalone = self.conversation.standalone(self.clean_question(inputs["question"]), inputs.get("history") or [])
        held = standalone.held(inputs.get("filters") or Filters())
        return inputs | {"standalone": standalone, "sources": self.search(standalone.question, inputs.get("k"), held)}

    def clean_question(self, question: str, what: str = "the question") -> str:
        """Cleaned (rag/core/text.py; a bad one is an InputError naming it as `what`), once, where it comes in."""
        return clean_question(question, self.config.answer.max_question_chars, what)

    @cached_property
    def conversation(self) -> Conversation:
        """Follow-ups made self-contained: held to the papers in focus, or rewritten (rag/question/conversation.py)."""
        reads = lambda: self.config.questions.understand  # noqa: E731 - the config may change when the index opens
        return Conversation(self.search, self.understand, self.clean_question, lambda: self.provider, reads)
