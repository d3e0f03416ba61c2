"""`rag ingest --complete`: an index of static vectors given the model's own, while it answers (issue 42).

Every chunk of the static index is embedded by the model into the collections of the same papers' own index,
beside it, then the papers' records are copied. Until the copy holds every paper, the store reads as the
static index (`rag/index/setup.py`, `choose_index`), so nothing half-built is ever read as whole; a run that
is stopped leaves the chunks it wrote, and the next run embeds only the others. When done, the static index
is marked as completed by the new one (`COMPLETED` in its papers' metadata), which later opens then skip, and services
that had it open move to the new one at their next question (the mark is a write they notice).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rag.index.setup import COMPLETED

if TYPE_CHECKING:
    from langchain_core.embeddings import Embeddings

    from rag.index.store import PaperIndex

PAGE = 512  # chunks read, embedded and written at a time: a stopped run loses at most this many


@dataclass
class Completion:
    """What `complete` did."""

    chunks: int  # embedded by this run
    kept: int  # written by an earlier, stopped run
    papers: int
    seconds: float

    def summary(self) -> str:
        earlier = f" ({self.kept} written by an earlier run)" if self.kept else ""
        return (
            f"{self.chunks} chunks embedded{earlier} for {self.papers} papers in {self.seconds:.1f} s; "
            "questions are answered from the model's vectors now"
        )


def complete(
    static: PaperIndex, full: PaperIndex, model: Embeddings, progress: bool = False, before: Callable[[], object] = list
) -> Completion:
    """Embed every chunk of `static` with `model` into `full` (both of the same papers and chunks), copy the papers'
    records, call `before` (the map is laid out there) and mark `static` completed by `full`."""
    started = time.perf_counter()
    have = set(full.chunks.get(include=[])["ids"])
    bar = _bar(static.chunk_count(), len(have)) if progress else None
    embedded = 0
    for page in _pages(static.chunks):
        missing = [i for i, chunk_id in enumerate(page["ids"]) if chunk_id not in have]
        if missing:
            texts = [page["documents"][i] for i in missing]
            full.chunks.add(
                ids=[page["ids"][i] for i in missing],
                documents=texts,
                metadatas=[page["metadatas"][i] for i in missing],
                embeddings=model.embed_documents(texts),
            )
            embedded += len(missing)
        if bar is not None:
            bar.update(len(missing))
    if bar is not None:
        bar.close()
    for page in _pages(static.papers):  # the papers last: until all are there, the static index answers
        full.papers.upsert(
            ids=page["ids"],
            documents=page["documents"],
            metadatas=page["metadatas"],
            embeddings=[[1.0] for _ in page["ids"]],  # as PaperIndex.mark_complete: never searched by vector
        )
    full.new_revision()
    before()
    static.new_revision(**{COMPLETED: full.name})
    return Completion(embedded, len(have), full.paper_count(), time.perf_counter() - started)


def _pages(collection) -> Iterator[dict]:
    """A collection's records with their documents and metadata, PAGE at a time."""
    for offset in range(0, collection.count(), PAGE):
        yield collection.get(include=["documents", "metadatas"], limit=PAGE, offset=offset)


def _bar(total: int, done: int):
    from tqdm import tqdm

    return tqdm(total=total, initial=done, unit="chunk", desc="complete", file=sys.stderr, dynamic_ncols=True)
