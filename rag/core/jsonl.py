"""Question files: one JSON object a line, read the same way by every evaluation (lookups, related papers,
overviews), so each says which line of which file it cannot take, and nothing else."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from rag.core.errors import InputError

SPLITS = ("dev", "test", "all")
Item = TypeVar("Item")


def read_split(path: str | Path, split: str, parse: Callable[[dict[str, Any]], Item], what: str) -> list[Item]:
    """`parse` of each non-blank line of the file whose `split` field is `split` ("all": every line).

    A file that cannot be read, a line `parse` cannot take (it raises ValueError, KeyError or TypeError) and
    a split with no line are each an InputError: "FILE:LINE: not a WHAT line (…)", "FILE holds no WHATs …"."""
    if split not in SPLITS:
        raise InputError(f"unknown split '{split}'; valid: {', '.join(SPLITS)}")
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"cannot read {what}s from {path}: {err}") from None
    items = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            item = parse(raw)  # every line, of any split: a malformed one is found whichever split is asked
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            raise InputError(f"{path}:{number}: not {what_line(what)} line ({type(err).__name__}: {err})") from None
        if split in ("all", raw.get("split", "")):
            items.append(item)
    if not items:
        raise InputError(f"{path} holds no {what}s" + ("" if split == "all" else f" in the '{split}' split"))
    return items


def what_line(what: str) -> str:
    """ "a question", "an overview question": the article a line's kind takes."""
    return f"{'an' if what[0] in 'aeiou' else 'a'} {what}"
