"""The prompts sent to language models, and how sources and history are written into them."""

from __future__ import annotations

from langchain_core.prompts import ChatPromptTemplate

from rag.results import Source

ANSWER_PROMPT = ChatPromptTemplate.from_messages(
    [
        (
            "system",
            "You answer questions about research papers using only the numbered abstracts given. "
            "After each claim, cite the abstract it comes from with its number in square brackets, like [1]. "
            "If the abstracts do not answer the question, say that it is not in the abstracts. "
            "Answer in at most three sentences.",
        ),
        ("human", "Abstracts:\n{sources}\n\nQuestion: {question}"),
    ]
)

REWRITE_PROMPT = ChatPromptTemplate.from_messages(
    [
        (
            "system",
            "Rewrite the user's last question so that it can be understood without the conversation, "
            "replacing words like 'it' or 'they' with what they refer to. Reply with the question only.",
        ),
        ("human", "Conversation:\n{history}\n\nLast question: {question}"),
    ]
)


def format_sources(sources: list[Source]) -> str:
    return "\n\n".join(f"[{n}] {source.title}\n{source.text}" for n, source in enumerate(sources, start=1))


def format_history(history: list[tuple[str, str]]) -> str:
    return "\n".join(f"User: {question}\nAssistant: {reply}" for question, reply in history)
