"""The Chroma index: a collection of chunks (through langchain-chroma) and one of papers.

The chunk collection holds what is searched. The paper collection holds one entry per paper
(its abstract and metadata) and is written last when a paper is ingested, so it doubles as the
record of which papers are complete: an interrupted ingest leaves no entry for a half-written
paper, and the next run redoes it with the same content-derived chunk ids.
"""

from __future__ import annotations

import functools
import inspect
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings

from rag.core.config import Settings, VectorstoreConfig
from rag.core.errors import StoreError, first_line
from rag.core.papers import PaperRecord
from rag.core.text import safe_links
from rag.core.types import Source
from rag.index.setup import IndexSetup, check_can_write, check_index_folder, unshared_spelling

DELETE_BATCH = 500
# A file written this recently may be written again within the same tick of the file system's clock
# (4 ms here; whole seconds on some), leaving its stat unchanged: its stat proves nothing yet.
SETTLED_SECONDS = 2.0


def collection_name(config: Settings) -> str:
    """The collections of the config's embedding setup: an index is only read by its own model."""
    return IndexSetup.of(config).collection_name()


def open_client(config: VectorstoreConfig):
    """A Chroma client for the configured mode; a server that can't be reached is a StoreError."""
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    settings = ChromaSettings(anonymized_telemetry=False)
    if config.mode == "persistent":
        check_index_folder(config.path)
        check_can_write(config.path)
        try:
            config.path.mkdir(parents=True, exist_ok=True)
            return chromadb.PersistentClient(path=unshared_spelling(config.path), settings=settings)
        except (OSError, ValueError) as err:
            raise StoreError(f"cannot open the index at {config.path}: {err}") from None
    try:
        client = chromadb.HttpClient(
            host=config.host,
            port=config.port,
            ssl=config.ssl,
            headers=config.headers,
            tenant=config.tenant,
            database=config.database,
            settings=settings,
        )
    except Exception as err:  # chromadb raises bare Exception/ValueError subclasses for connection failures
        raise StoreError(f"cannot reach the Chroma server at {config.host}:{config.port}: {first_line(err)}") from None
    bound_waits(client, config.timeout)
    return ServerCalls(client, f"{config.host}:{config.port}", config.retries)


def bound_waits(client, seconds: float) -> None:
    """Make a call to a server that accepts and never answers (hung, stopped, cut off) fail after `seconds`.

    chromadb's HTTP client waits for ever (its httpx session has `timeout=None`) and has no setting
    for it, so the session's timeout is set here; a timed-out call is then retried and reported as
    lost, like a refused one."""
    import httpx

    session = getattr(getattr(client, "_server", None), "_session", None)
    if isinstance(session, httpx.Client):
        session.timeout = httpx.Timeout(seconds)


@dataclass(frozen=True)
class Revision:
    """What the papers collection holds now, in two cheap numbers: paper count and write revision."""

    count: int
    revision: str


class ServerCalls:
    """A Chroma client (or collection) whose every call to a server retries lost connections, then
    raises a StoreError naming the server. Every call we make is idempotent (get, count, query,
    upsert, delete, modify), so repeating one is safe; the collections it returns are wrapped too,
    which covers the calls langchain-chroma makes for us.
    """

    def __init__(self, target, server: str, retries: int):
        self._target, self._server, self._retries = target, server, retries

    def __getattr__(self, name: str):
        attribute = getattr(self._target, name)
        if name.startswith("_") or not inspect.ismethod(attribute):
            return attribute
        return functools.partial(self._call, attribute)

    def _call(self, method, *args, **kwargs):
        import httpx
        from chromadb.api.models.Collection import Collection
        from chromadb.errors import AuthorizationError, ChromaAuthError

        attempt = 0
        while True:
            try:
                result = method(*args, **kwargs)
            except httpx.TransportError as err:
                if attempt >= self._retries:
                    raise StoreError(
                        f"lost the Chroma server at {self._server}: {first_line(err)} ({attempt + 1} tries); "
                        "try again when it is back, nothing stored is lost"
                    ) from None
                time.sleep(0.5 * 2**attempt)
                attempt += 1
            except (ChromaAuthError, AuthorizationError) as err:
                raise StoreError(f"the Chroma server at {self._server} refused: {first_line(err)}") from None
            else:
                return ServerCalls(result, self._server, self._retries) if isinstance(result, Collection) else result


