"""Where a higher stage plugs into core, so that core uses it without importing it (imports run down the stages).

`rag/__init__.py` fills these in; Python runs that file before any `rag.*` module, so they are set
wherever a config is loaded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import BaseModel

    from rag.core.config import StageConfig

# A retrieval stage's options, checked by its module (rag.retrieval.stages.options_of); a ValueError
# names what is wrong. A config is checked when it loads, and the stages sit above core.
stage_options: Callable[[StageConfig], BaseModel] | None = None
