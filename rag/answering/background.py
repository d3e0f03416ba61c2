"""Where an abstract's own work starts: what comes before it is background ("Large language models have
achieved …"), which an answer quotes last and an overview leaves out.

An abstract says what the paper proposes at its proposal sentence ("We introduce …", `proposal_position`). What
the authors do or find can come before it ("To address these, we identify a novel 'bright ending' (BE) anomaly
…", "We show that the MLM's objective implicitly learns a formal context …"): their work starts there
(`work_start`). Anywhere, a sentence that opens like background ("Recent …", "X has achieved …") is background.
"""

from __future__ import annotations

import re

from rag.core.types import Source
from rag.text.naming import PROPOSAL
from rag.text.words import source_sentences

# What the authors did ("We reformulate the task using text, as language has been shown to …"): never background.
OWN_WORK = re.compile(r"^(we|our)\b", re.I)
# What the authors do about a problem they state ("To address these limitations, we enhance data curation by …"):
# their own work starts there, also before the sentence that says what the paper proposes (`work_start`).
REMEDY = re.compile(
    r"^(to|in order to) (address|overcome|tackle|solve|mitigate|bridge|fill|remedy|alleviate|resolve) "
    r"(this|these|the|such|both)\b[^,.]{0,60},\s*we\b",
    re.I,
)
BACKGROUND = re.compile(
    r"^(recent(ly)?|despite|while|although|in recent years|existing|current|traditional|however|"
    r"[^.]{0,80}?\b(have|has|is|are)( \w+ly)? (achieved|shown|demonstrated|become|emerged|gained|attracted|"
    r"been|revolutioni[sz]ed|transformed|crucial|essential|critical|important|fundamental))\b",
    re.IGNORECASE,
)
# The authors' own finding ("We show that …", "This paper identifies three key factors …"), unless it is about
# earlier work ("Our analysis reveals that existing …"). Not what they study or hold ("This paper studies
# off-policy evaluation from biased data where …", "We contend that …"): that restates the question.
OWN_STUDY = re.compile(
    r"^(we|our (analysis|analyses|results|findings|experiments|study|theory)|this (paper|work|study)|"
    r"in this (paper|work|study),? we)( first| also| \w+ly)? "
    r"(show|find|identif(y|ies)|reveal|demonstrate|prove|discover|observe|uncover|establish)s?\b",
    re.I,
)
EARLIER_WORK = re.compile(
    r"\b(existing|current|prior|previous|conventional|standard|traditional|popular|state-of-the-art|sota)\b", re.I
)


def is_background(position: int, sentence: str) -> bool:
    """True for an abstract's opening sentence, or one that opens like background ("Recent …",
    "X has achieved …"): what an abstract says before it says what the paper does."""
    return position == 0 or (bool(BACKGROUND.match(sentence)) and not OWN_WORK.match(sentence))


def proposal_position(source: Source) -> int:
    """Where the abstract says what it proposes ('We introduce …'); what comes before is background.
    -1 when it never says so, or when the passages given don't start at the abstract's beginning."""
    first = source.passages[0].span if source.passages else None
    if first and first.start != 0:
        return -1
    sentences = source_sentences(source)
    return next((i for i, sentence in enumerate(sentences) if PROPOSAL.search(sentence)), -1)


def work_start(source: Source, proposal: int) -> int:
    """Where the authors' own work starts: at the sentence that says what the paper proposes, or before it
    at what they do about the problem they state ("To address these, we identify a novel 'bright ending' (BE)
    anomaly …", then "BE refers to …", then "Equipped with this, we propose …")."""
    sentences = source_sentences(source)[: max(proposal, 0)]
    return next((i for i, sentence in enumerate(sentences) if i and own_start(sentence)), proposal)


def own_start(sentence: str) -> bool:
    """Whether the sentence starts what the authors did: a remedy, or their own finding that is not about
    earlier work ("We show that the MLM's objective implicitly learns a formal context …", not "Our
    analysis reveals that existing approaches significantly underperform …")."""
    return bool(REMEDY.match(sentence) or (OWN_STUDY.match(sentence) and not EARLIER_WORK.search(sentence)))
