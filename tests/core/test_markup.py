"""Abstracts' LaTeX and Markdown shown as readable text (rag.core.markup), on real abstracts."""

from __future__ import annotations

import gzip
import json
import re

import pytest
from conftest import FULL_LIST, seed_abstracts

from rag.core.markup import markup_html, model_text, plain_text

# What must not survive: an escaped percent, a formatting macro, math delimiters, Markdown bold.
RAW = re.compile(r"\\%|\\textbf\{|\\emph\{|\\textit\{|\$|\*\*")
OUR_TAGS = re.compile(r"</?(strong|em)>")


def seed_with(fragment: str) -> str:
    return next(abstract for abstract in seed_abstracts() if fragment in abstract)


@pytest.mark.parametrize(
    "fragment, shown",
    [
        (r"\textbf{1)} black-box", "two challenges: 1) black-box nature"),
        (r"100\% valid", "generate 100% valid molecules"),
        (r"$\tau$-leaping", "sampling methods like τ-leaping"),
        (r"$30,000$ different", "nearly 30,000 different"),
    ],
)
def test_seed_abstracts_read_as_text(fragment, shown):
    text = plain_text(seed_with(fragment))
    assert shown in text and not RAW.search(text)


def test_the_page_shows_latex_bold_as_bold_and_escapes_the_rest():
    html = markup_html(seed_with(r"\textbf{1)} black-box"))
    assert "two challenges: <strong>1)</strong> black-box" in html
    assert not RAW.search(OUR_TAGS.sub("", html))


def corpus_abstracts(pattern: str, count: int) -> list[str]:
    if not FULL_LIST.exists():
        pytest.skip(f"{FULL_LIST} is not here")
    found = []
    with gzip.open(FULL_LIST, "rt", encoding="utf-8") as lines:
        for line in lines:
            abstract = json.loads(line).get("abstract", "")
            if re.search(pattern, abstract):
                found.append(abstract)
                if len(found) == count:
                    break
    return found


@pytest.mark.parametrize("pattern", [r"\\%", r"\\textbf\{", r"\$[^$]+\$", r"\*\*\w[^*]*\*\*", r"\\emph\{"])
def test_real_abstracts_lose_their_markup_and_keep_their_words(pattern):
    for abstract in corpus_abstracts(pattern, 30):
        text = plain_text(abstract)
        assert not RAW.search(text), text
        words = re.findall(r"[A-Za-z]{6,}", re.sub(r"\\[A-Za-z]+|\$[^$]*\$", " ", abstract))
        assert sum(word in text for word in words) >= 0.95 * len(words)  # the prose is all still there
        html = markup_html(abstract)
        assert not re.search(r"<(?!/?(strong|em)>)", html)  # no tag but ours


def test_markdown_emphasis_becomes_emphasis_only_at_word_boundaries():
    abstract = corpus_abstracts(r"\*\*\w[^*]*\*\*", 1)[0]
    bold = re.search(r"\*\*(\w[^*]*)\*\*", abstract).group(1)
    assert f"<strong>{bold}</strong>" in markup_html(abstract)
    assert markup_html("we use _nested_ ideas") == "we use <em>nested</em> ideas"
    kept = "snake_case_name, $x_i$ and a * b * c"
    assert plain_text(kept) == "snake_case_name, x_i and a * b * c"


@pytest.mark.parametrize(
    "raw, shown",
    [
        (r"up to $44.0$% success, then the rest", "up to 44.0% success, then the rest"),  # a bare % is no comment
        (r"$20\\%$ of artists", "20% of artists"),
        (r"R\&R and A & B, $O(\frac{k}{\delta})$", "R&R and A & B, O(k/δ)"),
        (r"Models~(LLMs) at (~60 Hz), 75\%~95\%", "Models (LLMs) at (~60 Hz), 75%~95%"),
        (
            r"\texttt{AugCLIP} \citep{smith2020} \ie fast, see \href{https://x.org}{code}",
            "AugCLIP (smith2020) i.e. fast, see code",
        ),
        (r"we name it \model{} and $\mathbb{R}^{d}$", r"we name it \model and ℝ^d"),  # an author's macro stays
        # a font switch styles what follows (Open-CK's abstract: it read "the \fontfamilylmtt*supercomputer*")
        (r"the {\fontfamily{lmtt}\selectfont \textit{supercomputer}} support", "the supercomputer support"),
        # an author's edit mark around text reads as its text (an answer read "baselines. \fan Specifically")
        (r"sets. \fan{ Specifically, we \edit{prove} it} by \algo{CQG}", "sets. Specifically, we prove it by CQG"),
        # one the author never closed (a jailbreak-defence abstract's "\fan{ Specifically" to its end); a stray brace
        (r"scenarios. \fan{ Specifically, a 15x speedup. Or { so", "scenarios. Specifically, a 15x speedup. Or { so"),
        # an old font switch is style, as \bf is (an answer read "O(dβ^2\cal A^2/ε^6)")
        (r"complexity $\widetilde{O}\left(d{\cal A}^2\right)$", "complexity O(d A^2)"),
        # sentences are parsed apart, each only if it holds markup: a dash is markup too, with no `$` or `\`
        (r"A rate--distortion bound. Then $\alpha$ grows.", "A rate–distortion bound. Then α grows."),
        # math or a group that runs over a sentence's end is parsed whole
        (r"We set $x. Then y$ apart. Next 5\%.", "We set x. Then y apart. Next 5%."),
        (r"Its \emph{first. Second} words. Then 3\%.", "Its first. Second words. Then 3%."),
    ],
)
def test_latex_corner_cases_read_as_meant(raw, shown):
    assert plain_text(raw) == shown


def test_hostile_text_stays_inert():
    html = markup_html(r"\textbf{<img src=x onerror=alert(1)>} **<script>x</script>** \href{javascript:alert(2)}{here}")
    assert (
        html
        == "<strong>&lt;img src=x onerror=alert(1)&gt;</strong> <strong>&lt;script&gt;x&lt;/script&gt;</strong> here"
    )
    nested = "$" + "{" * 5000 + "x" + "}" * 5000 + "$"
    assert plain_text(nested) == nested  # too deep to parse: shown as it is, no crash


@pytest.mark.parametrize(
    ("written", "shown"),
    [
        ("It took $50,000 GPU hours [1].", "It took 50,000 GPU hours [1]."),  # a dollar of `$50,000$` lost
        ("It reaches 91\\% with $\\textit{Jump Your Steps}$ [1].", "It reaches 91% with Jump Your Steps [1]."),
        ("**XLand-100B** uses $\\tau$-leaping [2].", "XLand-100B uses τ-leaping [2]."),
        ("It costs \\$5 [1].", "It costs $5 [1]."),  # an escaped dollar is a dollar
        ('We showcase a ``Spreading COVID-19" dataset [1].', 'We showcase a “Spreading COVID-19" dataset [1].'),
    ],
)
def test_what_a_model_writes_reads_as_the_abstracts_do(written, shown):
    assert model_text(written) == shown
