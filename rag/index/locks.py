"""A shared/exclusive lock: many readers at once, or one writer alone; and a folder one process writes to at a time.

`RagService` holds the first shared while a question reads the index and exclusively while it re-opens
the index (see `RagService.reading`), so a client is never closed under a question still using it.
An ingest holds the second (`folder_held`) on an on-disk index's folder (rag/index/access.py).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from rag.core.errors import StoreError


class SharedExclusiveLock:
    """Readers share; a writer waits for the readers in progress and then holds it alone.

    A waiting writer stops new readers from entering, so a steady stream of questions cannot
    postpone a re-open forever. Not re-entrant: a holder must not take it again.
    """

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._readers = 0
        self._writing = False
        self._writers_waiting = 0

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self._changed:
            self._changed.wait_for(lambda: not self._writing and not self._writers_waiting)
            self._readers += 1
        try:
            yield
        finally:
            with self._changed:
                self._readers -= 1
                if not self._readers:
                    self._changed.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._changed:
            self._writers_waiting += 1
            try:
                self._changed.wait_for(lambda: not self._writing and not self._readers)
            finally:
                self._writers_waiting -= 1
            self._writing = True
        try:
            yield
        finally:
            with self._changed:
                self._writing = False
                self._changed.notify_all()


@contextmanager
def folder_held(folder: Path, on_wait: Callable[[], None]) -> Iterator[None]:
    """Held by one process (or thread) at a time; `on_wait` is called first when another holds it.

    The kernel's lock (`flock`) on the folder itself, as the BM25 cache's folder is locked (rag/index/lexical.py):
    a process that dies holding it releases it, and no file is added to the folder, so a folder that holds only an
    index still does, and a read-only one can be locked too.
    """
    import fcntl
    import os

    try:
        handle = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as err:
        raise StoreError(f"cannot open the index folder {folder}: {err.strerror or err}") from None
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            on_wait()
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        os.close(handle)  # releases the lock
