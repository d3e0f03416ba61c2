"""BM25 over paper titles and abstracts, kept in step with the papers collection.

The papers collection in Chroma is the source of truth; the BM25 index is derived from it and
persisted in a folder beside the vector index (or in a local cache for a Chroma server). Every
write to the papers collection stamps it with a new revision (see `PaperIndex.revision`), so
one cheap look-up per query — paper count and revision — tells whether the index in memory or on
disk still describes the collection. When it does not, it is rebuilt from the collection (a few
seconds for the full ICLR list). That also picks up an ingest done by another process.

The build also records which paper each stored chunk belongs to, so that vector search asks Chroma
for chunk ids and distances only (see `Bm25Index.paper_of`).

On disk each build is a folder of its own; `current.json` names the build in use and is replaced
atomically after the build is complete, so a reader never sees a half-written index. Loading, building
and publishing happen under a lock on the folder, so processes opening one index at once build it once.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import math
import os
import shutil
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rag.core.errors import StoreError
from rag.core.filters import FIELDS, Filters, column
from rag.index.authors import sayable_names
from rag.index.store import Revision
from rag.text.terms import terms

if TYPE_CHECKING:
    from rag.index.store import PaperIndex

log = logging.getLogger(__name__)

LEXICAL_VERSION = 7  # bump when the tokenizer or the files change, so old builds are rebuilt
# A build that read less than the state holds is built again by each question for this long (a read that
# raced a write sees all of it within milliseconds); after that, it is taken as what the index holds.
SHORT_FOR = 30.0


class Bm25Index:
    """BM25 over "title + abstract" of each paper, with the metadata the retrieval filters need, and
    which paper each stored chunk belongs to (so vector search need not fetch chunk metadata)."""

    def __init__(
        self,
        bm25,
        ids: list[str],
        fields: dict[str, list],
        state: Revision,
        fingerprint: str,
        chunks: dict[str, list],
    ):
        self.bm25 = bm25
        self.ids = ids
        self.row_of = {paper_id: row for row, paper_id in enumerate(ids)}
        self.chunks = chunks  # {"ids": chunk ids, "rows": their papers' rows}: the chunks `paper_of` knows
        self.paper_row_of_chunk = dict(zip(chunks["ids"], chunks["rows"]))
        self.chunk_ids_of_row: dict[int, list[str]] = {}
        for chunk_id, row in self.paper_row_of_chunk.items():
            self.chunk_ids_of_row.setdefault(row, []).append(chunk_id)
        self.state = state
        self.lacking = 0  # papers the build missed, or holds fewer chunks of than ingest wrote (see `build`)
        self.fingerprint = fingerprint
        self.fields = fields
        self.columns = {spec.stored: column(spec, fields[spec.stored]) for spec in FIELDS}
        self._masks: dict[Filters, np.ndarray] = {}

    # -- building and files -----------------------------------------------------------------

    @classmethod
    def build(
        cls,
        papers: Iterable[tuple[str, str, dict[str, Any]]],
        state: Revision,
        chunks: Iterable[tuple[str, str, str]] = (),
    ) -> Bm25Index:
        """Index (paper_id, abstract, metadata) triples, as `PaperIndex.iter_papers` yields them, and
        (chunk id, paper_id, content hash) triples, as `PaperIndex.iter_chunk_papers` does."""
        import bm25s

        ids, corpus, written = [], [], []
        hashes: list[str] = []
        fields: dict[str, list] = {spec.stored: [] for spec in FIELDS}  # what filters match
        fields["content_hash"] = hashes
        fields["title"] = titles = []  # what a paper is asked for by (`named`)
        for paper_id, abstract, metadata in papers:
            ids.append(paper_id)
            hashes.append(metadata.get("content_hash", ""))
            titles.append(metadata.get("title", ""))
            written.append(metadata.get("chunks", 0))  # how many chunks ingest wrote for it
            corpus.append(terms(f"{metadata.get('title', '')}\n{abstract}"))
            for spec in FIELDS:
                fields[spec.stored].append(metadata.get(spec.stored))
        bm25 = bm25s.BM25()
        if ids:
            bm25.index(corpus, show_progress=False)
        # Only the chunks of each paper's version held here; see `paper_of`.
        row_of = {paper_id: row for row, paper_id in enumerate(ids)}
        held: dict[str, list] = {"ids": [], "rows": []}
        for chunk_id, paper_id, content_hash in chunks:
            row = row_of.get(paper_id)
            if row is not None and hashes[row] == content_hash:
                held["ids"].append(chunk_id)
                held["rows"].append(row)
        built = cls(bm25, ids, fields, state, fingerprint(ids, hashes), held)
        held_per_row = np.bincount(np.asarray(held["rows"], dtype=np.int64), minlength=len(ids))
        built.lacking = max(0, state.count - len(ids)) + int(np.sum(held_per_row < np.asarray(written)))
        return built

    def save(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        if self.ids:
            self.bm25.save(str(folder), show_progress=False)
        (folder / "papers.json").write_text(json.dumps({"ids": self.ids, **self.fields}), encoding="utf-8")
        (folder / "chunks.json").write_text(json.dumps(self.chunks), encoding="utf-8")
        manifest = {
            "version": LEXICAL_VERSION,
            "count": self.state.count,
            "revision": self.state.revision,
            "papers": len(self.ids),
            "fingerprint": self.fingerprint,
        }
        # Written last: a build folder without its manifest is unfinished and never read.
        _write_atomically(folder / "manifest.json", json.dumps(manifest))

    @classmethod
    def load(cls, folder: Path) -> Bm25Index | None:
        """The build in `folder`, or None when it is missing, unfinished, or from another version."""
        import bm25s

        try:
            manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
            if manifest.get("version") != LEXICAL_VERSION:
                return None
            papers = json.loads((folder / "papers.json").read_text(encoding="utf-8"))
            chunks = json.loads((folder / "chunks.json").read_text(encoding="utf-8"))
            bm25 = bm25s.BM25.load(str(folder), show_progress=False) if manifest["papers"] else bm25s.BM25()
        except (OSError, ValueError, KeyError):
            return None  # a build removed or replaced under us: the caller rebuilds
        ids = papers.pop("ids")
        if any(spec.stored not in papers for spec in FIELDS):
            return None  # built before a filter was declared: rebuilt with its column
        if len(ids) != manifest["papers"] or (ids and bm25.scores["num_docs"] != len(ids)):
            return None
        state = Revision(manifest["count"], manifest["revision"])
        return cls(bm25, ids, papers, state, manifest["fingerprint"], chunks)

    # -- questions --------------------------------------------------------------------------

    def search(self, question: str, n: int, filters: Filters | None = None) -> list[tuple[str, float]]:
        """Up to n (paper_id, BM25 score) pairs, best first; papers sharing no term are left out."""
        query = terms(question)
        if not query or not self.ids:
            return []
        scores = self.bm25.get_scores(query)
        if filters is not None and not filters.empty:
            scores = scores * self.mask(filters)
        n = min(n, len(self.ids))
        top = np.argpartition(-scores, n - 1)[:n]
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(self.ids[row], float(scores[row])) for row in top if scores[row] > 0]

    def named(self, text: str) -> list[str]:
        """The papers whose title, or whose title's name before a colon ("Show-o" for "Show-o: One Single
        Transformer …"), is `text`, case and spacing aside: a name no search may find by its words."""
        return [self.ids[row] for row in self.titles.get(" ".join(text.split()).casefold(), [])]

    @functools.cached_property
    def author_names(self) -> dict[str, str]:
        """The stored authors' names a question may say without "by" (rag/index/authors.py), casefolded, as stored."""
        return sayable_names(self.fields["authors"], self.bm25, len(self.ids))

    def names_person(self, name: str) -> bool:
        """Whether a stored author is the person `name` names (`same_person`: a whole name, initials aside)."""
        return bool(self.mask(Filters(author=name)).any())

    @functools.cached_property
    def titles(self) -> dict[str, list[int]]:
        """The rows each title answers to: the whole title and its name before a colon, if it has one."""
        rows: dict[str, list[int]] = {}
        for row, title in enumerate(self.fields["title"]):
            for key in {title, title.partition(":")[0] if ":" in title else ""}:
                if key := " ".join(key.split()).casefold():
                    rows.setdefault(key, []).append(row)
        return rows

    def paper_of(self, chunk_id: str) -> str | None:
        """The paper of a chunk of a complete paper, in the version this index holds; else None.

        Ingest writes a paper's chunks before marking it complete (and a changed paper's new chunks
        before removing its old ones), so a reader may meet chunks of a paper in between: they are
        left out until the paper is complete, and then only its current version's are used. Marking
        a paper complete stamps a new revision, so this index is rebuilt before its chunks count.
        """
        row = self.paper_row_of_chunk.get(chunk_id)
        return None if row is None else self.ids[row]

    def chunk_ids(self, paper_id: str) -> list[str]:
        """The ids of a paper's chunks, in the version this index holds."""
        row = self.row_of.get(paper_id)
        return [] if row is None else self.chunk_ids_of_row.get(row, [])

    def admits(self, paper_id: str, filters: Filters) -> bool:
        """Whether a paper matches the filters (the author substring included)."""
        return filters.empty or bool(self.mask(filters)[self.row_of[paper_id]])

    def coverage(self, question: str, paper_ids: list[str]) -> dict[str, float]:
        """IDF-weighted share of the question's content terms found in each paper's title or abstract.

        Missing a rare, telling word ("membership", "protein") counts for much more than missing a
        common one ("model"); a term that no paper holds gets the highest weight.
        """
        query = sorted(set(terms(question)))
        rows = {paper_id: self.row_of[paper_id] for paper_id in paper_ids if paper_id in self.row_of}
        if not query or not rows:
            return dict.fromkeys(rows, 0.0)
        vocab = self.bm25.vocab_dict
        indices, indptr = self.postings, self.bm25.scores["indptr"]
        wanted = np.fromiter(rows.values(), dtype=indices.dtype, count=len(rows))
        total, found = 0.0, np.zeros(len(rows))
        for term in query:
            column = vocab.get(term)
            docs = indices[indptr[column] : indptr[column + 1]] if column is not None else indices[:0]
            weight = idf(len(self.ids), len(docs))
            total += weight
            if len(docs):  # rows ascending: a binary search per paper, not a set of a common term's rows
                at = np.minimum(np.searchsorted(docs, wanted), len(docs) - 1)
                found += weight * (docs[at] == wanted)
        return {paper_id: float(weight / total) for paper_id, weight in zip(rows, found)}

    @functools.cached_property
    def postings(self) -> np.ndarray:
        """The rows holding each term (BM25's sparse matrix indices), ascending within each term.

        bm25s writes them so (scipy's canonical form); checked once, and sorted if not.
        """
        indices, indptr = self.bm25.scores["indices"], self.bm25.scores["indptr"]
        descents = np.flatnonzero(np.diff(indices) <= 0) + 1
        if np.isin(descents, indptr).all():
            return indices
        terms_of = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
        return indices[np.lexsort((indices, terms_of))]

    def stored_fields(self, filters: Filters) -> dict[str, list]:
        """The stored metadata the filters read (paper_id, status, primary_area, authors, has_code), as one
        list per key, of the papers `filters` admit: what a count over the metadata reads."""
        rows = np.flatnonzero(self.mask(filters)) if not filters.empty else range(len(self.ids))
        return {key: [values[row] for row in rows] for key, values in self.fields.items()} | {
            "paper_id": [self.ids[row] for row in rows]
        }

    def mask(self, filters: Filters) -> np.ndarray:
        """1.0 for papers the filters admit, 0.0 for the rest (cached per filter)."""
        mask = self._masks.get(filters)
        if mask is None:
            mask = filters.matches(self.columns).astype(np.float32)
            if len(self._masks) > 64:
                self._masks.clear()
            self._masks[filters] = mask
        return mask