class PaperIndex:
    """Chunks and papers of one collection pair, and the operations ingest and retrieval need."""

    def __init__(
        self,
        client,
        name: str,
        embeddings: Embeddings,
        where: str,
        database: Path | None = None,
        setup: IndexSetup | None = None,
    ):
        """`database`: the SQLite file of an on-disk client, if known (see `revision`); `setup`: what the
        vectors are made with, recorded in the index (rag/index/setup.py)."""
        self.name = name
        self.recorded = setup.metadata() if setup else {}
        self.where = where
        self.embeddings = embeddings
        self.client = client
        self.database = database
        self._last_read: tuple[tuple[int, int, int], Revision] | None = None  # (file stat, state read)
        try:
            # The collections themselves, as langchain-chroma opens them (no embedding function: we
            # pass vectors). Reads go to them directly; its `Chroma` store is built only to write
            # (`vectorstore`), because importing it costs a question half a second of LangChain.
            self.chunks = client.get_or_create_collection(
                name, embedding_function=None, metadata={"hnsw:space": "cosine"}, configuration=None
            )
            # The setup is recorded when the collection is made (Chroma ignores it for one that exists).
            self.papers = client.get_or_create_collection(
                f"{name}-papers", embedding_function=None, metadata=self.recorded or None
            )
        except StoreError:
            raise  # already names the server
        except Exception as err:
            raise StoreError(f"cannot open the index {where}: {first_line(err)}") from None

    @functools.cached_property
    def vectorstore(self):
        """LangChain's Chroma store over the chunk collection: embeds and writes chunks."""
        from langchain_chroma import Chroma

        return Chroma(
            collection_name=self.name,
            embedding_function=self.embeddings,
            client=self.client,
            collection_metadata={"hnsw:space": "cosine"},
        )

    # -- counts ---------------------------------------------------------------------------

    def paper_count(self) -> int:
        return self.papers.count()

    def chunk_count(self) -> int:
        return self.chunks.count()

    # -- reads ------------------------------------------------------------------------------
    # Stored text is untrusted (any file, any writer to a shared server): every read that can reach an output
    # (`paper`, `iter_papers`, `chunks_by_id`) gives links through `safe_links`, http(s) only. Only
    # `stored_metadata` gives them as stored: ingest compares them with what it would write.

    def stored_metadata(self, paper_ids: list[str]) -> dict[str, dict[str, Any]]:
        """paper_id -> stored metadata as written (links unchecked: ingest compares it with what it would
        write), for those of `paper_ids` that are complete in the index."""
        found: dict[str, dict[str, Any]] = {}
        for part in _batched(paper_ids, self.max_batch_size):  # Chroma's limits hold for reads by id too
            page = self.papers.get(ids=part, include=["metadatas"])
            found.update(zip(page["ids"], page["metadatas"]))
        return found

    def stored_hashes(self, paper_ids: list[str]) -> dict[str, str]:
        """paper_id -> content hash, for those of `paper_ids` that are complete in the index."""
        return {pid: meta["content_hash"] for pid, meta in self.stored_metadata(paper_ids).items()}

    def ids_by_hash(self, hashes: list[str]) -> dict[str, str]:
        """content hash -> paper_id, for stored papers with one of these abstracts."""
        found: dict[str, str] = {}
        for part in _batched(hashes, DELETE_BATCH):
            page = self.papers.get(where={"content_hash": {"$in": part}}, include=["metadatas"])
            found.update((meta["content_hash"], pid) for pid, meta in zip(page["ids"], page["metadatas"]))
        return found

    def paper(self, paper_id: str) -> tuple[str, dict[str, Any]] | None:
        """(abstract, metadata) of one complete paper, or None."""
        found = self.papers.get(ids=[paper_id], include=["documents", "metadatas"])
        return (found["documents"][0], safe_links(found["metadatas"][0])) if found["ids"] else None

    def paper_fields(self, paper_id: str) -> dict[str, Any] | None:
        """One stored paper as the APIs show it, {paper_id, title, abstract, authors, status, primary_area, url,
        github}, or None."""
        found = self.paper(paper_id)
        if found is None:
            return None
        abstract, meta = found
        described = Source.from_text(paper_id, meta.get("title", ""), abstract, 0.0, meta).to_payload()
        return {"paper_id": paper_id, "title": described["title"], "abstract": abstract} | {
            key: described[key] for key in ("authors", "status", "primary_area", "url", "github")
        }

    def all_paper_ids(self) -> list[str]:
        return self.papers.get(include=[])["ids"]

    def iter_papers(self, batch: int = 2000) -> Iterator[tuple[str, str, dict[str, Any]]]:
        """(paper_id, abstract, metadata) of every stored paper, read in pages."""
        total = self.paper_count()
        for offset in range(0, total, batch):
            page = self.papers.get(include=["documents", "metadatas"], limit=batch, offset=offset)
            yield from zip(page["ids"], page["documents"], map(safe_links, page["metadatas"]))

    def iter_chunk_papers(self, batch: int = 5000) -> Iterator[tuple[str, str, str]]:
        """(chunk id, paper_id, content hash) of every stored chunk, read in pages."""
        for offset in range(0, self.chunk_count(), batch):
            page = self.chunks.get(include=["metadatas"], limit=batch, offset=offset)
            for chunk_id, meta in zip(page["ids"], page["metadatas"]):
                yield chunk_id, str(meta.get("paper_id", "")), str(meta.get("content_hash", ""))

    def distinct_values(self, fields: Iterable[str], batch: int = 5000) -> dict[str, list[str]]:
        """field -> the sorted non-empty values stored papers have for it (for filter choices)."""
        values: dict[str, set[str]] = {field: set() for field in fields}
        for offset in range(0, self.paper_count(), batch):
            for meta in self.papers.get(include=["metadatas"], limit=batch, offset=offset)["metadatas"]:
                for field, seen in values.items():
                    if meta.get(field):
                        seen.add(str(meta[field]))
        return {field: sorted(seen) for field, seen in values.items()}

    def revision(self) -> Revision:
        """Paper count and write revision of the papers collection: two cheap reads that change on every write.

        Asked before every question. On disk, every write by any process changes Chroma's SQLite file,
        so while the file's stat is what it was at the last read, that read still holds and Chroma is
        not asked (two reads cost 2-4 ms of a 20 ms question). A file that changed within the last
        SETTLED_SECONDS, or is mid-transaction, is always read again.
        """
        stat = self._settled_database_stat()
        if stat is not None and self._last_read is not None and self._last_read[0] == stat:
            return self._last_read[1]
        # Re-read: a Collection object keeps the metadata it was fetched with, and another process may write.
        metadata = self.client.get_collection(self.papers.name, embedding_function=None).metadata or {}
        state = Revision(self.papers.count(), str(metadata.get("revision", "")))
        self._last_read = None if stat is None else (stat, state)  # stat taken first: a write since changes it
        return state

    def _settled_database_stat(self) -> tuple[int, int, int] | None:
        """(mtime, size, inode) of the SQLite file, or None: unknown, written just now, or being written."""
        if self.database is None:
            return None
        try:
            stat = self.database.stat()
            if self.database.with_name(f"{self.database.name}-journal").exists():
                return None  # a write transaction is open (Chroma keeps SQLite's rollback journal)
        except OSError:
            return None
        if time.time() - stat.st_mtime < SETTLED_SECONDS:
            return None
        return (stat.st_mtime_ns, stat.st_size, stat.st_ino)

    def nearest(self, vector: list[float], n: int, where: dict | None) -> list[tuple[str, float]]:
        """The ids of the n chunks nearest a query vector, with their cosine similarity, nearest first.

        Ids and distances only: fetching the chunks' metadata too takes four times as long, and only
        the few chunks of the papers retrieval keeps need it (`chunks_by_id`).
        """
        found = self.chunks.query(query_embeddings=[vector], n_results=n, where=where or None, include=["distances"])
        return [(chunk_id, 1.0 - distance) for chunk_id, distance in zip(found["ids"][0], found["distances"][0])]

    def chunks_by_id(self, chunk_ids: list[str]) -> list[tuple[Document, list[float]]]:
        """These chunks, those still stored, with their vectors.

        By id: on the full list, 2.6 ms for the chunks of five papers, against 10.5 ms for the
        same chunks selected by a metadata filter on their paper ids.
        """
        from rag.index.vectors import readable_chunks  # in reads Chroma takes, around chunks without a vector

        return [
            (Document(id=cid, page_content=doc, metadata=safe_links(meta)), vec)
            for cid, doc, meta, vec in readable_chunks(self.chunks, chunk_ids, self.max_batch_size)
        ]

    # -- writes -----------------------------------------------------------------------------

    @functools.cached_property
    def max_batch_size(self) -> int:
        """The most entries Chroma takes in one write (5,461 for an on-disk index: SQLite's variable limit)."""
        return self.client.get_max_batch_size()

    def add_chunks(self, chunks: list[Document]) -> None:
        """Embed and write chunks, in as many writes as Chroma's batch limit needs (one paper can have many)."""
        for part in _batched(chunks, self.max_batch_size):
            self.vectorstore.add_documents(part, ids=[chunk.id for chunk in part])

    def remove_stale_chunks(self, paper_ids: list[str], keep: set[str]) -> int:
        """Delete the chunks of these papers whose ids are not in `keep`; returns how many."""
        removed = 0
        for part in _batched(paper_ids, DELETE_BATCH):
            ids = self.chunks.get(where={"paper_id": {"$in": part}}, include=[])["ids"]
            stale = [chunk_id for chunk_id in ids if chunk_id not in keep]
            for ids_part in _batched(stale, DELETE_BATCH):
                self.chunks.delete(ids=ids_part)
            removed += len(stale)
        return removed

    def mark_complete(self, papers: list[PaperRecord], chunk_counts: dict[str, int]) -> None:
        if not papers:
            return
        for part in _batched(papers, self.max_batch_size):
            self.papers.upsert(
                ids=[paper.paper_id for paper in part],
                documents=[paper.abstract for paper in part],
                metadatas=[{**paper.metadata(), "chunks": chunk_counts[paper.paper_id]} for paper in part],
                embeddings=[[1.0] for _ in part],  # a placeholder: this collection is never searched by vector
            )
        self.new_revision()

    def relabel(self, papers: list[PaperRecord]) -> None:
        """New metadata (a decision, authors, area) for stored papers whose title and abstract are
        unchanged: their chunks keep their text and vectors, so nothing is embedded again."""
        if not papers:
            return
        labels = {paper.paper_id: paper.metadata() for paper in papers}
        for part in _batched(list(labels), DELETE_BATCH):
            found = self.chunks.get(where={"paper_id": {"$in": part}}, include=["metadatas"])
            merged = [{**meta, **labels[meta["paper_id"]]} for meta in found["metadatas"]]
            for ids, metas in zip(_batched(found["ids"], self.max_batch_size), _batched(merged, self.max_batch_size)):
                self.chunks.update(ids=ids, metadatas=metas)
        # The paper entry last, as in an ingest: a run killed before it relabels the paper again.
        stored = self.stored_metadata(list(labels))
        for part in _batched(list(stored), self.max_batch_size):
            self.papers.update(ids=part, metadatas=[{**stored[pid], **labels[pid]} for pid in part])
        self.new_revision()

    def remove_papers(self, paper_ids: list[str]) -> int:
        """Delete papers and all their chunks; returns the number of chunks removed."""
        removed = self.remove_stale_chunks(paper_ids, keep=set())
        for part in _batched(paper_ids, DELETE_BATCH):
            self.papers.delete(ids=part)
        if paper_ids:
            self.new_revision()
        return removed

    def new_revision(self, **marks: str) -> None:
        """Stamped after every write to the papers collection: derived indexes (BM25) compare it with
        the revision they were built from, even when the writer was another process. The setup goes
        with it, so an index records how it was built from its first write on (rag/index/setup.py);
        `marks` are more of the index's metadata (`COMPLETED`: rag/ingest/complete.py)."""
        self.papers.modify(metadata={**self.recorded, "revision": uuid.uuid4().hex, **marks})


def _batched(items: list, size: int) -> Iterable[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def passage(chunk: Document) -> str:
    """The abstract text of a stored chunk, without the title it was embedded with."""
    return chunk.page_content[chunk.metadata.get("prefix_chars", 0) :]
