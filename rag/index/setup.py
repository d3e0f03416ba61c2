"""Which embedding setup an index was built with, and which stored index a config opens.

Vectors are comparable only when made by the same model (fp32 or int8) from the same chunks, so each
setup's chunks live in collections of their own (`IndexSetup.collection_name`). The setup is also
recorded in the papers collection's metadata at every write (`IndexSetup.metadata`): inside Chroma, so
an on-disk folder and a Chroma server database carry it alike, it is copied with the folder or backed up
with the server, and no side file can drift out of step with the collection it describes.

Opening a store then reads the index it holds with the setup that built it, whatever the config says
(`choose_index`): a user who ingested with `onnx-int8` and asks without saying so is answered from
that index, and the bundled seeds never go into a store that already holds an index.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from rag.core.config import BUNDLED_EMBEDDING, ChunkingConfig, EmbeddingConfig, Settings, VectorstoreConfig
from rag.core.errors import ConfigError, StoreError
from rag.index.embeddings import model_directory

INDEX_VERSION = 1  # bump when the stored layout changes, so old indexes are never misread
RECORD_PREFIX = "setup_"  # the papers collection's metadata keys that hold the setup
PAPERS_SUFFIX = "-papers"
BACKENDS = ("onnx", "onnx-int8", "static")  # one of each vector kind: torch makes onnx's vectors
CHROMA_DATABASE = "chroma.sqlite3"  # the file an on-disk Chroma folder keeps everything in
COMPLETED = "completed_by"  # a static index's metadata key: the index of the model's vectors that replaced it


@dataclass(frozen=True)
class IndexSetup:
    """What an index's vectors and chunks depend on."""

    model: str
    backend: str
    chunk_tokens: int
    overlap_tokens: int
    version: int = INDEX_VERSION

    @classmethod
    def of(cls, config: Settings) -> IndexSetup:
        embedding, chunking = config.embedding, config.chunking
        return cls(embedding.model, embedding.backend, chunking.chunk_tokens, chunking.overlap_tokens)

    @classmethod
    def recorded(cls, metadata: dict[str, Any]) -> IndexSetup | None:
        """The setup recorded in a papers collection's metadata; None when it holds none."""
        try:
            return cls(**{field.name: metadata[RECORD_PREFIX + field.name] for field in fields(cls)})
        except (KeyError, TypeError):
            return None

    def metadata(self) -> dict[str, str | int]:
        return {RECORD_PREFIX + key: value for key, value in asdict(self).items()}

    @property
    def vectors(self) -> str:
        """The kind of vectors the index stores: torch and onnx make the same ones."""
        return {"onnx-int8": "int8", "static": "static"}.get(self.backend, "fp32")

    @property
    def model_label(self) -> str:
        """A short name for the model: the bundled model's name, or a local model folder's."""
        return self.model if self.model == BUNDLED_EMBEDDING else Path(self.model).name

    def collection_name(self) -> str:
        """Derived from what the vectors depend on: torch and onnx share a collection (same vectors)."""
        settings = {
            "model": self.model_label,
            "int8": self.backend == "onnx-int8",
            "chunking": {"chunk_tokens": self.chunk_tokens, "overlap_tokens": self.overlap_tokens},
            "version": self.version,
        } | ({"static": True} if self.backend == "static" else {})  # the others' names as they always were
        digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:10]
        slug = re.sub(r"[^a-z0-9]+", "-", self.model_label.lower()).strip("-")[:40] or "model"
        return f"{slug}-{digest}"

    def same_vectors(self, other: IndexSetup) -> bool:
        """Whether an index built with `other` is read right with this setup (torch and onnx make the same vectors)."""
        vectors = (self.model, self.vectors, self.chunk_tokens, self.overlap_tokens, self.version)
        theirs = (other.model, other.vectors, other.chunk_tokens, other.overlap_tokens, other.version)
        return vectors == theirs

    def label(self) -> str:
        return (
            f"{self.model_label} ({self.backend}; chunks of {self.chunk_tokens} tokens, {self.overlap_tokens} shared)"
        )

    def described(self, papers: int, chunks: int, exists: bool, where: str) -> dict[str, Any]:
        """What `rag stats` and the app's header show of an index with this setup, holding so many papers."""
        return {
            "papers": papers,
            "chunks": chunks,
            "collection": self.collection_name() + ("" if exists else " (none yet: rag ingest makes it)"),
            "index": where,
            "embedding": f"{self.model_label} ({self.backend})",
            "built with": self.label(),
        }

    def applied_to(self, config: Settings) -> Settings:
        """`config` with this setup's model, backend and chunking."""
        embedding = config.embedding.model_copy(update={"model": self.model, "backend": self.backend})
        chunking = config.chunking.model_copy(
            update={"chunk_tokens": self.chunk_tokens, "overlap_tokens": self.overlap_tokens}
        )
        return config.model_copy(update={"embedding": embedding, "chunking": chunking})

    def choosing_variables(self) -> str:
        """The environment variables that select this setup: its backend always, the rest where not the default."""
        embedding, chunking = EmbeddingConfig(), ChunkingConfig()
        variables = {
            "RAG_EMBEDDING__MODEL": (self.model, embedding.model),
            "RAG_CHUNKING__CHUNK_TOKENS": (self.chunk_tokens, chunking.chunk_tokens),
            "RAG_CHUNKING__OVERLAP_TOKENS": (self.overlap_tokens, chunking.overlap_tokens),
        }
        chosen = [f"{name}={value}" for name, (value, default) in variables.items() if value != default]
        return " ".join([f"RAG_EMBEDDING__BACKEND={self.backend}", *chosen])

    def unusable_because(self) -> str | None:
        """Why this setup can't be loaded on this machine (another version's index, a model not here), or None."""
        if self.version != INDEX_VERSION:
            return f"it is index version {self.version} and this abstract-rag reads version {INDEX_VERSION}"
        try:
            model_directory(EmbeddingConfig(model=self.model))
        except ConfigError as err:
            return str(err)
        return None