class LexicalStore:
    """The BM25 index of one `PaperIndex`, loaded from `folder` or rebuilt when the collection moved on."""

    def __init__(self, index: PaperIndex, folder: Path):
        self.index = index
        self.folder = Path(folder)
        self._loaded: Bm25Index | None = None
        self._lock = threading.Lock()  # one rebuild at a time when the UI serves several questions
        self.rebuilds = 0
        self._short_since: dict[Revision, float] = {}  # states whose builds read less than they hold

    @property
    def loaded(self) -> Bm25Index | None:
        """The index as last loaded or rebuilt, whatever the collection holds now; None before the first."""
        return self._loaded

    def current(self, state: Revision | None = None) -> Bm25Index:
        """The index for what the collection holds now (`state`, read here if not given); loads or
        rebuilds only when that changed."""
        state = state if state is not None else self.index.revision()
        loaded = self._loaded
        if loaded is not None and loaded.state == state:
            return loaded
        with self._lock:
            if self._loaded is not None and self._loaded.state == state:
                return self._loaded
            with self._folder_locked():
                on_disk = self._load_current()
                self._loaded = on_disk if on_disk is not None and on_disk.state == state else self._rebuild(state)
            return self._loaded

    def mark_stale(self) -> None:
        """Forget the index in memory; the next question checks the collection again."""
        self._loaded = None

    @contextmanager
    def _folder_locked(self) -> Iterator[None]:
        """Held by one process at a time while it loads, builds or publishes a build in the folder.

        Several processes opening one fresh index (replicas starting together) would otherwise each
        build, and one's clean-up would delete the folder another is still writing. With it, the first
        builds and the others wait, then load that build. The lock is the kernel's (`flock`): a process
        that dies holding it releases it.
        """
        import fcntl

        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            handle = open(self.folder / ".lock", "a")  # noqa: SIM115 - held for the block below
        except OSError as err:
            raise StoreError(f"cannot write the BM25 index in {self.folder}: {err}") from None
        with handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            yield  # closing the file releases the lock

    def _load_current(self) -> Bm25Index | None:
        try:
            build = json.loads((self.folder / "current.json").read_text(encoding="utf-8"))["build"]
        except (OSError, ValueError, KeyError):
            return None
        return Bm25Index.load(self.folder / build)

    def _rebuild(self, state: Revision) -> Bm25Index:
        # The state is read before the papers: if an ingest writes meanwhile, the build is labelled
        # with the older state and the next question rebuilds again; it is never taken as newer.
        built = Bm25Index.build(self.index.iter_papers(), state, self.index.iter_chunk_papers())
        if built.lacking and not self._short_for_long(state, built.lacking):
            # Fewer papers than the state counts, or a paper with fewer chunks than ingest wrote: the read
            # missed part of a write it had counted. Labelled so, no question takes it as the state's
            # build: the next one builds again, instead of this one lacking them until the next write.
            built.state = Revision(-1, state.revision)
            log.info("the BM25 build read %s papers short of what the index holds; building again", built.lacking)
        build = f"build-{uuid.uuid4().hex[:12]}"
        try:
            built.save(self.folder / build)
            _write_atomically(self.folder / "current.json", json.dumps({"build": build}))
        except OSError as err:
            raise StoreError(f"cannot write the BM25 index in {self.folder}: {err}") from None
        self.rebuilds += 1
        self._remove_old_builds(keep=build)
        return built

    def _short_for_long(self, state: Revision, lacking: int) -> bool:
        """Whether builds of this state have lacked papers or chunks for SHORT_FOR seconds: then it is
        what the index holds (an ingest killed between its writes), kept until the next write; `rag
        ingest` again completes it. Before, each question builds again."""
        if len(self._short_since) > 64:
            self._short_since.clear()
        first = self._short_since.setdefault(state, time.monotonic())
        if time.monotonic() - first < SHORT_FOR:
            return False
        log.warning("%s papers of the index lack chunks: run `rag ingest` on them again to complete them", lacking)
        return True

    def _remove_old_builds(self, keep: str) -> None:
        # Under the folder's lock: no other process is writing a build. A leftover folder is harmless.
        for old in self.folder.glob("build-*"):
            if old.name != keep:
                shutil.rmtree(old, ignore_errors=True)


def idf(papers: int, holding: int) -> float:
    """BM25's inverse document frequency (the Lucene form, never negative)."""
    return math.log(1 + (papers - holding + 0.5) / (holding + 0.5))


def fingerprint(ids: list[str], hashes: list[str]) -> str:
    """A digest of which papers with which abstracts an index was built from."""
    digest = hashlib.sha256()
    for paper_id, content_hash in sorted(zip(ids, hashes)):
        digest.update(f"{paper_id}\0{content_hash}\n".encode())
    return f"{len(ids)}-{digest.hexdigest()[:16]}"


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
