"""Answer slots shared by the chat page and the /v1 API of `rag serve`.

Gradio's queue limits the chat's answers (and `/ask`'s) to `ui.concurrency_limit`, but the API's
routes are plain FastAPI routes outside that queue. So under `rag serve` both take one of these
slots for each answer: `ui.concurrency_limit` answers at once in all, whoever asks. The chat's
worker threads wait for a slot blocking; API requests wait without holding a thread, at most
`ui.max_queue` of them, beyond which they are turned away at once, as the chat's queue does.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio

POLL_SECONDS = 0.05  # how often a waiting API request looks for a free slot; answers take seconds


class QueueFull(Exception):
    """More requests are waiting than `ui.max_queue` allows."""


class AnswerSlots:
    def __init__(self, limit: int, max_waiting: int):
        self.limit, self.max_waiting = limit, max_waiting
        self.busy = self.waiting = 0
        self._changed = threading.Condition()

    def refuse_if_full(self) -> None:
        with self._changed:
            if self.busy >= self.limit and self.waiting >= self.max_waiting:
                raise QueueFull("the server is busy; try again")

    async def take(self) -> None:
        """Wait for a slot without blocking the event loop; QueueFull when the line is full."""
        with self._changed:
            if self.busy >= self.limit and self.waiting >= self.max_waiting:
                raise QueueFull("the server is busy; try again")
            self.waiting += 1
        try:
            while not self._take_if_free():
                await anyio.sleep(POLL_SECONDS)
        finally:
            with self._changed:
                self.waiting -= 1

    def _take_if_free(self) -> bool:
        with self._changed:
            if self.busy < self.limit:
                self.busy += 1
                return True
            return False

    def give_back(self) -> None:
        with self._changed:
            self.busy -= 1
            self._changed.notify()

    @contextmanager
    def held(self) -> Iterator[None]:
        """Hold a slot in this thread, waiting as long as it takes (Gradio already bounds its own line)."""
        with self._changed:
            self._changed.wait_for(lambda: self.busy < self.limit)
            self.busy += 1
        try:
            yield
        finally:
            self.give_back()


class SlottedService:
    """The service as the chat page sees it under `rag serve`: each answer holds a slot while it is made.
    Everything else is the service's own."""

    def __init__(self, service, slots: AnswerSlots):
        self.service, self.slots = service, slots

    def __getattr__(self, name: str) -> Any:
        return getattr(self.service, name)

    def stream_answer(self, question: str, **options) -> Iterator:
        with self.slots.held():
            yield from self.service.stream_answer(question, **options)

    def answer(self, question: str, **options):
        *_, final = self.stream_answer(question, **options)
        return final
