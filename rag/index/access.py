"""Reading an on-disk index that another process may write to: re-open it when it changed; writing to one alone.

Chroma's on-disk client loads the vector index (HNSW) once and never re-reads it, so chunks that
`rag ingest` writes from another process stay invisible to vector search while counts and `get`s
(SQLite) already see them (chroma-core/chroma#3792). Every completed ingest batch stamps the papers
collection with a new revision, so one cheap look-up tells whether someone else wrote since this
client was opened; if so, it is closed and opened again, once no question is using it.

Writers take turns: each process keeps its own copy of the vector index in memory and saves it over the
files, so two ingests into one folder at once lost each other's vectors (issue 39: 90 of 1,196 chunks, and
an index that could not answer). An ingest holds the folder (`folder_held`) while it writes, on a client
opened after it got it, and a second one waits, saying so; questions read meanwhile as before.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from rag.core.errors import StoreError
from rag.index.lexical import Revision
from rag.index.locks import SharedExclusiveLock, folder_held
from rag.index.setup import check_index_folder

log = logging.getLogger(__name__)


class IndexAccess:
    """Questions share the index; a re-open waits for them; this process's own writes need none.

    `state` reads the index's revision; `reopen` closes the client, drops what was built on it and
    opens a new one (which reports its revision with `opened`). `enabled` is False for a client the caller passed in
    or a Chroma server, whose readers always see the latest writes. `folder`: an on-disk index's folder, which
    one process writes to at a time (None: a Chroma server, which orders writes itself, or a client passed in).
    """

    def __init__(
        self, enabled: bool, state: Callable[[], Revision], reopen: Callable[[], None], folder: Path | None = None
    ):
        self.enabled = enabled
        self.state = state
        self.reopen = reopen
        self.folder = folder
        self.lock = SharedExclusiveLock()
        self.seen: Revision | None = None  # the revision when opened or last written here
        self.writing = 0  # ingests in progress in this process

    def opened(self, state: Revision) -> None:
        self.seen = state

    @contextmanager
    def reading(self, opened: bool) -> Iterator[Revision | None]:
        """Hold the index for one read; first re-open it if another process wrote to it.

        `opened`: whether the index has been opened at all (nothing to re-open otherwise). Yields
        the state it read (None when it read none), so the BM25 check need not read it again.
        """
        state = None
        if self.enabled and not self.writing and opened:
            with self.lock.shared():
                state = self.state()
            if state != self.seen:
                self._reopen()
                state = None  # moved on: whoever needs it reads it again
        with self.lock.shared():
            yield state

    def _reopen(self) -> None:
        with self.lock.exclusive():  # waits for the questions in flight on the old client
            if self.writing or self.state() == self.seen:
                return  # written here after all, or another question re-opened it meanwhile
            self.reopen()

    @contextmanager
    def writing_here(self, opened: bool = False) -> Iterator[None]:
        """An ingest by this process, the only writer to the folder meanwhile: a client opened before (`opened`) is
        opened again first if another process wrote since, to write on top of what it wrote; its own writes need
        no re-open, and nothing closes the client under it."""
        with self._folder_held():
            if self.enabled and opened and self.state() != self.seen:  # another process wrote since
                with self.lock.exclusive():  # waits for the questions in flight on the old client
                    self.reopen()
            with self.lock.shared():
                self.writing += 1
                try:
                    yield
                finally:
                    self.writing -= 1
                    if self.enabled:
                        self.seen = self.state()

    @contextmanager
    def _folder_held(self) -> Iterator[None]:
        if self.folder is None:
            yield
            return
        check_index_folder(self.folder)  # before anything is made there: another application's folder is refused
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise StoreError(f"cannot make the index folder {self.folder}: {err.strerror or err}") from None
        with folder_held(self.folder, lambda: log.warning(f"waiting for another ingest into {self.folder} to finish")):
            yield
