"""The services a process shares, one per config: what `rag.answer`, LangChain's classes and `/v1` ask through."""

from __future__ import annotations

import threading
from collections import OrderedDict

from rag.core.config import Settings, load_config
from rag.service import RagService

_SERVICES_KEPT = 4
_services: OrderedDict[str, RagService] = OrderedDict()
_services_lock = threading.Lock()


def get_service(config: str | Settings | None = None) -> RagService:
    """The shared service for a config name, path or Settings (None: $RAG_CONFIG, else default).

    The same settings get the same service; the few most recently used are kept (for LangChain's classes, /v1).
    """
    settings = load_config(config)
    key = settings.model_dump_json()
    with _services_lock:  # one service per settings, even when threads ask for it at once
        if key not in _services:
            _services[key] = RagService(settings)
            if len(_services) > _SERVICES_KEPT:
                _services.popitem(last=False)
        _services.move_to_end(key)
        return _services[key]