@dataclass(frozen=True)
class StoredIndex:
    """One collection pair of ours found in a store, and what it holds."""

    name: str
    setup: IndexSetup | None  # None: written before setups were recorded, by a setup we can't tell
    papers: int
    chunks: int

    def described(self) -> str:
        built = self.setup.label() if self.setup else f"an unrecorded setup (collection {self.name})"
        return f"{built}, {self.papers:,} papers"


@dataclass(frozen=True)
class Choice:
    """The config to read and write a store with, whether its index exists yet, and what to tell the user."""

    config: Settings
    exists: bool
    note: str | None = None


def stored_indexes(client, config: Settings) -> list[StoredIndex]:
    """The indexes of ours in a store that hold anything, each with its setup.

    An index written before setups were recorded has none in its metadata; its setup is found when its
    name is that of the config's model and chunking with one of the backends (the usual case: ingested
    with onnx-int8, asked with the default).
    """
    names = {getattr(collection, "name", collection) for collection in client.list_collections()}
    found = []
    for name in our_pairs(names):
        papers_name = name + PAPERS_SUFFIX
        papers = client.get_collection(papers_name, embedding_function=None)
        chunks = client.get_collection(name, embedding_function=None)
        # `rag ingest --complete` replaced it (rag/ingest/complete.py)
        if (papers.metadata or {}).get(COMPLETED) in names:
            continue
        setup = IndexSetup.recorded(papers.metadata or {}) or _unrecorded_setup(name, config)
        stored = StoredIndex(name, setup, papers.count(), chunks.count())
        if stored.papers or stored.chunks:  # an empty pair (opened, never written) is no index
            found.append(stored)
    return found


def our_pairs(names: set[str]) -> list[str]:
    """The chunk collections of ours among these collection names: those with their papers collection beside them."""
    return sorted(name for name in names if name + PAPERS_SUFFIX in names)


def _unrecorded_setup(name: str, config: Settings) -> IndexSetup | None:
    configured = IndexSetup.of(config)
    candidates = [configured] + [IndexSetup(**{**asdict(configured), "backend": backend}) for backend in BACKENDS]
    return next((setup for setup in candidates if setup.collection_name() == name), None)


