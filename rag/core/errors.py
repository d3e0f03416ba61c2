"""The few named errors the package raises.

Each is raised where the problem is found, with a message a person can act on; the CLI prints
it as one line and the UI shows it as text. Nothing here carries a traceback to the user.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


class RagError(Exception):
    """Base class: every error meant for the user, not for a debugger."""


class ConfigError(RagError):
    """A config file, name, key or value that cannot be used."""


class InputError(RagError):
    """A question or input file that cannot be used (empty, too long, unreadable, malformed)."""


class StoreError(RagError):
    """The vector store cannot be opened or reached."""


class ModelError(RagError):
    """A language model that failed to load or answer; the message names the provider and cause."""


class FetchError(RagError):
    """A paper source that cannot be read: a venue that does not exist, no network, a refusing server."""


def first_line(error: object) -> str:
    """The first line of an error's message, for a one-line report: what follows (a traceback, a
    server's body) is for a debugger. An exception without a message gives its type's name."""
    text = str(error).strip()
    if text:
        return text.splitlines()[0]
    return type(error).__name__ if isinstance(error, BaseException) else ""


def first_problem(errors: Sequence[Mapping[str, Any]]) -> tuple[str, str]:
    """Where and what the first of pydantic's `errors()` is, e.g. ("filters.status", "Input should be a
    valid list"): for one line a person reads, without pydantic's banner, the value sent and a help link."""
    first = errors[0]
    return ".".join(str(part) for part in first["loc"] if part != "body"), first["msg"]
