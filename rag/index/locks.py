"""A shared/exclusive lock: many readers at once, or one writer alone.

`RagService` holds it shared while a question reads the index and exclusively while it re-opens
the index (see `RagService.reading`), so a client is never closed under a question still using it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


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
