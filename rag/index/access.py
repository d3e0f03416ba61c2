"""Reading an on-disk index that another process may write to: re-open it when it changed.

Chroma's on-disk client loads the vector index (HNSW) once and never re-reads it, so chunks that
`rag ingest` writes from another process stay invisible to vector search while counts and `get`s
(SQLite) already see them (chroma-core/chroma#3792). Every completed ingest batch stamps the papers
collection with a new revision, so one cheap look-up tells whether someone else wrote since this
client was opened; if so, it is closed and opened again, once no question is using it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rag.index.lexical import Revision
from rag.index.locks import SharedExclusiveLock


class IndexAccess:
    """Questions share the index; a re-open waits for them; this process's own writes need none.

    `state` reads the index's revision; `reopen` closes the client, drops what was built on it and
    opens a new one (which reports its revision with `opened`). `enabled` is False for a client the caller passed in
    or a Chroma server, whose readers always see the latest writes.
    """

    def __init__(self, enabled: bool, state: Callable[[], Revision], reopen: Callable[[], None]):
        self.enabled = enabled
        self.state = state
        self.reopen = reopen
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
    def writing_here(self) -> Iterator[None]:
        """An ingest by this process: its own writes need no re-open, and nothing closes the client under it."""
        with self.lock.shared():
            self.writing += 1
            try:
                yield
            finally:
                self.writing -= 1
                if self.enabled:
                    self.seen = self.state()
