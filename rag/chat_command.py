"""`rag chat`: a conversation in the terminal, its questions typed after a "> " prompt or read from a file, each
answered as `rag ask` answers it (rag/commands.py's `print_answer`). Its options are in rag/cli.py, beside the
other commands'. What it prints passes through `terminal_text` on its way out, as all the command prints (rag/cli.py).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator

from rag.commands import filters_from, print_answer, service_from

ECHO_CHARS = 500  # a line of a questions file longer than this is echoed cut, with a note (the limit refuses it)


def run_chat(args: argparse.Namespace) -> int:
    """A conversation: questions read line by line after a "> " prompt, each answered as `rag ask` answers
    it, with the conversation so far (and the papers its last answer cited) as its history. Ctrl-D (end of
    input) ends it; Ctrl-C drops the line being typed, or stops the answer being made, and asks again.
    Plain text only, no cursor movement: a screen reader reads it line by line."""
    from rag.core.errors import InputError
    from rag.question.focus import Turn

    service = service_from(args)
    filters = filters_from(args)
    if not args.questions:
        print('Ask about the indexed abstracts; a follow-up may say "it" or "they". Ctrl-D ends.', flush=True)
    history: list[Turn] = []
    for line in typed_questions() if not args.questions else filed_questions(args.questions):
        if not line.strip():
            continue
        try:
            final = service.answer(line, history=history, k=args.k, filters=filters, understand=args.understand)
        except InputError as err:  # one unusable question is named; the conversation goes on
            print(f"error: {err}", flush=True)
            continue
        except KeyboardInterrupt:
            print("(stopped; not part of the conversation)", flush=True)
            continue
        print_answer(final, service, explain=args.explain)
        print(flush=True)
        history.append(Turn.of(final))
    return 0


def typed_questions() -> Iterator[str]:
    """Lines typed after a "> " prompt, until Ctrl-D (end of input), which ends with a newline so the
    shell's prompt starts on a line of its own. No readline: nothing but plain text reaches the terminal.

    Read with `sys.stdin.readline`, not `input()`: on a terminal `input()` reads through C strings, so a NUL
    typed in a line (Ctrl-@) ended the line's text there and joined the next line to it."""
    while True:
        print("> ", end="", flush=True)
        try:
            line = sys.stdin.readline()
        except KeyboardInterrupt:  # the line typed so far is dropped, as at a shell's prompt
            print()
            continue
        if not line:
            print()
            return
        yield line.removesuffix("\n")


def filed_questions(path: str) -> Iterator[str]:
    """The lines of a questions file (split at newlines only: a form feed or U+2028 is inside a line), each
    shown after the prompt as if typed, so the output reads as a conversation; a very long one is shown cut."""
    from pathlib import Path

    from rag.core.errors import InputError

    try:
        lines = Path(path).read_text(encoding="utf-8").split("\n")
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"cannot read questions from {path}: {err}") from None
    for line in (line.removesuffix("\r") for line in lines):
        if line.strip():
            shown = line if len(line) <= ECHO_CHARS else f"{line[:ECHO_CHARS]}… (shown cut: {len(line):,} characters)"
            print(f"> {shown}", flush=True)
            yield line
