"""Abstracts' markup as people read it: LaTeX to unicode text, Markdown emphasis to emphasis.

Abstracts are written for OpenReview, which renders `$\\tau$`, `100\\%`, `\\textbf{1)}` and
`**bold**`; shown raw they read as noise. `plain_text` gives the readable text (the CLI);
`markup_html` gives the same text HTML-escaped, with emphasis as `<strong>`/`<em>` (the page).

Untrusted text stays inert: LaTeX is only ever turned into text, that text is escaped before any
tag is added, and the only tags added are `<strong>` and `<em>` around escaped text. Text that
pylatexenc cannot parse (say, thousands of nested braces) is shown as it is. Nothing is lost on the
way: a brace that closes or opens no group is text, and a macro that would read a file (`\\input`,
`\\include`) is shown as written, so a title keeps its words in every place it is shown.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from html import escape
from typing import Any, cast

from pylatexenc import latex2text, latexwalker
from pylatexenc.latex2text import LatexNodes2Text, MacroTextSpec
from pylatexenc.latexwalker import LatexWalker, LatexWalkerError
from pylatexenc.macrospec import LatexContextDb, std_macro

from rag.core.text import terminal_text

# LaTeX is parsed only where there is some: most sentences have neither a backslash, a dollar nor
# LaTeX's opening quotes (``Spreading COVID-19'' reads “Spreading COVID-19”).
LATEX = re.compile(r"[\\$]|``")
# `%` starts a comment and `&` is an alignment tab in LaTeX, but abstracts use both as text (`$44.0$%`):
# escape those not already escaped (preceded by an even number of backslashes).
UNESCAPED = re.compile(r"(?<!\\)((?:\\\\)*)([%&])")
# Some write `20\\%` (a line break, then a comment) for `20\%`: they mean the percent sign.
DOUBLED = re.compile(r"\\\\(?=[%&])")
# `~` is LaTeX's unbreakable space after a word (`Figure~1`, `models~(LLMs)`), but "about" or "to"
# after a space, a bracket, a slash or a number (`(~60 Hz)`, `75\%~95\%`, `cornell.edu/~name`).
TILDE_AS_TEXT = re.compile(r"(?<![^\s(\[/*%0-9])~")
TILDE = "\ue000"  # stands in for a `~` kept as text while LaTeX's `~` becomes a space
# A brace not escaped by a backslash (an even number of them before it), for pairing groups.
BRACE = re.compile(r"(?<!\\)((?:\\\\)*)([{}])")
# Markdown emphasis, applied to text pylatexenc has already converted (it leaves `*` and `_` alone).
# Single `*` and `_` must start and end at a word boundary, so `x_i`, `snake_case` and `a * b` stay.
STRONG = re.compile(r"\*\*(?=[^\s*])([^\n]+?)(?<=[^\s*])\*\*")
STAR_EMPHASIS = re.compile(r"(?<![\w*\\])\*(?=[^\s*])([^*\n]+?)(?<=[^\s*])\*(?![\w*])")
UNDERSCORE_EMPHASIS = re.compile(r"(?<![\w\\])_(?=[^\s_])([^_\n]+?)(?<=[^\s_])_(?!\w)")
SPACES = re.compile(r"[ \t]{2,}")
# What pylatexenc reads as other than text (`--` is a dash, `~` a space, `%` and `&` are escaped first)
MARKUP = re.compile(r"[\\$~{}%&#^_]|--|``|''")
# Where one sentence ends and the next begins, the spaces between kept as a piece of their own.
BETWEEN_SENTENCES = re.compile(r"(?<=[.!?])(\s+)(?=[A-Z])")
DOLLAR = re.compile(r"(?<!\\)\$")  # a math delimiter, not an escaped dollar sign
# A macro before a group that holds text (`\\edit{new text}`, `\\fan{ Specifically, …}`): of an author's own,
# an edit or highlight mark, only the text is read. One before an empty group (`\\method{}`) is a name.
MACRO_ON_TEXT = re.compile(r"(?<!\\)((?:\\\\)*)\\([A-Za-z]+)(?=\{\s*[^\s}])")
# The same mark whose group the author never closed (`\\fan{ Specifically, …` to the abstract's end): its brace
# is escaped as stray by then (`with_stray_braces_escaped`), and the mark and the brace are both dropped.
MACRO_ON_UNCLOSED = re.compile(r"(?<!\\)((?:\\\\)*)\\([A-Za-z]+)\\\{\s*(?=[^\s}])")

# What abstracts use beyond pylatexenc's defaults: the walker must know each macro's arguments,
# the converter what text it stands for. Bold and italic become Markdown, handled with the rest.
EXTRA_MACRO_ARGS = {
    "href": "{{",
    "citealp": "*[[{",
    "underline": "{",
    "textcolor": "{{",
    "color": "{",
    "fontfamily": "{",
}
EXTRA_MACRO_ARGS |= {"tfrac": "{{", "dfrac": "{{"}
# What each macro's last argument becomes (`{}`: its text), e.g. `\href{url}{text}` -> text.
LAST_ARGUMENT = {
    "textbf": "**{}**",
    "emph": "*{}*",
    "textit": "*{}*",
    **dict.fromkeys(("texttt", "textsc", "textsf", "underline", "url", "textcolor", "href"), "{}"),
    **dict.fromkeys(("cite", "citep", "citet", "citealp"), "({})"),
    "footnote": " ({})",
}
# Authors' abbreviations; LaTeX swallows the space after a macro's name, so it is put back.
ABBREVIATIONS = {"ie": "i.e.", "eg": "e.g.", "etc": "etc.", "wrt": "w.r.t.", "etal": "et al."}
# Standard LaTeX that pylatexenc doesn't list, which only styles or sizes what follows: dropped.
# Any other macro it doesn't know is an author's own: a name (`\model`, `\method{}`), shown as written, or an edit
# or highlight mark around text (`\edit{new text}`), read as that text (`MACRO_ON_TEXT`).
STYLE_MACROS = frozenset(
    "em bf it sc rm tt sf cal bm boldsymbol mathds operatorname displaystyle textstyle scriptstyle xspace "
    "left right big Big bigg Bigg bigl bigr Bigl Bigr biggl biggr limits nolimits "
    "color fontfamily small footnotesize large Large normalsize selectfont".split()
)
# Macros pylatexenc answers by reading a file (nothing, here): their text is what the author wrote.
FILE_MACROS = frozenset({"input", "include"})


# Link markup an abstract may hold, which a client rendering Markdown or HTML would make live: a Markdown link or
# image "[label](target)", a reference definition "[x]: target" at a line's start, a tag or autolink "<a href=…>".
LINK_MARKUP = re.compile(r"(!?)\[(?=[^\]\n]*\]\()|^([ \t]*)\[(?=[^\]\n]*\]:)|<(?=[A-Za-z!/?])", re.MULTILINE)


def inert_links(text: str) -> str:
    """The text with its link markup escaped (`LINK_MARKUP`'s opening character backslashed): what an API sends a
    client that may render Markdown or HTML, which then shows `[the code](javascript:…)` as written, never live.
    The answer's own [n] markers are not links and stay as they are."""
    return LINK_MARKUP.sub(lambda m: f"{m[1] or ''}{m[2] or ''}\\{m[0][-1]}", text)


def plain_text(text: str) -> str:
    """The text as it reads: `$\\tau$` -> `τ`, `100\\%` -> `100%`, `\\textbf{1)}` -> `1)`, `**x**` -> `x`."""
    return with_emphasis(latex_to_text(text), strong="{}", em="{}")


def model_text(text: str) -> str:
    """A model's answer as it reads, rendered as the abstracts are (`91\\%` -> `91%`, `$\\textit{x}$` -> `x`).
    A model that copies `$50,000$` sometimes drops one of the dollars; a `$` left unpaired would read the
    rest of the answer as math, so the last unpaired one is dropped first."""
    dollars = [match.start() for match in DOLLAR.finditer(text)]
    if len(dollars) % 2:
        text = text[: dollars[-1]] + text[dollars[-1] + 1 :]
    return plain_text(text)


def markup_html(text: str) -> str:
    """The text as escaped HTML, LaTeX turned into text and Markdown emphasis into `<strong>`/`<em>`."""
    return with_emphasis(escape(latex_to_text(text)), strong="<strong>{}</strong>", em="<em>{}</em>")


def with_emphasis(text: str, strong: str, em: str) -> str:
    """Markdown's `**strong**`, `*em*` and `_em_` put in the `strong` and `em` templates."""
    text = STRONG.sub(lambda match: strong.format(match.group(1)), text)
    for pattern in (STAR_EMPHASIS, UNDERSCORE_EMPHASIS):
        text = pattern.sub(lambda match: em.format(match.group(1)), text)
    return text


def latex_to_text(text: str) -> str:
    """LaTeX turned into unicode text (math too: `$\\mathbb{R}^d$` -> `ℝ^d`); unknown macros kept as written.

    pylatexenc reads every character, so only the sentences that hold markup are parsed: 2.9x faster on the
    list's titles and abstracts and the seeds with LaTeX, 3,340 texts (17.2 s -> 5.9 s; the map's themes read
    them all), and the same text for every one of them. A sentence whose math or group runs on is parsed with
    the next."""
    text = terminal_text(text)  # before LaTeX, which would read an escape sequence's "\\" as a macro's
    if not LATEX.search(text):
        return text
    pieces = BETWEEN_SENTENCES.split(text)  # a sentence, the spaces after it, the next sentence, ...
    converted, open_piece = [], ""
    for number, piece in enumerate(pieces):
        open_piece += piece
        if (number % 2 == 0 and _closed(open_piece)) or number == len(pieces) - 1:
            converted.append(_converted(open_piece) if MARKUP.search(open_piece) else open_piece)
            open_piece = ""
    return SPACES.sub(" ", "".join(converted))


def _closed(text: str) -> bool:
    """Whether every `$` and `{` of the text is closed in it (escaped ones counted too: a piece joined with
    the next is parsed as the whole text would be)."""
    return text.count("$") % 2 == 0 and text.count("{") == text.count("}")


def _converted(text: str) -> str:
    """The text as pylatexenc reads it, as it is when pylatexenc can't parse it."""
    prepared = UNESCAPED.sub(r"\1\\\2", DOUBLED.sub("\\\\", TILDE_AS_TEXT.sub(TILDE, text)))
    prepared = with_stray_braces_escaped(prepared)
    walker_context, converter = latex_converter()
    for mark in (MACRO_ON_TEXT, MACRO_ON_UNCLOSED):
        prepared = mark.sub(lambda match: match.group(0) if known(match.group(2)) else match.group(1), prepared)
    try:
        nodes, _, _ = LatexWalker(prepared, latex_context=walker_context, tolerant_parsing=True).get_latex_nodes()
        converted = converter.nodelist_to_text(nodes)
    except (LatexWalkerError, RecursionError):
        return text
    # Leading and trailing spaces are kept: callers convert the pieces of text between `[n]` markers.
    return SPACES.sub(" ", converted.replace("\xa0", " ").replace(TILDE, "~"))


def known(macro: str) -> bool:
    """Whether the converter has text for the macro, or drops it as style: an author's own macro it has not."""
    if macro in STYLE_MACROS or macro in FILE_MACROS:
        return True
    return latex_converter()[1].latex_context.get_macro_spec(macro) is not None


def with_stray_braces_escaped(text: str) -> str:
    """`text` with every brace that pairs with none escaped (`\\}`), so it reads as a brace: a group's
    braces only group, but pylatexenc would drop a stray `}` and the words of an unclosed `{`."""
    opened: list[int] = []  # where each still-open `{` stands
    stray: list[int] = []
    for match in BRACE.finditer(text):
        where = match.start(2)
        if match.group(2) == "{":
            opened.append(where)
        elif opened:
            opened.pop()
        else:
            stray.append(where)
    unpaired = {*stray, *opened}
    return "".join(f"\\{char}" if where in unpaired else char for where, char in enumerate(text))


# pylatexenc has no type hints: its classes and nodes are Any to mypy.
class KeepingUnknownMacros(LatexNodes2Text):  # type: ignore[misc]
    """Shows a macro it has no text for as written (`\\model`): an author's own macro is still a name."""

    def macro_node_to_text(self, node: Any) -> str:
        if node.macroname in STYLE_MACROS:
            return ""
        if node.macroname in FILE_MACROS or self.latex_context.get_macro_spec(node.macroname) is None:
            return cast(str, node.latex_verbatim())
        return cast(str, super().macro_node_to_text(node))


@cache
def latex_converter() -> tuple[LatexContextDb, KeepingUnknownMacros]:
    """The walker's context and the converter, built once: pylatexenc's defaults and the macros above."""
    walker_context = latexwalker.get_default_latex_context_db()
    walker_context.add_context_category(
        "rag", prepend=True, macros=[std_macro(name, args) for name, args in EXTRA_MACRO_ARGS.items()]
    )
    text_context = latex2text.get_default_latex_context_db()
    macros = [MacroTextSpec(name, simplify_repl=last_argument(template)) for name, template in LAST_ARGUMENT.items()]
    macros += [MacroTextSpec(name, simplify_repl=abbreviation(text)) for name, text in ABBREVIATIONS.items()]
    frac = text_context.get_macro_spec("frac").simplify_repl
    macros += [MacroTextSpec(name, frac) for name in ("tfrac", "dfrac")]
    macros += [MacroTextSpec("|", "‖"), MacroTextSpec("implies", "⟹")]
    text_context.add_context_category("rag", prepend=True, macros=macros)
    return walker_context, KeepingUnknownMacros(latex_context=text_context, math_mode="text")


def last_argument(template: str) -> Callable[[Any, LatexNodes2Text], str]:
    """A macro's text: its last argument's text in `template`, or nothing when that is empty or missing."""

    def text(node: Any, l2tobj: LatexNodes2Text) -> str:
        arguments = [arg for arg in (node.nodeargd.argnlist if node.nodeargd else []) if arg is not None]
        inner = l2tobj.nodelist_to_text(arguments[-1:]).strip()
        return template.format(inner) if inner else ""

    return text


def abbreviation(text: str) -> Callable[[Any], str]:
    """A macro's text: `text` and the space LaTeX took as the end of the macro's name (`\\ie x` -> `i.e. x`)."""
    return lambda node: text + node.macro_post_space