def choose_index(stored: list[StoredIndex], config: Settings, where: str) -> Choice:
    """Which of a store's indexes `config` opens, and with which setup.

    None: the config's own, new. One: that one, with the setup that built it (a line says so when the
    config asked for another). Several (made by versions that kept a new collection per setup): the one the
    config names explicitly (a config file's or RAG_* variable's embedding or chunking), else an error
    naming them and how to choose.
    """
    configured = IndexSetup.of(config)
    stored = _completing(stored)
    if not stored:
        return Choice(config, exists=False)
    own = next((index for index in stored if index.setup and index.setup.same_vectors(configured)), None)
    if len(stored) > 1:
        if own is not None and _sets_the_setup(config):
            return Choice(config, exists=True)
        listed = "; ".join(index.described() for index in stored)
        choices = " or ".join(index.setup.choosing_variables() for index in stored if index.setup)
        raise StoreError(
            f"the index {where} holds {len(stored)} indexes built with different setups: {listed}; "
            f"choose one by setting {choices or 'the setup it was built with'}, "
            "or keep each in a folder of its own (--index PATH)"
        )
    (index,) = stored
    if own is not None:
        return Choice(config, exists=True)
    if index.setup is None:
        raise StoreError(
            f"the index {where} ({index.described()}) was built with another setup than {configured.label()}; "
            "set the embedding model, backend and chunking it was built with, or use another folder (--index PATH)"
        )
    if problem := index.setup.unusable_because():
        raise StoreError(
            f"the index {where} was built with {index.setup.label()}, which can't be read here ({problem}); "
            f"use another folder for {configured.label()} (--index PATH)"
        )
    # Said only when a config file or variable asked for another setup: an index built with an earlier
    # default (onnx) is simply read with it, without a line on every command.
    note = f"the index {where} was built with {index.setup.label()}; using that, not {configured.label()}"
    return Choice(index.setup.applied_to(config), exists=True, note=note if _sets_the_setup(config) else None)


def _completing(stored: list[StoredIndex]) -> list[StoredIndex]:
    """A static index and its papers' index of the model's vectors being written beside it (`rag ingest
    --complete`) are one index: the static one until the other holds as many papers."""
    static = [index for index in stored if index.setup and index.setup.vectors == "static"]
    others = [index for index in stored if index not in static]
    if len(static) != 1 or len(others) != 1:
        return stored
    (static_index,), (other,) = static, others
    if other.setup is None or replace(other.setup, backend="static") != static_index.setup:  # another model, chunks
        return stored
    return [other if other.papers >= static_index.papers else static_index]


def _sets_the_setup(config: Settings) -> bool:
    """Whether a config file or RAG_* variable set the embedding model, backend or chunking."""
    return bool(config.embedding.model_fields_set & {"model", "backend"} or config.chunking.model_fields_set)


def check_index_folder(path: Path) -> bool:
    """Whether `path` holds an on-disk index; False for a folder that can become one (new or empty).

    Anything else (a file, a folder of other things such as / or /proc/self, one that can't be read) is
    a StoreError: an index is never mixed into a folder that holds other files.
    """
    try:
        if not path.exists():
            _check_can_be_made(path)
            return False
        if not path.is_dir():
            raise StoreError(f"the index path {path} is not a folder; give a new or empty folder (--index PATH)")
        if (path / CHROMA_DATABASE).is_file():
            _check_holds_ours(path)
            return True
        if any(path.iterdir()):
            raise StoreError(
                f"the index path {path} holds other files and no index; give a new or empty folder (--index PATH)"
            )
    except OSError as err:
        raise StoreError(f"cannot use {path} for the index: {err.strerror or err}") from None
    return False


def _check_holds_ours(path: Path) -> None:
    """A Chroma database whose collections include no index of ours is another application's: refused
    before Chroma opens it, since opening writes to it (see `check_can_write`)."""
    names = _collection_names(path / CHROMA_DATABASE)
    if names and not our_pairs(names):
        listed = ", ".join(sorted(names)[:5]) + (f" and {len(names) - 5:,} more" if len(names) > 5 else "")
        raise StoreError(
            f"the index path {path} holds other files and no index (a Chroma database of other collections: "
            f"{listed}); give a new or empty folder (--index PATH)"
        )


def _collection_names(database: Path) -> set[str]:
    """The collection names in a Chroma database, read with SQLite in read-only mode (Chroma's own client
    writes at every open); none when it can't be read so, and Chroma then says what is wrong when it opens it."""
    import sqlite3
    from contextlib import closing
    from urllib.parse import quote

    try:
        with closing(sqlite3.connect(f"file:{quote(str(database.absolute()))}?mode=ro", uri=True)) as db:
            return {str(name) for (name,) in db.execute("SELECT name FROM collections")}
    except sqlite3.Error:
        return set()


def is_read_only(path: Path) -> bool:
    """Whether `path` holds an index (Chroma's database) that this user can read but not write."""
    import os

    database = path / CHROMA_DATABASE
    can_write = os.access(path, os.W_OK | os.X_OK) and os.access(database, os.W_OK)
    return database.is_file() and os.access(database, os.R_OK) and not can_write


def readable_copy(path: Path) -> Path:
    """A private, writable copy of the read-only index at `path`, removed when the process ends. Chroma (1.x)
    opens an on-disk index only where it can write (see `check_can_write`), so an index mounted read-only, as
    a lab's replicas mount one, is read from a copy of it taken when it is first opened."""
    import atexit
    import os
    import shutil
    import tempfile

    copy = Path(tempfile.mkdtemp(prefix="rag-read-only-")) / "index"
    atexit.register(shutil.rmtree, copy.parent, ignore_errors=True)
    shutil.copytree(path, copy, copy_function=shutil.copyfile)
    for folder, _, files in os.walk(copy):  # copytree keeps the folders' read-only modes
        os.chmod(folder, 0o700)
        for name in files:
            os.chmod(os.path.join(folder, name), 0o600)
    return copy


def check_can_write(path: Path) -> None:
    """Chroma (1.x) opens an on-disk folder only with write access: every `PersistentClient` writes to its
    database (a lock row, its migrations), and there is no read-only client (chroma-core/chroma#1438). So
    a folder, or a database in it, that this user can't write to is a StoreError saying what to do,
    before Chroma fails on it with a traceback."""
    import os

    database = path / CHROMA_DATABASE
    writable = os.access(path, os.W_OK | os.X_OK) and (not database.exists() or os.access(database, os.W_OK))
    if writable or not path.exists():
        return
    if not database.exists():
        raise StoreError(
            f"cannot make the index in {path}: this user can't write to it; give another folder (--index PATH)"
        )
    raise StoreError(
        f"the index at {path} is read-only to this user, and Chroma opens an index only where it can write "
        f"(it writes to its database at every open); copy the folder to one you can write to and use the copy "
        f"(--index COPY), or serve it from a Chroma server that can write it (chroma run --path {path}; "
        "vectorstore.mode: http)"
    )


def _check_can_be_made(path: Path) -> None:
    """A new index folder can be made under the nearest folder above it that exists."""
    import os

    above = next(parent for parent in path.absolute().parents if parent.exists())
    if not above.is_dir() or not os.access(above, os.W_OK | os.X_OK):
        raise StoreError(f"cannot make the index folder {path}: {above} is not a folder this user can write to")


@dataclass(frozen=True)
class IndexFiles:
    """Where an index's files are: Chroma's database (an on-disk folder's; None for a Chroma server),
    and the folder of the BM25 index kept beside the collection."""

    database: Path | None
    bm25: Path


def index_files(store: VectorstoreConfig, collection: str, lexical_cache: Path) -> IndexFiles:
    """The files of `collection`: in an on-disk store, Chroma's database and the BM25 folder sit in the
    index folder; a Chroma server's BM25 index is cached under `lexical_cache`, one folder per server."""
    if store.mode == "persistent":
        return IndexFiles(store.path / CHROMA_DATABASE, store.path / f"{collection}-bm25")
    server = re.sub(r"[^A-Za-z0-9.-]+", "_", f"{store.host}-{store.port}-{store.tenant}-{store.database}")
    return IndexFiles(None, lexical_cache / server / f"{collection}-bm25")


def unshared_spelling(path: Path) -> str:
    """The folder's name as no open client of this process spells it ("/index", "/index/.", "/index/./.", …).

    Chroma keeps one System per folder name in a process, and a client's close stops it only when no other client
    holds it: with a second service over the same folder (a /v1 request naming another config), a re-open after
    another process wrote (rag/index/access.py) got the stale vectors back ("Error finding id"). A name of its own
    gives each client its own System, as if it were another process's."""
    from chromadb.api.shared_system_client import SharedSystemClient

    spelled = str(path)
    while spelled in SharedSystemClient._identifier_to_system:
        spelled = os.path.join(spelled, ".")
    return spelled
